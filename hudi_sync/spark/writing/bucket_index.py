"""Hudi's bucket index for Merge-on-Read writes: a key's file group is its hash bucket.

With ``hoodie.index.type=BUCKET`` every partition has ``hoodie.bucket.index.num.buckets``
file groups, and a record goes to the one its key hashes to, as Hudi's
``BucketIdentifier`` computes it: the Java ``List<String>.hashCode()`` of the values
Hudi's ``KeyGenUtils.extractRecordKeysByFields`` reads out of the stored record key
(``hash_values``), made non-negative, modulo the number of buckets. A bucket's file
group id is a random UUID whose first 8 characters are the bucket number
(``00000003-...-0``), so the bucket of a stored group is read from its name.

So a write needs no index lookup, reads no stored key, and appends each bucket's
upserts and deletes to a new log file (``log_append``): a new bucket's file group has
log files only until a compaction writes its base file, as Hudi's bucket index writes
them. This module runs in the driver without Spark jobs, on an Arrow table of rows: it
is what makes a stream of small batches cheap (the Debezium ingest). ``write`` routes a
small DataFrame here, collecting its rows to the driver; a large one is keyed, hashed
and appended by Spark's executors by the same rules (``bucket_write``).

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
from hudi_sync.spark.writing.keys import (
    EMPTY_KEY_VALUE,
    KEY_PARTS_SEPARATOR,
    KEY_VALUE_SEPARATOR,
    NULL_KEY_VALUE,
)
from hudi_sync.spark.writing.log_append import AppendSpec, LogAppend, append_log
from hudi_sync.spark.writing.merge import DELETE_FLAG, PARTITION_PATH, RECORD_KEY
from hudi_sync.spark.writing.options import URL_ENCODE, WriteOptions
from hudi_sync.storage import Location
from hudi_sync.table import HudiTable
from hudi_sync.table.config.schema import META_FIELDS
from hudi_sync.table.files.fs_view import FileSlice, FileSystemView
from hudi_sync.table.keys.partition_encoding import partition_refusal
from hudi_sync.table.keys.partition_paths import partition_paths
from hudi_sync.table.keys.record_keys import built_keys
from hudi_sync.table.timeline.commit_metadata import WriteStat
from hudi_sync.table.write.compaction import pending_compaction_groups
from hudi_sync.table.write.listing_source import check_listed_names

IS_DELETED = "_hoodie_is_deleted"
# Keys whose string form is the same in Java, Spark and Arrow (a column of nulls only:
# no string form, every value null).
_KEY_TYPES = (pa.types.is_string, pa.types.is_large_string, pa.types.is_integer, pa.types.is_null)
_WRITERS = 8  # log files written at once (encoding and writing release the GIL)


def java_string_hashes(values: pa.Array) -> np.ndarray:
    """Java's ``String.hashCode()`` of each string, as uint32 (a null: 0, as
    ``List.hashCode`` counts a null element): the sum of its UTF-16 code units times
    powers of 31, wrapping at 32 bits. ASCII strings (one code unit a byte) are hashed
    in columns; others one at a time."""
    values = values.cast(pa.string())
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    count = len(values)
    if not count:
        return np.zeros(0, dtype=np.uint32)
    if values.null_count:
        valid = pc.is_valid(values).to_numpy(zero_copy_only=False)
        hashes = np.zeros(count, dtype=np.uint32)
        hashes[valid] = java_string_hashes(values.filter(pc.is_valid(values)))
        return hashes
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


def _java_hash(text: str | None) -> int:
    value = 0
    encoded = (text or "").encode("utf-16-be")
    for i in range(0, len(encoded), 2):
        value = (value * 31 + int.from_bytes(encoded[i : i + 2], "big")) & 0xFFFFFFFF
    return value


def hash_values(key: str, hash_fields: Sequence[str]) -> list[str | None]:
    """The values Hudi hashes for one stored record key (``extractRecordKeysByFields``
    as of Hudi 1.0): the whole key unless it holds both ``,`` and ``:``; else the
    values of its ``field:value`` pairs whose field is a hash field, in the key's order
    (``__null__`` a null, ``__empty__`` ""), or the whole key if none is.

    Pairs are found as Hudi finds them: a value runs from its pair's ``:`` to the last
    ``,`` before the next ``:`` that has a ``,`` after this pair's ``:`` (so values may
    hold ``:`` and ``,``), or to the end. A key on which Hudi's walk never ends (a pair
    not hashed, last, whose value holds ``:``) is refused."""
    if KEY_PARTS_SEPARATOR not in key or KEY_VALUE_SEPARATOR not in key:
        return [key]
    wanted = set(hash_fields)
    values: list[str | None] = []
    start = 0
    while start < len(key):
        colon = key.find(KEY_VALUE_SEPARATOR, start)
        field = key[start:colon]
        end = _value_end(key, colon)
        if field in wanted:
            text: str | None = key[colon + 1 : end]
            text = None if text == NULL_KEY_VALUE else "" if text == EMPTY_KEY_VALUE else text
            values.append(text)
        elif end == len(key) and KEY_VALUE_SEPARATOR in key[colon + 1 :]:
            raise BadInputError(
                f"record key {key!r}: Hudi cannot hash it for the bucket index (its last pair, "
                f"not among {','.join(hash_fields)}, holds ':')"
            )
        start = end + 1
    return values or [key]


def _value_end(key: str, colon: int) -> int:
    """Where the value after ``colon`` ends: the ``,`` before the first later ``:``
    with a ``,`` between, else the key's end."""
    following = key.find(KEY_VALUE_SEPARATOR, colon + 1)
    while following >= 0:
        comma = key.rfind(KEY_PARTS_SEPARATOR, 0, following + 1)
        if comma > colon:
            return comma
        following = key.find(KEY_VALUE_SEPARATOR, following + 1)
    return len(key)


