"""One file slice read as Hudi reads it: the base file merged with the log files.

A Merge-on-Read file slice is an optional Parquet base file plus log files whose
blocks update and delete its records. Reading it means decoding the log records
Hudi would apply (``scan_slice_logs``: committed blocks, minus rolled-back
ones, log compaction in place) and merging them over the base rows by the table's
merge rules (``merge_records``). Memory is bounded by one slice: its base file and
its log records.

Time travel: a block belongs to the snapshot at instant T when its ``INSTANT_TIME``
header (the write's requested time) is at or before T, on every table version. This
is what hudi-rs does (its log scan's instant range ends at T) and what Hudi's log
record reader does (blocks newer than its latest instant are skipped); the file
slice itself already keeps only log files of committed writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_sync.arrow_numpy import arrow_to_numpy, numpy_to_arrow
from hudi_sync.errors import CorruptTableError, UnsupportedTableError, first_line
from hudi_sync.storage import Location
from hudi_sync.table.config.schema import META_FIELDS
from hudi_sync.table.files.fs_view import FileSlice
from hudi_sync.table.keys.record_keys import check_key_types, record_keys
from hudi_sync.table.records.log_records import (
    AppliedBlocks,
    LogRecord,
    applied_blocks,
    block_records,
    data_block_table,
    data_block_tables,
    delete_keys,
)
from hudi_sync.table.records.logfile import BlockType
from hudi_sync.table.records.merge import (
    IS_DELETED_FIELD,
    OPERATION_FIELD,
    SEQNO_FIELD,
    DeleteKey,
    LogEntry,
    MergeRules,
    fold_log_records,
    mark_first_base_rows,
)
from hudi_sync.table.records.vector_merge import columnar_fold, columnar_folds, merge_slice
from hudi_sync.table.timeline.instant import comparable_instant

_RECORD_KEY = META_FIELDS[2]
_ARROW_ERRORS = (pa.ArrowException, OSError, ValueError, TypeError, OverflowError)


def read_file_slice(
    location: Location,
    file_slice: FileSlice,
    rules: MergeRules,
    committed: Callable[[str], bool],
    as_of: str | None = None,
    schema: pa.Schema | None = None,
    in_file_order: bool = True,
) -> pa.Table:
    """The rows of one file slice as of instant ``as_of`` (latest when None).

    ``committed`` says whether a write's instant committed (``FileSystemView
    .is_committed``): blocks of other instants are leftovers of failed writes. The
    rows have ``schema`` (base rows and log rows aligned to it: missing columns null,
    types cast), by default the base file's; a slice without a base file needs one.
    They come in Hudi's order (base file order, a log version in place of the row it
    replaces, then new keys) unless ``in_file_order`` is False (a query: cheaper).
    """
    return _merged_slice(location, file_slice, rules, committed, as_of, schema, in_file_order)[0]


@dataclass(frozen=True)
class MergeCounts:
    """What merging a slice's logs into its base did, as Hudi 1.x's compactor reports it
    in the write stat (``HoodieWriteStat``, checked on the compactions of the fixtures'
    metadata tables): rows written; base rows a log record updated; keys the logs
    deleted (with or without a base row); rows inserted from the logs; the data blocks'
    records (a delete block's keys are not counted), every block and file read, and the
    distinct keys among all log records (``totalUpdatedRecordsCompacted``)."""

    writes: int
    updates: int
    deletes: int
    inserts: int
    log_records: int
    log_keys: int
    log_blocks: int
    rollback_blocks: int
    log_files: int


def read_file_slice_counted(
    location: Location,
    file_slice: FileSlice,
    rules: MergeRules,
    committed: Callable[[str], bool],
    schema: pa.Schema | None = None,
) -> tuple[pa.Table, MergeCounts]:
    """The latest rows of one file slice (``read_file_slice``) and ``MergeCounts``:
    what a compaction of the slice reports."""
    rows, base, log = _merged_slice(location, file_slice, rules, committed, None, schema)

    def keys(table: pa.Table) -> set[str]:  # built as the merge built them, without meta fields
        if rules.key_fields:
            built = record_keys(table, rules.key_fields, _base_uri(location, file_slice))
            return set(built.to_pylist())
        return set(table.column(_RECORD_KEY).to_pylist())

    base_keys = keys(base) if base is not None else set()
    written = keys(rows)
    logged = log.keys() if log is not None else set()
    counts = MergeCounts(
        writes=rows.num_rows,
        updates=len(base_keys & logged & written),
        deletes=len(logged - written),  # a delete of a key without base row counts too
        inserts=len(written - base_keys),
        log_records=log.rows.num_rows if log is not None else 0,
        log_keys=len(logged),
        log_blocks=log.blocks_read if log is not None else 0,
        rollback_blocks=log.rollback_blocks if log is not None else 0,
        log_files=len(file_slice.log_files),
    )
    return rows, counts


@dataclass(frozen=True)
class SliceLog:
    """A file slice's applied log records, in merge order, as columns: the data
    records' rows (aligned to the read's schema) and their keys (built from the key
    fields when the table has no meta fields), every record as a ``LogEntry`` (a row
    index, or a delete-block record), and what the scan read to get them."""

    rows: pa.Table
    row_keys: pa.Array
    entries: list[LogEntry]
    blocks_read: int
    rollback_blocks: int

    def keys(self) -> set[str]:
        """The distinct keys of every log record, data and delete."""
        found: set[str] = set(self.row_keys.to_pylist())
        found.update(e.key for e in self.entries if isinstance(e, DeleteKey))
        return found


def _merged_slice(
    location: Location,
    file_slice: FileSlice,
    rules: MergeRules,
    committed: Callable[[str], bool],
    as_of: str | None,
    schema: pa.Schema | None,
    in_file_order: bool = True,
) -> tuple[pa.Table, pa.Table | None, SliceLog | None]:
    """The slice's merged rows, its aligned base rows and its log records (None
    without log files)."""
    base = _read_base(location, file_slice) if file_slice.base_file is not None else None
    target = schema if schema is not None else base.schema if base is not None else None
    if target is None:
        raise ValueError(f"{file_slice.file_id}: a slice without base file needs a schema")
    if base is not None:
        base = align(base, target, _base_uri(location, file_slice))
    if not file_slice.log_files:
        return (base if base is not None else target.empty_table()), base, None
    log = _slice_log(location, file_slice, committed, as_of, rules.key_fields, target)
    where = _base_uri(location, file_slice)
    merged = _merge(base, log.rows, log, rules, target, where, in_file_order)
    return merged, base, log


def _merge(
    base: pa.Table | None,
    log_rows: pa.Table,
    log: SliceLog,
    rules: MergeRules,
    schema: pa.Schema,
    where: str,
    in_file_order: bool,
) -> pa.Table:
    """``merge_slice`` of ``base`` and ``log_rows`` (``log``'s rows, or some of their
    columns), keyed by ``_hoodie_record_key`` or, for a table without meta fields, by
    keys built from the key fields, in a key column added for the merge only."""
    if not rules.key_fields:
        return merge_slice(base, log_rows, log.entries, rules, in_file_order)
    check_key_types(schema, rules.key_fields, where)
    keyed_base = None
    if base is not None:
        keyed_base = _keyed(base, record_keys(base, rules.key_fields, where))
    keyed_log = _keyed(log_rows, log.row_keys)
    return _unkeyed(merge_slice(keyed_base, keyed_log, log.entries, rules, in_file_order))


# The columns ``read_slice_delta`` numbers base rows and log rows in through the merge.
_POSITION = "_hudi_sync_base_position"
_LOG_ROW = "_hudi_sync_log_row"


@dataclass(frozen=True)
class SliceDelta:
    """A Merge-on-Read slice's snapshot as a change to its base file, the way an
    Iceberg v2 table holds it: the rows that come from the logs, and the positions of
    the base rows the logs replace or delete. ``live_rows`` have the read's columns;
    ``deleted_positions`` are 0-based, ascending int64; ``base_rows`` counts the base
    file's rows (0 without one)."""

    live_rows: pa.Table
    deleted_positions: pa.Array
    base_rows: int


