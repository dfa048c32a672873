"""Record keys and partition paths as Spark columns, as Hudi's key generators make them."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F

from hudi_sync.table.partition_encoding import ESCAPED, escape
from hudi_sync.table.record_keys import (
    DEFAULT_PARTITION,
    EMPTY_KEY_VALUE,
    KEY_PARTS_SEPARATOR,
    KEY_VALUE_SEPARATOR,
    NULL_KEY_VALUE,
)

__all__ = [
    "DEFAULT_PARTITION",
    "EMPTY_KEY_VALUE",
    "KEY_PARTS_SEPARATOR",
    "KEY_VALUE_SEPARATOR",
    "NULL_KEY_VALUE",
    "partition_path_column",
    "record_key_column",
]


def record_key_column(fields: Sequence[str], named: bool = False) -> Column:
    """One field: its value as a string (SimpleKeyGenerator); several, or one ``named``
    (a complex key generator's, ``record_keys.names_single_key_field``): ``f1:v1,f2:v2``
    with ``__null__``/``__empty__`` for a null or empty value (ComplexKeyGenerator).
    Null where Hudi refuses the key: a single field null or empty, or several all
    null or empty (the caller refuses the rows)."""
    if len(fields) == 1 and not named:
        value = F.col(fields[0]).cast("string")
        return F.when(value != "", value)
    texts = [F.col(f).cast("string") for f in fields]
    parts = [
        F.concat(
            F.lit(f"{f}{KEY_VALUE_SEPARATOR}"),
            F.when(t.isNull(), F.lit(NULL_KEY_VALUE))
            .when(t == "", F.lit(EMPTY_KEY_VALUE))
            .otherwise(t),
        )
        for f, t in zip(fields, texts, strict=True)
    ]
    blank = [F.coalesce(t == "", F.lit(True)).cast("int") for t in texts]
    every_blank = F.least(*blank) if len(blank) > 1 else blank[0]
    return F.when(every_blank == 0, F.concat_ws(KEY_PARTS_SEPARATOR, *parts))


def partition_path_column(fields: Sequence[str], hive_style: bool, url_encode: bool) -> Column:
    """``v1/v2`` or ``f1=v1/f2=v2``; null or empty values become Hudi's default partition;
    with ``url_encode`` each value escaped as Hudi escapes it (``partition_encoding``)."""
    if not fields:
        return F.lit("")
    parts = []
    for field in fields:
        value = F.col(field).cast("string")
        if url_encode:
            value = escaped(value)
        value = F.when(value.isNull() | (value == ""), F.lit(DEFAULT_PARTITION)).otherwise(value)
        parts.append(F.concat(F.lit(f"{field}="), value) if hive_style else value)
    return F.concat_ws("/", *parts)


def escaped(value: Column) -> Column:
    """``partition_encoding.escape_value`` of a string column: one replacement per escaped
    character, ``%`` first."""
    for character in ESCAPED:
        value = F.replace(value, F.lit(character), F.lit(escape(character)))
    return value
