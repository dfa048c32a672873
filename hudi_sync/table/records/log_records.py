"""The records of a Merge-on-Read log file: upserts and deletes, in file order.

A change-data-capture query over a MOR table needs, for each log file a commit wrote
(its ``LOG_FILE`` case), the records that commit appended: data blocks carry whole
records (upserts), delete blocks carry keys. Like Hudi's log record reader
(``AbstractHoodieLogRecordReader``), blocks of instants that did not commit are
skipped, and a rollback command block cancels the earlier blocks of the instant it
names.

A delete block's content is int32 version | int32 length | one Avro datum of
``HoodieDeleteRecordList``. The type of its ``orderingVal`` field changed between
Hudi releases (a union of wrapper records up to 1.0, an array of that union in 1.1)
and the block does not say which one it holds, so both schemas are tried and the one
that consumes exactly the datum's bytes wins. Each delete keeps its ordering value
(``OrderingValue``: the wrapper's type and raw value): under event-time ordering Hudi
compares it with the stored record's, and a delete carrying Hudi's default (int 0)
is ordered by commit time instead.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hudi_sync.errors import CorruptTableError, UnsupportedTableError
from hudi_sync.table.avro.arrow import datum_bounds, decode_rows
from hudi_sync.table.keys.record_keys import record_key
from hudi_sync.table.records.logfile import BlockType, HeaderKey, LogBlock, read_blocks

RECORD_KEY_FIELD = "_hoodie_record_key"
PARTITION_PATH_FIELD = "_hoodie_partition_path"
DELETE_BLOCK_VERSION = 3
ROLLBACK_COMMAND = "0"  # HoodieCommandBlockTypeEnum.ROLLBACK_BLOCK

_NAMESPACE = "org.apache.hudi.avro.model"
# Hudi's ordering-value wrappers (HoodieDeleteRecordList.avsc), in their union order,
# with the kind each one's value is and its raw Avro type. Logical types are left out
# on purpose: raw values cannot fail a logical conversion, and the kind says how to
# read them (days for dates, micros for times and timestamps, a decimal's unscaled
# big-endian bytes at scale DECIMAL_WRAPPER_SCALE).
_WRAPPERS = (
    ("BooleanWrapper", "boolean", "boolean"),
    ("IntWrapper", "int", "int"),
    ("LongWrapper", "long", "long"),
    ("FloatWrapper", "float", "float"),
    ("DoubleWrapper", "double", "double"),
    ("BytesWrapper", "bytes", "bytes"),
    ("StringWrapper", "string", "string"),
    ("DateWrapper", "date", "int"),
    ("DecimalWrapper", "decimal", "bytes"),
    ("TimeMicrosWrapper", "time", "long"),
    ("TimestampMicrosWrapper", "timestamp", "long"),
)
_KIND_OF_WRAPPER = {f"{_NAMESPACE}.{name}": kind for name, kind, _ in _WRAPPERS}
# The wrapper a writer puts a value of each kind in (full Avro names).
WRAPPER_OF_KIND = {kind: f"{_NAMESPACE}.{name}" for name, kind, _ in _WRAPPERS}
DECIMAL_WRAPPER_SCALE = 15  # DecimalWrapper's value: decimal(30, 15)


@dataclass(frozen=True)
class OrderingValue:
    """A delete record's ordering value as Hudi wrote it.

    ``kind`` is the wrapper's value type (``int``, ``long``, ``float``, ``double``,
    ``boolean``, ``bytes``, ``string``, ``date``, ``decimal``, ``time``,
    ``timestamp``), or ``array`` for several ordering fields (Hudi 1.1), whose
    ``value`` is then a tuple of ``OrderingValue`` or None. Hudi compares a delete's
    value with a record's only when both have the same class, so the kind is kept.
    """

    kind: str
    value: Any


@dataclass(frozen=True)
class LogRecord:
    """One record of a log file: an upsert (``values`` set) or a delete of ``key``."""

    instant: str  # the block's INSTANT_TIME header
    key: str  # _hoodie_record_key (data blocks) or the delete record's recordKey
    partition_path: str | None
    is_delete: bool
    values: dict[str, Any] | None  # the full record (data blocks), None for deletes
    ordering: OrderingValue | None = None  # a delete's ordering value, None if absent


def _ordering_union() -> list[Any]:
    wrappers: list[Any] = [
        {
            "type": "record",
            "name": name,
            "namespace": _NAMESPACE,
            "fields": [{"name": "value", "type": value_type}],
        }
        for name, _, value_type in _WRAPPERS
    ]
    return ["null", *wrappers]


def _delete_list_schema(ordering_type: Any) -> Any:
    return fastavro.parse_schema(
        {
            "type": "record",
            "name": "HoodieDeleteRecordList",
            "namespace": _NAMESPACE,
            "fields": [
                {
                    "name": "deleteRecordList",
                    "type": {
                        "type": "array",
                        "items": {
                            "type": "record",
                            "name": "HoodieDeleteRecord",
                            "fields": [
                                {"name": "recordKey", "type": ["null", "string"]},
                                {"name": "partitionPath", "type": ["null", "string"]},
                                {"name": "orderingVal", "type": ordering_type},
                            ],
                        },
                    },
                }
            ],
        }
    )


# The form every Hudi release up to 1.1 writes (writers use it too).
DELETE_LIST_SCHEMA = _delete_list_schema(_ordering_union())
# That form first (most tables), then the array form of later Hudi sources.
_DELETE_SCHEMAS = (
    ("union", DELETE_LIST_SCHEMA),
    ("array", _delete_list_schema(["null", {"type": "array", "items": _ordering_union()}])),
)


def read_log_records(
    data: bytes, where: str, committed: Callable[[str], bool] | None = None
) -> list[LogRecord]:
    """All records of one log file, in file order.

    Blocks whose instant is not committed (when ``committed`` is given) are skipped,
    as Hudi skips the leftovers of failed writes; so are blocks cancelled by a later
    rollback command block (``COMMAND_BLOCK_TYPE`` 0, ``TARGET_INSTANT_TIME`` the
    cancelled instant) and CDC blocks, which describe changes rather than hold data.
    """
    return read_slice_log_records([(data, where)], committed)


@dataclass(frozen=True)
class LogScan:
    """A file slice's log records in merge order, and what the scan read to get them
    (the counts Hudi's log scanner reports in a compaction's write stats)."""

    records: list[LogRecord]
    blocks_read: int  # every block of every log file, applied or not
    rollback_blocks: int


def read_slice_log_records(
    files: Iterable[tuple[bytes, str]], committed: Callable[[str], bool] | None = None
) -> list[LogRecord]:
    """All records of a file slice's log files (``(data, where)`` in slice order), in
    the order a merge applies them (``scan_slice_logs``)."""
    return scan_slice_logs(files, committed).records


def scan_slice_logs(
    files: Iterable[tuple[bytes, str]],
    committed: Callable[[str], bool] | None = None,
    key_fields: Sequence[str] = (),
) -> LogScan:
    """A file slice's log files (``(data, where)`` in slice order) scanned as Hudi does.

    Hudi scans a file group's logs as one sequence: a rollback block in a later file
    cancels blocks of earlier files (a rolled-back write's blocks stay on disk), and
    a log-compaction block replaces the blocks of the instants it compacted, taking
    the place of the newest of them. ``key_fields``: a table without meta fields,
    whose data records are keyed by these fields (``record_keys``), as Hudi's key
    generator keys them.
    """
    blocks = applied_blocks(files, committed)
    records: list[LogRecord] = []
    for block, where in blocks.blocks:
        records.extend(_block_records(block, where, key_fields))
    return LogScan(records, blocks.blocks_read, blocks.rollback_blocks)


@dataclass(frozen=True)
class AppliedBlocks:
    """The data and delete blocks a scan of a file slice's logs applies, in merge order."""

    blocks: list[tuple[LogBlock, str]]  # (block, where)
    blocks_read: int
    rollback_blocks: int


def applied_blocks(
    files: Iterable[tuple[bytes, str]], committed: Callable[[str], bool] | None = None
) -> AppliedBlocks:
    """The blocks of a file slice's log files (``(data, where)`` in slice order) that a
    scan applies, oldest first: blocks of uncommitted instants, rolled-back blocks and
    CDC blocks are left out, log-compacted blocks take their place (``scan_slice_logs``).
    The metadata table's reader takes its HFILE_DATA blocks from here too."""
    order: list[str] = []  # instants in order of their first block
    blocks_of: dict[str, list[tuple[LogBlock, str]]] = {}
    blocks_read = rollback_blocks = 0
    for data, where in files:
        for block in read_blocks(data, where):
            blocks_read += 1
            if block.block_type == BlockType.COMMAND:
                rollback_blocks += 1
                target = _rollback_target(block, where)
                if blocks_of.pop(target, None) is not None:
                    order.remove(target)
                continue
            if block.block_type == BlockType.CDC_DATA:
                continue
            instant = block.instant_time
            if instant is None:
                raise CorruptTableError(
                    f"{where}: {_block_name(block.block_type)} block has no INSTANT_TIME header"
                )
            if committed is not None and not committed(instant):
                continue
            if instant not in blocks_of:
                order.append(instant)
                blocks_of[instant] = []
            blocks_of[instant].append((block, where))
    applied = [pair for instant in _merge_order(order, blocks_of) for pair in blocks_of[instant]]
    return AppliedBlocks(applied, blocks_read, rollback_blocks)


def _rollback_target(block: LogBlock, where: str) -> str:
    """The instant a rollback command block cancels (Hudi repeats the block when a
    rollback fails halfway, so extra ones are harmless)."""
    command = block.header.get(HeaderKey.COMMAND_BLOCK_TYPE)
    if command != ROLLBACK_COMMAND:
        raise UnsupportedTableError(f"{where}: unknown log command block type {command!r}")
    target = block.header.get(HeaderKey.TARGET_INSTANT_TIME)
    if target is None:
        raise CorruptTableError(f"{where}: rollback command block has no TARGET_INSTANT_TIME")
    return target


def _merge_order(order: list[str], blocks_of: dict[str, list[tuple[LogBlock, str]]]) -> list[str]:
    """The instants whose blocks are applied, oldest first: Hudi's placement of
    log-compacted blocks (``COMPACTED_BLOCK_TIMES``), found walking back from the newest
    instant, where each compacted instant maps to its final compacted block."""
    final_of: dict[str, str] = {}
    chosen: list[str] = []  # newest first
    seen: set[str] = set()
    for instant in reversed(order):
        header = blocks_of[instant][0][0].header
        compacted = header.get(HeaderKey.COMPACTED_BLOCK_TIMES)
        if compacted is not None:
            final = final_of.get(instant, instant)
            for original in compacted.split(","):
                final_of[original.strip()] = final
            continue
        applied = final_of.get(instant, instant)
        if applied not in seen:
            seen.add(applied)
            chosen.append(applied)
    chosen.reverse()
    return chosen


def _block_records(block: LogBlock, where: str, key_fields: Sequence[str]) -> list[LogRecord]:
    instant = block.instant_time or ""
    if block.block_type == BlockType.AVRO_DATA:
        try:
            # Column-wise where the schema allows (the same values, in less time).
            columns = block.avro_columns()
            rows = block.avro_records() if columns is None else columns.to_pylist()
        except CorruptTableError as exc:
            raise CorruptTableError(f"{where}: {exc}") from None
        except (ValueError, EOFError, KeyError, TypeError, IndexError) as exc:
            raise CorruptTableError(f"{where}: cannot decode Avro log block: {exc}") from None
        return _data_records(rows, instant, where, key_fields)
    if block.block_type == BlockType.PARQUET_DATA:
        return _data_records(_parquet_rows(block.content, where), instant, where, key_fields)
    if block.block_type == BlockType.DELETE:
        return [
            LogRecord(instant, key, partition, True, None, ordering)
            for key, partition, ordering in delete_keys(block.content, where)
        ]
    raise UnsupportedTableError(
        f"{where}: {_block_name(block.block_type)} log blocks are not supported"
    )


def block_records(block: LogBlock, where: str, key_fields: Sequence[str] = ()) -> list[LogRecord]:
    """The records of one applied data or delete block, as ``scan_slice_logs`` gives them."""
    return _block_records(block, where, key_fields)


def data_block_table(block: LogBlock, where: str) -> pa.Table | None:
    """A data block's records as columns, never as Python objects: an Avro block decoded
    column-wise (``LogBlock.avro_columns``), a Parquet block as read. None for an Avro
    schema with a type that decoder lacks, and for other blocks (``block_records``
    reads those, or refuses them)."""
    if block.block_type == BlockType.AVRO_DATA:
        try:
            columns = block.avro_columns()
        except CorruptTableError as exc:
            raise CorruptTableError(f"{where}: {exc}") from None
        except (ValueError, EOFError, KeyError, TypeError, IndexError) as exc:
            raise CorruptTableError(f"{where}: cannot decode Avro log block: {exc}") from None
        return None if columns is None else pa.Table.from_struct_array(columns)
    if block.block_type == BlockType.PARQUET_DATA:
        return _parquet_table(block.content, where)
    return None


def data_block_tables(
    blocks: Sequence[tuple[LogBlock, str]],
    fit: Callable[[pa.Table], pa.Table | None] | None = None,
) -> list[pa.Table | None]:
    """``data_block_table`` of each ``(block, where)`` (None for a delete block), the
    Avro blocks of one schema decoded in one call: the column decoder's cost is mostly
    per column, not per row, and a slice's blocks hold few rows. Where the joint decode
    fails, each block of the group is decoded alone, so an error names its block.
    ``fit``: applied to each joint decode before it is split per block, where it does
    not answer None (a caller's per-block conversion, done once)."""
    tables: list[pa.Table | None] = [None] * len(blocks)
    groups: dict[str, list[int]] = {}
    for index, (block, where) in enumerate(blocks):
        schema_text = block.header.get(HeaderKey.SCHEMA)
        if block.block_type == BlockType.AVRO_DATA and schema_text is not None:
            groups.setdefault(schema_text, []).append(index)
        elif block.block_type != BlockType.DELETE:
            tables[index] = data_block_table(block, where)
    for schema_text, indices in groups.items():
        joint = _joint_avro_tables([blocks[i][0] for i in indices], schema_text, fit)
        if joint is _UNSUPPORTED:
            continue  # None for each: their records are read one by one
        for position, index in enumerate(indices):
            block, where = blocks[index]
            tables[index] = data_block_table(block, where) if joint is None else joint[position]
    return tables


_UNSUPPORTED: list[pa.Table] = []  # the schema has a type the column decoder lacks


def _joint_avro_tables(
    blocks: Sequence[LogBlock],
    schema_text: str,
    fit: Callable[[pa.Table], pa.Table | None] | None,
) -> list[pa.Table] | None:
    """The records of Avro blocks of one schema decoded as one run of datums and split
    back per block; ``_UNSUPPORTED`` when the decoder lacks a type of the schema, None
    when any block does not decode (each is then decoded alone)."""
    if len(blocks) < 2:
        return None
    contents, starts, ends, counts = [], [], [], []
    offset = 0
    try:
        for block in blocks:
            content, count = block.content, block.record_count
            if struct.unpack_from(">i", content, 0)[0] < 1:
                return None
            begin, end = datum_bounds(content, 8, count)
            contents.append(content)
            starts.append(begin + offset)
            ends.append(end + offset)
            counts.append(count)
            offset += len(content)
        columns = decode_rows(
            blocks[0].schema().schema,
            b"".join(contents),
            np.concatenate(starts),
            np.concatenate(ends),
        )
    except Exception:  # any fault: decoded alone, the block's own error names it
        return None
    if columns is None:
        return _UNSUPPORTED
    table = pa.Table.from_struct_array(columns)
    fitted = fit(table) if fit is not None else None
    table = fitted if fitted is not None else table
    split, first = [], 0
    for count in counts:
        split.append(table.slice(first, count))
        first += count
    return split


def _data_records(
    rows: Iterable[dict[str, Any]], instant: str, where: str, key_fields: Sequence[str]
) -> list[LogRecord]:
    records: list[LogRecord] = []
    for row in rows:
        if key_fields:
            values = [row.get(field) for field in key_fields]
            records.append(
                LogRecord(instant, record_key(values, key_fields, where), None, False, row)
            )
            continue
        key = row.get(RECORD_KEY_FIELD)
        if not isinstance(key, str):
            raise CorruptTableError(f"{where}: log data record has no {RECORD_KEY_FIELD}")
        partition = row.get(PARTITION_PATH_FIELD)
        records.append(
            LogRecord(instant, key, partition if isinstance(partition, str) else None, False, row)
        )
    return records


def _parquet_rows(content: bytes, where: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = _parquet_table(content, where).to_pylist()
    return rows


def _parquet_table(content: bytes, where: str) -> pa.Table:
    """A Parquet data block's content is a whole Parquet file. (``ParquetFile``, not
    ``read_table``: pyarrow 26's dataset path over an in-memory buffer often aborts
    the interpreter at exit.)"""
    try:
        return pq.ParquetFile(pa.BufferReader(content)).read()
    except (pa.ArrowException, OSError) as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CorruptTableError(f"{where}: cannot read Parquet log block: {message}") from None


def delete_keys(content: bytes, where: str) -> list[tuple[str, str | None, OrderingValue | None]]:
    """``(record key, partition path, ordering value)`` of each record of a delete block."""
    if len(content) < 4:
        raise CorruptTableError(f"{where}: delete block truncated while reading version")
    (version,) = struct.unpack(">i", content[:4])
    if version < DELETE_BLOCK_VERSION:
        raise UnsupportedTableError(
            f"{where}: delete block version {version} (Java Kryo serialization, "
            "Hudi before 0.12) is not supported"
        )
    if version > DELETE_BLOCK_VERSION:
        raise UnsupportedTableError(f"{where}: delete block version {version} is not supported")
    if len(content) < 8:
        raise CorruptTableError(f"{where}: delete block truncated while reading length")
    (length,) = struct.unpack(">i", content[4:8])
    datum = content[8 : 8 + length]
    if length < 0 or len(datum) != length:
        raise CorruptTableError(f"{where}: delete block truncated while reading records")
    decoded = _decode_delete_list(datum)
    if decoded is None:
        raise CorruptTableError(
            f"{where}: delete block does not decode as HoodieDeleteRecordList "
            "(neither the Hudi 0.14-1.0 nor the Hudi 1.1 schema fits)"
        )
    result: list[tuple[str, str | None, OrderingValue | None]] = []
    for entry in decoded["deleteRecordList"]:
        key = entry["recordKey"]
        if key is None:
            raise CorruptTableError(f"{where}: delete record has no recordKey")
        result.append((key, entry["partitionPath"], _ordering_value(entry["orderingVal"])))
    return result


def _ordering_value(decoded: Any) -> OrderingValue | None:
    """A decoded ``orderingVal``: a ``(wrapper name, {"value": v})`` union branch, a
    list of them (Hudi 1.1; one field reads as that field's value), or None."""
    if isinstance(decoded, list):
        values = tuple(_ordering_value(item) for item in decoded)
        if not values:
            return None
        return values[0] if len(values) == 1 else OrderingValue("array", values)
    if decoded is None:
        return None
    name, wrapper = decoded
    return OrderingValue(_KIND_OF_WRAPPER[name], wrapper["value"])


def _decode_delete_list(datum: bytes) -> dict[str, Any] | None:
    """The datum decoded with the first schema that consumes exactly all of it."""
    for _, schema in _DELETE_SCHEMAS:
        stream = io.BytesIO(datum)
        try:
            decoded = fastavro.schemaless_reader(stream, schema, None, return_record_name=True)
        except Exception:  # a wrong schema fails in many ways
            continue
        if stream.tell() == len(datum) and isinstance(decoded, dict):
            return decoded
    return None


def _block_name(block_type: int) -> str:
    try:
        return BlockType(block_type).name
    except ValueError:
        return f"type {block_type}"
