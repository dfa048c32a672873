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
    (on a store: asked of it when not given; locally: the open file's own): one ranged
    read of the file's tail (two when the footer is larger than the first guess)."""
    if location.is_local:  # one open: the size from its end, then the tail
        with open(path, "rb") as handle:
            size = handle.seek(0, 2)
            _check_size(size, where)
            handle.seek(max(0, size - _TAIL_GUESS))
            tail = handle.read()
    else:
        if size is None:
            size = location.size(path)
        _check_size(size, where)
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


def _check_size(size: int, where: str) -> None:
    if size < 12:
        raise CorruptTableError(f"{where}: not a Parquet file ({size} bytes)")


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
# Avro schema and a bloom filter: thousands of values no statistics need). A publication
# walks every new base file's footer, so this walk is its cost: one loop a struct on
# that path, written out (no handler looked up or called per field), the common scalar
# fields skipped inline.


def _exact_statistics(data: bytes) -> tuple[tuple[tuple[bool, ...], ...], bytes]:
    """Per row group, per column chunk, whether its statistics are exact; and the
    footer's schema (``FileMetaData.schema``) as its Thrift bytes, which files written
    with one schema share (a key for what is derived from the schema alone)."""
    groups: list[tuple[bool, ...]] = []
    schema = b""
    pos = last = 0
    while True:
        kind, last, pos = _field_header(data, pos, last)
        if kind == _STOP:
            break
        if last == _FILE_SCHEMA:
            start = pos
            pos = _skip(data, pos, kind, 1)
            schema = data[start:pos]
        elif last == _FILE_ROW_GROUPS:
            size, pos = _list_header(data, pos, kind, _STRUCT)
            for _ in range(size):
                chunks: list[bool] = []
                pos = _row_group(data, pos, chunks)
                groups.append(tuple(chunks))
        else:
            pos = _skip(data, pos, kind, 1)
    if pos > len(data):
        raise _ThriftError("the footer ends inside a value")
    return tuple(groups), schema


def _field_header(data: bytes, pos: int, last: int) -> tuple[int, int, int]:
    """The field header at ``pos`` after field ``last``: its Thrift type (``_STOP`` at
    the struct's end), its id (a delta from ``last``, or a zigzag varint after it) and
    the position of its value. The path readers below share it; ``_struct``, which
    skips every other field of the footer, keeps its own copy inline."""
    header = data[pos]
    pos += 1
    kind = header & 0x0F
    if kind == _STOP:
        return kind, last, pos
    if header >> 4:
        return kind, last + (header >> 4), pos
    value, pos = _varint(data, pos)
    return kind, (value >> 1) ^ -(value & 1), pos


def _row_group(data: bytes, pos: int, chunks: list[bool]) -> int:
    """A RowGroup from ``pos``: each column chunk's flag appended to ``chunks``."""
    last = 0
    while True:
        kind, last, pos = _field_header(data, pos, last)
        if kind == _STOP:
            return pos
        if last == _GROUP_COLUMNS:
            size, pos = _list_header(data, pos, kind, _STRUCT)
            for _ in range(size):
                pos = _column_chunk(data, pos, chunks)
        else:
            pos = _skip(data, pos, kind, 3)


def _column_chunk(data: bytes, pos: int, chunks: list[bool]) -> int:
    """A ColumnChunk from ``pos``: whether its statistics are exact appended."""
    exact = False
    last = 0
    while True:
        kind, last, pos = _field_header(data, pos, last)
        if kind == _STOP:
            chunks.append(exact)
            return pos
        if last == _CHUNK_META:
            if kind != _STRUCT:
                raise _ThriftError(f"a struct field of Thrift type {kind}")
            exact, pos = _column_meta(data, pos)
        else:
            pos = _skip(data, pos, kind, 5)


def _column_meta(data: bytes, pos: int) -> tuple[bool, int]:
    """A ColumnMetaData from ``pos``: whether its statistics are exact, and the end."""
    exact = False
    last = 0
    while True:
        kind, last, pos = _field_header(data, pos, last)
        if kind == _STOP:
            return exact, pos
        if last == _META_STATISTICS:
            if kind != _STRUCT:
                raise _ThriftError(f"a struct field of Thrift type {kind}")
            exact, pos = _statistics(data, pos)
        else:
            pos = _skip(data, pos, kind, 6)


def _statistics(data: bytes, pos: int) -> tuple[bool, int]:
    """A Statistics from ``pos``: exact when it has the new ``min_value`` and
    ``max_value`` and neither is flagged inexact; and the end."""
    has_min = has_max = False
    min_exact = max_exact = True
    last = 0
    while True:
        kind, last, pos = _field_header(data, pos, last)
        if kind == _STOP:
            return has_min and has_max and min_exact and max_exact, pos
        if last == _STATS_MIN_VALUE:
            has_min = True
        elif last == _STATS_MAX_VALUE:
            has_max = True
        elif last == _STATS_MIN_EXACT:
            min_exact = kind != _FALSE if kind in (_TRUE, _FALSE) else True
        elif last == _STATS_MAX_EXACT:
            max_exact = kind != _FALSE if kind in (_TRUE, _FALSE) else True
        pos = _skip(data, pos, kind, 7)


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


def _struct(data: bytes, pos: int, depth: int) -> int:
    """Skip a struct from ``pos`` (the common fields inline); the position after it."""
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
        if kind in (_TRUE, _FALSE):
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
