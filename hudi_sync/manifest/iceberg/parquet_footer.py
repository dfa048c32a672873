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
from collections.abc import Callable
from dataclasses import dataclass

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
_FILE_SCHEMA = 2
_FILE_ROW_GROUPS = 4
_GROUP_COLUMNS = 1
_CHUNK_META = 3
_META_STATISTICS = 12
_STATS_MAX_VALUE, _STATS_MIN_VALUE = 5, 6
_STATS_MAX_EXACT, _STATS_MIN_EXACT = 7, 8
_STATS_FIELDS = frozenset((_STATS_MAX_VALUE, _STATS_MIN_VALUE, _STATS_MAX_EXACT, _STATS_MIN_EXACT))


@dataclass(frozen=True)
class Footer:
    """A file's size, its footer parsed by pyarrow, and per row group, per column chunk,
    whether the chunk's min and max are exact new-style statistics."""

    size: int
    metadata: pq.FileMetaData
    exact: tuple[tuple[bool, ...], ...]
    # The footer's schema as its Thrift bytes: equal for files of one schema.
    schema_key: bytes = b""


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
        exact, schema = _exact_statistics(thrift)
    except (_ThriftError, IndexError, struct.error) as exc:
        raise CorruptTableError(f"{where}: corrupt Parquet footer ({_reason(exc)})") from None
    groups = metadata.num_row_groups
    if len(exact) != groups or any(len(g) != metadata.num_columns for g in exact):
        raise CorruptTableError(f"{where}: corrupt Parquet footer (row groups disagree)")
    return Footer(size, metadata, exact, schema)


