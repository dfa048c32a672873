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

import struct
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_sync.arrow_numpy import numpy_to_arrow, string_array


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
        pa.array([avro_long(1 - null_index)] * len(values), pa.binary()),
        _value(value_type, filled),
        b"",
    )
    null_bytes = pa.scalar(avro_long(null_index), pa.binary())
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


def avro_long(value: int) -> bytes:
    """A long as Avro writes it: zig-zag, then 7 bits a byte, low byte first."""
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


# -- decoding ---------------------------------------------------------------------------------
# The mirror of the encoder: Avro datums laid end to end in a buffer (a log block's
# records) decoded into Arrow columns, each field for all records at once. Every record
# has its own cursor (a numpy array of byte positions); a field is read at every cursor
# together and the cursors move by what it took. Supported: what the encoder supports,
# plus enums and decimals stored as fixed; ``decode_rows`` returns ``None`` for anything
# else (arrays, maps, other unions and logical types) so the caller decodes records one
# by one (fastavro).

_LOGICAL_INT = {"date": pa.date32(), "time-millis": pa.time32("ms")}
_LOGICAL_LONG = {
    "time-micros": pa.time64("us"),
    "timestamp-millis": pa.timestamp("ms", "UTC"),
    "timestamp-micros": pa.timestamp("us", "UTC"),
    "local-timestamp-millis": pa.timestamp("ms"),
    "local-timestamp-micros": pa.timestamp("us"),
}
_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "string", "bytes"})
_VARINT_MAX = 10  # bytes of the longest long
_PADDING = 16  # zero bytes after the data, so fixed-size reads near the end stay in range
_INT32 = struct.Struct(">i")


class AvroDecodeError(ValueError):
    """The bytes are not datums of the schema (truncated, corrupt or another schema)."""


