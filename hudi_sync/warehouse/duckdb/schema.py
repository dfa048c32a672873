"""The DuckDB types of a table's columns: from its Avro schema, as ``read_parquet`` reads
the files Hudi writes (the history's bound schema), and of the parquet files pyarrow
writes (folded logs, change files); ``read_parquet``'s ``schema`` map of them."""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from typing import Any

import duckdb
import pyarrow as pa

from hudi_sync.errors import UnsupportedTableError
from hudi_sync.manifest.log_parquet import (
    FILE_ID_COLUMN,
    SOURCE_COLUMN,
)
from hudi_sync.table import HudiTable
from hudi_sync.table.config.schema import META_FIELDS
from hudi_sync.table.timeline.listing import TimelineListing
from hudi_sync.warehouse.common import (
    declared_schema,
)
from hudi_sync.warehouse.common.quoting import duckdb_identifier as quote_identifier
from hudi_sync.warehouse.common.quoting import duckdb_literal as quote_literal


def bound_columns(
    table: HudiTable, instant: str | None, listing: TimelineListing | None = None
) -> list[tuple[str, str]] | None:
    """The history's columns from the table's declared schema (``declared_schema`` at the
    synced ``instant``), or None where only the files can tell them (the history then
    reads every file's footer, by name): a table that declares no schema, or one with a
    type ``duckdb_type`` does not map. A table whose hive partition columns are dropped
    from its files is never bound (DuckDB takes no ``schema`` beside
    ``hive_partitioning``). ``listing``: the sync's listing of the timeline folder."""
    avro = declared_schema(table, instant, listing)
    if avro is None:
        return None
    try:
        return empty_history_columns(table, avro)
    except UnsupportedTableError:
        return None


def schema_map(columns: Sequence[tuple[str, str]]) -> str:
    """``read_parquet``'s ``schema`` argument for ``columns`` (name, DuckDB type): each
    file's columns are matched by name (Hudi's files have no field ids) and cast to the
    type; a column a file lacks reads NULL, a column the map lacks is left out."""
    entries = ", ".join(
        f"{quote_literal(name)}: {{name: {quote_literal(name)}, type: {quote_literal(sql_type)}, "
        "default_value: NULL}"
        for name, sql_type in columns
    )
    return f"MAP {{{entries}}}"


@functools.cache
def _types_database() -> duckdb.DuckDBPyConnection:
    """An in-memory database kept for the process, which ``arrow_columns`` asks how DuckDB
    reads Arrow types: opening one costs tens of milliseconds, every sync of a feed or a
    Merge-on-Read table asks."""
    return duckdb.connect()


_TYPES_LOCK = threading.Lock()


def arrow_columns(schema: pa.Schema) -> list[tuple[str, str]]:
    """The columns and DuckDB types of parquet files pyarrow writes with ``schema`` (the
    folded log files, the change files), as DuckDB reads Arrow: its Arrow and parquet
    readers agree on the types pyarrow writes."""
    with _TYPES_LOCK:  # a connection serves one thread at a time
        relation = _types_database().from_arrow(pa.Table.from_batches([], schema=schema))
        return [(str(n), str(t)) for n, t in zip(relation.columns, relation.types, strict=True)]


def log_columns(schema: pa.Schema) -> list[tuple[str, str]]:
    """The folded log files' columns (``PublishedLogs.schema``) in the order the files
    hold them (``folded_file_rows`` appends the file group and the file name last)."""
    columns = arrow_columns(schema)
    last = [c for c in columns if c[0] in (FILE_ID_COLUMN, SOURCE_COLUMN)]
    return [c for c in columns if c not in last] + last


def empty_history_columns(
    table: HudiTable, avro: dict[str, Any] | None = None
) -> list[tuple[str, str]]:
    """The history's columns and DuckDB types: what ``read_parquet`` gives for the files
    Hudi writes with the table's Avro schema (the history's bound schema, and its typed
    select without rows before the table's first commit). Meta fields first (Hudi writes
    them even when it does not populate them), then the schema's fields; partition
    columns dropped from the files come from the path, last (typed by the schema here;
    DuckDB infers them from the values once there are files). ``avro``: the table's
    schema when already read."""
    fields: list[Any] = (avro or table.avro_schema).get("fields", [])
    columns = [(name, "VARCHAR") for name in META_FIELDS]
    named: dict[str, Any] = {}
    columns += [
        (str(f["name"]), duckdb_type(f["type"], named, str(f["name"])))
        for f in fields
        if f["name"] not in META_FIELDS
    ]
    if table.config.hive_style_partitioning and table.config.drop_partition_columns:
        partitions = [p.name for p in table.partition_fields]
        types = dict(columns)
        columns = [c for c in columns if c[0] not in partitions]
        columns += [(name, types.get(name, "VARCHAR")) for name in partitions]
    return columns


