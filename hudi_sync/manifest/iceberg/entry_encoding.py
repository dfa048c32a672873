"""Manifest entries without column metrics, encoded to Avro's binary form directly.

A first publication with metrics from the commit metadata writes 100,000 entries that
carry a path, a partition, a record count and a size, and null everywhere else.
fastavro's record writer dispatches on the schema for each of an entry's 24 fields
(about 15 µs an entry, 1.5 s of such a publication); what such an entry becomes is a
handful of integers, two strings, the partition record and a run of null union
branches. Here the integers and strings are encoded as the Avro specification writes
them (zig-zag varints; strings and bytes length-prefixed), the partition record by
fastavro itself (once per distinct partition: its values have logical types), and the
nulls as their constant bytes. The container's header is fastavro's (schema, codec,
metadata, sync marker); the blocks follow it in the specification's layout. Entries
with any column metric, or read from a manifest with other optional fields set, are
not encoded here (``bare`` tells): fastavro writes those.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Sequence
from typing import Any

import fastavro
from fastavro.write import schemaless_writer

from hudi_sync.table.avro.arrow import avro_long

# Records a block: fastavro's own default, so readers see blocks of the usual size.
BLOCK_RECORDS = 16_000
# The ``data_file`` fields an entry without metrics leaves null, in schema order:
# six metric maps, key_metadata, split_offsets, equality_ids, sort_order_id. Each is a
# ``["null", ...]`` union: branch 0, one zero byte.
_NULL_TAIL = b"\x00" * 10
_OPTIONAL_FIELDS = (
    "column_sizes",
    "value_counts",
    "null_value_counts",
    "nan_value_counts",
    "lower_bounds",
    "upper_bounds",
    "key_metadata",
    "split_offsets",
    "equality_ids",
    "sort_order_id",
)
_PARQUET = b"\x0ePARQUET"  # the string "PARQUET": length 7, zig-zag 14
_SMALL = 1 << 14
_CACHEABLE = (str, int, type(None))


_SMALL_VARINTS = [avro_long(n) for n in range(_SMALL)]


def _long(value: int) -> bytes:
    return _SMALL_VARINTS[value] if 0 <= value < _SMALL else avro_long(value)


def _optional_long(value: int | None) -> bytes:
    return b"\x00" if value is None else b"\x02" + _long(value)


def bare(file: Any) -> bool:
    """Whether a ``DataFile`` carries no column metric (and, when it was read from a
    manifest, no other optional field): what ``EntryEncoder`` encodes."""
    if file.column_sizes or file.value_counts or file.null_counts:
        return False
    if file.lower_bounds or file.upper_bounds:
        return False
    read = file.avro_record
    return read is None or all(read[name] is None for name in _OPTIONAL_FIELDS)


class EntryEncoder:
    """Encodes bare entries (``bare``) of one manifest schema: ``partition_schema`` is
    the schema's partition record (fastavro encodes its values), ``names`` its field
    names in order."""

    def __init__(self, partition_schema: dict[str, Any], names: Sequence[str]):
        self._partition_schema = fastavro.parse_schema(partition_schema)
        self._names = list(names)
        self._partitions: dict[tuple[Any, ...], bytes] = {}
        self._heads: dict[tuple[int, int | None, int | None, int | None], bytes] = {}
        # The last partition tuple encoded and its bytes: a partition's entries share one
        # tuple (held here, so its identity is not reused by another).
        self._last: tuple[tuple[Any, ...] | None, bytes] = (None, b"")

    def partition(self, values: tuple[Any, ...]) -> bytes:
        """A partition record's bytes; encoded once for values of plain types (a
        ``True`` and a ``1``, or ``0.0`` and ``-0.0``, are equal keys with other bytes,
        so only strings, ints and nulls are kept)."""
        cacheable = all(type(v) in _CACHEABLE for v in values)
        if cacheable:
            found = self._partitions.get(values)
            if found is not None:
                return found
        buffer = io.BytesIO()
        record = dict(zip(self._names, values, strict=True))
        schemaless_writer(buffer, self._partition_schema, record)
        data = buffer.getvalue()
        if cacheable:
            self._partitions[values] = data
        return data

    def _partition_bytes(self, values: tuple[Any, ...]) -> bytes:
        encoded = self.partition(values)
        self._last = (values, encoded)
        return encoded

    def entry(
        self,
        status: int,
        snapshot_id: int | None,
        data_sequence: int | None,
        file_sequence: int | None,
        file: Any,
    ) -> bytes:
        """One entry's bytes (``file`` a bare ``DataFile``)."""
        key = (status, snapshot_id, data_sequence, file_sequence)
        head = self._heads.get(key)
        if head is None:
            head = self._heads[key] = (
                _long(status)
                + _optional_long(snapshot_id)
                + _optional_long(data_sequence)
                + _optional_long(file_sequence)
            )
        read = file.avro_record  # written as read (``avro_files._data_file_record``)
        if read is not None and list(read["partition"]) == self._names:
            partition = tuple(read["partition"].values())
        else:
            partition = file.partition
        shown, last = self._last
        path = file.path.encode("utf-8")
        size, records, length = file.size, file.record_count, len(path)
        small = _SMALL_VARINTS  # the common lengths, counts and sizes: looked up
        return b"".join(
            (
                head,
                b"\x00" if file.content == 0 else _long(file.content),
                small[length] if length < _SMALL else avro_long(length),
                path,
                _PARQUET,
                last if partition is shown else self._partition_bytes(partition),
                small[records] if 0 <= records < _SMALL else avro_long(records),
                small[size] if 0 <= size < _SMALL else avro_long(size),
                _NULL_TAIL,
            )
        )


def container(header: bytes, records: Sequence[bytes]) -> bytes:
    """An Avro object container file: ``header`` (fastavro's, deflate codec, ending
    with the sync marker) followed by ``records`` in deflate blocks."""
    sync = header[-16:]
    out = [header]
    for start in range(0, len(records), BLOCK_RECORDS):
        chunk = records[start : start + BLOCK_RECORDS]
        compressor = zlib.compressobj(wbits=-15)
        block = compressor.compress(b"".join(chunk)) + compressor.flush()
        out += (_long(len(chunk)), _long(len(block)), block, sync)
    return b"".join(out)
