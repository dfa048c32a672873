"""``write(df, path, options)``: Copy-on-Write and Merge-on-Read Hudi writes from PySpark.

Steps of one write (Hudi's, see docs/spark.md#written-table-rules), each in its own module:

1. Create the table on first write, else check the options against it; check the rows'
   columns and schema against the table (``write_schema``).
2. Spark: key the rows, refuse null keys and deduplicate them by the ordering field, in
   one job whose result the write goes on with (``incoming``).
3. Under the table lock: roll back failed writes (pending instants whose writer is
   gone), take a new instant and write ``<instant>.<action>.requested``. Then mark it
   inflight and keep a heartbeat while the write runs (``hudi_sync.table.write.commit``,
   Hudi's commit protocol, which needs no Spark).
4. Each touched file group is merged and written under its Hudi name, after a marker
   that lets a rollback find it; new keys go into small files, then into new file groups
   sized by ``hoodie.parquet.max.file.size`` (``file_groups``). A small batch
   (``hudi_sync.write.driver.max.bytes``) is collected and written by the driver without
   Spark jobs (``driver_write``; steps 2 and 4 on Arrow rows, by the same rules). On the
   executors, one of two merge engines does it. By default, where Spark can open the
   table (local disk, or a scheme its Hadoop reads without fsspec options), Spark merges
   with its own joins and parquet writer (and a CDC table's logs come from a second job over the
   changed keys, ``cdc_logs``) (``spark_merge_plan`` driving ``spark_merge``: it profiles
   and deduplicates the keys itself, nothing cached; faster and leaner in the writer
   benchmark; no Hudi key-range footer metadata). Otherwise, or with
   ``hudi_sync.write.merge.engine=python``, Spark tags each key with the file group that
   stores it and Spark's Python workers merge each file group with pyarrow
   (``python_merge``). Merge-on-Read tables take the Python path, where a stored file
   group's updates and deletes are appended as a log file (``log_append``) in a
   deltacommit; a pending compaction is finished first, and inline compaction
   (``hoodie.compact.inline``) runs after the commit (``compaction``).
5. Under the lock: fail with ``WriteConflictError`` if a commit completed meanwhile
   touched the same file groups; else publish the completed instant, last and whole,
   with a conditional create (an instant completed by another writer is a conflict).
6. Clean by ``hoodie.cleaner.commits.retained``, archive by ``hoodie.keep.min.commits``
   / ``hoodie.keep.max.commits``; run the sync hook when
   ``hoodie.datasource.meta.sync.enable`` is true (a failed sync raises after the commit, the
   commit stays).

A write that fails before step 5 is rolled back at once; one that dies is rolled back
by the next writer. Readers never see it.

Tables live on local disk or an object store (``s3://``, ``gs://``...): every file the
driver writes goes through the table's ``Location`` (fsspec). On the Python merge path
Spark itself never opens a table path: the driver and the Python workers do, the
workers rebuilding the file system from the URI and the storage options, so a cluster
needs no Hadoop connector for the table.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError, MetaSyncError, TableNotFoundError
from hudi_sync.spark.compat import to_arrow_schema
from hudi_sync.spark.hadoop import spark_opens
from hudi_sync.spark.writing import bucket_write, driver_write, python_merge, spark_merge_plan
from hudi_sync.spark.writing.bucket_index import (
    append_buckets,
    check_key_types,
    key_buckets,
    keyed_rows,
    stored_timestamp_schema,
    stored_timestamps,
)
from hudi_sync.spark.writing.compaction import spark_executor
from hudi_sync.spark.writing.engine_choice import driver_rows
from hudi_sync.spark.writing.file_groups import WriteTarget, replaced_file_groups
from hudi_sync.spark.writing.incoming import (
    IncomingRows,
    incoming_rows,
    partitions_to_delete,
)
from hudi_sync.spark.writing.log_append import AppendSpec
from hudi_sync.spark.writing.merge import PARTITION_PATH
from hudi_sync.spark.writing.options import WriteOptions
from hudi_sync.spark.writing.write_schema import (
    check_columns,
    evolved_schema,
    incoming_arrow_schema,
    json_schema,
    open_or_create,
    writer_schema,
)
from hudi_sync.storage import Location, open_location, reporting_storage_failures
from hudi_sync.sync.hook import run_post_commit_hook
from hudi_sync.sync.job import SyncReport
from hudi_sync.table import HudiTable
from hudi_sync.table.cdc.log import CdcMode, parse_cdc_mode
from hudi_sync.table.config.schema import META_FIELDS
from hudi_sync.table.keys.record_keys import names_single_key_field, single_field_complex
from hudi_sync.table.read.snapshot import snapshot_tables, table_data_fields
from hudi_sync.table.records.merge import MergeMode, merge_rules
from hudi_sync.table.timeline.commit_metadata import WriteStat
from hudi_sync.table.timeline.instant import Action
from hudi_sync.table.write.commit import CommitSettings, WriteTransaction, table_lock
from hudi_sync.table.write.compaction import (
    compact,
    delta_commits_since_compaction,
    pending_compactions,
    run_in_process,
)
from hudi_sync.table.write.listing_source import check_listed_names
from hudi_sync.table.write.log_writer import meta_avro_schema
from hudi_sync.table.write.metadata_table.services import MetadataServicesSettings
from hudi_sync.table.write.timeline import CommitRecord

REPLACE_OPERATIONS = ("insert_overwrite", "insert_overwrite_table", "delete_partition")
BUCKET_OPERATIONS = ("upsert", "insert", "delete")


@dataclass
class WriteResult:
    """What a write committed."""

    instant: str
    action: str
    operation: str
    stats: list[WriteStat]
    replaced_file_ids: dict[str, list[str]]
    rolled_back: list[str] = field(default_factory=list)
    clean_instant: str | None = None
    archived: list[str] = field(default_factory=list)
    compactions: list[str] = field(default_factory=list)  # completed inline (Merge-on-Read)
    sync: SyncReport | None = None

    def summary(self) -> dict[str, Any]:
        """One flat record of the write, for people and for ``--json``."""
        return {
            "instant": self.instant,
            "action": self.action,
            "operation": self.operation,
            "files_written": len(self.stats),
            "inserts": sum(s.num_inserts for s in self.stats),
            "updates": sum(s.num_updates for s in self.stats),
            "deletes": sum(s.num_deletes for s in self.stats),
            "replaced_file_groups": sum(len(v) for v in self.replaced_file_ids.values()),
            "rolled_back": ",".join(self.rolled_back),
            "clean": self.clean_instant or "",
            "compactions": ",".join(self.compactions),
            "archived": len(self.archived),
            "sync_errors": self.sync.error_summary() if self.sync else "",
        }


def table_uri(path: str) -> str:
    """A local path or ``file://`` URI as an absolute path; other URIs as given."""
    if path.startswith("file://"):
        path = path[len("file://") :]
    elif "://" in path:
        return path.rstrip("/")
    return os.path.abspath(path)


