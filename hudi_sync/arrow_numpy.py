"""Arrow arrays from numpy arrays and Python strings, and back, without pandas.

``pyarrow.array``, ``pyarrow.scalar`` and ``Array.to_numpy`` import pandas on their
first call (to check whether their input is a pandas object, or to set up the
conversion), which costs a sync about 0.15 s of CPU in each fold worker and in the
syncing process. The hot paths of a sync build and read their arrays here instead,
over the arrays' buffers; a value these helpers do not cover (nulls in a numeric array,
a type without a fixed-width numpy twin) goes through pyarrow as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa


def _numpy_dtype(kind: pa.DataType) -> np.dtype[Any] | None:
    """The little-endian numpy dtype of an integer or float Arrow type, else None."""
    if pa.types.is_integer(kind):
        letter = "i" if pa.types.is_signed_integer(kind) else "u"
        return np.dtype(f"<{letter}{kind.bit_width // 8}")
    if pa.types.is_floating(kind):
        return np.dtype(f"<f{kind.bit_width // 8}")
    return None


def numpy_to_arrow(
    values: np.ndarray[Any, Any],
    kind: pa.DataType | None = None,
    valid: np.ndarray[Any, Any] | None = None,
) -> pa.Array:
    """A one-dimensional numeric or boolean ``values`` as an Arrow array of ``kind``
    (by default the type of its dtype), null where ``valid`` (booleans) is False; the
    values are cast when ``kind`` differs from their dtype (safely, as
    ``pyarrow.array`` does)."""
    values = np.asarray(values)
    if values.ndim != 1:
        raise ValueError("numpy_to_arrow takes one-dimensional arrays")
    bitmap = None
    if valid is not None and not valid.all():
        bitmap = pa.py_buffer(np.packbits(np.asarray(valid, dtype=bool), bitorder="little"))
    if values.dtype == np.bool_:
        bits = np.packbits(values, bitorder="little")
        array = pa.Array.from_buffers(pa.bool_(), len(values), [bitmap, pa.py_buffer(bits)])
    else:
        if values.dtype.kind not in "iuf":
            raise ValueError(f"numpy_to_arrow takes numbers, not {values.dtype}")
        data = np.ascontiguousarray(values, dtype=values.dtype.newbyteorder("<"))
        native = pa.from_numpy_dtype(data.dtype)
        array = pa.Array.from_buffers(native, len(values), [bitmap, pa.py_buffer(data)])
    return array if kind is None or array.type == kind else array.cast(kind)


def arrow_to_numpy(values: pa.Array | pa.ChunkedArray) -> np.ndarray[Any, Any]:
    """``values.to_numpy(zero_copy_only=False)``: for numbers and booleans without
    nulls read from its buffers (read-only where it is a view, as pyarrow's is)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    kind = values.type
    if values.null_count == 0:
        if pa.types.is_boolean(kind):
            buffer = values.buffers()[1]
            if buffer is None:
                return np.zeros(0, dtype=bool)
            bits = np.frombuffer(buffer, dtype=np.uint8)
            unpacked = np.unpackbits(bits, bitorder="little", count=values.offset + len(values))
            return unpacked[values.offset :].astype(bool)
        dtype = _numpy_dtype(kind)
        if dtype is not None:
            buffer = values.buffers()[1]
            if buffer is None or not len(values):
                return np.zeros(0, dtype=dtype)
            return np.frombuffer(
                buffer, dtype=dtype, count=len(values), offset=values.offset * dtype.itemsize
            )
    converted: np.ndarray[Any, Any] = values.to_numpy(zero_copy_only=False)
    return converted


def string_array(values: Sequence[str | None]) -> pa.Array:
    """Python strings (or None, a null) as an Arrow string array."""
    count = len(values)
    valid = None
    if any(v is None for v in values):
        present = np.fromiter((v is not None for v in values), dtype=bool, count=count)
        if not present.any():
            return pa.nulls(count, pa.string())
        valid = pa.py_buffer(np.packbits(present, bitorder="little"))
        values = ["" if v is None else v for v in values]
    text = "".join(values)  # type: ignore[arg-type]
    joined = text.encode()
    if len(joined) == len(text):  # ASCII: a value's bytes are its characters
        lengths = np.fromiter(map(len, values), dtype=np.int64, count=count)  # type: ignore[arg-type]
    else:
        lengths = np.fromiter((len(v.encode()) for v in values), dtype=np.int64, count=count)  # type: ignore[union-attr]
    offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    large = offsets[-1] >= 2**31
    kind = pa.large_string() if large else pa.string()
    data = pa.py_buffer(joined)
    bounds = pa.py_buffer(offsets if large else offsets.astype(np.int32))
    array = pa.Array.from_buffers(kind, count, [valid, bounds, data])
    return array.cast(pa.string()) if large else array


def string_scalar(value: str) -> pa.Scalar:
    """``value`` as an Arrow string scalar (for compute functions' arguments)."""
    return string_array([value])[0]
