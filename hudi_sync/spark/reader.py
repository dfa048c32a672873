"""``read(spark, path, options)``: Hudi snapshot, time-travel and incremental queries.

The table core picks the files (the same rules as the sync); Spark reads only those
parquet files, merging schemas so files written before a column was added read it as
null. Copy-on-Write tables, and Merge-on-Read tables read-optimized (base files only).
CDC queries (``hoodie.datasource.query.incremental.format=cdc``) are planned by the
table core and read split by split in Spark's Python workers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_sync.errors import BadInputError
from hudi_sync.storage import open_location
from hudi_sync.table import HudiTable
from hudi_sync.table.changes import (
    CHANGE_SCHEMA,
    ChangeSplit,
    change_rows,
    plan_changes,
    read_split,
)
from hudi_sync.table.fs_view import FileSlice
from hudi_sync.table.schema import META_FIELDS

QUERY_TYPE = "hoodie.datasource.query.type"
AS_OF = "as.of.instant"
BEGIN = "hoodie.datasource.read.begin.instanttime"
END = "hoodie.datasource.read.end.instanttime"
INCREMENTAL_FORMAT = "hoodie.datasource.query.incremental.format"
QUERY_TYPES = ("snapshot", "read_optimized", "incremental")
INCREMENTAL_FORMATS = ("latest_state", "cdc")
CHANGE_COLUMNS = "op string, ts_ms string, before string, after string"
# A CDC query whose files (by the commits' write stats) are at most this size is read on
# the driver and handed to Spark as Arrow: starting Python workers costs more than the
# reading. Larger or unsized plans are read split by split in the workers.
DRIVER_READ_MAX_BYTES = 64 * 1024 * 1024


def read(
    spark: SparkSession,
    path: str,
    options: Mapping[str, object] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> DataFrame:
    """The rows of a Hudi table as a DataFrame, by Hudi's read options."""
    opts = {str(k): str(v) for k, v in (options or {}).items()}
    table = HudiTable.open(path, storage_options)
    if opts.get(QUERY_TYPE, "snapshot").strip().lower() == "incremental":
        if BEGIN not in opts:
            raise BadInputError(f"{QUERY_TYPE}=incremental needs {BEGIN}")
        if incremental_format(opts) == "cdc":
            return changes(spark, table, opts[BEGIN], opts.get(END))
    files = plan_files(table, opts)
    frame = _read_slices(spark, table, files.slices)
    if files.commits is None:
        return frame
    return frame.where(F.col("_hoodie_commit_time").isin(list(files.commits)))


@dataclass(frozen=True)
class FilePlan:
    """The base files a snapshot, time-travel or latest_state query reads, and for
    latest_state the commits whose rows it keeps."""

    slices: list[FileSlice]
    commits: tuple[str, ...] | None = None


def plan_files(table: HudiTable, opts: Mapping[str, str]) -> FilePlan:
    """Pick the files of a non-CDC query by Hudi's read options (shared by ``read``
    and ``format("hudi")``)."""
    query = opts.get(QUERY_TYPE, "snapshot").strip().lower()
    if query not in QUERY_TYPES:
        raise BadInputError(f"{QUERY_TYPE}={query!r} is not one of {', '.join(QUERY_TYPES)}")
    if query == "incremental":
        begin, end = opts.get(BEGIN), opts.get(END)
        if begin is None:
            raise BadInputError(f"{QUERY_TYPE}=incremental needs {BEGIN}")
        begin_time = None if begin in ("", "0", "earliest") else begin
        commits = tuple(i.requested_time for i in table.view.instants_in_range(begin_time, end))
        return FilePlan(table.changed_file_slices(begin, end), commits)
    if table.config.is_mor and query == "snapshot":
        raise BadInputError(
            f"{table.uri}: snapshot queries of MERGE_ON_READ tables need log merging; "
            f"read it with {QUERY_TYPE}=read_optimized"
        )
    return FilePlan(table.file_slices(as_of=opts.get(AS_OF), read_optimized=True))


def incremental_format(opts: Mapping[str, str]) -> str:
    value = opts.get(INCREMENTAL_FORMAT, "latest_state").strip().lower()
    if value not in INCREMENTAL_FORMATS:
        raise BadInputError(
            f"{INCREMENTAL_FORMAT}={value!r} is not one of {', '.join(INCREMENTAL_FORMATS)}"
        )
    return value


def changes(spark: SparkSession, table: HudiTable, begin: str, end: str | None) -> DataFrame:
    """The CDC rows of the commits in ``(begin, end]``: ``op``, ``ts_ms``, ``before``,
    ``after``. Each split is read by a Python worker through the table's storage."""
    plan = plan_changes(table, begin, end)
    if not plan.splits:
        return spark.createDataFrame(CHANGE_SCHEMA.empty_table())
    size = plan.read_bytes
    if size is not None and size <= DRIVER_READ_MAX_BYTES:
        return spark.createDataFrame(change_rows(table.location, plan.splits))
    # The splits travel in the function; Spark only numbers them (no Python stage).
    texts = [split.to_json() for split in plan.splits]
    slices = max(1, min(len(texts), spark.sparkContext.defaultParallelism))
    numbers = spark.range(0, len(texts), numPartitions=slices)
    return numbers.mapInArrow(
        _split_reader(table.uri, dict(table.location.storage_options), texts), CHANGE_COLUMNS
    )


def _split_reader(uri: str, storage_options: dict[str, Any], texts: list[str]) -> Any:
    def read_batches(batches: Any) -> Any:
        location = open_location(uri, storage_options)
        for batch in batches:
            for number in batch.column(0).to_pylist():
                split = ChangeSplit.from_json(texts[number])
                yield from read_split(location, split).to_batches()

    return read_batches


def _read_slices(spark: SparkSession, table: HudiTable, slices: list[FileSlice]) -> DataFrame:
    paths = [table.location.join(s.relative_base_path) for s in slices if s.relative_base_path]
    if not paths:
        return _empty(spark, table)
    uris = [p if "://" in p else "file://" + os.path.abspath(p) for p in paths]
    return spark.read.option("mergeSchema", "true").parquet(*uris)


def _empty(spark: SparkSession, table: HudiTable) -> DataFrame:
    return spark.createDataFrame(empty_schema(table).empty_table())


def empty_schema(table: HudiTable) -> pa.Schema:
    """A table without files: meta fields first, then the schema's columns (as strings:
    nothing is read, the names are what a reader needs)."""
    fields = [pa.field(name, pa.string()) for name in META_FIELDS]
    try:
        avro = table.avro_schema
    except BadInputError:
        avro = {"fields": []}
    return pa.schema(fields + [pa.field(f["name"], pa.string()) for f in avro.get("fields", [])])