def write(
    df: DataFrame,
    path: str,
    options: Mapping[str, object],
    storage_options: Mapping[str, Any] | None = None,
    extra_metadata: Mapping[str, str] | None = None,
) -> WriteResult:
    """Write ``df`` to the Hudi table at ``path`` with Hudi's write options;
    ``extra_metadata`` goes into the commit's extraMetadata (e.g. a streamer's
    checkpoint), so it is recorded exactly when the data is.

    A post-commit sync that fails raises ``MetaSyncError`` after the commit (which
    stands), as Hudi's writer fails the job; ``hoodie.meta.sync.ignore_exceptions=true``
    returns the result with the failures in ``result.sync.errors`` instead."""
    WriteOptions.precheck(options)  # bad values refused before the table is opened
    # Plain and picklable: the Python workers open the table with them.
    location = open_location(table_uri(path), dict(storage_options or {}))
    with reporting_storage_failures(location):  # a refusal mid-write: one line
        write_options = _resolved(options, location)
        metadata = dict(extra_metadata or {})
        # A small batch is written in the driver (the Arrow engine); a large one by the
        # executors (``engine_choice``).
        rows = (
            driver_rows(df, write_options, location.uri)
            if _driver_may(to_arrow_schema(df.schema), write_options)
            else None
        )
        if write_options.index_type == "BUCKET":  # see bucket_index, bucket_write
            result = _write_buckets(df if rows is None else rows, location, write_options, metadata)
        else:
            result = _write(df if rows is None else rows, location, write_options, metadata)
    return _synced(result, options)


def driver_takes(
    schema: pa.Schema,
    path: str,
    options: Mapping[str, object],
    storage_options: Mapping[str, Any] | None = None,
) -> bool:
    """Whether small rows of ``schema`` go to the driver's engine (``write_arrow``) by
    the rule ``write`` applies to a small DataFrame; callers holding Arrow rows (the
    CLI's small files, the Debezium ingest) hand the others to ``write``."""
    location = open_location(table_uri(path), dict(storage_options or {}))
    with reporting_storage_failures(location):
        return _driver_may(schema, _resolved(options, location))


