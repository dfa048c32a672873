"""A table's snapshot rows without Spark: every file slice read and merged.

For tests, the CLI and warehouses that need rows rather than files. Each file slice is
read on its own (``read_file_slice``), so ``snapshot_tables`` holds one slice at a
time; ``read_snapshot`` concatenates them. Rows have the snapshot's newest schema:
the schema of its newest base file (the latest write's columns, meta fields first),
with older slices aligned to it; a snapshot of log files only takes the table's Avro
schema. hudi-rs returns each slice with its own base file's schema instead, which is
the same on tables whose schema did not change.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from hudi_sync.errors import UnsupportedTableError
from hudi_sync.table.config.schema import META_FIELDS
from hudi_sync.table.files.fs_view import FileSlice
from hudi_sync.table.keys.record_keys import key_fields
from hudi_sync.table.read.slice_reader import read_file_slice
from hudi_sync.table.records.merge import MergeMode, MergeRules, merge_rules
from hudi_sync.table.table import HudiTable
from hudi_sync.table.timeline.instant import comparable_instant

# Copy-on-Write slices have no log files: their rules are never consulted.
_NO_MERGE = MergeRules(MergeMode.COMMIT_TIME_ORDERING)


def read_snapshot(
    table: HudiTable, as_of: str | None = None, read_optimized: bool = False
) -> pa.Table:
    """The table's rows at the latest snapshot, or as of a time-travel value (any
    spelling ``HudiTable.resolve_as_of`` takes); MOR tables read-optimized (base
    files only) when asked."""
    schema, tables = snapshot_tables(table, as_of, read_optimized)
    parts = list(tables)
    return pa.concat_tables(parts) if parts else schema.empty_table()


def snapshot_tables(
    table: HudiTable, as_of: str | None = None, read_optimized: bool = False
) -> tuple[pa.Schema, Iterator[pa.Table]]:
    """The snapshot's schema and its rows, one table per file slice, read lazily.

    Raises UnsupportedTableError before reading anything when a MOR table's merge
    rules are not supported, or when its records have no ``_hoodie_record_key``
    (``hoodie.populate.meta.fields=false``) and its key generator's keys cannot be
    rebuilt (``record_keys``); hudi-rs appends such log records unmerged."""
    instant = table.resolve_as_of(as_of) if as_of is not None else None
    slices = table.view.slices_as_of(instant, read_optimized)
    rules = slice_merge_rules(table, slices)
    schema = snapshot_schema(table, slices)
    committed = table.view.is_committed

    def tables() -> Iterator[pa.Table]:
        for file_slice in slices:
            yield read_file_slice(table.location, file_slice, rules, committed, instant, schema)

    return schema, tables()


def slice_merge_rules(table: HudiTable, slices: list[FileSlice]) -> MergeRules:
    """The rules that merge the log records of ``slices``; UnsupportedTableError when
    the table's rules are not supported, or its keys cannot be rebuilt (a table
    without meta fields, see ``record_keys``)."""
    if not any(s.log_files for s in slices):
        return _NO_MERGE
    return table_merge_rules(table)


def table_merge_rules(table: HudiTable) -> MergeRules:
    """The rules that merge the table's log records (``slice_merge_rules``' checks,
    whether or not a slice has logs now)."""
    rules = merge_rules(table.config, table.uri)
    if not table.config.populate_meta_fields:
        # No _hoodie_record_key: records are keyed as the key generator keys them.
        rules = replace(rules, key_fields=key_fields(table.config, table.uri))
    return rules


def snapshot_schema(table: HudiTable, slices: list[FileSlice]) -> pa.Schema:
    """The newest base file's schema (without Parquet metadata), else the table's
    Avro schema as Arrow, meta fields first. A table written without meta fields
    (``hoodie.populate.meta.fields=false``) has none: its files may still hold the
    columns, mostly null, and hudi-rs leaves them out too."""
    newest = _newest_base(slices)
    meta = table.config.populate_meta_fields
    if newest is not None and newest.relative_base_path is not None:
        with table.location.fs.open(table.location.join(newest.relative_base_path), "rb") as f:
            schema = pq.read_schema(f).remove_metadata()
        if any(s.log_files for s in slices):
            schema = _with_added_columns(table, schema)
        if meta:
            return schema
        return pa.schema([f for f in schema if f.name not in META_FIELDS])
    fields = [pa.field(name, pa.string()) for name in META_FIELDS] if meta else []
    if not slices and not table.timeline.completed_writes and not table.config.create_schema:
        return pa.schema(fields)  # an empty table may have no schema at all
    return pa.schema([*fields, *table_data_fields(table)])


def _newest_base(slices: list[FileSlice]) -> FileSlice | None:
    """The first slice with a base file of the newest base instant (what ``max`` by
    instant gives), each distinct instant compared once (100,000 slices are written by
    a few thousand instants)."""
    first: dict[str, FileSlice] = {}
    for s in slices:
        if s.base_file is not None and s.base_instant not in first:
            first[s.base_instant] = s
    return max(first.values(), key=lambda s: comparable_instant(s.base_instant), default=None)


def table_data_fields(table: HudiTable) -> list[pa.Field]:
    """The data columns (no meta fields) of the table's newest schema (its latest
    write's, else ``hoodie.table.create.schema``), as Arrow reads them."""
    named: dict[str, Any] = {}
    return [
        pa.field(field["name"], avro_to_arrow(field["type"], named))
        for field in table.avro_schema.get("fields", [])
        if field["name"] not in META_FIELDS
    ]