def read_slice_delta(
    location: Location,
    file_slice: FileSlice,
    rules: MergeRules,
    committed: Callable[[str], bool],
    schema: pa.Schema,
    as_of: str | None = None,
) -> SliceDelta:
    """The slice as of ``as_of`` (latest when None) as a ``SliceDelta``: the base rows
    without ``deleted_positions``, plus ``live_rows``, are ``read_file_slice``'s rows
    with ``schema``. Computed by the very merge ``read_file_slice`` runs, on the columns
    it decides by (keys, ordering value, delete markers) plus a base row's position and
    a log row's index, which ride through it as columns: the rows it keeps are named by
    them, so the two reads never disagree, and of the base file only those columns are
    read. A slice without a base file has no positions: all its rows are live."""
    target = schema.remove_metadata()
    log = None
    if file_slice.log_files:
        log = _slice_log(location, file_slice, committed, as_of, rules.key_fields, target)
    return _delta(location, file_slice, rules, target, log)


def read_slice_deltas(
    location: Location,
    slices: Sequence[FileSlice],
    rules: MergeRules,
    committed: Callable[[str], bool],
    schema: pa.Schema,
    as_of: str | None = None,
) -> Iterator[SliceDelta]:
    """``read_slice_delta`` of each slice, in order, their data blocks decoded together
    (``data_block_tables``, as ``read_folded_logs`` does). Memory holds every slice's
    log files: callers pass a bounded batch."""
    target = schema.remove_metadata()
    logs = _decoded_logs(location, slices, rules.key_fields, committed, target, as_of)
    for file_slice, log in zip(slices, logs, strict=True):
        yield _delta(location, file_slice, rules, target, log if file_slice.log_files else None)