def _driver_may(schema: pa.Schema, options: WriteOptions) -> bool:
    """Whether the driver's engine may take the write if it is small: the bucket index
    (whose own checks refuse keys it cannot hash), or the options name no Spark merge
    engine (a write that asks for one gets it) and the engine can key the rows."""
    if options.index_type == "BUCKET":
        return True
    if cfg.MERGE_ENGINE.given(options.raw):
        return False
    return driver_write.refusal(schema, options) is None


def _synced(result: WriteResult, options: Mapping[str, object]) -> WriteResult:
    """``result``, or ``MetaSyncError`` when its post-commit sync failed and the options
    do not ask to ignore that (``hoodie.meta.sync.ignore_exceptions``)."""
    if result.sync and not result.sync.ok and not cfg.SYNC_IGNORE_EXCEPTIONS.read(options):
        raise MetaSyncError(result.instant, result.sync.error_summary(), result)
    return result


def _write(
    rows: DataFrame | pa.Table,
    location: Location,
    options: WriteOptions,
    extra_metadata: dict[str, str],
) -> WriteResult:
    """The steps of one write, in order (see the module's docstring): a DataFrame by the
    executors' engines, Arrow rows by the driver's (``driver_write``)."""
    spark = rows.sparkSession if isinstance(rows, DataFrame) else None
    operation = options.operation
    columns = rows.columns if isinstance(rows, DataFrame) else rows.column_names
    data_columns = [c for c in columns if c not in META_FIELDS]
    check_columns(columns, options)

    def incoming_schema() -> pa.Schema:
        if isinstance(rows, DataFrame):
            return incoming_arrow_schema(rows, data_columns)
        return rows.select(data_columns).schema

    if not isinstance(rows, DataFrame):
        reason = driver_write.refusal(rows.schema, options)
        if reason is not None:
            raise BadInputError(f"{location.uri}: Arrow rows cannot be written here: {reason}")
    table = open_or_create(location, options, incoming_schema)
    config = table.config
    settings = _commit_settings(options)
    if settings.async_compaction and config.is_mor:
        raise BadInputError(
            f"{location.uri}: {cfg.COMPACT_ASYNC.key}=true is supported for Arrow writes "
            f"through the bucket index (write_arrow, the Debezium ingest) only"
        )
    table, finished = _finish_pending_compactions(table, settings, spark)
    check_listed_names(table.view)  # before anything is read, written or deleted by it
    if operation in REPLACE_OPERATIONS:
        action = Action.REPLACE_COMMIT
    else:  # Merge-on-Read: updates and deletes go to log files, as a deltacommit
        action = Action.DELTA_COMMIT if config.is_mor else Action.COMMIT
    cdc_mode = parse_cdc_mode(config.cdc_logging_mode) if config.cdc_enabled else None
    merge_ordering = _merge_ordering(options, table)
    transaction = WriteTransaction(table, action, operation.upper(), settings)
    # One snapshot serves the schema check, the tagging and the conflict check (a
    # commit that completes after it is caught at commit time).
    snapshot = table.view.base_files_as_of()
    # Bad input is refused before the timeline is touched.
    schema = writer_schema(location, incoming_schema(), snapshot, operation)
    incoming: IncomingRows | DriverRows
    if isinstance(rows, DataFrame):
        # Spark merges when it can open the table itself.
        assert spark is not None
        spark_inserts = options.merge_engine == "spark" and spark_opens(spark, location)
        spark_merges = spark_inserts and not config.is_mor
        # Merge-on-Read: without a key lookup (no upsert or delete) Spark's writer reads
        # the rows once, straight from their source, as the Spark merge's inserts do.
        cached = not spark_inserts or (config.is_mor and operation in ("upsert", "delete"))
        incoming = incoming_rows(
            rows,
            data_columns,
            options,
            merge_ordering,
            snapshot,
            spark_merges,
            location.uri,
            cached,
        )
    else:
        spark_inserts = spark_merges = False
        incoming = DriverRows.of(rows, options, merge_ordering, snapshot, location.uri)
    try:
        rolled_back = transaction.start()
        with transaction.inflight():
            target = WriteTarget(
                location,
                table,
                snapshot,
                incoming.partitions,
                transaction.instant,
                schema,
                merge_ordering,
                options,
            )
            appends = (
                append_spec(transaction.instant, schema, merge_ordering, table, options)
                if config.is_mor
                else None
            )
            stats, replaced = _write_file_groups(
                spark, target, incoming, spark_merges, spark_inserts, cdc_mode, appends
            )
            transaction.write_partition_metadata({s.partition_path for s in stats})
            commit = CommitRecord(
                operation.upper(), json_schema(schema, config.name), stats, replaced, extra_metadata
            )
            transaction.complete(commit)
        result = WriteResult(transaction.instant, action, operation, stats, replaced, rolled_back)
        return _after_commit(result, transaction, finished, options, settings, spark)
    finally:
        incoming.release()


