"""Reading a ``ChangeSplit`` wherever its files can be opened (Spark's Python workers, or
the driver for a small query), one split at a time: rows ``op``, ``ts_ms`` (the commit's
instant), ``before``, ``after`` (JSON of the images, without meta fields).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_sync.errors import CorruptTableError
from hudi_sync.storage import Location, read_parquet
from hudi_sync.table.cdc.log import (
    CdcMode,
    arrow_rows,
    image_json,
    image_json_column,
    images_at,
    read_cdc_columns,
    read_cdc_file,
)
from hudi_sync.table.cdc.splits import ChangeSplit, InferenceCase
from hudi_sync.table.config.schema import META_FIELDS
from hudi_sync.table.files.filenames import parse_base_file
from hudi_sync.table.read.slice_reader import align, merge_entries
from hudi_sync.table.records.log_records import LogRecord, read_slice_log_records
from hudi_sync.table.records.merge import MergeRules, merge_records
from hudi_sync.table.timeline.instant import comparable_instant

COMMIT_TIME = META_FIELDS[0]

RECORD_KEY = META_FIELDS[2]

CHANGE_SCHEMA = pa.schema(
    [
        pa.field("op", pa.string()),
        pa.field("ts_ms", pa.string()),
        pa.field("before", pa.string()),
        pa.field("after", pa.string()),
    ]
)

Image = Mapping[str, Any]

Change = tuple[str, Image | None, Image | None]


def read_split(location: Location, split: ChangeSplit) -> pa.Table:
    """The change rows of one split (``CHANGE_SCHEMA``), in the order they were logged.

    CDC logs (``AS_IS``) and base files are read column-wise: a CDC block is decoded
    into Arrow columns (``avro_arrow``), images the logging mode left out are looked up
    by key with Arrow kernels (a hash join), and the JSON images are built column by
    column (``image_json_column``). Other cases, and CDC blocks with a type the column
    decoder lacks, are read row by row, with the same result."""
    columns = _columns_of(location, split)
    if columns is None:
        return _rows_table(split, _split_changes(location, split))
    ops, before, after = columns
    count = len(ops)
    return pa.table(
        {
            "op": ops,
            "ts_ms": pa.array([split.instant] * count, pa.string()) if count else _EMPTY,
            "before": before,
            "after": after,
        },
        schema=CHANGE_SCHEMA,
    )


# Not pa.array([]): converting a Python list makes pyarrow import pandas (half a CPU-second)
# at import time, in every process that loads this module: format("hudi")'s planners.
_EMPTY = pa.nulls(0, pa.string())


def _rows_table(split: ChangeSplit, changes: list[Change]) -> pa.Table:
    ts = split.instant
    return pa.table(
        {
            "op": pa.array([c[0] for c in changes], pa.string()),
            "ts_ms": pa.array([ts] * len(changes), pa.string()),
            "before": pa.array([image_json(c[1], META_FIELDS) for c in changes], pa.string()),
            "after": pa.array([image_json(c[2], META_FIELDS) for c in changes], pa.string()),
        },
        schema=CHANGE_SCHEMA,
    )


Columns = tuple[pa.Array, pa.Array, pa.Array]  # op, before JSON, after JSON


def _columns_of(location: Location, split: ChangeSplit) -> Columns | None:
    """A split's ``op``, ``before`` and ``after`` columns read column-wise, or ``None``
    when it must be read row by row."""
    case = split.case
    if case is InferenceCase.AS_IS:
        return _as_is_columns(location, split)
    if case in (InferenceCase.BASE_FILE_INSERT, InferenceCase.BASE_FILE_DELETE):
        inserted = case is InferenceCase.BASE_FILE_INSERT
        table = _read_table(location, split.after_file if inserted else split.before_file)
        if table is None:
            return _EMPTY, _EMPTY, _EMPTY
        images = image_json_column(table, META_FIELDS)
        nothing = pa.nulls(table.num_rows, pa.string())
        ops = pa.array(["i" if inserted else "d"] * table.num_rows, pa.string())
        return (ops, nothing, images) if inserted else (ops, images, nothing)
    return None


def _as_is_columns(location: Location, split: ChangeSplit) -> Columns | None:
    files = [
        (_read_bytes(location, relative, location.uri_of(relative)), location.uri_of(relative))
        for relative in split.cdc_files
    ]
    records = read_cdc_columns(files, split.part, split.parts)
    if records is None:
        return None
    names = {f.name for f in records.type}
    if "op" not in names:
        return None
    ops = records.field("op").cast(pa.string())
    count = len(records)

    def image(name: str) -> pa.Array:
        if name not in names:
            return pa.nulls(count, pa.string())
        return image_json_column(records.field(name))

    mode = CdcMode(split.mode)
    if mode is CdcMode.DATA_BEFORE_AFTER:
        return ops, image("before"), image("after")
    if "record_key" not in names:
        return None
    # As str(record["record_key"]) of a record decoded one by one.
    keys = pc.fill_null(records.field("record_key").cast(pa.string()), "None")
    after = _images_by_key(location, split.after_file, keys, pc.not_equal(ops, "d"))
    if mode is CdcMode.DATA_BEFORE:
        return ops, image("before"), after
    before = _images_by_key(location, split.before_file, keys, pc.not_equal(ops, "i"))
    return ops, before, after


def _images_by_key(
    location: Location, relative: str | None, keys: pa.Array, wanted: pa.Array
) -> pa.Array:
    """For each of ``keys`` where ``wanted``, the JSON image of the base file's row with
    that record key (the last such row), else null: a hash join of the keys with the
    file's rows. Only the record-key and data columns are read."""
    wanted = pc.fill_null(wanted, True)  # a null op is neither "i" nor "d"
    count = len(keys)
    if relative is None or not pc.any(wanted).as_py():
        return pa.nulls(count, pa.string())
    table = _read_table(location, relative, data_only=True)
    if table is None or RECORD_KEY not in table.column_names:
        return pa.nulls(count, pa.string())
    needed = pc.unique(keys.filter(wanted))
    stored = table.column(RECORD_KEY).cast(pa.string())
    found = table.filter(pc.is_in(stored, value_set=needed))
    # The last row of a key wins (index_in finds the first: reverse).
    found = found.take(pa.array(np.arange(found.num_rows - 1, -1, -1, dtype=np.int64)))
    position = pc.index_in(keys, value_set=found.column(RECORD_KEY).cast(pa.string()))
    position = pc.if_else(wanted, position, pa.scalar(None, position.type))
    data = found.drop_columns([c for c in found.column_names if c in META_FIELDS])
    return image_json_column(images_at(data, position))