def _delta(
    location: Location,
    file_slice: FileSlice,
    rules: MergeRules,
    schema: pa.Schema,
    log: SliceLog | None,
) -> SliceDelta:
    """The slice's ``SliceDelta`` from its log records ``log`` (None without log files;
    rows of ``schema``) and its base file's decisive columns (``read_slice_delta``)."""
    if log is None:
        base_rows = _base_row_count(location, file_slice)
        return SliceDelta(schema.empty_table(), pa.array([], pa.int64()), base_rows)
    decisive = _decisive_schema(schema, rules)
    where = _base_uri(location, file_slice)
    base = None
    if file_slice.base_file is not None:
        base = align(_read_base(location, file_slice, decisive.names), decisive, where)
    base_rows = base.num_rows if base is not None else 0
    numbered = pa.schema(
        [*decisive, pa.field(_POSITION, pa.int64()), pa.field(_LOG_ROW, pa.int64())]
    )
    log_rows = _numbered(log.rows.select(decisive.names), None, log.rows.num_rows, numbered)
    if base is not None:
        base = _numbered(base, base.num_rows, None, numbered)
    merged = _merge(base, log_rows, log, rules, numbered, where, False)
    gone = np.ones(base_rows, dtype=bool)
    gone[_present(merged.column(_POSITION))] = False
    live = log.rows.take(numpy_to_arrow(np.sort(_present(merged.column(_LOG_ROW))), pa.int64()))
    deleted = numpy_to_arrow(np.flatnonzero(gone).astype(np.int64))
    return SliceDelta(live.replace_schema_metadata(None), deleted, base_rows)


def _decisive_schema(schema: pa.Schema, rules: MergeRules) -> pa.Schema:
    """The columns of ``schema`` a merge decides by: the record key (or the key
    fields), the ordering field, and the columns that may mark a log record deleted."""
    wanted = {_RECORD_KEY, *rules.key_fields, IS_DELETED_FIELD, OPERATION_FIELD}
    wanted.update(f for f in (rules.ordering_field, rules.delete_field) if f is not None)
    return pa.schema([f for f in schema if f.name in wanted])


def _numbered(
    rows: pa.Table, base_rows: int | None, log_rows: int | None, schema: pa.Schema
) -> pa.Table:
    """``rows`` with ``_POSITION`` (0.. for a base file's rows) and ``_LOG_ROW`` (0.. for
    log rows), the other null."""

    def numbers(count: int | None) -> pa.Array:
        if count is None:
            return pa.nulls(rows.num_rows, pa.int64())
        return numpy_to_arrow(np.arange(count, dtype=np.int64))

    columns = [*rows.columns, numbers(base_rows), numbers(log_rows)]
    return pa.Table.from_arrays(columns, schema=schema)


