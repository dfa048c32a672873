"""``write(df, path, options)``: Copy-on-Write Hudi writes from PySpark.

Steps of one write (Hudi's, see docs/hudi-format §8):

1. Create the table on first write, else check the options against it.
2. Under the table lock: roll back failed writes (pending instants whose writer is
   gone), take a new instant and write ``<instant>.<action>.requested``. Then mark it
   inflight and keep a heartbeat while the write runs.
3. Spark: key the rows and deduplicate them by the ordering field (done by the job
   of step 1's checks, and cached), tag each key with the file group that stores it (a
   join against the snapshot's ``_hoodie_record_key``), route new keys into small
   files, then into new file groups sized by ``hoodie.parquet.max.file.size``. Then
   each touched file group is merged and written under its Hudi name, after a marker
   that lets a rollback find it. By default, where Spark can open the table (local
   disk, or a scheme its Hadoop reads without fsspec options) and CDC logging is off,
   Spark merges with its own joins and parquet writer (``spark_merge``: it profiles and
   deduplicates the keys itself, nothing cached; faster and leaner in the writer
   benchmark; no Hudi key-range footer metadata). Otherwise, or with
   ``hudi_sync.write.merge.engine=python``, Spark's Python workers merge each file
   group with pyarrow (``merge.merge_file_group``).
4. Under the lock: fail with ``WriteConflictError`` if a commit completed meanwhile
   touched the same file groups; else publish the completed instant, last and whole,
   with a conditional create (an instant completed by another writer is a conflict).
5. Clean by ``hoodie.cleaner.commits.retained``, archive by ``hoodie.keep.min.commits``
   / ``hoodie.keep.max.commits``; run the sync hook when
   ``hoodie.datasource.meta.sync.enable`` is true (a failed sync is reported, the
   commit stays).

A write that fails before step 4 is rolled back at once; one that dies is rolled back
by the next writer. Readers never see it.

Tables live on local disk or an object store (``s3://``, ``gs://``...): every file the
driver writes goes through the table's ``Location`` (fsspec). On the Python merge path
Spark itself never opens a table path: the driver and the Python workers do, the
workers rebuilding the file system from the URI and the storage options, so a cluster
needs no Hadoop connector for the table.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import MapType

from hudi_sync.errors import (
    BadInputError,
    HudiSyncError,
    TableNotFoundError,
    WriteConflictError,
    WriteError,
)
from hudi_sync.spark import options as opt
from hudi_sync.spark import spark_merge
from hudi_sync.spark.keys import partition_path_column, record_key_column
from hudi_sync.spark.merge import (
    DELETE_FLAG,
    FILE_NAME,
    IS_DELETED,
    PARTITION_PATH,
    RECORD_KEY,
    cdc_changes,
    merge_file_group,
)
from hudi_sync.spark.options import WriteOptions
from hudi_sync.spark.parallelism import default_parallelism
from hudi_sync.spark.reader import spark_opens
from hudi_sync.spark.spark_merge import FILE_ID, Bucket, route
from hudi_sync.storage import Location, open_location, reporting_storage_failures
from hudi_sync.sync.hook import run_post_commit_hook
from hudi_sync.sync.job import SyncReport
from hudi_sync.table import HudiTable
from hudi_sync.table.cdc_log import CdcMode, cdc_log_name, encode_cdc_file, parse_cdc_mode
from hudi_sync.table.instant import Action
from hudi_sync.table.metadata import WriteStat
from hudi_sync.table.schema import META_FIELDS, arrow_to_avro_schema
from hudi_sync.table.write.archiver import archive
from hudi_sync.table.write.cleaner import clean
from hudi_sync.table.write.create import (
    TableSettings,
    create_table,
    partition_metadata_text,
)
from hudi_sync.table.write.lock import Heartbeat, TableLock, writer_is_gone
from hudi_sync.table.write.rollback import files_written_by, marker_folder, roll_back, write_marker
from hudi_sync.table.write.timeline import CommitRecord, TimelineWriter

REPLACE_OPERATIONS = ("insert_overwrite", "insert_overwrite_table", "delete_partition")
_STATS_SCHEMA = (
    "partition string, file_id string, path string, prev_commit string, num_writes long, "
    "num_deletes long, num_update_writes long, num_inserts long, file_size long, "
    "prev_base_file string, cdc_path string, cdc_size long"
)


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
    checkpoint), so it is recorded exactly when the data is."""
    write_options = WriteOptions.parse(options)
    write = _Write(df, table_uri(path), write_options, storage_options)
    write.extra_metadata = dict(extra_metadata or {})
    try:
        with reporting_storage_failures(write.location):  # a refusal mid-write: one line
            return write.run()
    finally:
        write.release()