_DUCKDB_PRIMITIVES = {
    "boolean": "BOOLEAN",
    "int": "INTEGER",
    "long": "BIGINT",
    "float": "FLOAT",
    "double": "DOUBLE",
    "string": "VARCHAR",
    "enum": "VARCHAR",
    "bytes": "BLOB",
    "fixed": "BLOB",
}

_DUCKDB_LOGICAL = {
    "date": "DATE",
    "time-millis": "TIME",
    "time-micros": "TIME",
    "timestamp-millis": "TIMESTAMP WITH TIME ZONE",
    "timestamp-micros": "TIMESTAMP WITH TIME ZONE",
    "timestamp-nanos": "TIMESTAMP WITH TIME ZONE",
    "local-timestamp-millis": "TIMESTAMP",
    "local-timestamp-micros": "TIMESTAMP",
    "local-timestamp-nanos": "TIMESTAMP_NS",
    "uuid": "VARCHAR",
}

_DUCKDB_MAX_DECIMAL_PRECISION = 38  # wider parquet decimals read as DOUBLE


def duckdb_type(avro_type: Any, named: dict[str, Any], column: str) -> str:
    """The DuckDB type ``read_parquet`` gives a parquet column written from ``avro_type``
    (a union with null is its other branch; ``named`` collects named types for
    references by name)."""
    if isinstance(avro_type, list):
        branches = [t for t in avro_type if t != "null"]
        if len(branches) == 1:
            return duckdb_type(branches[0], named, column)
        # parquet-avro writes any other union as a group of member<i> fields.
        members = ", ".join(
            f"member{i} {duckdb_type(t, named, column)}" for i, t in enumerate(branches)
        )
        return f"STRUCT({members})"
    if isinstance(avro_type, str):
        if avro_type in _DUCKDB_PRIMITIVES:
            return _DUCKDB_PRIMITIVES[avro_type]
        if avro_type in named:
            return duckdb_type(named[avro_type], named, column)
        raise UnsupportedTableError(f"column {column!r}: Avro type {avro_type!r} is not mapped")
    if not isinstance(avro_type, dict):
        raise UnsupportedTableError(f"column {column!r}: Avro type {avro_type!r} is not mapped")
    kind = avro_type.get("type")
    if kind in ("record", "enum", "fixed") and "name" in avro_type:
        name = str(avro_type["name"])
        named[name] = avro_type
        if avro_type.get("namespace"):
            named[f"{avro_type['namespace']}.{name}"] = avro_type
    logical = avro_type.get("logicalType")
    if logical == "decimal":
        precision, scale = int(avro_type["precision"]), int(avro_type.get("scale", 0))
        if precision > _DUCKDB_MAX_DECIMAL_PRECISION:
            return "DOUBLE"
        return f"DECIMAL({precision},{scale})"
    if logical in _DUCKDB_LOGICAL:
        return _DUCKDB_LOGICAL[str(logical)]
    if kind == "record":
        fields = ", ".join(
            f"{quote_identifier(str(f['name']))} {duckdb_type(f['type'], named, column)}"
            for f in avro_type.get("fields", [])
        )
        return f"STRUCT({fields})"
    if kind == "array":
        return f"{duckdb_type(avro_type['items'], named, column)}[]"
    if kind == "map":
        return f"MAP(VARCHAR, {duckdb_type(avro_type['values'], named, column)})"
    return duckdb_type(kind, named, column)


def canonical_types(types: Sequence[str]) -> list[str]:
    """``types`` as DuckDB spells them back (``information_schema``'s text), so a
    declared type compares with a mapped one whatever the mapping's spelling."""
    if not types:
        return []
    casts = ", ".join(f"CAST(NULL AS {sql_type})" for sql_type in types)
    with _TYPES_LOCK:
        return [str(t) for t in _types_database().sql(f"SELECT {casts}").types]