def _present(numbers: pa.ChunkedArray) -> np.ndarray[Any, np.dtype[np.int64]]:
    """The non-null values of a numbering column (``_numbered``)."""
    values = arrow_to_numpy(pc.drop_null(numbers))
    return np.asarray(values, dtype=np.int64)


def read_folded_log(
    location: Location,
    file_slice: FileSlice,
    rules: MergeRules,
    committed: Callable[[str], bool],
    schema: pa.Schema,
    as_of: str | None = None,
) -> pa.Table:
    """The slice's log records folded to one version per key (``fold_log_records``),
    with ``schema``'s columns: what a warehouse merges over the base file's rows to get
    the slice's snapshot. Of the base file only the keys and commit seqnos are read, to
    mark which base row a key with several meets (``mark_first_base_rows``)."""
    log = _slice_log(location, file_slice, committed, as_of, rules.key_fields, schema)
    return _folded(location, file_slice, rules, schema, log)


def read_folded_logs(
    location: Location,
    slices: Sequence[FileSlice],
    rules: MergeRules,
    committed: Callable[[str], bool],
    schema: pa.Schema,
    as_of: str | None = None,
) -> Iterator[pa.Table]:
    """``read_folded_log`` of each slice, in order: the data blocks of all of them
    decoded together (``data_block_tables``), which costs a fraction of decoding them
    slice by slice. Memory holds every slice's log files: callers pass a bounded
    batch."""
    logs = list(_decoded_logs(location, slices, rules.key_fields, committed, schema, as_of))
    keyed = [
        _fold_input(location, s, rules, schema, log) for s, log in zip(slices, logs, strict=True)
    ]
    # The slices' logs folded in one pass where they can be (``columnar_folds``).
    folds = columnar_folds(
        [(rows, log.entries) for rows, log in zip(keyed, logs, strict=True)], rules
    )
    for file_slice, rows, log, folded in zip(slices, keyed, logs, folds, strict=True):
        if folded is None:  # not the common shape: record by record
            folded = fold_log_records(rows, log.entries, rules)
        yield _base_marked(location, file_slice, rules, folded)


def _decoded_logs(
    location: Location,
    slices: Sequence[FileSlice],
    key_fields: tuple[str, ...],
    committed: Callable[[str], bool],
    schema: pa.Schema,
    as_of: str | None,
) -> Iterator[SliceLog]:
    """Each slice's applied log records (``_slice_log``), in order, the data blocks of
    all of them decoded together (``data_block_tables``), which costs a fraction of
    decoding them slice by slice."""
    applied = [_applied(location, s, committed, as_of) for s in slices]
    decoded = data_block_tables(
        [pair for blocks in applied for pair in blocks.blocks], lambda t: _fitted(t, schema)
    )
    first = 0
    for file_slice, blocks in zip(slices, applied, strict=True):
        own = decoded[first : first + len(blocks.blocks)]
        first += len(blocks.blocks)
        yield _decoded_log(blocks, own, key_fields, schema, location, file_slice)


def _folded(
    location: Location,
    file_slice: FileSlice,
    rules: MergeRules,
    schema: pa.Schema,
    log: SliceLog,
) -> pa.Table:
    """The slice's log records ``log`` folded, base rows marked (``read_folded_log``)."""
    log_rows = _fold_input(location, file_slice, rules, schema, log)
    folded = columnar_fold(log_rows, log.entries, rules)
    if folded is None:  # not the common shape: record by record
        folded = fold_log_records(log_rows, log.entries, rules)
    return _base_marked(location, file_slice, rules, folded)


def _fold_input(
    location: Location,
    file_slice: FileSlice,
    rules: MergeRules,
    schema: pa.Schema,
    log: SliceLog,
) -> pa.Table:
    """The log rows a fold takes: for a table without meta fields, with the key built
    from the key fields as ``_hoodie_record_key`` (the folded rows carry it)."""
    if not rules.key_fields:
        return log.rows
    check_key_types(schema, rules.key_fields, _base_uri(location, file_slice))
    return _keyed(log.rows, log.row_keys).drop_columns([_SHADOWED_KEY])