def bucket_ids(keys: pa.Array, hash_fields: Sequence[str], num_buckets: int) -> np.ndarray:
    """Each stored record key's bucket, as Hudi's ``BucketIdentifier.getBucketId``:
    ``(List.hashCode(hash_values) & Integer.MAX_VALUE) % num_buckets``. Keys without
    both ``,`` and ``:`` are hashed whole, and ``f1:v1,f2:v2`` keys whose values hold
    neither by their pairs, in columns; the others are read one at a time."""
    keys = keys.cast(pa.string())
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    with np.errstate(over="ignore"):
        # A one-element list: 31 * 1 + the element's hash.
        hashes = np.uint32(31) + java_string_hashes(keys)
        complex_keys = pc.and_(
            pc.match_substring(keys, KEY_PARTS_SEPARATOR),
            pc.match_substring(keys, KEY_VALUE_SEPARATOR),
        )
        rows = np.flatnonzero(complex_keys.to_numpy(zero_copy_only=False))
        if len(rows):
            hashed, plain = _pair_hashes(keys.take(pa.array(rows)), hash_fields)
            hashes[rows[plain]] = hashed[plain]
            odd = rows[~plain]
            texts = keys.take(pa.array(odd, pa.int64())).to_pylist()
            hashes[odd] = [_list_hash(hash_values(k, hash_fields)) for k in texts]
    return ((hashes & np.uint32(0x7FFFFFFF)) % np.uint32(num_buckets)).astype(np.int64)


