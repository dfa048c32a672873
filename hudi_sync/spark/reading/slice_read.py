"""Merge-on-Read file slices with log files, read and merged by Spark's Python workers.

A slice with log files cannot be read by a Parquet reader: its base rows are updated
and deleted by its log records (the table core's ``read_file_slice``, by the table's
merge rules). Each such slice is one unit of work for a Python worker, so memory is
bounded by a slice, not the table; the workers open the table from its URI and
storage options, never the driver's disk. Slices without logs are read as plain
base files by the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from hudi_sync.spark.arrow_columns import spark_ready
from hudi_sync.spark.compat import from_arrow_schema
from hudi_sync.spark.parallelism import default_parallelism
from hudi_sync.storage import open_location
from hudi_sync.table import HudiTable
from hudi_sync.table.files.fs_view import FileSlice
from hudi_sync.table.read.slice_reader import read_file_slice
from hudi_sync.table.read.snapshot import snapshot_schema
from hudi_sync.table.records.merge import MergeRules


def read_merged_slices(
    spark: SparkSession,
    table: HudiTable,
    slices: list[FileSlice],
    rules: MergeRules,
    as_of: str | None,
) -> DataFrame:
    """The merged rows of ``slices`` (each with log files) as of instant ``as_of``
    (latest when None), one slice per task."""
    schema = spark_ready(snapshot_schema(table, slices))
    count = max(1, min(len(slices), default_parallelism(spark)))
    numbers = spark.range(0, len(slices), numPartitions=count)
    reader = _slice_reader(
        table.uri,
        dict(table.location.storage_options),
        slices,
        rules,
        table.view.committed_instants,
        as_of,
        schema,
    )
    return numbers.mapInArrow(reader, from_arrow_schema(schema))


def _slice_reader(
    uri: str,
    storage_options: Mapping[str, Any],
    slices: list[FileSlice],
    rules: MergeRules,
    committed: Callable[[str], bool],
    as_of: str | None,
    schema: pa.Schema,
) -> Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A ``mapInArrow`` function reading slice number N of ``slices`` per input row;
    it carries plain data only (URI, options, slices, rules)."""

    def read_batches(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        location = open_location(uri, storage_options)
        for batch in batches:
            for number in batch.column(0).to_pylist():
                rows = read_file_slice(
                    location, slices[number], rules, committed, as_of, schema, in_file_order=False
                )
                yield from rows.to_batches()

    return read_batches