class _Write:
    def __init__(
        self,
        df: DataFrame,
        base: str,
        options: WriteOptions,
        storage_options: Mapping[str, Any] | None,
    ) -> None:
        self.df = df
        self.spark: SparkSession = df.sparkSession
        # Plain and picklable: the Python workers open the table with them.
        self.storage_options: dict[str, Any] = dict(storage_options or {})
        self.location: Location = open_location(base, self.storage_options)
        self.base = self.location.uri
        self.options = options
        self.operation = options.operation
        self.action = (
            Action.REPLACE_COMMIT if self.operation in REPLACE_OPERATIONS else Action.COMMIT
        )
        self.data_columns = [c for c in df.columns if c not in META_FIELDS]
        self.extra_metadata: dict[str, str] = {}
        self._instant_taken = False  # another writer completed this write's instant
        self._written: list[str] = []
        # The keyed (and deduplicated) incoming rows, cached by the first Spark job.
        self._rows: DataFrame | None = None
        self._upserts: dict[str, int] = {}  # partition -> incoming non-delete rows
        self._incoming_rows: dict[str, int] = {}  # partition -> incoming rows
        # partition -> (keys, non-delete keys), when Spark merges and no key comes twice
        self._counted: dict[str, tuple[int, int]] | None = None
        self._stored_files: dict[str, spark_merge.StoredFile] = {}  # path -> its footer's facts

    def release(self) -> None:
        """Drop the cached incoming rows."""
        if self._rows is not None:
            self._rows.unpersist()
            self._rows = None

    # -- orchestration -------------------------------------------------------------------
    def run(self) -> WriteResult:
        self._check_columns()
        table = self._open_or_create()
        config = table.config
        self.cdc_mode = parse_cdc_mode(config.cdc_logging_mode) if config.cdc_enabled else None
        self.ordering = self.options.ordering_field or (
            config.ordering_fields[0] if config.ordering_fields else None
        )
        self.hoodie = self.location.join(".hoodie")
        folder = self.hoodie if config.version == 6 else f"{self.hoodie}/timeline"
        self.timeline = TimelineWriter(self.location, folder, config.version)
        # One snapshot serves the schema check, the tagging and the conflict check (a
        # commit that completes after it is caught at commit time).
        snapshot = table.view.base_files_as_of()
        # Bad input is refused before the timeline is touched.
        schema = self._writer_schema(snapshot)
        # Spark merges when it can open the table itself; CDC logs need the Python merge.
        self.spark_merge = (
            self.options.merge_engine == "spark"
            and self.cdc_mode is None
            and spark_opens(self.spark, self.location)
        )
        partitions = self._incoming_partitions(snapshot)
        lock = self._lock()
        with lock:
            rolled_back = self._roll_back_failed_writes(table)
            instant = self.timeline.new_instant_time()
            try:
                self.timeline.request(instant, self.action, self.operation.upper())
            except FileExistsError:
                raise WriteConflictError(
                    f"{self.base}: instant {instant} is already on the timeline (another "
                    "writer took it); retry the write"
                ) from None
        self.instant = instant
        try:
            heartbeat = Heartbeat(
                self.location, self.hoodie, instant, self.options.heartbeat_interval_ms
            )
            with heartbeat:
                self.timeline.mark_inflight(instant, self.action, self.operation.upper())
                stats, replaced = self._write_files(table, snapshot, schema, partitions)
                self._write_partition_metadata({s.partition_path for s in stats})
                with lock:
                    self._check_conflicts(table, stats, replaced)
                    self._discard_unreported_files(stats)
                    commit = CommitRecord(
                        self.operation.upper(),
                        json_schema(schema, config.name),
                        stats,
                        replaced,
                        self.extra_metadata,
                    )
                    self._publish(instant, commit)
        except BaseException as exc:
            self._abort(exc)
            raise
        self.location.remove_tree(marker_folder(self.location, instant))
        result = WriteResult(instant, self.action, self.operation, stats, replaced, rolled_back)
        if self.options.auto_clean or self.options.auto_archive:
            with lock:
                if self.options.auto_clean:
                    result.clean_instant = clean(
                        self._open(), self.timeline, self.options.commits_retained
                    )
                if self.options.auto_archive:
                    result.archived = archive(self._open(), self.options.archival)
        if self.options.meta_sync:
            result.sync = run_post_commit_hook(self.base, self.options.raw, self.storage_options)
        return result

    def _open(self) -> HudiTable:
        return HudiTable.open(self.base, self.storage_options)

    def _lock(self) -> TableLock:
        return TableLock(
            self.location,
            self.hoodie,
            wait_ms=self.options.lock_wait_ms,
            expire_minutes=self.options.lock_expire_minutes,
        )

    def _publish(self, instant: str, commit: CommitRecord) -> None:
        """Publish the completed instant: the single point where the write appears."""
        try:
            self.timeline.complete(instant, self.action, commit)
        except FileExistsError:
            self._instant_taken = True
            self._written = [p for s in commit.stats for p in (s.path, *s.cdc_stats)]
            raise WriteConflictError(
                f"{self.base}: instant {instant} was completed by another writer; this "
                "write's files were discarded, retry the write"
            ) from None

    def _abort(self, exc: BaseException) -> None:
        """Roll back this write now (the next writer would otherwise do it)."""
        if self._instant_taken:
            # The instant's timeline files are another writer's now: only this write's
            # own data files go.
            with contextlib.suppress(OSError):
                for relative in self._written:
                    self.location.remove(self.location.join(relative))
                self.location.remove_tree(marker_folder(self.location, self.instant))
            return
        with (
            contextlib.suppress(Exception),
            self._lock(),
        ):
            roll_back(self.location, self.timeline, self.instant, self.action)
        if not isinstance(exc, HudiSyncError | KeyboardInterrupt | SystemExit):
            raise WriteError(
                f"{self.base}: write {self.instant} failed and was rolled back: {_first_line(exc)}"
            ) from exc

    def _roll_back_failed_writes(self, table: HudiTable) -> list[str]:
        rolled_back = []
        for pending in table.timeline.pending:
            if pending.action not in (Action.COMMIT, Action.REPLACE_COMMIT, Action.DELTA_COMMIT):
                continue
            if writer_is_gone(
                self.location,
                self.hoodie,
                pending.requested_time,
                self.options.heartbeat_interval_ms,
                self.options.heartbeat_misses,
            ):
                roll_back(self.location, self.timeline, pending.requested_time, pending.action)
                rolled_back.append(pending.requested_time)
        return rolled_back

    # -- table and schema ----------------------------------------------------------------
    def _check_columns(self) -> None:
        if self.operation == "delete_partition":
            return  # partitions come from the option, or from whatever rows are given
        needed = [*self.options.record_key_fields, *self.options.partition_fields]
        if self.operation != "delete" and self.options.ordering_field:
            needed.append(self.options.ordering_field)
        if self.options.delete_field:
            needed.append(self.options.delete_field)
        missing = [c for c in needed if c not in self.df.columns]
        if missing:
            raise BadInputError(
                f"the data has no column {', '.join(missing)} (named in the options)"
            )

    def _open_or_create(self) -> HudiTable:
        try:
            table = self._open()
        except TableNotFoundError:
            if self.operation in ("delete", "delete_partition"):
                raise BadInputError(
                    f"{self.base} is not a Hudi table: nothing to {self.operation}"
                ) from None
            settings = TableSettings(
                name=self.options.table_name,
                version=self.options.table_version,
                record_key_fields=self.options.record_key_fields,
                ordering_field=self.options.ordering_field,
                partition_fields=self.options.partition_fields,
                hive_style_partitioning=self.options.hive_style_partitioning,
                create_schema=json_schema(self._incoming_arrow_schema(), self.options.table_name),
                cdc_mode=self.options.cdc_mode,
            )
            self._check_bucket()
            self.location.ensure_folder(self.location.path)
            with contextlib.suppress(FileExistsError):  # a concurrent writer created it
                create_table(self.location, settings)
            table = self._open()
        self.options.check_table(table.config, self.base)
        if "hoodie.write.table.version" in self.options.raw and (
            self.options.table_version != table.config.version
        ):
            raise BadInputError(
                f"{self.base}: hoodie.write.table.version={self.options.table_version} but the "
                f"table is version {table.config.version} (hudi_sync does not upgrade tables)"
            )
        if not table.config.populate_meta_fields:
            raise BadInputError(
                f"{self.base}: hoodie.populate.meta.fields=false tables cannot be written"
            )
        return table

    def _check_bucket(self) -> None:
        """Object stores: the bucket must exist (a write never creates one)."""
        try:
            with reporting_storage_failures(self.location):
                bucket = self.location.missing_bucket()
        except OSError as exc:
            raise BadInputError(f"{self.base}: cannot reach its bucket: {exc}") from None
        if bucket is not None:
            raise BadInputError(
                f"{self.base}: bucket {bucket} does not exist (create it first; "
                "hudi_sync does not create buckets)"
            )

    def _incoming_arrow_schema(self) -> pa.Schema:
        data = self.df.select(*self.data_columns).schema
        return to_arrow_schema(data, timestamp_utc=True, prefers_large_types=False)

    def _writer_schema(self, snapshot: Mapping[tuple[str, str], str]) -> pa.Schema:
        """Meta fields, the table's columns in order, then new nullable columns."""
        incoming = self._incoming_arrow_schema()
        existing = self._existing_arrow_schema(snapshot)
        if self.operation in ("delete", "delete_partition") and existing is not None:
            return existing
        meta = [pa.field(name, pa.string()) for name in META_FIELDS]
        if existing is None:
            return pa.schema(meta + [f.with_nullable(True) for f in incoming])
        fields = []
        for stored in existing:
            if stored.name in META_FIELDS:
                continue
            if stored.name not in incoming.names:
                raise BadInputError(
                    f"{self.base}: the data has no column {stored.name} (the table has it; "
                    "add it as null to keep it)"
                )
            new_type = incoming.field(stored.name).type
            if not _same_type(new_type, stored.type):
                raise BadInputError(
                    f"{self.base}: column {stored.name} changes type from {stored.type} to "
                    f"{new_type} (only new nullable columns can be added)"
                )
            fields.append(stored)
        added = [f.with_nullable(True) for f in incoming if f.name not in existing.names]
        return pa.schema(meta + fields + added)

    def _existing_arrow_schema(self, snapshot: Mapping[tuple[str, str], str]) -> pa.Schema | None:
        """The stored files' schema (the newest file, the latest columns)."""
        if not snapshot:
            return None
        (partition, _), name = max(snapshot.items(), key=lambda item: item[1].rsplit("_", 1)[1])
        path = self.location.join(partition, name)
        if self.location.is_local:
            return pq.read_schema(path).remove_metadata()
        return pq.read_schema(path, filesystem=self.location.fs).remove_metadata()

    # -- the Spark job ---------------------------------------------------------------------
    def _keyed(self) -> DataFrame:
        o = self.options
        columns = [F.col(c) for c in self.data_columns]
        if self.operation == "delete":
            delete_flag = F.lit(True)
        elif o.delete_field is not None:
            marker = F.col(o.delete_field).cast("string") == F.lit(o.delete_marker)
            delete_flag = F.coalesce(marker, F.lit(False))
        elif IS_DELETED in self.data_columns:
            delete_flag = F.coalesce(F.col(IS_DELETED).cast("boolean"), F.lit(False))
        else:
            delete_flag = F.lit(False)
        keyed = self.df.select(
            *columns,
            record_key_column(o.record_key_fields).alias(RECORD_KEY),
            partition_path_column(o.partition_fields, o.hive_style_partitioning).alias(
                PARTITION_PATH
            ),
            delete_flag.alias(DELETE_FLAG),
        )
        return keyed

    def _incoming_partitions(self, snapshot: Mapping[tuple[str, str], str]) -> set[str]:
        """The partitions the rows go to, and (in the same Spark job) the check that
        every row has a record key: both are needed before the timeline is touched.
        The job also counts each partition's non-delete rows (what routing new keys
        starts from); for the Python merge it caches the keyed, deduplicated rows the
        write goes on with, for Spark's it counts each partition's keys. For
        ``delete_partition``: the snapshot's partitions named by the option or the rows."""
        if self.operation == "delete_partition":
            return self._partitions_to_delete(snapshot)
        keyed = self._keyed()
        profiled = self.spark_merge and self.operation in ("upsert", "delete")
        if profiled:
            # Spark's merge profiles the keys itself on narrow columns and reads the
            # rows again for the merge: nothing to cache. Counting each partition's
            # keys here tells whether any comes twice.
            self._rows = spark_merge.with_sequence(keyed)
            computed = _every_column_hash(self._rows, self.data_columns)
            summary = spark_merge.partition_summary(self._rows, computed)
        else:
            deduplicate = (
                self.operation in ("upsert", "delete") or self.options.combine_before_insert
            )
            rows = self._deduplicated(keyed) if deduplicate else keyed
            # Spark's merge of inserts reads the rows once more: cheaper than a cache.
            self._rows = rows if self.spark_merge else rows.persist(StorageLevel.MEMORY_AND_DISK)
            # Uncached rows are computed again by the merge: every column is computed
            # here too, so a failing one (a UDF, an ANSI cast) fails before the timeline
            # is touched.
            every_column = (
                [F.max(_every_column_hash(rows, self.data_columns))] if self.spark_merge else []
            )
            summary = self._rows.groupBy(PARTITION_PATH).agg(
                F.max(F.col(RECORD_KEY).isNull().cast("int")).alias("null_key"),
                F.sum((~F.col(DELETE_FLAG)).cast("long")).alias("upserts"),
                F.count(F.lit(1)).alias("rows"),
                *every_column,
            )
        try:
            found = summary.collect()
        except Exception as exc:  # the rows' own computation failed (e.g. a UDF)
            raise WriteError(
                f"{self.base}: computing the rows to write failed, nothing was written: "
                f"{_first_line(exc)}"
            ) from exc
        if any(r["null_key"] for r in found):
            raise BadInputError(
                f"{self.base}: a row has a null record key "
                f"({opt.RECORD_KEY}={','.join(self.options.record_key_fields)})"
            )
        self._upserts = {r[PARTITION_PATH]: int(r["upserts"] or 0) for r in found}
        self._incoming_rows = {r[PARTITION_PATH]: int(r["rows"]) for r in found}
        if profiled and all(int(r["most"]) == 1 for r in found):
            self._counted = {r[PARTITION_PATH]: (int(r["keys"]), int(r["upserts"])) for r in found}
        return set(self._upserts)

    def _partitions_to_delete(self, snapshot: Mapping[tuple[str, str], str]) -> set[str]:
        """Hudi takes ``partitions.to.delete`` (else the rows' partition paths) as the
        partition paths to replace; each must name a partition of the snapshot, or the
        write would commit a replacecommit that replaces nothing."""
        o = self.options
        requested: Sequence[str] = o.partitions_to_delete
        if not requested:
            column = partition_path_column(o.partition_fields, o.hive_style_partitioning)
            requested = sorted(r[0] for r in self.df.select(column).distinct().collect())
        if not requested:
            raise BadInputError(
                f"{self.base}: delete_partition needs {opt.PARTITIONS_TO_DELETE} or rows "
                "naming the partitions to delete; neither was given"
            )
        stored = {partition for partition, _ in snapshot}
        fields, hive_style = o.partition_fields, o.hive_style_partitioning
        return {stored_partition(v, stored, fields, hive_style, self.base) for v in requested}

    def _deduplicated(self, keyed: DataFrame) -> DataFrame:
        """One row per key: the highest ordering value, ties to the later row."""
        ordering = self.ordering if self.operation != "delete" else None
        rows = spark_merge.deduplicated(spark_merge.with_sequence(keyed), ordering)
        return rows.drop(spark_merge.SEQUENCE)

    def _write_files(
        self,
        table: HudiTable,
        snapshot: Mapping[tuple[str, str], str],
        schema: pa.Schema,
        partitions: set[str],
    ) -> tuple[list[WriteStat], dict[str, list[str]]]:
        operation = self.operation
        if operation == "delete_partition":
            return [], _group_ids(snapshot, lambda p: p in partitions)
        rows = self._rows
        assert rows is not None  # cached by _incoming_partitions
        replaced: dict[str, list[str]] = {}
        if operation == "insert_overwrite":
            replaced = _group_ids(snapshot, lambda p: p in partitions)
        elif operation == "insert_overwrite_table":
            replaced = _group_ids(snapshot, lambda p: True)
        use_small_files = operation in ("insert", "upsert")
        if self.spark_merge:
            return self._write_in_spark(rows, table, snapshot, schema, partitions), replaced
        if operation in ("upsert", "delete"):
            tagged = self._tag(rows, snapshot, partitions)
        else:
            tagged = rows.withColumn(FILE_ID, F.lit(None).cast("string"))
        # Computed once: routing counts the inserts, then the merge job reads it again.
        tagged = tagged.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            updates = tagged.where(F.col(FILE_ID).isNotNull())
            inserts = tagged.where(F.col(FILE_ID).isNull() & ~F.col(DELETE_FLAG))
            counts = {r[0]: int(r[1]) for r in inserts.groupBy(PARTITION_PATH).count().collect()}
            buckets = self._buckets(counts, table, snapshot, use_small_files)
            to_write = updates.unionByName(route(self.spark, inserts, buckets))
            stats = self._merge_groups(to_write, snapshot, schema)
        finally:
            tagged.unpersist()
        return stats, replaced

    def _write_in_spark(
        self,
        rows: DataFrame,
        table: HudiTable,
        snapshot: Mapping[tuple[str, str], str],
        schema: pa.Schema,
        partitions: set[str],
    ) -> list[WriteStat]:
        """The merge as Spark's own jobs (``spark_merge``): profile the incoming keys
        against the stored ones, route new keys, then merge and write, in place when
        the profile allows it."""
        tagging = self.operation in ("upsert", "delete")
        ordering = None if self.operation == "delete" else self.ordering
        stored_files: dict[str, list[str]] = {}
        for (partition, _), name in sorted(snapshot.items()):
            if partition in partitions:
                path = self.location.join(partition, name)
                stored_files.setdefault(partition, []).append(path)
        found = (
            spark_merge.profile(
                self.spark,
                self.location,
                rows,
                stored_files,
                ordering,
                self._fits_broadcast(
                    sum(self._incoming_rows.get(p, 0) for p in stored_files),
                    [path for paths in stored_files.values() for path in paths],
                ),
                self._counted,
            )
            if tagging
            else None
        )
        counts = found.new_keys if found else self._upserts
        use_small_files = self.operation in ("insert", "upsert")
        buckets = self._buckets(counts, table, snapshot, use_small_files)
        profiles = found.groups if found else {}
        touched = set(profiles) | {(b.partition, b.file_id) for b in buckets}
        rewritten = {k: snapshot[k] for k in sorted(touched) if k in snapshot}
        groups = {file_id: partition for partition, file_id in touched}
        if not groups:
            return []
        for file_id, partition in groups.items():
            name = spark_merge.base_file_name(file_id, self.instant)
            write_marker(self.location, self.instant, partition, name)
        new_groups = sum(1 for k in touched if k not in snapshot)
        whole_files = 0
        if found and self._merges_in_place(found, rewritten, buckets, snapshot):
            merged, inserts = spark_merge.merged_in_place(
                self.spark,
                self.location,
                rows,
                schema,
                rewritten,
                ordering,
                self.instant,
                found.new_keys,
            )
            routed = spark_merge.route(self.spark, inserts, buckets)
            incoming = sum(self._incoming_rows.values())
            if new_groups == 1 and incoming <= 2 * sum(found.new_keys.values()):
                # One new file group, and its rows are most of the incoming ones: one
                # task reads them all, cheaper than shuffling them to one task.
                routed = routed.coalesce(1)
            else:
                routed = spark_merge.by_file_group(routed, new_groups)
            to_write = routed.unionByName(merged)  # the insert task, often the largest, first
            whole_files = 1 + max(self.location.size(path) for path in self._paths(rewritten))
        else:
            if found and found.duplicates:
                rows = spark_merge.deduplicated(rows, ordering)
            merged = spark_merge.merged_rows(
                self.spark, self.location, rows, schema, rewritten, ordering, tagging, self.instant
            )
            to_write = spark_merge.by_file_group(
                spark_merge.route(self.spark, merged, buckets), len(groups)
            )
        published = spark_merge.write_file_groups(
            self.location, to_write, schema, self.instant, groups, whole_files
        )
        stats = []
        for partition, file_id in sorted(touched):
            stored = rewritten.get((partition, file_id))
            if file_id in published:
                relative, num_rows, size = published[file_id]
            elif stored is not None:  # every row deleted: the group keeps an empty file
                name = spark_merge.base_file_name(file_id, self.instant)
                relative, num_rows = f"{partition}/{name}".lstrip("/"), 0
                size = spark_merge.write_empty(self.location, schema, relative)
            else:
                continue  # a new group no key hashed to
            stored_count = (
                self._stored_file(self.location.join(partition, stored)).rows if stored else 0
            )
            stats.append(
                spark_merge.write_stat(
                    partition,
                    file_id,
                    relative,
                    num_rows,
                    size,
                    stored,
                    stored_count,
                    profiles.get((partition, file_id)),
                )
            )
        return stats

    def _merges_in_place(
        self,
        found: spark_merge.Profile,
        rewritten: Mapping[tuple[str, str], str],
        buckets: Sequence[Bucket],
        snapshot: Mapping[tuple[str, str], str],
    ) -> bool:
        """Whether ``merged_in_place`` can merge: no key comes twice, no new key goes to a
        stored (small) file, and the incoming rows of the stored partitions fit Spark's
        broadcast threshold (estimated at the stored files' uncompressed row size)."""
        if found.duplicates or not rewritten:
            return False
        if any((b.partition, b.file_id) in snapshot for b in buckets):
            return False
        stored_partitions = {p for p, _ in rewritten}
        incoming = sum(n for p, n in found.keys.items() if p in stored_partitions)
        return self._fits_broadcast(incoming, self._paths(rewritten))

    def _paths(self, groups: Mapping[tuple[str, str], str]) -> list[str]:
        """The path of each file group's base file."""
        return [self.location.join(partition, name) for (partition, _), name in groups.items()]

    def _stored_file(self, path: str) -> spark_merge.StoredFile:
        """A stored base file's footer facts, read once per write (the profile, the
        in-place check and the stats all ask)."""
        if path not in self._stored_files:
            self._stored_files[path] = spark_merge.stored_file(self.location, path)
        return self._stored_files[path]

    def _fits_broadcast(self, incoming: int, stored: Sequence[str]) -> bool:
        """Whether ``incoming`` rows fit Spark's broadcast threshold, each estimated at the
        largest uncompressed row of the ``stored`` files (paths; their footers) they meet."""
        threshold = _size_setting(
            self.spark.conf.get("spark.sql.autoBroadcastJoinThreshold", "10MB") or "10MB"
        )
        if threshold <= 0 or not stored:
            return False
        row_bytes = max(self._stored_file(path).row_bytes for path in stored)
        return incoming * row_bytes <= threshold

    def _tag(
        self, rows: DataFrame, snapshot: Mapping[tuple[str, str], str], partitions: set[str]
    ) -> DataFrame:
        """Each incoming key's file group: a join against the stored keys."""
        files = [
            self.location.join(p, name) for (p, _), name in snapshot.items() if p in partitions
        ]
        if not files:
            return rows.withColumn(FILE_ID, F.lit(None).cast("string"))
        if self.location.is_local:
            stored = self.spark.read.parquet(*files).select(
                F.col(PARTITION_PATH).alias("__stored_partition"),
                F.col(RECORD_KEY).alias("__stored_key"),
                F.split(F.col(FILE_NAME), "_").getItem(0).alias(FILE_ID),
            )
        else:
            # Spark cannot open object-store paths without Hadoop connectors: the
            # Python workers read the stored keys through fsspec.
            paths = self.spark.createDataFrame([(f,) for f in files], "path string")
            slices = max(1, min(len(files), default_parallelism(self.spark)))
            stored = paths.repartition(slices).mapInArrow(
                _key_reader(self.base, self.storage_options),
                f"__stored_partition string, __stored_key string, {FILE_ID} string",
            )
        joined = rows.join(
            stored,
            (rows[PARTITION_PATH] == stored["__stored_partition"])
            & (rows[RECORD_KEY] == stored["__stored_key"]),
            "left",
        )
        return joined.drop("__stored_partition", "__stored_key")

    def _record_size(self, table: HudiTable) -> int:
        """Bytes per record of the newest commit big enough to tell (more bytes than
        ``record.size.estimation.threshold * small.file.limit``), else the configured
        estimate: Hudi's rule, so inserts split into as many file groups as Hudi's would.
        Version 6 writers (Hudi 0.x) search every commit and replacecommit; version 8 and
        later (Hudi 1.x) the newest five commits, skipping replacecommits."""
        if table.config.version < 8:
            actions, searched = {Action.COMMIT, Action.REPLACE_COMMIT}, None
        else:
            actions, searched = {Action.COMMIT, Action.DELTA_COMMIT, Action.COMPACTION}, 5
        enough = int(self.options.record_size_threshold * self.options.small_file_limit)
        candidates = [i for i in table.timeline.completed_writes if i.action in actions]
        for instant in list(reversed(candidates))[:searched]:
            stats = table.timeline.commit_metadata(instant).write_stats
            records = sum(s.num_writes for s in stats)
            written = sum(s.total_write_bytes for s in stats)
            if written > enough and records > 0:
                return -(-written // records)  # rounded up, as Hudi does
        return self.options.record_size_estimate

    def _buckets(
        self,
        counts: Mapping[str, int],
        table: HudiTable,
        snapshot: Mapping[tuple[str, str], str],
        use_small_files: bool,
    ) -> list[Bucket]:
        """New keys (``counts``: per partition) to file groups: small files first, then
        new groups of ``max.file.size / record size`` records each (Hudi's upsert
        partitioner)."""
        if not counts:
            return []
        record_size = self._record_size(table)
        per_file = max(1, self.options.max_file_size // record_size)
        groups_by_partition: dict[str, list[tuple[str, str]]] = {}
        if use_small_files:
            for (partition, file_id), name in snapshot.items():
                if partition in counts:
                    groups_by_partition.setdefault(partition, []).append((file_id, name))
        # Hudi's upsert partitioner: each bucket takes a share of the partition's inserts
        # by weight, and a record goes to the bucket its key's hash falls in, so no
        # ordering of the inserts is needed (bucket sizes are near, not exactly, equal).
        buckets: list[Bucket] = []
        for partition, count in sorted(counts.items()):
            shares: list[tuple[int, str]] = []
            assigned = 0
            for file_id, name in sorted(groups_by_partition.get(partition, ())):
                if assigned >= count:
                    break
                size = self.location.size(self.location.join(partition, name))
                if size < self.options.small_file_limit:
                    room = min(count - assigned, (self.options.max_file_size - size) // record_size)
                    if room > 0:
                        shares.append((room, file_id))
                        assigned += room
            while assigned < count:
                room = min(per_file, count - assigned)
                shares.append((room, f"{uuid.uuid4()}-0"))
                assigned += room
            low = 0
            for room, file_id in shares:
                high = low + room
                upper = 1.0 if high >= count else high / count
                buckets.append(Bucket(partition, low / count, upper, file_id))
                low = high
        return buckets

    def _merge_groups(
        self, rows: DataFrame, snapshot: Mapping[tuple[str, str], str], schema: pa.Schema
    ) -> list[WriteStat]:
        merge = _group_merger(
            self.base,
            self.storage_options,
            self.instant,
            schema,
            None if self.operation == "delete" else self.ordering,
            {f"{p}\0{f}": name for (p, f), name in snapshot.items()},
            self.cdc_mode,
            json.loads(json_schema(schema, self.options.table_name)) if self.cdc_mode else {},
        )
        collected = rows.groupBy(PARTITION_PATH, FILE_ID).applyInArrow(merge, _STATS_SCHEMA)
        return [
            WriteStat(
                partition_path=r["partition"],
                file_id=r["file_id"],
                path=r["path"],
                prev_commit=r["prev_commit"],
                num_writes=r["num_writes"],
                num_deletes=r["num_deletes"],
                num_updates=r["num_update_writes"],
                num_inserts=r["num_inserts"],
                total_write_bytes=r["file_size"],
                file_size=r["file_size"],
                prev_base_file=r["prev_base_file"],
                cdc_stats={r["cdc_path"]: r["cdc_size"]} if r["cdc_path"] else {},
            )
            for r in collected.collect()
        ]

    # -- commit ------------------------------------------------------------------------------
    def _write_partition_metadata(self, partitions: set[str]) -> None:
        for partition in partitions:
            path = self.location.join(partition, ".hoodie_partition_metadata")
            if not self.location.fs.exists(path):
                depth = len([p for p in partition.split("/") if p])
                text = partition_metadata_text(self.instant, depth)
                self.location.write_file(path, text.encode())

    def _check_conflicts(
        self, started_from: HudiTable, stats: list[WriteStat], replaced: Mapping[str, list[str]]
    ) -> None:
        """Optimistic concurrency: commits completed since this write read the snapshot
        must not have touched the file groups it rewrote or replaced."""
        ours = {(s.partition_path, s.file_id) for s in stats if s.prev_commit}
        ours |= {(p, f) for p, ids in replaced.items() for f in ids}
        seen = {i.requested_time for i in started_from.timeline.completed_writes}
        fresh = self._open().timeline
        for instant in fresh.completed_writes:
            if instant.requested_time in seen:
                continue
            metadata = fresh.commit_metadata(instant)
            theirs = {(s.partition_path, s.file_id) for s in metadata.write_stats}
            theirs |= {
                (p, f) for p, ids in metadata.partition_to_replace_file_ids.items() for f in ids
            }
            overlap = ours & theirs
            if overlap:
                partition, file_id = sorted(overlap)[0]
                raise WriteConflictError(
                    f"{self.base}: write {self.instant} conflicts with commit "
                    f"{instant.requested_time}, which changed {len(overlap)} of the same file "
                    f"groups (e.g. {partition}/{file_id}); retry the write"
                )

    def _discard_unreported_files(self, stats: list[WriteStat]) -> None:
        """Files of retried Spark task attempts: announced by a marker, not in the stats."""
        reported = {s.path for s in stats} | {p for s in stats for p in s.cdc_stats}
        for partition, names in files_written_by(self.location, self.instant).items():
            for name in names:
                relative = f"{partition}/{name}" if partition else name
                if relative not in reported:
                    self.location.remove(self.location.join(relative))


_SIZE_UNITS = {"b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def _every_column_hash(rows: DataFrame, columns: Sequence[str]) -> Column:
    """A value that needs every one of ``columns`` computed (Spark prunes columns an
    aggregate does not read, and with them their failures): a hash of them all, maps by
    their size (Spark does not hash maps)."""
    types = {f.name: f.dataType for f in rows.schema.fields}
    values = [F.size(c) if isinstance(types[c], MapType) else F.col(c) for c in columns]
    return F.xxhash64(*values)


def _size_setting(value: str) -> int:
    """A Spark byte-size setting (``10MB``, ``10485760``, ``-1``) in bytes."""
    text = value.strip().lower().removesuffix("b") or "0"
    unit = _SIZE_UNITS.get(text[-1], 1)
    number = text[:-1] if text[-1] in _SIZE_UNITS else text
    return int(float(number) * unit)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _same_type(new: pa.DataType, stored: pa.DataType) -> bool:
    if new == stored:
        return True
    if pa.types.is_timestamp(new) and pa.types.is_timestamp(stored):
        return (new.tz is None) == (stored.tz is None)
    if pa.types.is_integer(new) and pa.types.is_integer(stored):
        return bool(new.bit_width == stored.bit_width)
    return str(new).replace(" not null", "") == str(stored).replace(" not null", "")


def stored_partition(
    value: str, stored: set[str], fields: Sequence[str], hive_style: bool, table: str
) -> str:
    """The partition path of ``stored`` that ``value`` names, as its path (``p=b``,
    ``x=a/y=b``) or as the user writes it (``b``, ``a/b``): hive-style tables prefix
    each level with its field, others do not. Refused when it names none."""
    if value in stored:
        return value
    levels = value.split("/")
    if fields and len(levels) == len(fields):
        pairs = zip(fields, levels, strict=True)
        if hive_style:
            path = "/".join(v if v.startswith(f"{f}=") else f"{f}={v}" for f, v in pairs)
        else:
            path = "/".join(v.removeprefix(f"{f}=") for f, v in pairs)
        if path in stored:
            return path
    example = f"its partitions look like {min(stored)!r}" if stored else "it has no partition"
    raise BadInputError(f"{table}: no partition {value!r} to delete ({example})")


def _group_ids(
    snapshot: Mapping[tuple[str, str], str], wanted: Callable[[str], bool]
) -> dict[str, list[str]]:
    replaced: dict[str, list[str]] = {}
    for partition, file_id in sorted(snapshot):
        if wanted(partition):
            replaced.setdefault(partition, []).append(file_id)
    return replaced


def json_schema(schema: pa.Schema, table_name: str) -> str:
    """The Avro schema (without meta fields) Hudi records in commits and properties."""
    fields = [f for f in schema if f.name not in META_FIELDS]
    return json.dumps(
        arrow_to_avro_schema(fields, f"{table_name}_record", f"hoodie.{table_name}"),
        separators=(",", ":"),
    )


def _read_parquet(location: Location, path: str, columns: list[str] | None = None) -> pa.Table:
    if location.is_local:
        return pq.read_table(path, columns=columns)
    return pq.read_table(path, columns=columns, filesystem=location.fs)


def _key_reader(
    base_uri: str, storage_options: Mapping[str, Any]
) -> Callable[[Iterable[pa.RecordBatch]], Iterable[pa.RecordBatch]]:
    """The function Python workers run to read stored files' keys (``_tag``)."""

    def read(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        location = open_location(base_uri, storage_options)
        for batch in batches:
            for path in batch.column(0).to_pylist():
                stored = _read_parquet(location, path, [PARTITION_PATH, RECORD_KEY, FILE_NAME])
                file_ids = pc.list_element(pc.split_pattern(stored.column(FILE_NAME), "_"), 0)
                keys = pa.table(
                    {
                        "__stored_partition": stored.column(PARTITION_PATH).cast(pa.string()),
                        "__stored_key": stored.column(RECORD_KEY).cast(pa.string()),
                        FILE_ID: file_ids.cast(pa.string()),
                    }
                )
                yield from keys.to_batches()

    return read


def _group_merger(
    base: str,
    storage_options: Mapping[str, Any],
    instant: str,
    schema: pa.Schema,
    ordering: str | None,
    stored_names: Mapping[str, str],
    cdc_mode: CdcMode | None,
    data_schema: Mapping[str, Any],
) -> Callable[[pa.Table], pa.Table]:
    """The function Spark's Python workers run for each touched file group. It opens
    the table from its URI and storage options (plain data: it runs on any executor),
    never assuming the driver's disk."""

    def merge(rows: pa.Table) -> pa.Table:
        from pyspark import TaskContext

        location = open_location(base, storage_options)
        partition = rows.column(PARTITION_PATH)[0].as_py()
        file_id = rows.column(FILE_ID)[0].as_py()
        stored = stored_names.get(f"{partition}\0{file_id}")
        folder = location.join(partition)
        old = _read_parquet(location, f"{folder}/{stored}") if stored else None
        context = TaskContext.get()
        task = (
            (context.partitionId(), context.stageId(), context.attemptNumber())
            if context
            else (0, 0, 0)
        )
        name = f"{file_id}_{task[0]}-{task[1]}-{task[2]}_{instant}.parquet"
        result = merge_file_group(
            old,
            rows,
            schema,
            instant=instant,
            file_name=name,
            seqno_prefix=f"{instant}_{task[0]}",
            ordering_field=ordering,
        )
        table = result.table
        keys = table.column(RECORD_KEY)
        if table.num_rows:
            bounds = pc.min_max(keys)
            table = table.replace_schema_metadata(
                {
                    "hoodie_min_record_key": bounds["min"].as_py(),
                    "hoodie_max_record_key": bounds["max"].as_py(),
                }
            )
        write_marker(location, instant, partition, name)
        path = f"{folder}/{name}"
        if location.is_local:
            os.makedirs(folder, exist_ok=True)
            pq.write_table(table, path)
            file_size = os.path.getsize(path)
        else:
            # An object is published in one PUT: readers never see part of it.
            sink = pa.BufferOutputStream()
            pq.write_table(table, sink)
            data = sink.getvalue().to_pybytes()
            location.write_file(path, data)
            file_size = len(data)
        relative = f"{partition}/{name}" if partition else name
        prev_commit = stored.rsplit("_", 1)[1].split(".")[0] if stored else None
        # CDC: a rewritten file group logs its changes; a new one needs no log (readers
        # infer BASE_FILE_INSERT), as in Hudi.
        cdc_path, cdc_size = None, None
        changes = cdc_changes(result) if cdc_mode is not None and stored else None
        if changes is not None and len(changes):
            assert cdc_mode is not None
            cdc_name = cdc_log_name(file_id, instant, f"{task[0]}-{task[1]}-{task[2]}")
            data = encode_cdc_file(cdc_mode, data_schema, instant, changes)
            write_marker(location, instant, partition, cdc_name)
            location.write_file(f"{folder}/{cdc_name}", data)
            cdc_path = f"{partition}/{cdc_name}" if partition else cdc_name
            cdc_size = len(data)
        return pa.table(
            {
                "partition": pa.array([partition], pa.string()),
                "file_id": pa.array([file_id], pa.string()),
                "path": pa.array([relative], pa.string()),
                "prev_commit": pa.array([prev_commit], pa.string()),
                "num_writes": pa.array([table.num_rows], pa.int64()),
                "num_deletes": pa.array([result.num_deletes], pa.int64()),
                "num_update_writes": pa.array([result.num_updates], pa.int64()),
                "num_inserts": pa.array([result.num_inserts], pa.int64()),
                "file_size": pa.array([file_size], pa.int64()),
                "prev_base_file": pa.array([stored], pa.string()),
                "cdc_path": pa.array([cdc_path], pa.string()),
                "cdc_size": pa.array([cdc_size], pa.int64()),
            }
        )

    return merge