def _pair_hashes(keys: pa.Array, hash_fields: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``List.hashCode(hash_values)`` of ``f1:v1,f2:v2`` keys in columns, and which keys
    it holds for: those whose every ``,``-separated part has one ``:`` (no value holds
    either separator), on which Hudi's walk reads each pair's value as it stands."""
    count = len(keys)
    parts = pc.split_pattern(keys, KEY_PARTS_SEPARATOR)
    flat = parts.flatten()
    owner = pc.list_parent_indices(parts).to_numpy(zero_copy_only=False)
    single = pc.count_substring(flat, KEY_VALUE_SEPARATOR).to_numpy(zero_copy_only=False) == 1
    plain = np.ones(count, dtype=bool)
    plain[owner[~single]] = False
    keep = plain[owner]
    pairs = pc.split_pattern(flat.filter(pa.array(keep)), KEY_VALUE_SEPARATOR)
    owner = owner[keep]
    hashed = pc.is_in(pc.list_element(pairs, 0), value_set=pa.array(list(hash_fields)))
    chosen = hashed.to_numpy(zero_copy_only=False)
    values = pc.list_element(pairs, 1).filter(hashed)
    owner = owner[chosen]
    # __null__ is a null element and __empty__ "": both hash 0 in List.hashCode.
    stand_in = pc.is_in(values, value_set=pa.array([NULL_KEY_VALUE, EMPTY_KEY_VALUE]))
    elements = np.where(stand_in.to_numpy(zero_copy_only=False), 0, java_string_hashes(values))
    elements = elements.astype(np.uint32)
    hashes = np.zeros(count, dtype=np.uint32)
    if not len(owner):
        return hashes, plain & False
    starts = np.r_[0, np.flatnonzero(np.diff(owner)) + 1]
    position = np.arange(len(owner)) - np.repeat(starts, np.diff(np.r_[starts, len(owner)]))
    with np.errstate(over="ignore"):
        hashes[owner[starts]] = 1  # List.hashCode starts at 1
        for level in range(int(position.max()) + 1):
            at = position == level
            hashes[owner[at]] = hashes[owner[at]] * np.uint32(31) + elements[at]
    # A key with no hashed pair is hashed whole, as its caller already did.
    found = np.zeros(count, dtype=bool)
    found[owner] = True
    return hashes, plain & found


def _list_hash(values: Sequence[str | None]) -> int:
    """Java's ``List.hashCode()`` of strings: 1, then ``31 * h + element``."""
    value = 1
    for element in values:
        value = (value * 31 + _java_hash(element)) & 0xFFFFFFFF
    return value


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
    ``incoming_rows`` makes them; a key Hudi's key generators refuse, or a key type
    whose text differs between Java and Arrow, is refused in one line."""
    check_key_types(rows.schema, options, where)
    return one_per_key(keyed_columns(rows, options, where), options.ordering_field)


def check_key_types(schema: pa.Schema, options: WriteOptions, where: str) -> None:
    """Refuse a missing record key field, or one whose text differs between Java and
    Arrow (the bucket hash is taken over that text)."""
    for name in options.record_key_fields:
        if name not in schema.names:
            raise BadInputError(f"{where}: the rows have no record key field {name!r}")
        kind = schema.field(name).type
        if not any(accepts(kind) for accepts in _KEY_TYPES):
            raise BadInputError(
                f"{where}: record key field {name} is {kind}; the bucket index takes "
                "string and integer keys"
            )


def keyed_columns(rows: pa.Table, options: WriteOptions, where: str) -> pa.Table:
    """The rows' data columns with the record key, partition path and delete flag
    (every row, in arrival order: ``one_per_key`` keeps one per key)."""
    data = rows.select([c for c in rows.column_names if c not in META_FIELDS])
    keyed = data.append_column(
        RECORD_KEY,
        built_keys(data, options.record_key_fields, where, BadInputError, options.single_key_named),
    )
    partitions = partition_paths(data, options.partition_scheme, where)
    for partition in sorted(pc.unique(partitions).to_pylist()):
        refusal = partition_refusal(partition, where, options.url_encode_partitions, URL_ENCODE)
        if refusal is not None:
            raise BadInputError(refusal)
    keyed = keyed.append_column(PARTITION_PATH, partitions)
    return keyed.append_column(DELETE_FLAG, _delete_flags(data, options))


def _delete_flags(data: pa.Table, options: WriteOptions) -> pa.Array:
    count = data.num_rows
    if options.operation == "delete":
        return pa.array([True] * count, pa.bool_())
    if options.delete_field is not None and options.delete_field in data.column_names:
        field = data.column(options.delete_field).cast(pa.string())
        return pc.fill_null(pc.equal(field, options.delete_marker), False)
    if IS_DELETED in data.column_names:
        return pc.fill_null(data.column(IS_DELETED).cast(pa.bool_()), False)
    return pa.array([False] * count, pa.bool_())


def one_per_key(keyed: pa.Table, ordering: str | None, sequence: str | None = None) -> pa.Table:
    """The last row of each (partition, key) in (ordering value, arrival) order; arrival
    is the rows' order, or the ``sequence`` column's values (dropped) when given."""
    if sequence is None:
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


def stored_timestamps(rows: pa.Table, stored: pa.Schema | None) -> pa.Table:
    """Timestamp columns as the table stores them, with or without a time zone: Spark
    hands every TIMESTAMP over in UTC (the sessions run in UTC), so a column the table
    keeps as local time (Avro ``local-timestamp-*``) arrives zoned. Other types are
    the schema check's to judge."""
    if stored is None:
        return rows
    for index, column in enumerate(rows.schema):
        kind = _stored_timestamp_type(column, stored)
        if kind is not None:
            rows = rows.set_column(index, column.name, rows.column(index).cast(kind))
    return rows


def stored_timestamp_schema(schema: pa.Schema, stored: pa.Schema | None) -> pa.Schema:
    """``schema`` as ``stored_timestamps`` leaves rows of it."""
    if stored is None:
        return schema
    for index, column in enumerate(schema):
        kind = _stored_timestamp_type(column, stored)
        if kind is not None:
            schema = schema.set(index, column.with_type(kind))
    return schema


def _stored_timestamp_type(column: pa.Field, stored: pa.Schema) -> pa.DataType | None:
    if column.name not in stored.names:
        return None
    kind = stored.field(column.name).type
    timestamps = pa.types.is_timestamp(column.type) and pa.types.is_timestamp(kind)
    return kind if timestamps and (column.type.tz is None) != (kind.tz is None) else None


class BucketLayout:
    """The bucket file groups of the partitions a write touches, from one listing of
    those partitions: which exist, their latest slice, and refusals of groups the
    bucket index did not write."""

    def __init__(self, table: HudiTable, partitions: Sequence[str], num_buckets: int) -> None:
        self.num_buckets = num_buckets
        view = FileSystemView(
            table.location, table.config, table.timeline, partitions, table.view.listing
        )
        check_listed_names(view)
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


def key_buckets(keyed: pa.Table, options: WriteOptions, where: str) -> np.ndarray:
    """The bucket of each keyed row (``keyed_rows``), found before the write starts: a
    key Hudi cannot hash is refused with nothing on the timeline."""
    keys = keyed.column(RECORD_KEY).combine_chunks()
    try:
        return bucket_ids(keys, options.bucket_hash_fields, options.num_buckets)
    except BadInputError as exc:
        raise BadInputError(f"{where}: {exc}") from None


def append_buckets(
    table: HudiTable,
    keyed: pa.Table,
    buckets: np.ndarray,
    spec: AppendSpec,
    num_buckets: int,
    write_token: str = "0-0-0",
) -> list[WriteStat]:
    """Append the keyed rows to their buckets' file groups (``key_buckets``; new groups
    for buckets without one): one log file per touched bucket, written in parallel."""
    if not keyed.num_rows:
        return []
    location: Location = table.location
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
    # Version 6 names a log for its slice: a group under a pending compaction (executed
    # asynchronously) takes the compaction's slice, as Hudi's writers do.
    planned = pending_compaction_groups(table) if spec.table_version < 8 else {}
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
        if existing and (partition, file_id) in planned:
            slice_instant, base_file = planned[(partition, file_id)], ""
        if existing is None:
            location.ensure_folder(location.join(partition) if partition else location.path)
        appended: list[LogAppend] = append_log(
            location, spec, rows, partition, file_id, base_file, write_token, slice_instant
        )
        return [log.stat(partition, file_id, new_group=existing is None) for log in appended]

    with ThreadPoolExecutor(max_workers=_WRITERS) as pool:
        return [stat for stats in pool.map(write, jobs) for stat in stats]
