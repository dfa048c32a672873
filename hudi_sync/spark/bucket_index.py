"""Hudi's bucket index for Merge-on-Read writes: a key's file group is its hash bucket.

With ``hoodie.index.type=BUCKET`` every partition has ``hoodie.bucket.index.num.buckets``
file groups, and a record goes to the one its key hashes to, as Hudi's
``BucketIdentifier`` computes it: the Java ``List<String>.hashCode()`` of the key's
values (the record key; ``f1:v1,f2:v2`` keys by their values), made non-negative, modulo
the number of buckets. A bucket's file group id is a random UUID whose first 8
characters are the bucket number (``00000003-...-0``), so the bucket of a stored group
is read from its name.

So a write needs no index lookup, reads no stored key, and appends each bucket's
upserts and deletes to a new log file (``log_append``): a new bucket's file group has
log files only until a compaction writes its base file, as Hudi's bucket index writes
them. This module runs in the driver without Spark jobs, on an Arrow table of rows: it
is what makes a stream of small batches cheap (the Debezium ingest). ``write`` routes a
DataFrame here when its options ask for the bucket index, collecting its rows to the
driver (a batch must fit in its memory).

Readers and compaction merge the logs by the table's rules, as for any MOR table.
hudi-rs 0.5 reads such log-only file groups too (its reader spec says it may not).
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError
from hudi_sync.spark.keys import DEFAULT_PARTITION
from hudi_sync.spark.log_append import AppendSpec, LogAppend, append_log
from hudi_sync.spark.merge import DELETE_FLAG, PARTITION_PATH, RECORD_KEY
from hudi_sync.spark.options import WriteOptions
from hudi_sync.storage import Location
from hudi_sync.table import HudiTable
from hudi_sync.table.fs_view import FileSlice, FileSystemView
from hudi_sync.table.metadata import WriteStat
from hudi_sync.table.schema import META_FIELDS

IS_DELETED = "_hoodie_is_deleted"
# Keys whose string form is the same in Java, Spark and Arrow.
_KEY_TYPES = (pa.types.is_string, pa.types.is_large_string, pa.types.is_integer)
_WRITERS = 8  # log files written at once (encoding and writing release the GIL)


def java_string_hashes(values: pa.Array) -> np.ndarray:
    """Java's ``String.hashCode()`` of each (non-null) string, as uint32: the sum of its
    UTF-16 code units times powers of 31, wrapping at 32 bits. ASCII strings (one code
    unit a byte) are hashed in columns; others one at a time."""
    values = values.cast(pa.string())
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    count = len(values)
    if not count:
        return np.zeros(0, dtype=np.uint32)
    if not pc.all(pc.string_is_ascii(values)).as_py():
        return np.array([_java_hash(v) for v in values.to_pylist()], dtype=np.uint32)
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int32)[
        values.offset : values.offset + count + 1
    ]
    data_buffer = values.buffers()[2]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer else np.zeros(1, np.uint8)
    starts, lengths = offsets[:-1], np.diff(offsets)
    hashes = np.zeros(count, dtype=np.uint32)
    for position in range(int(lengths.max())):
        active = lengths > position
        unit = data[starts[active] + position].astype(np.uint32)
        hashes[active] = hashes[active] * np.uint32(31) + unit
    return hashes


def _java_hash(text: str) -> int:
    value = 0
    encoded = text.encode("utf-16-be")
    for i in range(0, len(encoded), 2):
        value = (value * 31 + int.from_bytes(encoded[i : i + 2], "big")) & 0xFFFFFFFF
    return value


def bucket_ids(key_values: Sequence[pa.Array], num_buckets: int) -> np.ndarray:
    """Each row's bucket, from the values of its key fields (one array per field, in
    the record key's order): ``(List.hashCode() & Integer.MAX_VALUE) % num_buckets``."""
    hashes = np.ones(len(key_values[0]), dtype=np.uint32)  # List.hashCode starts at 1
    with np.errstate(over="ignore"):
        for values in key_values:
            hashes = hashes * np.uint32(31) + java_string_hashes(values)
    return ((hashes & np.uint32(0x7FFFFFFF)) % np.uint32(num_buckets)).astype(np.int64)


def bucket_of_file_id(file_id: str) -> int | None:
    """The bucket a file group id names (its first 8 characters), None if none."""
    head = file_id[:8]
    return int(head) if len(file_id) > 8 and head.isdigit() else None