def write_arrow(
    rows: pa.Table,
    path: str,
    options: Mapping[str, object],
    storage_options: Mapping[str, Any] | None = None,
    extra_metadata: Mapping[str, str] | None = None,
) -> WriteResult:
    """Write Arrow ``rows`` in this process, without Spark: the Arrow engine
    (``driver_write``; with ``hoodie.index.type=BUCKET`` a Merge-on-Read table's buckets,
    ``bucket_index``). Every operation ``write`` takes; the same table as ``write``
    writes, and the same commit protocol, services and hook (a failed sync raises as in
    ``write``). Key and partition fields must be strings or integers."""
    WriteOptions.precheck(options)
    location = open_location(table_uri(path), dict(storage_options or {}))
    with reporting_storage_failures(location):
        write_options = _resolved(options, location)
        metadata = dict(extra_metadata or {})
        if write_options.index_type == "BUCKET":
            result = _write_buckets(rows, location, write_options, metadata)
        else:
            result = _write(rows, location, write_options, metadata)
    return _synced(result, options)


def _resolved(options: Mapping[str, object], location: Location) -> WriteOptions:
    """The write's options: into an existing table, what they leave unsaid is the
    table's (``WriteOptions.parse``), its index settings too (``for_table``), and its
    key encoding (``_single_key_named``)."""
    try:
        table = HudiTable.open(location.uri, location.storage_options)
    except TableNotFoundError:
        parsed = WriteOptions.parse(options)
        return replace(parsed, single_key_named=_single_key_named(parsed, None))
    parsed = WriteOptions.parse(options, table.config).for_table(table.config)
    return replace(parsed, single_key_named=_single_key_named(parsed, table))


def _single_key_named(options: WriteOptions, table: HudiTable | None) -> bool:
    """Whether a complex key generator's keys over one field are ``field:value``
    (``record_keys.names_single_key_field``): a key the table holds decides, else Hudi's
    rule for the table's version (a new table's: the options')."""
    raw = options.raw
    fields, partitions = options.record_key_fields, options.partition_fields
    new_encoding = bool(cfg.COMPLEX_KEYGEN_NEW_ENCODING.read(raw))
    if table is None:
        stated = cfg.KEY_GENERATOR_TYPE_OPTION.read(raw) or cfg.KEY_GENERATOR_OPTION.read(raw)
        return names_single_key_field(
            stated, fields, partitions, options.table_version, new_encoding, None
        )
    generator = table.config.key_generator
    if not single_field_complex(generator, fields, partitions):
        return False
    return names_single_key_field(
        generator, fields, partitions, table.config.version, new_encoding, _stored_key(table)
    )


def _stored_key(table: HudiTable) -> str | None:
    """A record key the table holds (the first of its first file slice with rows: base
    file or log), or None."""
    for rows in snapshot_tables(table)[1]:
        if rows.num_rows:
            return str(rows.column(META_FIELDS[2])[0].as_py())
    return None


