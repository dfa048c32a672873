"""One Parquet file's footer, read once, and which of its statistics are exact.

pyarrow parses the footer (``FileMetaData``) but does not say which Thrift fields a
chunk's min and max came from: a writer may have set only the deprecated ``min``/``max``
(computed with a signed byte order, wrong for strings and decimals) or flagged the new
``min_value``/``max_value`` as truncated (``is_min_value_exact``/``is_max_value_exact``
false). An Iceberg bound must hold for every value of the file, so those chunks give no
bounds; this module reads the footer's Thrift (compact protocol) for exactly these
flags, bounded by the footer's own bytes (every claimed count must fit in what is left)
and by nesting depth.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from hudi_sync.errors import CorruptTableError
from hudi_sync.storage import Location

MAGIC = b"PAR1"
MAX_FOOTER = 64 * 1024 * 1024  # bytes of one footer (a file of ~100k columns x row groups)
_TAIL_GUESS = 64 * 1024  # bytes read from a file's end at first: most footers fit
_MAX_DEPTH = 32  # Thrift nesting of a footer: FileMetaData is 5 levels deep

# Thrift compact protocol's type codes.
_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY = range(9)
_LIST, _SET, _MAP, _STRUCT = 9, 10, 11, 12

# Field ids of parquet.thrift.
_FILE_ROW_GROUPS = 4
_GROUP_COLUMNS = 1
_CHUNK_META = 3
_META_STATISTICS = 12
_STATS_MAX_VALUE, _STATS_MIN_VALUE = 5, 6
_STATS_MAX_EXACT, _STATS_MIN_EXACT = 7, 8


@dataclass(frozen=True)
class Footer:
    """A file's size, its footer parsed by pyarrow, and per row group, per column chunk,
    whether the chunk's min and max are exact new-style statistics."""

    size: int
    metadata: pq.FileMetaData
    exact: tuple[tuple[bool, ...], ...]


def read_footer(location: Location, path: str, where: str, size: int | None = None) -> Footer:
    """The footer of the Parquet file at ``path`` (on ``location.fs``) of ``size`` bytes
    (asked of the store when not given): one ranged read of the file's tail (two when
    the footer is larger than the first guess)."""
    if size is None:
        size = location.size(path)
    if size < 12:
        raise CorruptTableError(f"{where}: not a Parquet file ({size} bytes)")
    tail = _range(location, path, max(0, size - _TAIL_GUESS), size)
    if len(tail) < 8:
        raise CorruptTableError(f"{where}: not a Parquet file (shorter than its size)")
    length, magic = struct.unpack("<I4s", tail[-8:])
    if magic != MAGIC:
        raise CorruptTableError(f"{where}: not a Parquet file (no PAR1 at its end)")
    if length > MAX_FOOTER or length + 12 > size:
        raise CorruptTableError(f"{where}: corrupt Parquet footer length {length}")
    if length + 8 > len(tail):
        tail = _range(location, path, size - 8 - length, size)
    return parse_footer(bytes(tail[-8 - length : -8]), size, where)


def _range(location: Location, path: str, start: int, end: int) -> bytes:
    """Bytes ``start``..``end`` of a file: a seek locally, one ranged GET on a store."""
    if location.is_local:
        with open(path, "rb") as handle:
            handle.seek(start)
            return handle.read(end - start)
    return bytes(location.fs.cat_file(path, start=start, end=end))


def parse_footer(thrift: bytes, size: int, where: str) -> Footer:
    """``Footer`` of a footer's Thrift bytes (as they sit before the length and magic)."""
    framed = MAGIC + thrift + struct.pack("<I", len(thrift)) + MAGIC
    try:
        metadata = pq.read_metadata(pa.BufferReader(framed))
    except (OSError, ValueError) as exc:
        raise CorruptTableError(f"{where}: corrupt Parquet footer ({_reason(exc)})") from None
    try:
        exact = _exact_statistics(thrift)
    except (_ThriftError, IndexError, struct.error) as exc:
        raise CorruptTableError(f"{where}: corrupt Parquet footer ({_reason(exc)})") from None
    groups = metadata.num_row_groups
    if len(exact) != groups or any(len(g) != metadata.num_columns for g in exact):
        raise CorruptTableError(f"{where}: corrupt Parquet footer (row groups disagree)")
    return Footer(size, metadata, exact)