def _split_changes(location: Location, split: ChangeSplit) -> list[Change]:
    case = split.case
    if case is InferenceCase.BASE_FILE_INSERT:
        return [("i", None, row) for row in _rows(location, split.after_file)]
    if case is InferenceCase.BASE_FILE_DELETE:
        return [("d", row, None) for row in _rows(location, split.before_file)]
    if case is InferenceCase.REPLACE_COMMIT:  # the replaced slice, logs merged (MOR)
        base, records = _slice_records(location, split)
        if not records:
            return [("d", row, None) for row in _rows(location, split.before_file)]
        merged = _merged(base, records, split.rules, _where(location, split))
        return [("d", row, None) for row in merged.values()]
    if case is InferenceCase.LOG_FILE:
        return _log_file_changes(location, split)
    if case is InferenceCase.BASE_FILE_DIFF:
        return _base_file_diff(location, split)
    return _as_is_changes(location, split)


def _base_file_diff(location: Location, split: ChangeSplit) -> list[Change]:
    """BASE_FILE_DIFF: the rewritten base file against its previous version, by record
    key: rows the commit wrote (their commit time is its instant) are ``i`` or ``u``,
    keys only the previous version holds ``d``; rows copied over unchanged (a record
    that lost by ordering value keeps its old commit time) are no change."""
    before = {str(row[RECORD_KEY]): row for row in _rows(location, split.before_file)}
    changes: list[Change] = []
    kept: set[str] = set()
    for row in _rows(location, split.after_file):
        key = str(row[RECORD_KEY])
        kept.add(key)
        if row[COMMIT_TIME] == split.instant:
            old = before.get(key)
            changes.append(("u", old, row) if old is not None else ("i", None, row))
    changes += [("d", row, None) for key, row in before.items() if key not in kept]
    return changes