def _base_marked(
    location: Location, file_slice: FileSlice, rules: MergeRules, folded: pa.Table
) -> pa.Table:
    """``folded`` with the base row each key meets marked (``mark_first_base_rows``):
    of the base file only the keys and commit seqnos are read."""
    where = _base_uri(location, file_slice)
    base_rows = None
    if file_slice.base_file is not None and folded.num_rows:
        if rules.key_fields:
            base_rows = _read_base(location, file_slice, [*rules.key_fields, SEQNO_FIELD])
            keys = record_keys(base_rows, rules.key_fields, where)
            base_rows = base_rows.append_column(_RECORD_KEY, keys)
        else:
            base_rows = _read_base(location, file_slice, [_RECORD_KEY, SEQNO_FIELD])
    return mark_first_base_rows(folded, base_rows, where)


# Where a table without meta fields keeps its (null) _hoodie_record_key column while the
# built keys stand in its place for a merge.
_SHADOWED_KEY = "_hudi_sync_stored_record_key"


def _keyed(rows: pa.Table, keys: pa.Array) -> pa.Table:
    """``rows`` with ``keys`` as their last column ``_hoodie_record_key``; a column of
    that name they hold is kept aside (``_unkeyed`` puts it back)."""
    if _RECORD_KEY in rows.column_names:
        position = rows.column_names.index(_RECORD_KEY)
        rows = rows.set_column(position, _SHADOWED_KEY, rows.column(_RECORD_KEY))
    else:
        rows = rows.append_column(_SHADOWED_KEY, pa.nulls(rows.num_rows, pa.string()))
    return rows.append_column(_RECORD_KEY, keys)


def _unkeyed(rows: pa.Table) -> pa.Table:
    """``_keyed``'s rows as they were: the built key dropped, the stored one back."""
    rows = rows.drop_columns([_RECORD_KEY])
    position = rows.column_names.index(_SHADOWED_KEY)
    if position == rows.num_columns - 1:
        return rows.drop_columns([_SHADOWED_KEY])
    return rows.set_column(position, _RECORD_KEY, rows.column(_SHADOWED_KEY))


def merge_entries(records: list[LogRecord]) -> tuple[list[dict[str, Any]], list[LogEntry]]:
    """Log records as ``merge_records`` takes them: the data records' values, and every
    record in merge order as an index into them or a ``DeleteKey``."""
    rows: list[dict[str, Any]] = []
    entries: list[LogEntry] = []
    for record in records:
        if record.is_delete or record.values is None:
            entries.append(DeleteKey(record.key, record.ordering))
        else:
            entries.append(len(rows))
            rows.append(record.values)
    return rows, entries


def align(table: pa.Table, schema: pa.Schema, where: str) -> pa.Table:
    """``table`` with exactly ``schema``'s columns: a column it lacks (added by a later
    schema) is null, a column of another type is cast (an int8 read back from Parquet
    where the schema says int32). Metadata is dropped: slices written by different
    Hudi writers carry different Parquet metadata but hold the same kind of rows."""
    if table.schema.remove_metadata() == schema.remove_metadata():
        return table.replace_schema_metadata(None)
    columns = []
    for field in schema:
        if field.name not in table.column_names:
            columns.append(pa.nulls(table.num_rows, field.type))
            continue
        column = table.column(field.name)
        if column.type != field.type:
            try:
                column = column.cast(field.type)
            except _ARROW_ERRORS as exc:
                raise UnsupportedTableError(
                    f"{where}: column {field.name} of type {column.type} cannot be read as "
                    f"{field.type} ({first_line(exc)})"
                ) from None
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=schema.remove_metadata())