def _reason(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__


class _ThriftError(ValueError):
    pass


# The footer's Thrift is walked, not decoded: only the path FileMetaData.row_groups ->
# RowGroup.columns -> ColumnChunk.meta_data -> ColumnMetaData.statistics is looked at,
# everything else skipped without building objects (a Hudi footer holds the table's
# Avro schema and a bloom filter: thousands of values no statistics need).


def _exact_statistics(data: bytes) -> tuple[tuple[bool, ...], ...]:
    groups: list[tuple[bool, ...]] = []

    def row_groups(pos: int, kind: int, depth: int) -> int:
        return _each(data, pos, kind, depth, _STRUCT, row_group)

    def row_group(pos: int, depth: int) -> int:
        chunks: list[bool] = []
        pos = _struct(
            data, pos, depth, {_GROUP_COLUMNS: _list_of(lambda p, d: chunk(p, d, chunks))}
        )
        groups.append(tuple(chunks))
        return pos

    def chunk(pos: int, depth: int, chunks: list[bool]) -> int:
        found: dict[int, bool] = {}
        meta = {_META_STATISTICS: _as_struct(lambda p, d: _statistics(data, p, d, found))}
        pos = _struct(
            data, pos, depth, {_CHUNK_META: _as_struct(lambda p, d: _struct(data, p, d, meta))}
        )
        chunks.append(
            _STATS_MIN_VALUE in found
            and _STATS_MAX_VALUE in found
            and found.get(_STATS_MIN_EXACT, True)
            and found.get(_STATS_MAX_EXACT, True)
        )
        return pos

    def _list_of(element: Any) -> Any:
        return lambda pos, kind, depth: _each(data, pos, kind, depth, _STRUCT, element)

    def _as_struct(read: Any) -> Any:
        def handle(pos: int, kind: int, depth: int) -> int:
            if kind != _STRUCT:
                raise _ThriftError(f"a struct field of Thrift type {kind}")
            return int(read(pos, depth))

        return handle

    end = _struct(data, 0, 0, {_FILE_ROW_GROUPS: row_groups})
    if end > len(data):
        raise _ThriftError("the footer ends inside a value")
    return tuple(groups)


def _statistics(data: bytes, pos: int, depth: int, found: dict[int, bool]) -> int:
    """Which fields a Statistics struct sets (booleans with their value)."""

    def note(field_id: int) -> Any:
        def handle(pos: int, kind: int, depth: int) -> int:
            found[field_id] = kind == _TRUE if kind in (_TRUE, _FALSE) else True
            return _skip(data, pos, kind, depth)

        return handle

    fields = (_STATS_MAX_VALUE, _STATS_MIN_VALUE, _STATS_MAX_EXACT, _STATS_MIN_EXACT)
    return _struct(data, pos, depth, {f: note(f) for f in fields})


def _struct(data: bytes, pos: int, depth: int, handlers: dict[int, Any]) -> int:
    """Walk a struct from ``pos``: ``handlers[field id](pos, kind, depth)`` read their
    fields, the others are skipped; the position after the struct."""
    if depth > _MAX_DEPTH:
        raise _ThriftError("nested too deeply")
    last = 0
    while True:
        header = data[pos]
        pos += 1
        kind = header & 0x0F
        if kind == _STOP:
            return pos
        if header >> 4:
            last += header >> 4
        else:
            value, pos = _varint(data, pos)
            last = (value >> 1) ^ -(value & 1)
        handler = handlers.get(last)
        pos = handler(pos, kind, depth + 1) if handler else _skip(data, pos, kind, depth + 1)


def _each(data: bytes, pos: int, kind: int, depth: int, element: int, read: Any) -> int:
    """A list of ``element``-typed values, each read by ``read(pos, depth)``."""
    if kind != _LIST:
        raise _ThriftError(f"a list field of Thrift type {kind}")
    header = data[pos]
    pos += 1
    size = header >> 4
    if size == 15:
        size, pos = _varint(data, pos)
    if header & 0x0F != element or size > len(data) - pos:
        raise _ThriftError("a list of the wrong type or past the footer's end")
    for _ in range(size):
        pos = int(read(pos, depth + 1))
    return pos


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise _ThriftError("a varint longer than 10 bytes")


def _skip(data: bytes, pos: int, kind: int, depth: int) -> int:
    """The position after a value of Thrift type ``kind`` (a struct field's boolean,
    held in its header, takes no bytes)."""
    if kind in (_TRUE, _FALSE):
        return pos
    if kind == _BYTE:
        return pos + 1
    if kind in (_I16, _I32, _I64):
        return _varint(data, pos)[1]
    if kind == _DOUBLE:
        return pos + 8
    if kind == _BINARY:
        length, pos = _varint(data, pos)
        if length > len(data) - pos:
            raise _ThriftError("a length past the footer's end")
        return pos + length
    if depth > _MAX_DEPTH:
        raise _ThriftError("nested too deeply")
    if kind in (_LIST, _SET):
        header = data[pos]
        pos += 1
        size = header >> 4
        if size == 15:
            size, pos = _varint(data, pos)
        if size > len(data) - pos:  # every element takes a byte or more
            raise _ThriftError(f"a count of {size} past the footer's end")
        element = header & 0x0F
        if element in (_TRUE, _FALSE):
            return pos + size  # a container's booleans take a byte each
        for _ in range(size):
            pos = _skip(data, pos, element, depth + 1)
        return pos
    if kind == _MAP:
        size, pos = _varint(data, pos)
        if size == 0:
            return pos
        if 2 * size > len(data) - pos:
            raise _ThriftError(f"a count of {size} past the footer's end")
        types = data[pos]
        pos += 1
        for _ in range(size):
            for part in (types >> 4, types & 0x0F):
                pos = pos + 1 if part in (_TRUE, _FALSE) else _skip(data, pos, part, depth + 1)
        return pos
    if kind == _STRUCT:
        return _struct(data, pos, depth, {})
    raise _ThriftError(f"unknown Thrift type {kind}")