def _as_is_changes(location: Location, split: ChangeSplit) -> list[Change]:
    records: list[dict[str, Any]] = []
    for relative in split.cdc_files:
        where = location.uri_of(relative)
        records.extend(read_cdc_file(_read_bytes(location, relative, where), where))
    total = len(records)
    records = records[total * split.part // split.parts : total * (split.part + 1) // split.parts]
    mode = CdcMode(split.mode)
    if mode is CdcMode.DATA_BEFORE_AFTER:
        return [(r["op"], r.get("before"), r.get("after")) for r in records]
    needs_after = [str(r["record_key"]) for r in records if r["op"] != "d"]
    after = _rows_by_key(location, split.after_file, needs_after)
    if mode is CdcMode.DATA_BEFORE:
        return [
            (r["op"], r.get("before"), after.get(str(r["record_key"])) if r["op"] != "d" else None)
            for r in records
        ]
    needs_before = [str(r["record_key"]) for r in records if r["op"] != "i"]
    before = _rows_by_key(location, split.before_file, needs_before)
    return [
        (
            r["op"],
            before.get(str(r["record_key"])) if r["op"] != "i" else None,
            after.get(str(r["record_key"])) if r["op"] != "d" else None,
        )
        for r in records
    ]


def _log_file_changes(location: Location, split: ChangeSplit) -> list[Change]:
    """LOG_FILE: for each key the commit's log records name, what a snapshot reader saw
    just before the commit against what it sees after it, both merged by the table's
    rules: ``i`` when the key appears, ``d`` when it goes (a delete block's record or
    a delete in a data block that wins), ``u`` when the record it shows changes (a
    record that loses by ordering value changes nothing)."""
    base, records = _slice_records(location, split)
    keys = list(dict.fromkeys(r.key for r in records if r.instant == split.instant))
    if not keys:
        return []
    wanted, where = set(keys), _where(location, split)
    before = _merged(base, records, split.rules, where, wanted, leave_out=split.instant)
    after = _merged(base, records, split.rules, where, wanted)
    changes: list[Change] = []
    for key in keys:
        old, new = before.get(key), after.get(key)
        if old is None and new is not None:
            changes.append(("i", None, new))
        elif old is not None and new is None:
            changes.append(("d", old, None))
        elif old is not None and new is not None and old != new:
            changes.append(("u", old, new))
    return changes


def _slice_records(
    location: Location, split: ChangeSplit
) -> tuple[pa.Table | None, list[LogRecord]]:
    """A file group's base file rows and its log records up to ``split.instant`` (the
    committed blocks written after the base file), in merge order."""
    base_instant = (
        parse_base_file(split.before_file.rsplit("/", 1)[-1]).instant if split.before_file else None
    )
    ts = comparable_instant(split.instant)
    applies = {
        c
        for c in split.committed
        if comparable_instant(c) <= ts
        and (base_instant is None or comparable_instant(c) > comparable_instant(base_instant))
    }
    files = [
        (_read_bytes(location, relative, location.uri_of(relative)), location.uri_of(relative))
        for relative in split.log_files
    ]
    # Read as one slice: a rollback block in a later file cancels blocks of earlier ones.
    records = read_slice_log_records(files, applies.__contains__)
    return _read_table(location, split.before_file), records


def _merged(
    base: pa.Table | None,
    records: list[LogRecord],
    rules: MergeRules,
    where: str,
    keys: set[str] | None = None,
    leave_out: str | None = None,
) -> dict[str, dict[str, Any]]:
    """The rows a snapshot reader sees for ``keys`` (all: None): the base rows merged
    with the log records by the table's rules (``merge_records``), without the records
    of the instant ``leave_out``."""
    rows, entries = merge_entries(
        [r for r in records if r.instant != leave_out and (keys is None or r.key in keys)]
    )
    if base is not None and keys is not None:
        stored = base.column(RECORD_KEY).cast(pa.string())
        base = base.filter(pc.is_in(stored, value_set=pa.array(sorted(keys), pa.string())))
    schema = _rows_schema(base, rows)
    if base is not None:
        base = align(base, schema, where)
    log_rows = pa.Table.from_pylist(rows, schema=schema)
    merged = merge_records(base, log_rows, entries, rules)
    return {str(row[RECORD_KEY]): row for row in arrow_rows(merged)}


def _where(location: Location, split: ChangeSplit) -> str:
    return location.uri_of(split.before_file or split.partition_path)


def _rows_schema(base: pa.Table | None, rows: list[dict[str, Any]]) -> pa.Schema:
    """The base file's columns, then those only log records have (a later schema's)."""
    fields = list(base.schema.remove_metadata()) if base is not None else []
    names = {f.name for f in fields}
    if rows and any(name not in names for row in rows for name in row):
        inferred = pa.array(rows).type
        fields += [f for f in inferred if f.name not in names]
    return pa.schema(fields)


def _read_bytes(location: Location, relative: str, where: str) -> bytes:
    try:
        return bytes(location.fs.cat_file(location.join(relative)))
    except FileNotFoundError:
        raise CorruptTableError(f"{where}: file listed by the commit is missing") from None


def _read_table(
    location: Location, relative: str | None, data_only: bool = False
) -> pa.Table | None:
    """A base file's rows; ``data_only``: only the record key and the data columns
    (no other meta field), string columns that are all dictionary-encoded read as
    dictionaries (decoded after the rows are picked)."""
    if relative is None:
        return None
    path = location.join(relative)
    try:
        with location.fs.open(path, "rb") as handle:
            if not data_only:
                return cast(pa.Table, read_parquet(handle))
            parquet = pq.ParquetFile(handle)
            names = [
                n for n in parquet.schema_arrow.names if n == RECORD_KEY or n not in META_FIELDS
            ]
            dictionaries = _dictionary_columns(parquet, names)
            if dictionaries:
                parquet = pq.ParquetFile(handle, read_dictionary=dictionaries)
            # One thread: splits are read in parallel already (tasks, or driver threads).
            return parquet.read(columns=names, use_threads=False)
    except FileNotFoundError:
        raise CorruptTableError(
            f"{location.uri_of(relative)}: base file needed by the CDC query is missing (cleaned?)"
        ) from None


def _dictionary_columns(parquet: pq.ParquetFile, names: list[str]) -> list[str]:
    """Top-level string columns small enough per row (under 4 bytes, less than a plain
    string's length prefix) to be dictionary indices in every row group: read as
    dictionaries they skip building every row's string."""
    metadata = parquet.metadata
    schema = parquet.schema_arrow
    sizes: dict[str, int] = {}
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for index in range(row_group.num_columns):
            column = row_group.column(index)
            sizes[column.path_in_schema] = (
                sizes.get(column.path_in_schema, 0) + column.total_uncompressed_size
            )
    rows = max(metadata.num_rows, 1)
    return [
        name
        for name in names
        if pa.types.is_string(schema.field(name).type)
        and name in sizes
        and sizes[name] < 4 * rows
        and metadata.num_rows > 0
    ]


def _rows(location: Location, relative: str | None) -> list[dict[str, Any]]:
    table = _read_table(location, relative)
    return arrow_rows(table) if table is not None else []


def _rows_by_key(
    location: Location, relative: str | None, keys: list[str]
) -> dict[str, dict[str, Any]]:
    """Rows of a base file whose record key is one of ``keys``."""
    if not keys:
        return {}
    table = _read_table(location, relative)
    if table is None:
        return {}
    wanted = table.filter(pc.is_in(table.column(RECORD_KEY), value_set=pa.array(keys)))
    return {str(row[RECORD_KEY]): row for row in arrow_rows(wanted)}


def change_rows(location: Location, splits: Iterable[ChangeSplit], threads: int = 1) -> pa.Table:
    """Every split's rows, in split order (for callers without Spark), read by up to
    ``threads`` threads (Parquet and Arrow kernels run without the interpreter lock)."""
    todo = list(splits)
    if threads > 1 and len(todo) > 1:
        with ThreadPoolExecutor(max_workers=min(threads, len(todo))) as pool:
            tables = list(pool.map(lambda split: read_split(location, split), todo))
    else:
        tables = [read_split(location, split) for split in todo]
    return pa.concat_tables(tables) if tables else CHANGE_SCHEMA.empty_table()


__all__ = ["CHANGE_SCHEMA", "change_rows", "read_split"]
