"""Hudi's Avro schema as the columns of a Snowflake external table over parquet.

A Snowflake external table exposes each parquet row as the variant ``VALUE`` and the
file's path (relative to the stage) as ``METADATA$FILENAME``; every other column is an
expression over those two. Data columns are ``VALUE['<name>']::<type>`` (bracket notation
with a string literal, so no column name can break out of the path syntax); partition
columns are parsed from ``METADATA$FILENAME`` (hive-style ``field=value`` folders, or
plain folders by position) so that ``PARTITION BY`` can prune on them.

The type map is precise: ``int``/``long`` keep their widths as ``NUMBER(10,0)`` /
``NUMBER(19,0)``, decimals keep precision and scale, timestamps keep their unit and
whether they are instants (``TIMESTAMP_TZ``) or local (``TIMESTAMP_NTZ``); nested types
stay semi-structured (``OBJECT``, ``ARRAY``, maps as ``VARIANT``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hudi_sync.errors import UnsupportedTableError
from hudi_sync.table import HudiTable
from hudi_sync.table.config.schema import META_FIELDS, PartitionField
from hudi_sync.warehouse.common.quoting import snowflake_identifier as quote_identifier
from hudi_sync.warehouse.common.quoting import snowflake_literal as quote_literal

_PRIMITIVES = {
    "boolean": "BOOLEAN",
    "int": "NUMBER(10,0)",
    "long": "NUMBER(19,0)",
    "float": "FLOAT",
    "double": "FLOAT",
    "string": "VARCHAR",
    "enum": "VARCHAR",
    "bytes": "BINARY",
    "fixed": "BINARY",
}
_LOGICAL = {
    "date": "DATE",
    "time-millis": "TIME(3)",
    "time-micros": "TIME(6)",
    "timestamp-millis": "TIMESTAMP_TZ(3)",
    "timestamp-micros": "TIMESTAMP_TZ(6)",
    "timestamp-nanos": "TIMESTAMP_TZ(9)",
    "local-timestamp-millis": "TIMESTAMP_NTZ(3)",
    "local-timestamp-micros": "TIMESTAMP_NTZ(6)",
    "local-timestamp-nanos": "TIMESTAMP_NTZ(9)",
    "uuid": "VARCHAR",
}
_NESTED = {"record": "OBJECT", "array": "ARRAY", "map": "VARIANT"}
_MAX_PRECISION = 38
# Partition values Snowflake can cast from the path text; others stay VARCHAR.
_PARTITION_TYPES = ("NUMBER", "DATE", "BOOLEAN", "VARCHAR")
FILENAME = "METADATA$FILENAME"
# What Snowflake accepts unquoted, and stores upper-cased.
_UNQUOTED = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")


def object_name(name: str) -> str:
    """The stored name of an identifier given as users write it: names Snowflake accepts
    unquoted resolve upper-cased (``trips`` is ``TRIPS``, so ``SELECT rider FROM trips``
    works); any other name is kept exactly and must be quoted by its users."""
    return name.upper() if _UNQUOTED.fullmatch(name) else name


def sql_name(name: str) -> str:
    """``object_name(name)``, quoted: safe in any statement."""
    return quote_identifier(object_name(name))


def snowflake_type(avro_type: Any, column: str) -> str:
    """The Snowflake type of one Avro type (a union with null is unwrapped)."""
    if isinstance(avro_type, list):
        branches = [t for t in avro_type if t != "null"]
        if len(branches) != 1:
            raise UnsupportedTableError(
                f"column {column!r}: union {avro_type!r} has no single Snowflake type"
            )
        avro_type = branches[0]
    if isinstance(avro_type, str):
        if avro_type in _PRIMITIVES:
            return _PRIMITIVES[avro_type]
        raise UnsupportedTableError(f"column {column!r}: Avro type {avro_type!r} is not mapped")
    if not isinstance(avro_type, dict):
        raise UnsupportedTableError(f"column {column!r}: Avro type {avro_type!r} is not mapped")
    logical = avro_type.get("logicalType")
    if logical == "decimal":
        precision, scale = int(avro_type["precision"]), int(avro_type.get("scale", 0))
        if precision > _MAX_PRECISION:
            raise UnsupportedTableError(
                f"column {column!r}: decimal({precision},{scale}) exceeds Snowflake's NUMBER(38)"
            )
        return f"NUMBER({precision},{scale})"
    if logical in _LOGICAL:
        return _LOGICAL[logical]
    kind = avro_type.get("type")
    if kind in _NESTED:
        return _NESTED[kind]
    return snowflake_type(kind, column)


def arrow_snowflake_type(kind: Any, column: str) -> str:
    """The Snowflake type of a flat Arrow type (the change feed's typed columns,
    ``hudi_sync.manifest.change_feed.typed_columns``), by the same rules as Avro's."""
    import pyarrow as pa

    digits = {"s": 0, "ms": 3, "us": 6, "ns": 9}
    if pa.types.is_integer(kind):
        return "NUMBER(19,0)" if kind.bit_width > 32 else "NUMBER(10,0)"
    if pa.types.is_floating(kind):
        return "FLOAT"
    if pa.types.is_boolean(kind):
        return "BOOLEAN"
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return "VARCHAR"
    if pa.types.is_date(kind):
        return "DATE"
    if pa.types.is_timestamp(kind):
        return f"TIMESTAMP_{'TZ' if kind.tz else 'NTZ'}({digits[kind.unit]})"
    if pa.types.is_decimal(kind) and kind.precision <= _MAX_PRECISION:
        return f"NUMBER({kind.precision},{kind.scale})"
    raise UnsupportedTableError(f"column {column!r}: {kind} has no flat Snowflake type")


