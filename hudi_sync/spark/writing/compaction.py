"""Merge-on-Read compaction with Spark: the plan's file groups merged by Python workers.

The table core schedules, commits and resumes compactions (``table.write.compaction``);
this module only spreads a plan's operations over Spark's Python workers, one file group
per task, each opening the table from its URI and storage options.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator

import pyarrow as pa
from pyspark.sql import SparkSession

from hudi_sync.spark.parallelism import default_parallelism
from hudi_sync.table.timeline.commit_metadata import WriteStat
from hudi_sync.table.write.compaction import CompactionJob, CompactionOperation, Executor


def spark_executor(spark: SparkSession) -> Executor:
    """An executor running each operation in a Spark task."""

    def run(operations: list[CompactionOperation], job: CompactionJob) -> list[WriteStat]:
        if not operations:
            return []
        count = max(1, min(len(operations), default_parallelism(spark)))
        numbers = spark.range(0, len(operations), numPartitions=count)
        rows = numbers.mapInArrow(_runner(operations, job), "stat string").collect()
        return [WriteStat.from_record(json.loads(r["stat"]), "") for r in rows]

    return run


def _runner(
    operations: list[CompactionOperation], job: CompactionJob
) -> Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        context = TaskContext.get()
        stage = context.stageId() if context else 0
        attempt = context.attemptNumber() if context else 0
        for batch in batches:
            for number in batch.column(0).to_pylist():
                stat = job.run(operations[number], f"{number}-{stage}-{attempt}")
                yield pa.record_batch([pa.array([json.dumps(stat.to_record())])], ["stat"])

    return run