def _read_base(
    location: Location, file_slice: FileSlice, columns: list[str] | None = None
) -> pa.Table:
    """The slice's base file: all its columns, or those of ``columns`` it has. A whole
    file is fetched in one read (Parquet's many small reads through a file object cost
    as much as the decoding)."""
    relative = file_slice.relative_base_path
    assert relative is not None
    uri = location.uri_of(relative)
    if not relative.endswith(".parquet"):
        raise UnsupportedTableError(f"{uri}: only Parquet base files are read")
    try:
        if columns is None:
            data = location.fs.cat_file(location.join(relative))
            return pq.ParquetFile(pa.BufferReader(data)).read()
        with location.fs.open(location.join(relative), "rb") as handle:
            parquet = pq.ParquetFile(handle)
            if columns is None:
                return parquet.read()
            present = set(parquet.schema_arrow.names)
            return parquet.read(columns=[c for c in columns if c in present])
    except FileNotFoundError:
        raise CorruptTableError(f"{uri}: base file of the snapshot is missing") from None
    except _ARROW_ERRORS as exc:
        raise CorruptTableError(
            f"{uri}: cannot read Parquet base file: {first_line(exc)}"
        ) from None


def _base_row_count(location: Location, file_slice: FileSlice) -> int:
    """The slice's base file's row count, from its footer (0 without one)."""
    if file_slice.relative_base_path is None:
        return 0
    uri = location.uri_of(file_slice.relative_base_path)
    try:
        with location.fs.open(location.join(file_slice.relative_base_path), "rb") as handle:
            return int(pq.ParquetFile(handle).metadata.num_rows)
    except FileNotFoundError:
        raise CorruptTableError(f"{uri}: base file of the snapshot is missing") from None
    except _ARROW_ERRORS as exc:
        raise CorruptTableError(
            f"{uri}: cannot read Parquet base file: {first_line(exc)}"
        ) from None


def _slice_log(
    location: Location,
    file_slice: FileSlice,
    committed: Callable[[str], bool],
    as_of: str | None,
    key_fields: tuple[str, ...],
    schema: pa.Schema,
) -> SliceLog:
    """The slice's log records from committed blocks at or before ``as_of``, in merge
    order (``applied_blocks``: rollbacks and log compaction applied), keyed by
    ``key_fields`` when given; errors name the log file (its URI). Data blocks are
    decoded column-wise where they can be (``data_block_table``), else record by
    record."""
    blocks = _applied(location, file_slice, committed, as_of)
    decoded = [
        None if block.block_type == BlockType.DELETE else data_block_table(block, where)
        for block, where in blocks.blocks
    ]
    return _decoded_log(blocks, decoded, key_fields, schema, location, file_slice)


def _applied(
    location: Location,
    file_slice: FileSlice,
    committed: Callable[[str], bool],
    as_of: str | None,
) -> AppliedBlocks:
    """The blocks of the slice's log files a read applies (``applied_blocks``)."""
    limit = comparable_instant(as_of) if as_of is not None else None

    def applies(instant: str) -> bool:
        return committed(instant) and (limit is None or comparable_instant(instant) <= limit)

    files: list[tuple[bytes, str]] = []
    for log in file_slice.log_files:
        relative = file_slice.relative_path(log.name)
        uri = location.uri_of(relative)
        try:
            data = location.read_file(location.join(relative))
        except FileNotFoundError:
            raise CorruptTableError(f"{uri}: log file of the snapshot is missing") from None
        files.append((data, uri))
    return applied_blocks(files, applies)


def _decoded_log(
    blocks: AppliedBlocks,
    decoded: Sequence[pa.Table | None],
    key_fields: tuple[str, ...],
    schema: pa.Schema,
    location: Location,
    file_slice: FileSlice,
) -> SliceLog:
    """The slice's log records from its applied blocks, whose data blocks ``decoded``
    holds column-wise (``data_block_table``; None: read record by record)."""
    tables: list[pa.Table] = []
    keys: list[pa.Array] = []
    entries: list[LogEntry] = []
    count = 0
    for (block, where), columns in zip(blocks.blocks, decoded, strict=True):
        if block.block_type == BlockType.DELETE:
            deleted = delete_keys(block.content, where)
            entries.extend(DeleteKey(key, ordering) for key, _, ordering in deleted)
            continue
        rows, row_keys = _block_rows(
            block, columns, where, key_fields, schema, location, file_slice
        )
        tables.append(rows)
        keys.append(row_keys)
        entries.extend(range(count, count + rows.num_rows))
        count += rows.num_rows
    unaligned = schema.remove_metadata()
    log_rows = pa.concat_tables(tables) if tables else unaligned.empty_table()
    row_keys = pa.concat_arrays(keys) if keys else pa.array([], pa.string())
    return SliceLog(log_rows, row_keys, entries, blocks.blocks_read, blocks.rollback_blocks)