def _reason(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__


class _ThriftError(ValueError):
    pass


# The footer's Thrift is walked, not decoded: only the path FileMetaData.row_groups ->
# RowGroup.columns -> ColumnChunk.meta_data -> ColumnMetaData.statistics is looked at,
# everything else skipped without building objects (a Hudi footer holds the table's
# Avro schema and a bloom filter: thousands of values no statistics need). One function
# a struct on that path, no closure made per chunk: a publication walks every new base
# file's footer, so this loop is its cost.


def _exact_statistics(data: bytes) -> tuple[tuple[tuple[bool, ...], ...], bytes]:
    """Per row group, per column chunk, whether its statistics are exact; and the
    footer's schema (``FileMetaData.schema``) as its Thrift bytes, which files written
    with one schema share (a key for what is derived from the schema alone)."""
    walk = _Walk()
    end = _struct(data, 0, 0, _FILE_HANDLERS, walk)
    if end > len(data):
        raise _ThriftError("the footer ends inside a value")
    return tuple(walk.groups), walk.schema


class _Walk:
    """What the walk collects: the row groups' flags, the chunk being read, the schema."""

    __slots__ = ("chunks", "found", "groups", "schema")

    def __init__(self) -> None:
        self.groups: list[tuple[bool, ...]] = []
        self.chunks: list[bool] = []
        self.found: dict[int, bool] = {}
        self.schema = b""


# A handler reads one field: (data, position, Thrift type, depth, walk) -> position after.
_Handler = Callable[[bytes, int, int, int, _Walk], int]


def _schema(data: bytes, pos: int, kind: int, depth: int, walk: _Walk) -> int:
    end = _skip(data, pos, kind, depth)
    walk.schema = data[pos:end]
    return end


def _row_groups(data: bytes, pos: int, kind: int, depth: int, walk: _Walk) -> int:
    size, pos = _list_header(data, pos, kind, _STRUCT)
    for _ in range(size):
        walk.chunks = []
        pos = _struct(data, pos, depth + 1, _GROUP_HANDLERS, walk)
        walk.groups.append(tuple(walk.chunks))
    return pos


def _columns(data: bytes, pos: int, kind: int, depth: int, walk: _Walk) -> int:
    size, pos = _list_header(data, pos, kind, _STRUCT)
    for _ in range(size):
        found: dict[int, bool] = {}
        walk.found = found
        pos = _struct(data, pos, depth + 1, _CHUNK_HANDLERS, walk)
        walk.chunks.append(
            _STATS_MIN_VALUE in found
            and _STATS_MAX_VALUE in found
            and found.get(_STATS_MIN_EXACT, True)
            and found.get(_STATS_MAX_EXACT, True)
        )
    return pos


def _as_struct(handlers: dict[int, _Handler]) -> _Handler:
    def handle(data: bytes, pos: int, kind: int, depth: int, walk: _Walk) -> int:
        if kind != _STRUCT:
            raise _ThriftError(f"a struct field of Thrift type {kind}")
        return _struct(data, pos, depth, handlers, walk)

    return handle


def _note(field_id: int) -> _Handler:
    """A Statistics field's presence (a boolean's with its value)."""

    def handle(data: bytes, pos: int, kind: int, depth: int, walk: _Walk) -> int:
        walk.found[field_id] = kind == _TRUE if kind in (_TRUE, _FALSE) else True
        return _skip(data, pos, kind, depth)

    return handle


def _list_header(data: bytes, pos: int, kind: int, element: int) -> tuple[int, int]:
    """A list field's size and the position of its first element, checked to be a list
    of ``element`` that fits in what is left (each element takes a byte or more)."""
    if kind != _LIST:
        raise _ThriftError(f"a list field of Thrift type {kind}")
    header = data[pos]
    pos += 1
    size = header >> 4
    if size == 15:
        size, pos = _varint(data, pos)
    if header & 0x0F != element or size > len(data) - pos:
        raise _ThriftError("a list of the wrong type or past the footer's end")
    return size, pos


_NO_HANDLERS: dict[int, _Handler] = {}
_STATISTICS_HANDLERS = {
    f: _note(f) for f in (_STATS_MAX_VALUE, _STATS_MIN_VALUE, _STATS_MAX_EXACT, _STATS_MIN_EXACT)
}
_META_HANDLERS = {_META_STATISTICS: _as_struct(_STATISTICS_HANDLERS)}
_CHUNK_HANDLERS = {_CHUNK_META: _as_struct(_META_HANDLERS)}
_GROUP_HANDLERS: dict[int, _Handler] = {_GROUP_COLUMNS: _columns}
_FILE_HANDLERS: dict[int, _Handler] = {_FILE_SCHEMA: _schema, _FILE_ROW_GROUPS: _row_groups}


def _struct(
    data: bytes,
    pos: int,
    depth: int,
    handlers: dict[int, _Handler] = _NO_HANDLERS,
    walk: _Walk | None = None,
) -> int:
    """Walk a struct from ``pos``: ``handlers[field id]`` read their fields, the others
    are skipped (the common ones inline: this loop is a footer walk's cost); the
    position after the struct."""
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
        if handler is not None and walk is not None:
            pos = handler(data, pos, kind, depth + 1, walk)
        elif kind in (_TRUE, _FALSE):
            continue
        elif kind in (_I16, _I32, _I64):
            end = pos + 9
            while data[pos] & 0x80:
                pos += 1
                if pos > end:
                    raise _ThriftError("a varint longer than 10 bytes")
            pos += 1
        elif kind == _BINARY:
            length, pos = _varint(data, pos)
            if length > len(data) - pos:
                raise _ThriftError("a length past the footer's end")
            pos += length
        else:
            pos = _skip(data, pos, kind, depth + 1)


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
        if element == _STRUCT:  # the common elements without a call to ``_skip`` each
            for _ in range(size):
                pos = _struct(data, pos, depth + 1)
        elif element in (_I16, _I32, _I64):
            for _ in range(size):
                pos = _varint(data, pos)[1]
        else:
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
        return _struct(data, pos, depth)
    raise _ThriftError(f"unknown Thrift type {kind}")