def datum_bounds(
    content: bytes, position: int, count: int
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Start and end offsets of ``count`` datums laid out ``int32 big-endian length |
    datum`` from ``position`` on (what ``length_prefixed`` writes)."""
    starts: list[int] = []
    size = len(content)
    unpack = _INT32.unpack_from
    append = starts.append
    if count < 0 or count * 4 > size - position:  # each datum has a 4-byte length
        raise AvroDecodeError(f"log block cannot hold {count} Avro records")
    try:
        for _ in range(count):
            append(position + 4)
            length = unpack(content, position)[0]
            if length < 0:
                raise struct.error
            position += 4 + length
    except struct.error:
        raise AvroDecodeError("log block truncated while reading Avro record") from None
    begin = np.array(starts, dtype=np.int64)
    ends = np.empty(count, dtype=np.int64)
    ends[:-1] = begin[1:] - 4
    if count:
        ends[-1] = position
    if count and (position > size or np.any(ends < begin)):
        raise AvroDecodeError("log block truncated while reading Avro record")
    return begin, ends


def decode_rows(
    schema: Mapping[str, Any],
    data: bytes,
    starts: np.ndarray[Any, Any],
    ends: np.ndarray[Any, Any],
) -> pa.StructArray | None:
    """The datums ``data[starts[i]:ends[i]]`` of the record ``schema`` as one struct
    array (field values as fastavro returns them once converted by ``to_pylist``);
    ``None`` when the schema has a type this decoder lacks. Raises ``AvroDecodeError``
    when a datum does not decode to exactly its bytes."""
    try:
        decoder = _Decoder(data, ends)
        kind = decoder.arrow_type(dict(schema))
    except _Unsupported:
        return None
    if not pa.types.is_struct(kind):
        return None
    cursor = np.asarray(starts, dtype=np.int64).copy()
    rows = np.arange(len(cursor), dtype=np.int64)
    values = decoder.read(dict(schema), rows, cursor)
    if not np.array_equal(cursor, ends):
        raise AvroDecodeError("Avro record does not end where its length says")
    return values


class _Decoder:
    def __init__(self, data: bytes, ends: np.ndarray[Any, Any]) -> None:
        self.size = len(data)
        buffer = np.zeros(self.size + _PADDING, dtype=np.uint8)
        buffer[: self.size] = np.frombuffer(data, dtype=np.uint8)
        self.buffer = buffer
        self.data = data
        self.ends = np.asarray(ends, dtype=np.int64)
        self.names: dict[str, Any] = {}

    # -- the schema's Arrow type (and its named types) ------------------------------------
    def arrow_type(self, avro_type: Any, namespace: str | None = None) -> pa.DataType:
        if isinstance(avro_type, str):
            if avro_type in _PRIMITIVES:
                return self._primitive_type(avro_type, None)
            named = self._named(avro_type, namespace)
            return self.arrow_type(named, namespace)
        if isinstance(avro_type, list):
            branches = [b for b in avro_type if b != "null"]
            if len(avro_type) != 2 or len(branches) != 1:
                raise _Unsupported(str(avro_type))
            return self.arrow_type(branches[0], namespace)
        if not isinstance(avro_type, dict):
            raise _Unsupported(str(avro_type))
        kind = avro_type.get("type")
        if kind in ("record", "enum", "fixed"):
            namespace = self._define(avro_type, namespace)
        if kind == "record":
            return pa.struct(
                [
                    pa.field(f["name"], self.arrow_type(f["type"], namespace))
                    for f in avro_type["fields"]
                ]
            )
        if kind == "enum":
            return pa.string()
        if kind == "fixed":
            if avro_type.get("logicalType") != "decimal":
                raise _Unsupported("fixed")
            precision, scale = int(avro_type["precision"]), int(avro_type.get("scale", 0))
            if not 0 < precision <= 38 or not 0 < int(avro_type["size"]) <= 16:
                raise _Unsupported("decimal")
            return pa.decimal128(precision, scale)
        if isinstance(kind, str) and kind in _PRIMITIVES:
            return self._primitive_type(kind, avro_type.get("logicalType"))
        raise _Unsupported(str(kind))

    def _primitive_type(self, kind: str, logical: str | None) -> pa.DataType:
        if logical is not None:
            table = _LOGICAL_INT if kind == "int" else _LOGICAL_LONG if kind == "long" else {}
            if logical not in table:
                raise _Unsupported(logical)
            return table[logical]
        plain = {
            "boolean": pa.bool_(),
            "int": pa.int32(),
            "long": pa.int64(),
            "float": pa.float32(),
            "double": pa.float64(),
            "string": pa.string(),
            "bytes": pa.binary(),
        }
        if kind not in plain:
            raise _Unsupported(kind)
        return plain[kind]

    def _define(self, avro_type: Mapping[str, Any], namespace: str | None) -> str | None:
        name = str(avro_type["name"])
        space: str | None = avro_type.get("namespace", namespace)
        if "." in name:
            full = name
            space = name.rsplit(".", 1)[0]
        else:
            full = f"{space}.{name}" if space else name
        self.names[full] = avro_type
        self.names.setdefault(name.rsplit(".", 1)[-1], avro_type)
        return space

    def _named(self, name: str, namespace: str | None) -> Any:
        for candidate in (f"{namespace}.{name}" if namespace else name, name):
            if candidate in self.names:
                return self.names[candidate]
        raise _Unsupported(name)

    # -- reading --------------------------------------------------------------------------
    def read(
        self,
        avro_type: Any,
        rows: np.ndarray[Any, Any],
        cursor: np.ndarray[Any, Any],
        namespace: str | None = None,
    ) -> pa.Array:
        """The values at the cursors of ``rows`` (indices into ``cursor``), which move
        past them."""
        if isinstance(avro_type, str):
            if avro_type not in _PRIMITIVES:
                return self.read(self._named(avro_type, namespace), rows, cursor, namespace)
            return self._primitive(avro_type, None, rows, cursor)
        if isinstance(avro_type, list):
            return self._union(avro_type, rows, cursor, namespace)
        kind = avro_type.get("type")
        if kind in ("record", "enum", "fixed"):
            space = avro_type.get("namespace", namespace)
            if "." in str(avro_type["name"]):
                space = str(avro_type["name"]).rsplit(".", 1)[0]
            namespace = space
        if kind == "record":
            fields = avro_type["fields"]
            children = [self.read(f["type"], rows, cursor, namespace) for f in fields]
            if not fields:
                return pa.array([{}] * len(rows), pa.struct([]))
            return pa.StructArray.from_arrays(children, names=[f["name"] for f in fields])
        if kind == "enum":
            symbols = string_array(avro_type["symbols"])
            index = self._varint(rows, cursor)
            if len(index) and (index.min() < 0 or index.max() >= len(symbols)):
                raise AvroDecodeError("enum index out of range")
            return symbols.take(numpy_to_arrow(index))
        if kind == "fixed":
            size = int(avro_type["size"])
            raw = self._fixed(rows, cursor, size)
            return _decimals(raw, size, int(avro_type["precision"]), int(avro_type.get("scale", 0)))
        return self._primitive(str(kind), avro_type.get("logicalType"), rows, cursor)

    def _union(
        self,
        branches: list[Any],
        rows: np.ndarray[Any, Any],
        cursor: np.ndarray[Any, Any],
        namespace: str | None,
    ) -> pa.Array:
        null_index = branches.index("null")
        branch = self._varint(rows, cursor)
        if len(branch) and (branch.min() < 0 or branch.max() > 1):
            raise AvroDecodeError("union branch out of range")
        present = branch != null_index
        value_type = branches[1 - null_index]
        if present.all():
            return self.read(value_type, rows, cursor, namespace)
        values = self.read(value_type, rows[present], cursor, namespace)
        # Scatter back: row i takes value rank(i) among the present ones, or null.
        ranks = np.cumsum(present, dtype=np.int64) - 1
        return values.take(numpy_to_arrow(ranks, valid=present))

    def _primitive(
        self,
        kind: str,
        logical: str | None,
        rows: np.ndarray[Any, Any],
        cursor: np.ndarray[Any, Any],
    ) -> pa.Array:
        arrow = self._primitive_type(kind, logical)
        if kind in ("int", "long"):
            numbers = self._varint(rows, cursor)
            if kind == "int":
                if len(numbers) and (numbers.min() < -(2**31) or numbers.max() > 2**31 - 1):
                    raise AvroDecodeError("int out of range")
                return numpy_to_arrow(numbers.astype(np.int32)).view(arrow)
            return numpy_to_arrow(numbers, pa.int64()).view(arrow)
        if kind in ("float", "double"):
            width = 4 if kind == "float" else 8
            raw = self._fixed(rows, cursor, width)
            numbers = raw.view("<f4" if width == 4 else "<f8").reshape(-1)
            return numpy_to_arrow(numbers, arrow)
        if kind == "boolean":
            raw = self._fixed(rows, cursor, 1).reshape(-1)
            if len(raw) and raw.max() > 1:
                raise AvroDecodeError("boolean is neither 0 nor 1")
            return numpy_to_arrow(raw.astype(bool))
        if kind in ("string", "bytes"):
            lengths = self._varint(rows, cursor)
            positions = self._at(rows, cursor)
            if len(lengths) and (
                lengths.min() < 0 or np.any(positions + lengths > self._ends_of(rows))
            ):
                raise AvroDecodeError("string or bytes longer than its record")
            self._move(rows, cursor, positions + lengths)
            values = self._slices(positions, lengths)
            if kind == "string":
                try:
                    return values.cast(pa.string())
                except pa.ArrowInvalid as exc:
                    raise AvroDecodeError(f"string is not UTF-8 ({exc})") from None
            return values
        raise _Unsupported(kind)

    def _at(self, rows: np.ndarray[Any, Any], values: np.ndarray[Any, Any]) -> np.ndarray:
        """``values[rows]``: a copy, not a gather, when ``rows`` are every record (they
        are an ascending subset of them)."""
        return values.copy() if len(rows) == len(values) else values[rows]

    def _ends_of(self, rows: np.ndarray[Any, Any]) -> np.ndarray:
        """Where the records of ``rows`` end."""
        return self.ends if len(rows) == len(self.ends) else self.ends[rows]

    @staticmethod
    def _move(rows: np.ndarray[Any, Any], cursor: np.ndarray[Any, Any], to: np.ndarray) -> None:
        """The cursors of ``rows`` set to ``to``."""
        if len(rows) == len(cursor):
            cursor[:] = to
        else:
            cursor[rows] = to

    def _varint(self, rows: np.ndarray[Any, Any], cursor: np.ndarray[Any, Any]) -> np.ndarray:
        """Zig-zag varints (Avro int and long) at the cursors of ``rows``. The first
        byte is read for every row at once; only the rows whose value goes on are
        gathered again (most values, lengths and union branches take one byte)."""
        positions = self._at(rows, cursor)
        byte = self.buffer[positions]
        value = (byte & 0x7F).astype(np.uint64)
        taken = np.ones(len(rows), dtype=np.int64)
        active = np.flatnonzero(byte & 0x80)
        if len(active):
            for step in range(1, _VARINT_MAX):
                byte = self.buffer[positions[active] + step]
                value[active] |= (byte & 0x7F).astype(np.uint64) << np.uint64(7 * step)
                taken[active] += 1
                active = active[(byte & 0x80) != 0]
                if not len(active):
                    break
            else:
                raise AvroDecodeError("varint longer than 10 bytes")
        ends = positions + taken
        if len(rows) and np.any(ends > self._ends_of(rows)):
            raise AvroDecodeError("value runs past the end of its record")
        self._move(rows, cursor, ends)
        signed: np.ndarray = (value >> np.uint64(1)).astype(np.int64) ^ -(
            value & np.uint64(1)
        ).astype(np.int64)
        return signed

    def _fixed(
        self, rows: np.ndarray[Any, Any], cursor: np.ndarray[Any, Any], size: int
    ) -> np.ndarray:
        """``size`` bytes at the cursors of ``rows``, one row of a matrix each."""
        positions = self._at(rows, cursor)
        if len(rows) and np.any(positions + size > self._ends_of(rows)):
            raise AvroDecodeError("value runs past the end of its record")
        self._move(rows, cursor, positions + size)
        matrix = self.buffer[positions[:, None] + np.arange(size, dtype=np.int64)]
        return np.ascontiguousarray(matrix)

    def _slices(self, positions: np.ndarray[Any, Any], lengths: np.ndarray[Any, Any]) -> pa.Array:
        """``data[p:p+n]`` for each position and length, as one binary array: the data
        is viewed as alternating value and gap slices (positions only grow, row after
        row), and every other element taken."""
        count = len(positions)
        if not count:
            return pa.nulls(0, pa.binary())
        bounds = np.empty(2 * count + 1, dtype=np.int64)
        bounds[0:-1:2] = positions
        bounds[1::2] = positions + lengths
        bounds[-1] = bounds[-2]
        if np.any(np.diff(bounds) < 0):
            raise AvroDecodeError("record values overlap")
        large = self.size >= 2**31 - 1
        kind = pa.large_binary() if large else pa.binary()
        offsets = bounds.astype(np.int64 if large else np.int32)
        view = pa.Array.from_buffers(
            kind, 2 * count, [None, pa.py_buffer(offsets), pa.py_buffer(self.data)]
        )
        picked = view.take(numpy_to_arrow(np.arange(0, 2 * count, 2, dtype=np.int64)))
        return picked.cast(pa.binary()) if large else picked


def _decimals(raw: np.ndarray[Any, Any], size: int, precision: int, scale: int) -> pa.Array:
    """Big-endian two's-complement unscaled values (Avro's fixed decimals) as decimal128."""
    count = len(raw)
    wide = np.zeros((count, 16), dtype=np.uint8)
    if count:
        negative = (raw[:, 0] & 0x80) != 0
        wide[negative] = 0xFF
        wide[:, 16 - size :] = raw
    little = np.ascontiguousarray(wide[:, ::-1])
    values = pa.Array.from_buffers(
        pa.decimal128(38, scale), count, [None, pa.py_buffer(little.tobytes())]
    )
    return values.cast(pa.decimal128(precision, scale), safe=False)