def _with_added_columns(table: HudiTable, schema: pa.Schema) -> pa.Schema:
    """``schema`` plus the columns of the latest commit's schema it lacks: a write that
    added a column to log files only has no base file with it yet."""
    added = [f for f in table_data_fields(table) if f.name not in schema.names]
    return pa.schema([*schema, *added]) if added else schema


_PRIMITIVES = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}
_LOGICAL = {
    "date": pa.date32(),
    "time-millis": pa.time32("ms"),
    "time-micros": pa.time64("us"),
    "timestamp-millis": pa.timestamp("ms", "UTC"),
    "timestamp-micros": pa.timestamp("us", "UTC"),
    "local-timestamp-millis": pa.timestamp("ms"),
    "local-timestamp-micros": pa.timestamp("us"),
    "uuid": pa.string(),
}


def avro_to_arrow(avro: Any, named: dict[str, Any]) -> pa.DataType:
    """The Arrow type of an Avro type as Parquet readers give it (a nullable union is
    its other branch; ``named`` collects named types for later references)."""
    if isinstance(avro, list):
        branches = [b for b in avro if b != "null"]
        if len(branches) != 1:
            raise UnsupportedTableError(f"Avro union {avro} has no Arrow equivalent")
        return avro_to_arrow(branches[0], named)
    if isinstance(avro, str):
        if avro in _PRIMITIVES:
            return _PRIMITIVES[avro]
        if avro in named:
            return avro_to_arrow(named[avro], named)
        raise UnsupportedTableError(f"Avro type {avro!r} is not known")
    kind = avro.get("type")
    if avro.get("name"):
        named[str(avro["name"])] = avro
        if avro.get("namespace"):
            named[f"{avro['namespace']}.{avro['name']}"] = avro
    logical = avro.get("logicalType")
    if logical == "decimal":
        precision, scale = int(avro["precision"]), int(avro.get("scale", 0))
        return (
            pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
        )
    if logical in _LOGICAL:
        return _LOGICAL[logical]
    if kind == "record":
        return pa.struct(
            [pa.field(f["name"], avro_to_arrow(f["type"], named)) for f in avro["fields"]]
        )
    if kind == "array":
        return pa.list_(avro_to_arrow(avro["items"], named))
    if kind == "map":
        return pa.map_(pa.string(), avro_to_arrow(avro["values"], named))
    if kind == "enum":
        return pa.string()
    if kind == "fixed":
        return pa.binary(int(avro["size"]))
    return avro_to_arrow(kind, named)