@dataclass(frozen=True)
class Column:
    """One external-table column: its name, type and defining expression."""

    name: str
    type: str
    expression: str
    is_partition: bool = False

    def definition(self) -> str:
        return f"{sql_name(self.name)} {self.type} AS ({self.expression})"


def value_column(name: str, sf_type: str) -> Column:
    return Column(name, sf_type, f"VALUE[{quote_literal(name)}]::{sf_type}")


def _partition_type(avro_type: Any, column: str) -> str:
    sf_type = snowflake_type(avro_type, column)
    return sf_type if sf_type.startswith(_PARTITION_TYPES) else "VARCHAR"


def partition_columns(fields: Sequence[PartitionField], hive_style: bool) -> list[Column]:
    """Partition columns parsed from the file's path relative to the table root: the
    ``field=value`` folder (hive style), else the folder at the field's position (one
    field takes every folder, since its values may themselves hold slashes). Where the
    key generator formats the path (timestamp-based), the column is ``<field>_partition``
    and the data field keeps its own value."""
    columns = []
    for position, field in enumerate(fields, start=1):
        sf_type = _partition_type(field.avro_type, field.name)
        if hive_style:
            pattern = quote_literal(f"(^|/){_regex_escape(field.name)}=([^/]*)/")
            text = f"REGEXP_SUBSTR({FILENAME}, {pattern}, 1, 1, 'e', 2)"
        elif len(fields) == 1:
            text = f"REGEXP_SUBSTR({FILENAME}, '^(.*)/[^/]*$', 1, 1, 'e', 1)"
        else:
            text = f"SPLIT_PART({FILENAME}, '/', {position})"
        name = f"{field.name}_partition" if field.formatted else field.name
        columns.append(Column(name, sf_type, f"{text}::{sf_type}", is_partition=True))
    return columns


def _regex_escape(text: str) -> str:
    return "".join(f"\\{c}" if c in r".^$*+?()[]{}|\/" else c for c in text)


def history_columns(
    avro_schema: dict[str, Any],
    partition_fields: Sequence[PartitionField],
    hive_style: bool,
    with_meta_fields: bool,
) -> list[Column]:
    """Meta fields (when populated), data fields, then the partition columns (from the
    path, replacing any data field of the same name). Without meta fields the
    ``_hoodie_file_name`` column is the file's base name, which the view filters on."""
    partitions = partition_columns(partition_fields, hive_style)
    taken = {c.name for c in partitions}
    columns: list[Column] = []
    if with_meta_fields:
        columns += [value_column(m, "VARCHAR") for m in META_FIELDS]
    else:
        columns.append(
            Column("_hoodie_file_name", "VARCHAR", f"REGEXP_SUBSTR({FILENAME}, '[^/]+$')")
        )
    for avro in avro_schema.get("fields", []):
        name = str(avro["name"])
        if name in META_FIELDS or name in taken:
            continue
        columns.append(value_column(name, snowflake_type(avro["type"], name)))
    return columns + partitions


def table_history_columns(table: HudiTable) -> list[Column]:
    """``history_columns`` of ``table``: its schema, partition fields and layout."""
    return history_columns(
        table.avro_schema,
        table.partition_fields,
        table.config.hive_style_partitioning,
        table.config.populate_meta_fields,
    )


def shown_type(sf_type: str) -> str:
    """A declared type as ``INFORMATION_SCHEMA.COLUMNS.DATA_TYPE`` shows it: without its
    precision or scale, ``VARCHAR`` as ``TEXT``."""
    base = sf_type.split("(", 1)[0].strip().upper()
    return {"VARCHAR": "TEXT", "STRING": "TEXT", "DOUBLE": "FLOAT"}.get(base, base)