def new_bucket_file_id(bucket: int) -> str:
    """A new file group for ``bucket``: a UUID led by the bucket number, then ``-0``."""
    return f"{bucket:08d}{str(uuid.uuid4())[8:]}-0"


def keyed_rows(rows: pa.Table, options: WriteOptions, where: str) -> pa.Table:
    """The rows' data columns with the record key, partition path and delete flag, one
    row per key (the highest ordering value, ties to the later row), as the Spark path's
    ``incoming_rows`` makes them; a null key or a key type whose text differs between
    Java and Arrow is refused in one line."""
    fields = options.record_key_fields
    for name in fields:
        if name not in rows.column_names:
            raise BadInputError(f"{where}: the rows have no record key field {name!r}")
        kind = rows.schema.field(name).type
        if not any(accepts(kind) for accepts in _KEY_TYPES):
            raise BadInputError(
                f"{where}: record key field {name} is {kind}; the bucket index takes "
                "string and integer keys"
            )
        if rows.column(name).null_count:
            nulls = rows.column(name).null_count
            raise BadInputError(f"{where}: {nulls} rows have a null record key field {name}")
    data = rows.select([c for c in rows.column_names if c not in META_FIELDS])
    texts = [data.column(f).cast(pa.string()) for f in fields]
    if len(fields) == 1:
        keys = texts[0]
    else:
        labelled = [
            pc.binary_join_element_wise(f"{f}:", t, "") for f, t in zip(fields, texts, strict=True)
        ]
        keys = pc.binary_join_element_wise(*labelled, ",")
    keyed = data.append_column(RECORD_KEY, keys)
    keyed = keyed.append_column(PARTITION_PATH, _partition_paths(data, options))
    keyed = keyed.append_column(DELETE_FLAG, _delete_flags(data, options))
    return _one_per_key(keyed, options.ordering_field)


def _partition_paths(data: pa.Table, options: WriteOptions) -> pa.Array:
    """``v1/v2`` or ``f1=v1/f2=v2``; null or empty values are Hudi's default partition."""
    if not options.partition_fields:
        return pa.array([""] * data.num_rows, pa.string())
    parts = []
    for name in options.partition_fields:
        value = data.column(name).cast(pa.string())
        value = pc.if_else(pc.equal(pc.fill_null(value, ""), ""), DEFAULT_PARTITION, value)
        if options.hive_style_partitioning:
            value = pc.binary_join_element_wise(f"{name}=", value, "")
        parts.append(value)
    if len(parts) == 1:
        return parts[0]
    return pc.binary_join_element_wise(*parts, "/")


def _delete_flags(data: pa.Table, options: WriteOptions) -> pa.Array:
    count = data.num_rows
    if options.operation == "delete":
        return pa.array([True] * count)
    if options.delete_field is not None and options.delete_field in data.column_names:
        field = data.column(options.delete_field).cast(pa.string())
        return pc.fill_null(pc.equal(field, options.delete_marker), False)
    if IS_DELETED in data.column_names:
        return pc.fill_null(data.column(IS_DELETED).cast(pa.bool_()), False)
    return pa.array([False] * count)


def _one_per_key(keyed: pa.Table, ordering: str | None) -> pa.Table:
    """The last row of each (partition, key) in (ordering value, arrival) order."""
    sequence = "__hudi_sync_sequence"
    keyed = keyed.append_column(sequence, pa.array(np.arange(keyed.num_rows)))
    sort: list[tuple[str, ...]] = [(PARTITION_PATH, "ascending"), (RECORD_KEY, "ascending")]
    if ordering is not None and ordering in keyed.column_names:
        sort.append((ordering, "ascending", "at_start"))  # a missing value orders lowest
    sort.append((sequence, "ascending"))
    ordered = keyed.take(pc.sort_indices(keyed, sort_keys=sort))
    if ordered.num_rows <= 1:
        return ordered.drop_columns([sequence])
    keys = ordered.column(RECORD_KEY).combine_chunks()
    partitions = ordered.column(PARTITION_PATH).combine_chunks()
    differs = pc.or_(
        pc.not_equal(keys.slice(1), keys.slice(0, len(keys) - 1)),
        pc.not_equal(partitions.slice(1), partitions.slice(0, len(keys) - 1)),
    )
    last = pa.concat_arrays([differs, pa.array([True])])
    return ordered.filter(last).drop_columns([sequence])


