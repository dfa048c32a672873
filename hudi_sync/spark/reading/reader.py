"""``read(spark, path, options)``: Hudi snapshot, time-travel and incremental queries.

The table core picks the files (the same rules as the sync); Spark reads only those
parquet files, merging schemas so files written before a column was added read it as
null. Copy-on-Write tables, and Merge-on-Read tables read-optimized (base files only).
CDC queries (``hoodie.datasource.query.incremental.format=cdc``) are planned by the
table core and read split by split in Spark's Python workers.

Where the files are read: Spark's own parquet reader reads local tables, and object
store tables when Spark's Hadoop has a file system for the scheme and no storage options
were given (they are fsspec's, which Spark would not see). Otherwise (say ``s3://`` or
``gs://`` without Hadoop connector jars) Spark's Python workers read each planned file
through fsspec, rebuilding the file system from the table URI and its storage options;
a small read (``DRIVER_READ_MAX_BYTES``) is read on the driver instead.
Storage options are a ``storage_options`` mapping or ``storage.<key>=<value>`` read
options (dotted keys nest, as the CLI's ``-o KEY=VALUE``).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError
from hudi_sync.spark.arrow_columns import align, spark_ready
from hudi_sync.spark.compat import arrow_dataframe, from_arrow_schema
from hudi_sync.spark.hadoop import spark_opens
from hudi_sync.spark.parallelism import default_parallelism
from hudi_sync.spark.reading.slice_read import read_merged_slices
from hudi_sync.storage import Location, nest_option, open_location, read_parquet
from hudi_sync.table import HudiTable
from hudi_sync.table.cdc.plan import plan_changes
from hudi_sync.table.cdc.read import CHANGE_SCHEMA, change_rows, read_split
from hudi_sync.table.cdc.splits import ChangeSplit, divide_splits
from hudi_sync.table.config.schema import META_FIELDS
from hudi_sync.table.files.fs_view import FileSlice
from hudi_sync.table.read.snapshot import slice_merge_rules
from hudi_sync.table.records.merge import MergeRules
from hudi_sync.table.timeline.instant import comparable_instant

QUERY_TYPE = cfg.QUERY_TYPE.key
AS_OF = cfg.AS_OF.key
BEGIN = cfg.BEGIN.key
END = cfg.END.key
INCREMENTAL_FORMAT = cfg.INCREMENTAL_FORMAT.key
QUERY_TYPES = cfg.QUERY_TYPE.choices
INCREMENTAL_FORMATS = cfg.INCREMENTAL_FORMAT.choices
CHANGE_COLUMNS = "op string, ts_ms string, before string, after string"
# A CDC query whose files (by the commits' write stats), or an object store read Spark
# cannot open whose base files (by the listing), are at most this size is read on the
# driver and handed to Spark as Arrow: starting Python workers costs more than the
# reading. Larger or unsized plans are read file by file or split by split in the workers.
DRIVER_READ_MAX_BYTES = 64 * 1024 * 1024
# A CDC log read in the workers with nothing to look up (data_before_after) is divided
# into parts of about this size, so that several tasks decode it.
CDC_PART_BYTES = 16 * 1024 * 1024
STORAGE_PREFIX = "storage."
# Parquet footers read at once on the driver (the merged schema of a worker read).
FOOTER_READERS = 16


def split_options(
    options: Mapping[str, object] | None, storage_options: Mapping[str, Any] | None = None
) -> tuple[dict[str, str], dict[str, Any]]:
    """Hudi read options, and ``storage_options`` (a copy) with the storage options given
    among the read options as ``storage.<key>=<value>`` added (dotted keys nest:
    ``storage.client_kwargs.endpoint_url``, as the CLI's ``-o client_kwargs.endpoint_url=...``)."""
    read_options: dict[str, str] = {}
    storage: dict[str, Any] = copy.deepcopy(dict(storage_options or {}))
    for key, value in (options or {}).items():
        name = str(key)
        if name.lower().startswith(STORAGE_PREFIX):
            nest_option(storage, name[len(STORAGE_PREFIX) :], str(value))
        else:
            read_options[name] = str(value)
    return read_options, storage


def read(
    spark: SparkSession,
    path: str,
    options: Mapping[str, object] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> DataFrame:
    """The rows of a Hudi table as a DataFrame, by Hudi's read options.

    ``storage_options`` are fsspec's (an object store's endpoint, credentials...);
    ``storage.<key>`` read options add to them."""
    opts, storage = split_options(options, storage_options)
    table = HudiTable.open(path, storage)
    if cfg.QUERY_TYPE.read(opts) == "incremental":
        begin = cfg.BEGIN.text(opts)  # instants are parsed by the table, as given
        if begin is None:
            raise BadInputError(f"{QUERY_TYPE}=incremental needs {BEGIN}")
        if incremental_format(opts) == "cdc":
            return changes(spark, table, begin, cfg.END.text(opts))
    files = plan_files(table, opts)
    frame = read_planned(spark, table, files)
    if files.commits is None:
        return frame
    return frame.where(F.col("_hoodie_commit_time").isin(list(files.commits)))


@dataclass(frozen=True)
class FilePlan:
    """The file slices a snapshot, time-travel or latest_state query reads; for
    latest_state the commits whose rows it keeps. Slices with log files (Merge-on-Read)
    are merged by ``rules`` as of instant ``as_of`` (latest when None)."""

    slices: list[FileSlice]
    commits: tuple[str, ...] | None = None
    rules: MergeRules | None = None
    as_of: str | None = None


def plan_files(table: HudiTable, opts: Mapping[str, str]) -> FilePlan:
    """Pick the files of a non-CDC query by Hudi's read options (shared by ``read``
    and ``format("hudi")``). Merge-on-Read snapshot and incremental queries merge
    log files; ``read_optimized`` reads base files only."""
    query = cfg.QUERY_TYPE.read(opts)
    if query == "incremental":
        begin, end = cfg.BEGIN.text(opts), cfg.END.text(opts)
        if begin is None:
            raise BadInputError(f"{QUERY_TYPE}=incremental needs {BEGIN}")
        instants = table.commits_between(begin, end)
        commits = tuple(i.requested_time for i in instants)
        slices = table.changed_file_slices(begin, end)
        last = max(commits, key=comparable_instant) if commits else None
        return FilePlan(slices, commits, slice_merge_rules(table, slices), last)
    as_of = cfg.AS_OF.text(opts)
    instant = table.resolve_as_of(as_of) if as_of is not None else None
    read_optimized = query == "read_optimized" or not table.config.is_mor
    slices = table.view.slices_as_of(instant, read_optimized)
    return FilePlan(slices, None, slice_merge_rules(table, slices), instant)


def read_planned(spark: SparkSession, table: HudiTable, plan: FilePlan) -> DataFrame:
    """The rows of the planned slices: base files read as Parquet, slices with log
    files merged by Spark's Python workers."""
    merged = [s for s in plan.slices if s.log_files]
    if not merged or plan.rules is None:
        return _read_slices(spark, table, plan.slices)
    frame = read_merged_slices(spark, table, merged, plan.rules, plan.as_of)
    plain = [s for s in plan.slices if not s.log_files]
    if not plain:
        return frame
    return _read_slices(spark, table, plain).unionByName(frame, allowMissingColumns=True)


def incremental_format(opts: Mapping[str, str]) -> str:
    return cfg.INCREMENTAL_FORMAT.read(opts)


def changes(spark: SparkSession, table: HudiTable, begin: str, end: str | None) -> DataFrame:
    """The CDC rows of the commits in ``(begin, end]``: ``op``, ``ts_ms``, ``before``,
    ``after``. Small plans are read on the driver (one thread per core), others by
    Spark's Python workers through the table's storage, a large CDC log that needs no
    lookup in parts (``CDC_PART_BYTES``) so that several tasks decode it."""
    plan = plan_changes(table, begin, end)
    if not plan.splits:
        return arrow_dataframe(spark, CHANGE_SCHEMA.empty_table())
    size = plan.read_bytes
    parallelism = default_parallelism(spark)
    if size is not None and size <= DRIVER_READ_MAX_BYTES:
        threads = max(1, min(os.cpu_count() or 1, parallelism))
        return arrow_dataframe(spark, change_rows(table.location, plan.splits, threads))
    # The splits travel in the function; Spark only numbers them (no Python stage).
    texts = [s.to_json() for s in divide_splits(plan.splits, CDC_PART_BYTES, parallelism)]
    slices = max(1, min(len(texts), parallelism))
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
    bases = [(s.relative_base_path, s.base_file) for s in slices if s.relative_base_path]
    relative = [path for path, _ in bases if path]
    if not relative:
        return _empty(spark, table)
    location = table.location
    if location.is_local:
        uris = ["file://" + os.path.abspath(location.join(r)) for r in relative]
    elif spark_opens(spark, location):
        uris = [location.uri_of(r) for r in relative]
    else:
        sizes = [base.size if base else 0 for _, base in bases]
        if all(sizes) and sum(sizes) <= DRIVER_READ_MAX_BYTES:
            return arrow_dataframe(spark, _read_on_driver(location, relative))
        return _read_in_workers(spark, location, relative)
    return spark.read.option("mergeSchema", "true").parquet(*uris)


def _read_on_driver(location: Location, relative: list[str]) -> pa.Table:
    """Small reads (by the listing's sizes, at most ``DRIVER_READ_MAX_BYTES``): the
    files read on the driver, a few at once, each once (its schema from the file
    itself), in the merged schema a worker read would give them."""
    with ThreadPoolExecutor(max_workers=min(FOOTER_READERS, len(relative))) as pool:
        tables = list(pool.map(lambda path: _read_file(location, path), relative))
    schema = _merge(location, [t.schema.remove_metadata() for t in tables])
    return pa.concat_tables([align(t, schema) for t in tables])


def _read_file(location: Location, path: str) -> pa.Table:
    """The base file at ``path`` (relative to ``location``), fetched whole, then decoded."""
    table: pa.Table = read_parquet(pa.BufferReader(location.read_file(location.join(path))))
    return table


def _read_in_workers(spark: SparkSession, location: Location, relative: list[str]) -> DataFrame:
    """The files (relative to ``location``) read by Spark's Python workers through
    fsspec, with their merged schema (files written before a column was added read it
    as null, as Spark's ``mergeSchema``)."""
    schema = merged_schema(location, relative)
    slices = max(1, min(len(relative), default_parallelism(spark)))
    numbers = spark.range(0, len(relative), numPartitions=slices)
    reader = _file_reader(location.uri, dict(location.storage_options), relative, schema)
    return numbers.mapInArrow(reader, from_arrow_schema(schema))


def merged_schema(location: Location, relative: list[str]) -> pa.Schema:
    """The union of the files' parquet schemas (footers read in parallel), every
    column nullable and typed as Spark hands it to Python."""

    def footer(path: str) -> pa.Schema:
        with location.fs.open(location.join(path), "rb") as handle:
            return pq.read_schema(handle).remove_metadata()

    with ThreadPoolExecutor(max_workers=min(FOOTER_READERS, len(relative))) as pool:
        schemas = list(pool.map(footer, relative))
    return _merge(location, schemas)


def _merge(location: Location, schemas: list[pa.Schema]) -> pa.Schema:
    try:
        merged = pa.unify_schemas(schemas, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise BadInputError(
            f"{location.uri}: the files' schemas cannot be merged ({exc})"
        ) from None
    return spark_ready(merged)


def _file_reader(
    uri: str, storage_options: dict[str, Any], relative: list[str], schema: pa.Schema
) -> Any:
    """A ``mapInArrow`` function reading file number N of ``relative`` per input row.
    It carries only the URI, options and names: each worker opens the store itself."""

    def read_batches(batches: Any) -> Any:
        location = open_location(uri, storage_options)
        for batch in batches:
            for number in batch.column(0).to_pylist():
                yield from align(_read_file(location, relative[number]), schema).to_batches()

    return read_batches


def _empty(spark: SparkSession, table: HudiTable) -> DataFrame:
    return arrow_dataframe(spark, empty_schema(table).empty_table())


def empty_schema(table: HudiTable) -> pa.Schema:
    """A table without files: meta fields first, then the schema's columns (as strings:
    nothing is read, the names are what a reader needs)."""
    fields = [pa.field(name, pa.string()) for name in META_FIELDS]
    try:
        avro = table.avro_schema
    except BadInputError:
        avro = {"fields": []}
    return pa.schema(fields + [pa.field(f["name"], pa.string()) for f in avro.get("fields", [])])
