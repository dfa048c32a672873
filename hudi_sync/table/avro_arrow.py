"""Avro binary encoding of Arrow columns, one datum per row, without Python loops.

Hudi's data and CDC log blocks store each record as its own Avro datum, so a writer
must encode records one by one; done per record in Python (fastavro) that costs tens
of microseconds a record, more than the merge itself. Here each column is encoded for
all rows at once with numpy and Arrow kernels, and the columns of a record are joined
row-wise (``binary_join_element_wise``). Supported: null unions, boolean, int, long
(and the date, time and timestamp logical types on them), float, double, string,
bytes and nested records; ``encode_rows`` returns ``None`` for anything else (fixed
decimals, arrays, maps, enums) so the caller falls back to a per-record encoder.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


class _Unsupported(Exception):
    """A schema part this encoder does not handle."""


def encode_rows(schema: Mapping[str, Any], rows: pa.StructArray) -> pa.BinaryArray | None:
    """Each row of ``rows`` (a struct of the record's fields) as one Avro datum of the
    record ``schema``; ``None`` when the schema has a type this encoder lacks."""
    try:
        return _record(dict(schema), rows)
    except _Unsupported:
        return None


def _record(schema: Mapping[str, Any], rows: pa.StructArray) -> pa.BinaryArray:
    parts = [_value(f["type"], rows.field(f["name"])) for f in schema["fields"]]
    if not parts:
        return pa.array([b""] * len(rows), pa.binary())
    if len(parts) == 1:
        return parts[0]
    return pc.binary_join_element_wise(*parts, b"")


def _value(avro_type: Any, values: pa.Array) -> pa.BinaryArray:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(avro_type, list):
        return _union(avro_type, values)
    if isinstance(avro_type, dict):
        kind = avro_type.get("type")
        if kind == "record":
            return _record(avro_type, _struct(values))
        if avro_type.get("logicalType") == "decimal" or kind not in (
            "int",
            "long",
            "string",
            "bytes",
            "boolean",
            "float",
            "double",
        ):
            raise _Unsupported(str(avro_type))
        return _primitive(str(kind), values, avro_type.get("logicalType"))
    return _primitive(str(avro_type), values, None)


def _struct(values: pa.Array) -> pa.StructArray:
    if not isinstance(values, pa.StructArray):
        raise _Unsupported(str(values.type))
    return values


def _union(branches: list[Any], values: pa.Array) -> pa.BinaryArray:
    if len(branches) != 2 or "null" not in branches:
        raise _Unsupported(str(branches))
    null_index = branches.index("null")
    value_type = branches[1 - null_index]
    valid = pc.is_valid(values)
    filled = _fill_nulls(values)
    encoded = pc.binary_join_element_wise(
        pa.array([_varint_bytes(1 - null_index)] * len(values), pa.binary()),
        _value(value_type, filled),
        b"",
    )
    null_bytes = pa.scalar(_varint_bytes(null_index), pa.binary())
    return pc.if_else(valid, encoded, null_bytes)


def _fill_nulls(values: pa.Array) -> pa.Array:
    """The same values with nulls replaced by a placeholder of the type (their
    encoding is discarded by the union)."""
    if values.null_count == 0:
        return values
    if pa.types.is_struct(values.type):
        # Only the struct's own validity goes: its fields keep theirs (nullable unions).
        fields = [values.field(i) for i in range(values.type.num_fields)]
        return pa.StructArray.from_arrays(fields, fields=list(values.type))
    placeholder: Any
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        placeholder = ""
    elif pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type):
        placeholder = b""
    elif pa.types.is_boolean(values.type):
        placeholder = False
    elif (
        pa.types.is_timestamp(values.type)
        or pa.types.is_date(values.type)
        or (pa.types.is_time(values.type))
    ):
        storage = _storage_int(values.type)
        return pc.fill_null(values.view(storage), pa.scalar(0, storage)).view(values.type)
    elif pa.types.is_integer(values.type) or pa.types.is_floating(values.type):
        placeholder = 0
    else:
        raise _Unsupported(str(values.type))
    return pc.fill_null(values, pa.scalar(placeholder, values.type))


_MILLIS = ("timestamp-millis", "local-timestamp-millis", "time-millis")


def _primitive(kind: str, values: pa.Array, logical: str | None) -> pa.BinaryArray:
    if kind in ("int", "long"):
        return _varints(_as_int64(values, logical))
    if kind in ("string", "bytes"):
        raw = values.cast(pa.binary()) if not pa.types.is_binary(values.type) else values
        lengths = pc.binary_length(raw).to_numpy(zero_copy_only=False).astype(np.int64)
        return pc.binary_join_element_wise(_varints(lengths), raw, b"")
    if kind == "boolean":
        data = values.cast(pa.uint8()).to_numpy(zero_copy_only=False).astype(np.uint8)
        return _fixed_width(data.reshape(-1, 1))
    if kind in ("float", "double"):
        dtype = "<f4" if kind == "float" else "<f8"
        data = values.to_numpy(zero_copy_only=False).astype(dtype)
        return _fixed_width(data.view(np.uint8).reshape(len(values), -1))
    raise _Unsupported(kind)


def _as_int64(values: pa.Array, logical: str | None) -> np.ndarray[Any, Any]:
    """Integer values as Avro stores them (timestamps in the logical type's unit)."""
    kind = values.type
    if pa.types.is_timestamp(kind):
        unit = "ms" if logical in _MILLIS else "us"
        values = values.cast(pa.timestamp(unit, kind.tz))
    elif pa.types.is_time(kind):
        unit = "ms" if logical in _MILLIS else "us"
        values = values.cast(pa.time32("ms") if unit == "ms" else pa.time64("us"))
    elif not (pa.types.is_integer(kind) or pa.types.is_date32(kind)):
        raise _Unsupported(str(kind))
    if not pa.types.is_integer(values.type):
        values = values.view(_storage_int(values.type))
    numbers: np.ndarray[Any, Any] = values.to_numpy(zero_copy_only=False)
    return numbers.astype(np.int64)


def _storage_int(kind: pa.DataType) -> pa.DataType:
    """The integer type a temporal type is stored as."""
    return pa.int32() if kind.bit_width == 32 else pa.int64()


def _varint_bytes(value: int) -> bytes:
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        byte = zigzag & 0x7F
        zigzag >>= 7
        if zigzag:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _varints(numbers: np.ndarray[Any, Any]) -> pa.BinaryArray:
    """Zig-zag variable-length encoding of int64 values (Avro's int and long)."""
    zigzag = ((numbers << 1) ^ (numbers >> 63)).astype(np.uint64)
    groups = np.empty((len(numbers), 10), dtype=np.uint8)
    lengths = np.ones(len(numbers), dtype=np.int64)
    rest = zigzag.copy()
    for position in range(10):
        groups[:, position] = (rest & np.uint64(0x7F)).astype(np.uint8)
        rest >>= np.uint64(7)
        more = rest != 0
        groups[more, position] |= 0x80
        lengths += more
    keep = np.arange(10) < lengths[:, None]
    return _from_parts(groups[keep], lengths)


def _fixed_width(matrix: np.ndarray[Any, Any]) -> pa.BinaryArray:
    rows, width = matrix.shape
    return _from_parts(np.ascontiguousarray(matrix).reshape(-1), np.full(rows, width, np.int64))


def _from_parts(data: np.ndarray[Any, Any], lengths: np.ndarray[Any, Any]) -> pa.BinaryArray:
    offsets = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return pa.BinaryArray.from_buffers(
        pa.binary(),
        len(lengths),
        [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data.astype(np.uint8).tobytes())],
    )


def length_prefixed(datums: pa.BinaryArray) -> bytes:
    """``int32 big-endian length | datum`` for every datum: an Avro log block's records."""
    lengths = pc.binary_length(datums).to_numpy(zero_copy_only=False).astype(">i4")
    prefixes = _fixed_width(lengths.view(np.uint8).reshape(len(datums), 4))
    joined = pc.binary_join_element_wise(prefixes, datums, b"")
    offsets = joined.buffers()[1]
    data = joined.buffers()[2]
    if offsets is None or data is None:
        return b""
    bounds = np.frombuffer(offsets, dtype=np.int32)
    first, last = int(bounds[joined.offset]), int(bounds[joined.offset + len(joined)])
    return bytes(data.to_pybytes()[first:last])