class BucketLayout:
    """The bucket file groups of the partitions a write touches, from one listing of
    those partitions: which exist, their latest slice, and refusals of groups the
    bucket index did not write."""

    def __init__(self, table: HudiTable, partitions: Sequence[str], num_buckets: int) -> None:
        self.num_buckets = num_buckets
        view = FileSystemView(table.location, table.config, table.timeline, partitions)
        self.slices: dict[tuple[str, int], FileSlice] = {}
        for file_slice in view.slices_as_of():
            bucket = bucket_of_file_id(file_slice.file_id)
            where = f"{table.uri}/{file_slice.partition_path}".rstrip("/")
            if bucket is None:
                raise BadInputError(
                    f"{where}: file group {file_slice.file_id} was not written with the "
                    f"bucket index ({cfg.INDEX_TYPE.key}=BUCKET needs a table written with it)"
                )
            if bucket >= num_buckets:
                raise BadInputError(
                    f"{where}: file group {file_slice.file_id} is bucket {bucket}, but "
                    f"{cfg.BUCKET_INDEX_NUM_BUCKETS.key}={num_buckets} (a table keeps its "
                    "bucket count)"
                )
            if (file_slice.partition_path, bucket) in self.slices:
                raise BadInputError(f"{where}: two file groups for bucket {bucket}")
            self.slices[(file_slice.partition_path, bucket)] = file_slice


def append_buckets(
    table: HudiTable,
    keyed: pa.Table,
    spec: AppendSpec,
    num_buckets: int,
    write_token: str = "0-0-0",
) -> list[WriteStat]:
    """Append the keyed rows to their buckets' file groups (new groups for buckets
    without one): one log file per touched bucket, written in parallel."""
    if not keyed.num_rows:
        return []
    location: Location = table.location
    buckets = bucket_ids(_hash_values(keyed.column(RECORD_KEY).combine_chunks()), num_buckets)
    # Rows sorted by (partition, bucket): each group a slice, cut where either changes.
    keyed = keyed.append_column("__bucket", pa.array(buckets))
    keyed = keyed.sort_by([(PARTITION_PATH, "ascending"), ("__bucket", "ascending")])
    partition_column = keyed.column(PARTITION_PATH).combine_chunks()
    codes = pc.dictionary_encode(partition_column).indices.to_numpy(zero_copy_only=False)
    sorted_buckets = keyed.column("__bucket").to_numpy()
    keyed = keyed.drop_columns(["__bucket"])
    changes = (codes[1:] != codes[:-1]) | (sorted_buckets[1:] != sorted_buckets[:-1])
    cuts = [0, *(np.flatnonzero(changes) + 1).tolist(), keyed.num_rows]
    partitions = [partition_column[start].as_py() for start in cuts[:-1]]
    layout = BucketLayout(table, sorted(set(partitions)), num_buckets)
    jobs = [
        (partition, int(sorted_buckets[start]), keyed.slice(start, end - start))
        for partition, (start, end) in zip(partitions, itertools.pairwise(cuts), strict=True)
    ]

    def write(job: tuple[str, int, pa.Table]) -> list[WriteStat]:
        partition, bucket, rows = job
        existing = layout.slices.get((partition, bucket))
        file_id = existing.file_id if existing else new_bucket_file_id(bucket)
        base_file = existing.base_file.name if existing and existing.base_file else ""
        slice_instant = existing.base_instant if existing else spec.instant
        if existing is None:
            location.ensure_folder(location.join(partition) if partition else location.path)
        appended: list[LogAppend] = append_log(
            location, spec, rows, partition, file_id, base_file, write_token, slice_instant
        )
        return [log.stat(partition, file_id, new_group=existing is None) for log in appended]

    with ThreadPoolExecutor(max_workers=_WRITERS) as pool:
        return [stat for stats in pool.map(write, jobs) for stat in stats]


def _hash_values(keys: pa.Array) -> list[pa.Array]:
    """The values Hudi hashes for each record key: the key itself, or the values of a
    ``f1:v1,f2:v2`` key (in the key's field order, Hudi's default hash fields; a value is
    what Java's ``split(":")[1]`` gives)."""
    if not pc.any(pc.match_substring(keys, ":")).as_py():
        return [keys]
    pairs = pc.split_pattern(keys, ",")
    width = len(pairs[0].as_py() or [])
    return [
        pc.list_element(pc.split_pattern(pc.list_element(pairs, i), ":"), 1) for i in range(width)
    ]