def _write_buckets(
    rows: pa.Table | DataFrame,
    location: Location,
    options: WriteOptions,
    extra_metadata: dict[str, str],
) -> WriteResult:
    """A bucket-index deltacommit of Arrow rows (keyed and appended in the driver,
    ``bucket_index``) or of a DataFrame (by the executors, ``bucket_write``): the same
    checks, the same table, the same commit protocol."""
    operation = options.operation
    where = location.uri
    if operation not in BUCKET_OPERATIONS:
        raise BadInputError(
            f"{where}: {cfg.OPERATION.key}={operation} is not supported with "
            f"{cfg.INDEX_TYPE.key}=BUCKET (it takes {', '.join(BUCKET_OPERATIONS)})"
        )
    columns = rows.columns if isinstance(rows, DataFrame) else rows.column_names
    check_columns(columns, options)
    data_columns = [c for c in columns if c not in META_FIELDS]

    def incoming_schema() -> pa.Schema:
        if isinstance(rows, DataFrame):
            return incoming_arrow_schema(rows, data_columns)
        return rows.select(data_columns).schema

    table = open_or_create(location, options, incoming_schema)
    options = options.for_table(table.config)  # a bucket table's own index settings
    if not table.config.is_mor:
        raise BadInputError(
            f"{where}: {cfg.INDEX_TYPE.key}=BUCKET writes Merge-on-Read tables only "
            f"(this one is {table.config.table_type.value})"
        )
    settings = _commit_settings(options)
    spark = rows.sparkSession if isinstance(rows, DataFrame) else None
    table, finished = _finish_pending_compactions(table, settings, spark)
    stored = _stored_schema(table)
    if isinstance(rows, DataFrame):  # keyed by the executors, before the timeline is touched
        check_key_types(incoming_schema(), options, where)
        batch = bucket_write.keyed_batch(rows, options, where)
        incoming = stored_timestamp_schema(incoming_schema(), stored)
    else:
        keyed = stored_timestamps(keyed_rows(rows, options, where), stored)
        buckets = key_buckets(keyed, options, where)
        incoming = keyed.select(data_columns).schema
    schema = evolved_schema(location, incoming, stored, operation)
    transaction = WriteTransaction(table, Action.DELTA_COMMIT, operation.upper(), settings)
    rolled_back = transaction.start()
    with transaction.inflight():
        spec = append_spec(
            transaction.instant, schema, _merge_ordering(options, table), table, options
        )
        if isinstance(rows, DataFrame):
            stats = bucket_write.append_groups(where, table, batch, spec, options, stored)
        else:
            stats = append_buckets(table, keyed, buckets, spec, options.num_buckets)
        transaction.write_partition_metadata({s.partition_path for s in stats})
        commit = CommitRecord(
            operation.upper(), json_schema(schema, table.config.name), stats, {}, extra_metadata
        )
        transaction.complete(commit)
    result = WriteResult(
        transaction.instant, Action.DELTA_COMMIT, operation, stats, {}, rolled_back
    )
    return _after_commit(result, transaction, finished, options, settings, spark)


def _finish_pending_compactions(
    table: HudiTable, settings: CommitSettings, spark: SparkSession | None
) -> tuple[HudiTable, list[str]]:
    """A MOR table's pending compactions, run to completion before the write reads its
    snapshot (by Spark's workers, or in this process without ``spark``): a plan is never
    abandoned, and logs written beside a pending plan would be named for the wrong slice
    on version 6. Returns the table as it is then, and the instants completed."""
    if not table.config.is_mor or settings.async_compaction or not pending_compactions(table):
        return table, []  # async: the compaction service executes them beside the writes
    executor = spark_executor(spark) if spark is not None else run_in_process
    lock = table_lock(table.location, settings)
    finished = compact(table, lock, schedule=False, executor=executor)
    return HudiTable.open(table.location.uri, table.location.storage_options), finished


def _merge_ordering(options: WriteOptions, table: HudiTable) -> str | None:
    """The field that orders versions of a key: the options' or the table's; none for a
    delete operation, which deletes each key given whatever its ordering value, and on a
    table whose merge rules order by commit time (what its readers apply)."""
    if options.operation == "delete":
        return None
    if merge_rules(table.config).mode is MergeMode.COMMIT_TIME_ORDERING:
        return None
    fields = table.config.ordering_fields
    return options.ordering_field or (fields[0] if fields else None)


def _after_commit(
    result: WriteResult,
    transaction: WriteTransaction,
    finished: list[str],
    options: WriteOptions,
    settings: CommitSettings,
    spark: SparkSession | None,
) -> WriteResult:
    """The services after a commit: inline compaction, clean and archive, the hook."""
    location = transaction.location
    result.compactions = finished + _compact_inline(location, options, settings, spark)
    result.clean_instant, result.archived = transaction.clean_and_archive()
    if options.meta_sync:
        result.sync = run_post_commit_hook(location.uri, options.raw, location.storage_options)
    return result


def _stored_schema(table: HudiTable) -> pa.Schema | None:
    """The table's columns as its latest write recorded them (bucket file groups may
    have no base file to read them from); None before the first write."""
    if not table.timeline.completed_writes and not table.config.create_schema:
        return None
    meta = [pa.field(name, pa.string()) for name in META_FIELDS]
    return pa.schema([*meta, *table_data_fields(table)])