# Column types a log block's decoded column may be cast from to the read's type: the same
# kind of value (a cast between kinds could succeed where the records do not fit).
_SAME_KIND = (
    pa.types.is_integer,
    pa.types.is_floating,
    pa.types.is_string,
    pa.types.is_large_string,
    pa.types.is_binary,
    pa.types.is_large_binary,
    pa.types.is_timestamp,
    pa.types.is_date,
    pa.types.is_time,
)


def _block_rows(
    block: Any,
    decoded: pa.Table | None,
    where: str,
    key_fields: tuple[str, ...],
    schema: pa.Schema,
    location: Location,
    file_slice: FileSlice,
) -> tuple[pa.Table, pa.Array]:
    """A data block's records as rows of ``schema`` and their keys: column-wise, or
    (a type the column decoder lacks, columns that do not plainly fit ``schema``, a
    record without key) record by record, which decodes or refuses as Hudi's reader.
    ``decoded``: the block's records column-wise (``data_block_table``), or None."""
    if decoded is not None:
        rows = _fitted(decoded, schema)
        keys = None if rows is None else _block_keys(rows, key_fields, where)
        if rows is not None and keys is not None:
            return rows, keys
    records = block_records(block, where, key_fields)
    rows = _log_table([r.values or {} for r in records], schema, location, file_slice)
    return rows, pa.array([r.key for r in records], pa.string())


def _fitted(decoded: pa.Table, schema: pa.Schema) -> pa.Table | None:
    """``decoded`` with ``schema``'s columns (missing ones null), or None when a column
    would need a cast between kinds of value, or a cast fails."""
    if decoded.schema.equals(schema.remove_metadata(), check_metadata=True):
        return decoded  # already fitted (``read_folded_logs`` fits a batch at once)
    columns = []
    for field in schema:
        if field.name not in decoded.column_names:
            columns.append(pa.nulls(decoded.num_rows, field.type))
            continue
        column = decoded.column(field.name)
        if column.type != field.type:
            if not _castable(column.type, field.type):
                return None
            try:
                column = column.cast(field.type)
            except _ARROW_ERRORS:
                return None
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=schema.remove_metadata())


def _castable(source: pa.DataType, target: pa.DataType) -> bool:
    if pa.types.is_decimal(source) and pa.types.is_decimal(target):
        return bool(source.scale == target.scale)
    return any(same(source) and same(target) for same in _SAME_KIND)


def _block_keys(rows: pa.Table, key_fields: tuple[str, ...], where: str) -> pa.Array | None:
    """The keys of a block's rows (built from ``key_fields`` when given), or None when
    a row has none (the record-by-record read names the fault)."""
    if key_fields:
        try:
            return record_keys(rows, key_fields, where)
        except (CorruptTableError, UnsupportedTableError):
            return None
    if _RECORD_KEY not in rows.column_names:
        return None
    keys = rows.column(_RECORD_KEY).combine_chunks()
    if not pa.types.is_string(keys.type) or keys.null_count:
        return None
    return keys


def _log_table(
    rows: list[dict[str, Any]], schema: pa.Schema, location: Location, file_slice: FileSlice
) -> pa.Table:
    """The log's data records as a table of ``schema`` (fields they lack are null)."""
    try:
        return pa.Table.from_pylist(rows, schema=schema.remove_metadata())
    except _ARROW_ERRORS as exc:
        where = location.uri_of(file_slice.partition_path or "")
        raise CorruptTableError(
            f"{where}: log records of file group {file_slice.file_id} do not fit the table "
            f"schema: {first_line(exc)}"
        ) from None


def _base_uri(location: Location, file_slice: FileSlice) -> str:
    return location.uri_of(file_slice.relative_base_path or file_slice.partition_path)
