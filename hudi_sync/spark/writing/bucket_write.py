"""Bucket-index writes of a DataFrame on Spark's executors: the driver plans and commits.

A batch too big for the driver (``hudi_sync.write.driver.max.bytes``, against
Spark's size estimate of the DataFrame) is written in two Spark jobs, by the same rules
as the driver's Arrow path (``bucket_index``), so both write the same table:

1. Before the timeline is touched, Python workers key each Arrow batch of the columns
   the record key and partition path are made of (``keyed_columns``) and hash it to its
   bucket (``bucket_ids``: Java's hash codes, in numpy; Spark's own hash is murmur3);
   the driver collects only the (partition, bucket) groups and their row counts (a
   refused key fails here, with nothing written).
2. The driver lists the touched partitions once (``BucketLayout``) and names every
   group's file group, a new bucket's id drawn here, so a retried task appends to the
   same file group. Inside the deltacommit, the workers key every row again (nothing is
   cached: the first job read only the key columns), each row keeping its arrival
   (``monotonically_increasing_id``: the Spark partition, then the row in it, the order
   ``toArrow`` collects rows in); each (partition, bucket) group goes to one Python
   worker, which keeps one row per key (ordering value, then arrival: ties to the later
   row) and appends the group's log file through the table's ``Location`` rebuilt from
   its URI and storage options, after a marker named with the task's attempt
   (``append_log``): files of a failed attempt are discarded at commit by their
   markers, and a failed write is rolled back by them, as for ``python_merge``. The
   DataFrame is read twice, so it must give the same rows both times (a group the plan
   lacks fails the write).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

from hudi_sync.errors import BadInputError, WriteError, first_line
from hudi_sync.spark.compat import apply_in_arrow
from hudi_sync.spark.writing.bucket_index import (
    BucketLayout,
    key_buckets,
    keyed_columns,
    new_bucket_file_id,
    one_per_key,
    stored_timestamps,
)
from hudi_sync.spark.writing.keys import WORKER_REFUSAL
from hudi_sync.spark.writing.log_append import AppendSpec, append_log
from hudi_sync.spark.writing.merge import DELETE_FLAG, PARTITION_PATH, RECORD_KEY
from hudi_sync.spark.writing.options import WriteOptions
from hudi_sync.storage import open_location
from hudi_sync.table import HudiTable
from hudi_sync.table.config.schema import META_FIELDS
from hudi_sync.table.timeline.commit_metadata import WriteStat

ARRIVAL = "__hudi_sync_arrival"
BUCKET = "__hudi_sync_bucket"


@dataclasses.dataclass
class KeyedBatch:
    """The batch and the (partition, bucket) groups the executors found in it."""

    rows: DataFrame  # the data columns
    groups: dict[tuple[str, int], int]  # (partition, bucket) -> incoming rows

    @property
    def partitions(self) -> list[str]:
        return sorted({partition for partition, _ in self.groups})


def keyed_batch(df: DataFrame, options: WriteOptions, where: str) -> KeyedBatch:
    """Job 1: key and bucket every row on the executors, reading only the columns the
    key and the partition path are made of, and collect the groups."""
    data_columns = [c for c in df.columns if c not in META_FIELDS]
    rows = df.select(*data_columns)
    needed = {*options.record_key_fields, *options.partition_fields}
    keys = rows.select(*[c for c in data_columns if c in needed])
    schema = StructType(
        [
            StructField(PARTITION_PATH, StringType(), False),
            StructField(BUCKET, LongType(), False),
        ]
    )
    bucketed = keys.mapInArrow(_keyer(options, where, groups_only=True), schema)
    try:
        counted = bucketed.groupBy(PARTITION_PATH, BUCKET).count().collect()
    except Exception as exc:
        refusal = WORKER_REFUSAL.search(str(exc))
        if refusal:
            raise BadInputError(refusal.group(1).strip()) from None
        raise WriteError(
            f"{where}: computing the rows to write failed, nothing was written: {first_line(exc)}"
        ) from exc
    groups = {(str(r[0]), int(r[1])): int(r[2]) for r in counted}
    return KeyedBatch(rows, groups)


def _keyer(
    options: WriteOptions, where: str, groups_only: bool = False
) -> Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """What Python workers run on each Arrow batch: ``keyed_columns`` and the bucket
    (``groups_only``: the partition path and the bucket alone)."""

    def key(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            keyed = keyed_columns(pa.Table.from_batches([batch]), options, where)
            buckets = pa.array(key_buckets(keyed, options, where), pa.int64())
            if groups_only:
                keyed = keyed.select([PARTITION_PATH])
            yield from keyed.append_column(BUCKET, buckets).to_batches()

    return key


def append_groups(
    where: str,
    table: HudiTable,
    batch: KeyedBatch,
    spec: AppendSpec,
    options: WriteOptions,
    stored: pa.Schema | None,
) -> list[WriteStat]:
    """Job 2: each (partition, bucket) group appended to its file group's log by one
    Python worker; the driver lists the touched partitions once and names the file
    groups (a new bucket's id drawn here, so a retried task writes the same group)."""
    if not batch.groups:
        return []
    layout = BucketLayout(table, batch.partitions, options.num_buckets)
    plan: dict[str, tuple[str, str, str, bool]] = {}
    for partition, bucket in batch.groups:
        existing = layout.slices.get((partition, bucket))
        if existing is None:
            plan[f"{partition}\0{bucket}"] = (new_bucket_file_id(bucket), "", spec.instant, True)
        else:
            base_file = existing.base_file.name if existing.base_file else ""
            plan[f"{partition}\0{bucket}"] = (
                existing.file_id,
                base_file,
                existing.base_instant,
                False,
            )
    location = table.location
    for partition in batch.partitions:  # new partitions: their folders, once
        location.ensure_folder(location.join(partition) if partition else location.path)
    appender = _appender(
        location.uri, dict(location.storage_options), spec, plan, options.ordering_field, stored
    )
    arriving = batch.rows.withColumn(ARRIVAL, F.monotonically_increasing_id())
    schema = StructType(
        [
            *arriving.schema.fields,
            StructField(RECORD_KEY, StringType(), False),
            StructField(PARTITION_PATH, StringType(), False),
            StructField(DELETE_FLAG, BooleanType(), False),
            StructField(BUCKET, LongType(), False),
        ]
    )
    keyed = arriving.mapInArrow(_keyer(options, where), schema)
    stats_schema = StructType([StructField("stat", StringType(), False)])
    written = apply_in_arrow(keyed, (PARTITION_PATH, BUCKET), appender, stats_schema)
    return [_stat(json.loads(row[0])) for row in written.collect()]


def _appender(
    base: str,
    storage_options: Mapping[str, Any],
    spec: AppendSpec,
    plan: Mapping[str, tuple[str, str, str, bool]],
    ordering: str | None,
    stored: pa.Schema | None,
) -> Callable[[pa.Table], pa.Table]:
    """What a Python worker runs for one (partition, bucket) group: one row per key,
    appended as the group's log file (its name carries the task's attempt)."""

    def append(rows: pa.Table) -> pa.Table:
        from pyspark import TaskContext

        location = open_location(base, storage_options)
        partition = str(rows.column(PARTITION_PATH)[0].as_py())
        bucket = int(rows.column(BUCKET)[0].as_py())
        planned = plan.get(f"{partition}\0{bucket}")
        if planned is None:  # the keys differ from the first read's
            raise WriteError(
                f"{base}: the DataFrame gave other rows when read again (bucket {bucket} of "
                f"partition {partition!r} was not in them): write a deterministic DataFrame"
            )
        file_id, base_file, slice_instant, new_group = planned
        keyed = one_per_key(rows.drop_columns([BUCKET]), ordering, ARRIVAL)
        keyed = stored_timestamps(keyed, stored)
        context = TaskContext.get()
        task = (
            (context.partitionId(), context.stageId(), context.attemptNumber())
            if context
            else (0, 0, 0)
        )
        token = "-".join(str(part) for part in task)
        appended = append_log(
            location, spec, keyed, partition, file_id, base_file, token, slice_instant
        )
        stats = [log.stat(partition, file_id, new_group=new_group) for log in appended]
        return pa.table({"stat": [json.dumps(dataclasses.asdict(s)) for s in stats]})

    return append


def _stat(values: dict[str, Any]) -> WriteStat:
    """A ``WriteStat`` from its fields as a worker sent them (JSON: tuples as lists)."""
    fields = {f.name: f for f in dataclasses.fields(WriteStat)}
    for name, value in list(values.items()):
        if isinstance(value, list) and name in fields:
            values[name] = tuple(value)
    return WriteStat(**values)
