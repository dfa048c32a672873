"""The Arrow engine: a write's file groups merged and written in the driver, no Spark job.

Most writes are small (a micro-batch, a Debezium batch, a correction of a few rows), and
for them Spark's fixed cost per job is most of the time. So a batch Spark estimates
below ``hudi_sync.write.driver.max.bytes`` (and every ``write_arrow`` call) is written
here, by the same rules as the executors' engines and into the same table:

1. the rows are keyed as Hudi's key generators key them (``bucket_index.keyed_columns``:
   record key, partition path, delete flag; refusals in one line) and, where Hudi
   combines them, reduced to one row per key by the ordering field;
2. Hudi's simple index (BLOOM finds the same keys): the record keys of the stored base
   files of the touched partitions, read alone (one column), tell which file group
   holds each incoming key (``stored_keys``; a key stored twice updates both, as the
   executors' join does);
3. new keys go into small files, then new file groups (``file_groups.new_key_buckets``,
   the executors' routing by a hash of the key);
4. each touched file group is merged (Copy-on-Write) or appended to as a log file
   (Merge-on-Read) by the function Spark's Python workers run for it
   (``python_merge.group_merger``), a few at once (pyarrow releases the GIL).

The commit protocol, services and hook around it are the writer's (``writer``).
Which engine takes a write is the writer's choice (by size, and no Spark merge engine
named in the options); ``refusal`` says which rows this engine cannot key: key and
partition fields must be ones whose text Arrow and Spark spell alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_sync.spark.writing.bucket_index import java_string_hashes, keyed_columns, one_per_key
from hudi_sync.spark.writing.file_groups import WriteTarget, new_key_buckets, uses_small_files
from hudi_sync.spark.writing.log_append import AppendSpec
from hudi_sync.spark.writing.merge import DELETE_FLAG, PARTITION_PATH, RECORD_KEY
from hudi_sync.spark.writing.options import WriteOptions
from hudi_sync.spark.writing.python_merge import group_merger, write_stat
from hudi_sync.spark.writing.spark_merge import FILE_ID, Bucket
from hudi_sync.storage import Location, read_parquet
from hudi_sync.table.cdc.log import CdcMode
from hudi_sync.table.config.schema import META_FIELDS
from hudi_sync.table.keys.partition_paths import TIMESTAMP, partition_paths
from hudi_sync.table.timeline.commit_metadata import WriteStat

_WRITERS = 8  # file groups merged or read at once
_ROW = "__hudi_sync_row"


def _text_as_in_spark(kind: pa.DataType) -> bool:
    """Whether Arrow writes a value of ``kind`` as the same text as Spark does (a record
    key or a partition path is that text): strings and integers."""
    return bool(
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_integer(kind)
        or pa.types.is_null(kind)
    )


def refusal(schema: pa.Schema, options: WriteOptions) -> str | None:
    """Why the Arrow engine cannot key rows of ``schema`` (None: it can): a record key or
    simple partition field whose text Spark and Arrow spell differently (a double's
    ``1.0``, a timestamp's fraction)."""
    scheme = options.partition_scheme
    simple = [f for f, kind in zip(scheme.fields, scheme.kinds, strict=True) if kind != TIMESTAMP]
    for name in (*options.record_key_fields, *simple):
        if name in schema.names and not _text_as_in_spark(schema.field(name).type):
            return f"field {name} is {schema.field(name).type}: only string and integer fields"
    return None


def keyed_incoming(
    rows: pa.Table, options: WriteOptions, ordering: str | None, where: str
) -> pa.Table:
    """The rows keyed (``keyed_columns``), one per key where Hudi combines them (upsert,
    delete, or ``hoodie.combine.before.insert``): the highest ``ordering`` value, ties
    to the later row."""
    keyed = keyed_columns(rows, options, where)
    if options.operation in ("upsert", "delete") or options.combine_before_insert:
        keyed = one_per_key(keyed, ordering)
    return keyed


def row_partitions(rows: pa.Table, options: WriteOptions, where: str) -> list[str]:
    """The partition paths the rows name (``delete_partition`` without the option)."""
    data = rows.select([c for c in rows.column_names if c not in META_FIELDS])
    return sorted(pc.unique(partition_paths(data, options.partition_scheme, where)).to_pylist())


def write_file_groups(
    target: WriteTarget,
    keyed: pa.Table,
    cdc_mode: CdcMode | None,
    log_appends: AppendSpec | None,
) -> list[WriteStat]:
    """Merge the keyed rows into the file groups they touch and write them (see the
    module's docstring); returns their write stats."""
    operation = target.options.operation
    if operation in ("upsert", "delete"):
        tagged = _tagged(target, keyed)
    else:  # an insert looks nothing up
        tagged = keyed.append_column(FILE_ID, pa.nulls(keyed.num_rows, pa.string()))
    stored = pc.is_valid(tagged.column(FILE_ID))
    updates = tagged.filter(stored)
    inserts = tagged.filter(pc.and_(pc.invert(stored), pc.invert(tagged.column(DELETE_FLAG))))
    counts = _per_partition(inserts)
    small_files = uses_small_files(operation) and log_appends is None
    routed = _routed(inserts, new_key_buckets(target, counts, small_files))
    rows = pa.concat_tables([updates, routed])
    if not rows.num_rows:
        return []
    rows = rows.sort_by([(PARTITION_PATH, "ascending"), (FILE_ID, "ascending")])
    merge = group_merger(target, cdc_mode, log_appends)
    groups = _runs(rows)

    def write(number: int) -> list[WriteStat]:
        start, end = groups[number]
        stats = merge(rows.slice(start, end - start), (number, 0, 0))
        return [write_stat(row) for row in stats.to_pylist()]

    with ThreadPoolExecutor(max_workers=min(_WRITERS, len(groups))) as pool:
        return [stat for stats in pool.map(write, range(len(groups))) for stat in stats]


def _tagged(target: WriteTarget, keyed: pa.Table) -> pa.Table:
    """``keyed`` with ``FILE_ID``: the stored file group holding each key (null: none);
    a key two stored groups hold comes once for each."""
    stored = stored_keys(target.location, _touched_files(target, keyed))
    if not stored.num_rows:
        return keyed.append_column(FILE_ID, pa.nulls(keyed.num_rows, pa.string()))
    incoming = pa.table(
        {
            PARTITION_PATH: keyed.column(PARTITION_PATH),
            RECORD_KEY: keyed.column(RECORD_KEY),
            _ROW: pa.array(np.arange(keyed.num_rows)),
        }
    )
    joined = incoming.join(stored, [PARTITION_PATH, RECORD_KEY], join_type="left outer")
    joined = joined.sort_by([(_ROW, "ascending")])  # arrival order, as the rows came
    tagged = keyed.take(joined.column(_ROW))
    return tagged.append_column(FILE_ID, joined.column(FILE_ID))


def _touched_files(target: WriteTarget, keyed: pa.Table) -> list[tuple[str, str, str]]:
    """(partition, file id, base file name) of the snapshot's file groups in the
    partitions the rows go to."""
    touched = set(pc.unique(keyed.column(PARTITION_PATH)).to_pylist())
    return sorted(
        (partition, file_id, name)
        for (partition, file_id), name in target.snapshot.items()
        if partition in touched
    )


def stored_keys(location: Location, files: Sequence[tuple[str, str, str]]) -> pa.Table:
    """``(partition, key, file id)`` of every row of the base ``files`` (partition,
    file id, name), reading their record key column alone."""

    def read(file: tuple[str, str, str]) -> pa.Table:
        partition, file_id, name = file
        path = location.join(partition, name)
        if location.is_local:
            keys = pq.read_table(path, columns=[RECORD_KEY]).column(RECORD_KEY)
        else:
            with location.fs.open(path, "rb") as handle:
                keys = read_parquet(handle, [RECORD_KEY]).column(RECORD_KEY)
        count = len(keys)
        return pa.table(
            {
                PARTITION_PATH: pa.array([partition] * count, pa.string()),
                RECORD_KEY: keys.cast(pa.string()),
                FILE_ID: pa.array([file_id] * count, pa.string()),
            }
        )

    empty = pa.schema([(PARTITION_PATH, pa.string()), (RECORD_KEY, pa.string())])
    empty = empty.append(pa.field(FILE_ID, pa.string()))
    if not files:
        return empty.empty_table()
    with ThreadPoolExecutor(max_workers=min(_WRITERS, len(files))) as pool:
        tables = list(pool.map(read, files))
    return pa.concat_tables(tables).combine_chunks()


def _per_partition(rows: pa.Table) -> dict[str, int]:
    if not rows.num_rows:
        return {}
    counted = rows.group_by(PARTITION_PATH).aggregate([(PARTITION_PATH, "count")])
    return dict(
        zip(
            counted.column(PARTITION_PATH).to_pylist(),
            counted.column(f"{PARTITION_PATH}_count").to_pylist(),
            strict=True,
        )
    )


def _routed(inserts: pa.Table, buckets: Sequence[Bucket]) -> pa.Table:
    """New keys to the bucket their key's hash falls in (``Bucket``'s share of the
    partition's hash range), as the executors route them."""
    if not inserts.num_rows:
        return inserts
    position = _mixed(java_string_hashes(inserts.column(RECORD_KEY))).astype(np.float64) / 2.0**32
    partitions = np.asarray(inserts.column(PARTITION_PATH).to_pylist(), dtype=object)
    file_ids = np.empty(inserts.num_rows, dtype=object)
    for bucket in buckets:
        inside = (partitions == bucket.partition) & (position >= bucket.low)
        file_ids[inside & (position < bucket.high)] = bucket.file_id
    column = inserts.schema.get_field_index(FILE_ID)
    return inserts.set_column(column, FILE_ID, pa.array(file_ids.tolist(), pa.string()))


def _mixed(hashes: np.ndarray) -> np.ndarray:
    """Hashes spread over the whole 32-bit range (MurmurHash3's finalizer): Java's
    string hashes of short keys (``"7"``, ``"42"``) are small numbers, which would all
    fall into the first file group's share."""
    with np.errstate(over="ignore"):
        mixed = hashes.astype(np.uint32)
        mixed ^= mixed >> np.uint32(16)
        mixed *= np.uint32(0x85EBCA6B)
        mixed ^= mixed >> np.uint32(13)
        mixed *= np.uint32(0xC2B2AE35)
        mixed ^= mixed >> np.uint32(16)
    return mixed


def _runs(rows: pa.Table) -> list[tuple[int, int]]:
    """The ``[start, end)`` of each (partition, file id) run of the sorted rows."""
    partitions = rows.column(PARTITION_PATH).to_pylist()
    file_ids = rows.column(FILE_ID).to_pylist()
    starts = [
        i
        for i in range(rows.num_rows)
        if i == 0 or (partitions[i], file_ids[i]) != (partitions[i - 1], file_ids[i - 1])
    ]
    return list(zip(starts, [*starts[1:], rows.num_rows], strict=True))
