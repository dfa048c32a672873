"""Record keys and partition paths as Spark columns, as Hudi's key generators make them."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pandas as pd
import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.pandas.functions import pandas_udf
from pyspark.sql.types import DecimalType, IntegralType, StructType, TimestampType

from hudi_sync.table.keys.partition_encoding import ESCAPED, escape
from hudi_sync.table.keys.partition_paths import TIMESTAMP, PartitionScheme, partition_paths
from hudi_sync.table.keys.record_keys import (
    DEFAULT_PARTITION,
    EMPTY_KEY_VALUE,
    KEY_PARTS_SEPARATOR,
    KEY_VALUE_SEPARATOR,
    NULL_KEY_VALUE,
)

# A refusal raised in a Python worker (a UDF, mapInArrow), as Spark reports it.
WORKER_REFUSAL = re.compile(r"hudi_sync\.errors\.BadInputError: (.+)")

__all__ = [
    "DEFAULT_PARTITION",
    "EMPTY_KEY_VALUE",
    "KEY_PARTS_SEPARATOR",
    "KEY_VALUE_SEPARATOR",
    "NULL_KEY_VALUE",
    "WORKER_REFUSAL",
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


def partition_path_column(scheme: PartitionScheme, schema: StructType, where: str) -> Column:
    """Each row's partition path: Spark expressions for simple fields
    (``simple_partition_path``); with a timestamp-formatted field, the whole path by
    ``partition_paths`` in a vectorised UDF, the one place it is composed (integers and
    decimals handed over as text, so they reach it exact)."""
    if not scheme.formats_time:
        return simple_partition_path(scheme.fields, scheme.hive_style, scheme.url_encode)
    types = {f.name: f.dataType for f in schema.fields}
    timed = [
        name for name, kind in zip(scheme.fields, scheme.kinds, strict=True) if kind == TIMESTAMP
    ]
    numeric_text = tuple(n for n in timed if isinstance(types.get(n), IntegralType | DecimalType))
    # Spark hands timestamps to pandas in the session's zone: their microseconds instead
    micros = tuple(n for n in timed if isinstance(types.get(n), TimestampType))
    columns = [
        F.unix_micros(F.col(name)).cast("string")
        if name in micros
        else F.col(name)
        if name in timed and name not in numeric_text
        else F.col(name).cast("string")
        for name in scheme.fields
    ]
    names = list(scheme.fields)

    def paths(*values: pd.Series) -> pd.Series:
        arrays = [pa.Array.from_pandas(v) for v in values]
        arrays = [
            a.cast(pa.int64()).cast(pa.timestamp("us", "UTC")) if n in micros else a
            for n, a in zip(names, arrays, strict=True)
        ]
        data = pa.table(arrays, names=names)
        return partition_paths(data, scheme, where, numeric_text).to_pandas()

    udf = pandas_udf(paths, "string")  # type: ignore[call-overload]
    column: Column = udf(*columns)
    return column


def simple_partition_path(fields: Sequence[str], hive_style: bool, url_encode: bool) -> Column:
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