@dataclass(frozen=True)
class DriverRows:
    """A driver write's rows, keyed (``driver_write.keyed_incoming``), and the partitions
    the write changes."""

    keyed: pa.Table | None  # None for delete_partition, which writes no rows
    partitions: frozenset[str]

    @classmethod
    def of(
        cls,
        rows: pa.Table,
        options: WriteOptions,
        ordering: str | None,
        snapshot: Mapping[tuple[str, str], str],
        where: str,
    ) -> DriverRows:
        if options.operation == "delete_partition":
            named = options.partitions_to_delete or driver_write.row_partitions(
                rows, options, where
            )
            return cls(None, frozenset(partitions_to_delete(named, options, snapshot, where)))
        keyed = driver_write.keyed_incoming(rows, options, ordering, where)
        return cls(keyed, frozenset(pc.unique(keyed.column(PARTITION_PATH)).to_pylist()))

    def release(self) -> None:
        """Nothing is cached for a driver write."""


def _write_file_groups(
    spark: SparkSession | None,
    target: WriteTarget,
    incoming: IncomingRows | DriverRows,
    spark_merges: bool,
    spark_inserts: bool,
    cdc_mode: CdcMode | None,
    log_appends: AppendSpec | None,
) -> tuple[list[WriteStat], dict[str, list[str]]]:
    """The data files of the write, by the chosen merge engine: their stats, and the
    file groups the operation replaces (``partition -> file ids``). ``spark_inserts``:
    Spark's own writer takes new file groups (it can open the table)."""
    operation = target.options.operation
    replaced = replaced_file_groups(operation, target.snapshot, target.partitions)
    if operation == "delete_partition":
        return [], replaced
    if isinstance(incoming, DriverRows):
        assert incoming.keyed is not None
        return driver_write.write_file_groups(target, incoming.keyed, cdc_mode, log_appends), (
            replaced
        )
    assert spark is not None
    if spark_merges:
        stats = spark_merge_plan.write_file_groups(spark, target, incoming, cdc_mode)
        return stats, replaced
    # Merge-on-Read: Spark's own writer takes the new file groups where it can.
    stats = python_merge.write_file_groups(
        spark, target, incoming, cdc_mode, log_appends, spark_writes_inserts=spark_inserts
    )
    return stats, replaced


def append_spec(
    instant: str, schema: pa.Schema, ordering: str | None, table: HudiTable, options: WriteOptions
) -> AppendSpec:
    """How a Merge-on-Read write appends to the file groups it updates."""
    data_schema = json.loads(json_schema(schema, table.config.name))
    return AppendSpec(
        instant=instant,
        schema=schema,
        avro_schema=meta_avro_schema(data_schema),
        ordering=ordering,
        table_version=table.config.version,
        block_format=options.log_block_format,
        max_log_size=options.log_max_size,
    )


def _compact_inline(
    location: Location,
    options: WriteOptions,
    settings: CommitSettings,
    spark: SparkSession | None,
) -> list[str]:
    """Hudi's inline compaction: after a deltacommit, once
    ``hoodie.compact.inline.max.delta.commits`` of them have piled up since the last
    compaction (``hoodie.compact.inline``)."""
    if not options.compact_inline:
        return []
    table = HudiTable.open(location.uri, location.storage_options)
    if not table.config.is_mor:
        return []
    if delta_commits_since_compaction(table) < options.compact_max_delta_commits:
        return []
    executor = spark_executor(spark) if spark is not None else run_in_process
    return compact(table, table_lock(location, settings), executor=executor)


def _commit_settings(options: WriteOptions) -> CommitSettings:
    """What Hudi's commit protocol takes from the write options."""
    return CommitSettings(
        lock_wait_ms=options.lock_wait_ms,
        lock_expire_minutes=options.lock_expire_minutes,
        heartbeat_interval_ms=options.heartbeat_interval_ms,
        heartbeat_misses=options.heartbeat_misses,
        auto_clean=options.auto_clean,
        commits_retained=options.commits_retained,
        auto_archive=options.auto_archive,
        async_compaction=cfg.COMPACT_ASYNC.read(options.raw),
        archival=options.archival,
        metadata_services=MetadataServicesSettings(
            cfg.METADATA_COMPACT_MAX_DELTA_COMMITS.read(options.raw),
            options.commits_retained,
            options.archival,
        ),
    )
