"""Merge-on-Read compaction: each file slice's base and log records into a new base file.

Hudi's protocol, which needs no Spark:

1. Schedule: a plan (Avro ``HoodieCompactionPlan``, one operation per file group whose
   latest slice has log files) in ``<T>.compaction.requested``. A plan is never
   abandoned: it is executed, or re-executed after a crash.
2. Execute: ``<T>.compaction.inflight``; each operation reads its slice (the base file
   and the plan's log files, merged by the table's merge rules) and writes
   ``<fileId>_<token>_<T>.parquet``. Rows keep the commit time and sequence number of
   the version that won; ``_hoodie_file_name`` names the new file.
3. Complete: ``<T>.commit`` (version 6, JSON) or ``<T>_<completion>.commit`` (Avro),
   with ``compacted`` set and operation ``COMPACT``.

The new base file starts a new file slice at T: logs written before it belong to the
previous slice, which readers no longer merge.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_sync.errors import CorruptTableError
from hudi_sync.storage import Location, contained_file, contained_partition, open_location
from hudi_sync.table.avro.bounded import read_container
from hudi_sync.table.config.schema import META_FIELDS
from hudi_sync.table.files.filenames import parse_base_file, parse_log_file
from hudi_sync.table.files.fs_view import FileSlice
from hudi_sync.table.read.slice_reader import read_file_slice_counted
from hudi_sync.table.read.snapshot import snapshot_schema, table_merge_rules
from hudi_sync.table.records.merge import MergeRules
from hudi_sync.table.table import HudiTable
from hudi_sync.table.timeline.commit_metadata import WriteStat
from hudi_sync.table.timeline.instant import Action
from hudi_sync.table.write.compaction_plan import PLAN_SCHEMA
from hudi_sync.table.write.listing_source import listing_source
from hudi_sync.table.write.lock import TableLock
from hudi_sync.table.write.metadata_table.keepers import data_timeline_writer
from hudi_sync.table.write.rollback import marker_folder, remove_written_files, write_marker
from hudi_sync.table.write.timeline import CommitRecord, TimelineWriter

COMPACT_OPERATION = "COMPACT"
PLAN_VERSION = 2  # paths in the plan are file names, relative to their partition
_FILE_NAME = META_FIELDS[4]


@dataclass(frozen=True)
class CompactionOperation:
    """One file group to compact: its slice's base file and the logs to merge into it."""

    partition_path: str
    file_id: str
    base_instant: str
    base_file: str | None  # a file name, None for a log-only file group
    log_files: tuple[str, ...]  # file names, in merge order
    log_bytes: int = 0

    def to_record(self) -> dict[str, Any]:
        return {
            "baseInstantTime": self.base_instant,
            "deltaFilePaths": list(self.log_files),
            "dataFilePath": self.base_file,
            "fileId": self.file_id,
            "partitionPath": self.partition_path,
            "metrics": {
                "TOTAL_LOG_FILES": float(len(self.log_files)),
                "TOTAL_LOG_FILES_SIZE": float(self.log_bytes),
            },
            "bootstrapFilePath": None,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any], source: str) -> CompactionOperation:
        """The operation a plan read from ``source`` holds (``checked``)."""
        return cls(
            partition_path=str(record.get("partitionPath") or ""),
            file_id=str(record["fileId"]),
            base_instant=str(record["baseInstantTime"]),
            base_file=_name(record.get("dataFilePath")),
            log_files=tuple(n for n in map(_name, record.get("deltaFilePaths") or ()) if n),
            log_bytes=int((record.get("metrics") or {}).get("TOTAL_LOG_FILES_SIZE") or 0),
        ).checked(source)

    def checked(self, source: str) -> CompactionOperation:
        """This operation, whose names were read from ``source``, once its partition,
        file id (which names the new base file) and file names are known to name files
        inside the table; else a ``CorruptTableError`` naming ``source``."""
        contained_partition(self.partition_path, source)
        for name in (self.file_id, *([self.base_file] if self.base_file else []), *self.log_files):
            contained_file(self.partition_path, name, source)
        return self

    def file_slice(self) -> FileSlice:
        """The slice the operation merges: exactly the planned files."""
        base = parse_base_file(self.base_file, 0) if self.base_file else None
        logs = []
        for name in self.log_files:
            log = parse_log_file(name, 0)
            if log is None:
                raise CorruptTableError(f"compaction plan names {name!r}, not a log file")
            logs.append(log)
        return FileSlice(self.partition_path, self.file_id, self.base_instant, base, tuple(logs))


def _name(path: object) -> str | None:
    """A plan path as a file name (version 1 plans hold full paths)."""
    return os.path.basename(str(path)) if path else None


def plan_compaction(table: HudiTable) -> list[CompactionOperation]:
    """One operation per file group whose latest slice has committed log files."""
    source = listing_source(table.view)
    operations = []
    for file_slice in table.view.slices_as_of(None):
        if not file_slice.log_files:
            continue
        operations.append(
            CompactionOperation(
                file_slice.partition_path,
                file_slice.file_id,
                file_slice.base_instant,
                file_slice.base_file.name if file_slice.base_file else None,
                tuple(log.name for log in file_slice.log_files),
                sum(file_slice.log_size(table.location, log) for log in file_slice.log_files),
            ).checked(source)
        )
    return operations


def plan_bytes(operations: Iterable[CompactionOperation]) -> bytes:
    """``<T>.compaction.requested``: the plan in an Avro container (no codec)."""
    record = {
        "operations": [op.to_record() for op in operations],
        "extraMetadata": None,
        "version": PLAN_VERSION,
    }
    buffer = io.BytesIO()
    fastavro.writer(buffer, PLAN_SCHEMA, [record])
    return buffer.getvalue()


def read_plan(data: bytes, where: str) -> list[CompactionOperation]:
    records = read_container(data, where, 2, "compaction plan")
    if len(records) != 1 or not isinstance(records[0], dict):
        raise CorruptTableError(f"{where}: a compaction plan holds one record")
    try:
        return [
            CompactionOperation.from_record(r, where) for r in records[0].get("operations") or ()
        ]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CorruptTableError(
            f"{where}: compaction plan has an unexpected shape ({type(exc).__name__}: {exc})"
        ) from None


def compact_file_group(
    location: Location,
    operation: CompactionOperation,
    instant: str,
    rules: MergeRules,
    committed: Callable[[str], bool],
    schema: pa.Schema,
    write_token: str,
) -> WriteStat:
    """Merge one planned slice and write it as the base file of a new slice at
    ``instant``; returns its write stat."""
    rows, counts = read_file_slice_counted(
        location, operation.file_slice(), rules, committed, schema
    )
    name = f"{operation.file_id}_{write_token}_{instant}.parquet"
    if _FILE_NAME not in rows.column_names:
        # hoodie.populate.meta.fields=false: Hudi's writer keeps the meta columns, null,
        # and adds no key range (records are keyed by the key generator).
        rows = pa.table(
            [*(pa.nulls(rows.num_rows, pa.string()) for _ in META_FIELDS), *rows.columns],
            names=[*META_FIELDS, *rows.column_names],
        )
    elif rows.num_rows:
        rows = rows.set_column(
            rows.schema.get_field_index(_FILE_NAME),
            _FILE_NAME,
            pa.array([name] * rows.num_rows, pa.string()),
        )
        bounds = pc.min_max(rows.column(META_FIELDS[2]))
        rows = rows.replace_schema_metadata(
            {
                "hoodie_min_record_key": bounds["min"].as_py(),
                "hoodie_max_record_key": bounds["max"].as_py(),
            }
        )
    partition = operation.partition_path
    relative = f"{partition}/{name}" if partition else name
    write_marker(location, instant, partition, name)
    sink = pa.BufferOutputStream()
    pq.write_table(rows, sink)
    data = sink.getvalue().to_pybytes()
    location.write_file(location.join(relative), data)
    return WriteStat(
        file_id=operation.file_id,
        path=relative,
        partition_path=partition,
        prev_commit=operation.base_instant,
        num_writes=counts.writes,
        num_inserts=counts.inserts,
        num_updates=counts.updates,
        num_deletes=counts.deletes,
        total_write_bytes=len(data),
        file_size=len(data),
        prev_base_file=operation.base_file,
        total_log_records=counts.log_records,
        total_log_blocks=counts.log_blocks,
        total_rollback_blocks=counts.rollback_blocks,
        total_log_files_compacted=counts.log_files,
        total_log_size_compacted=operation.log_bytes,
        total_updated_records_compacted=counts.log_keys,
    )


def pending_compactions(table: HudiTable) -> list[str]:
    """Requested times of compactions scheduled and not completed, oldest first."""
    completed = {i.requested_time for i in table.timeline.completed_writes}
    return [
        i.requested_time
        for i in table.timeline.instants
        if i.action == Action.COMPACTION
        and not i.is_completed
        and i.requested_time not in completed
    ]


def delta_commits_since_compaction(table: HudiTable) -> int:
    """Completed deltacommits after the last completed compaction (or ever): what
    ``hoodie.compact.inline.max.delta.commits`` counts."""
    count = 0
    for instant in reversed(table.timeline.completed_writes):
        if instant.action == Action.DELTA_COMMIT:
            count += 1
        elif table.timeline.commit_metadata(instant).compacted:
            break
    return count


@dataclass(frozen=True)
class CompactionJob:
    """What executing a plan's operations needs, as plain data (Spark's workers get it)."""

    uri: str
    storage_options: Mapping[str, Any]
    instant: str
    rules: MergeRules
    committed: Callable[[str], bool]
    schema: pa.Schema

    def run(self, operation: CompactionOperation, write_token: str) -> WriteStat:
        location = open_location(self.uri, self.storage_options)
        return compact_file_group(
            location, operation, self.instant, self.rules, self.committed, self.schema, write_token
        )


# Runs a plan's operations (in order, or spread over Spark's workers) and returns their stats.
Executor = Callable[[list[CompactionOperation], CompactionJob], list[WriteStat]]


def run_in_process(operations: list[CompactionOperation], job: CompactionJob) -> list[WriteStat]:
    """The operations one after another, in this process."""
    return [job.run(op, f"{number}-0-0") for number, op in enumerate(operations)]


def compact(
    table: HudiTable,
    lock: TableLock,
    schedule: bool = True,
    execute: bool = True,
    executor: Executor = run_in_process,
) -> list[str]:
    """Under the table lock: finish every pending compaction (``execute``), then
    schedule one over the file groups with log files (``schedule``) and run it
    (``execute``). Returns the instants completed, or only scheduled when not
    ``execute``."""
    location = table.location
    version = table.config.version
    folder = location.join(".hoodie") if version == 6 else location.join(".hoodie", "timeline")
    timeline = data_timeline_writer(
        location, folder, version, table.config.raw, table.config.metadata_partitions
    )
    instants: list[str] = []
    with lock:
        if execute:
            for pending in pending_compactions(table):
                operations = _stored_plan(table, pending)
                _execute(table, timeline, pending, operations, executor)
                instants.append(pending)
                table = HudiTable.open(table.uri, location.storage_options)
        if schedule:
            operations = plan_compaction(table)
            if operations:
                instant = timeline.new_instant_time()
                timeline.request_compaction(instant, plan_bytes(operations))
                if execute:
                    _execute(table, timeline, instant, operations, executor)
                instants.append(instant)
    return instants


def schedule_compaction(table: HudiTable, lock: TableLock) -> str | None:
    """Under the table lock: request a compaction of the file groups with log files
    (none while one is pending); its instant, or None. Hudi schedules between writes,
    so every later write's instant is newer than the plan's."""
    with lock:
        table = HudiTable.open(table.uri, table.location.storage_options)
        if pending_compactions(table):
            return None
        operations = plan_compaction(table)
        if not operations:
            return None
        instant = _timeline(table).new_instant_time()
        _timeline(table).request_compaction(instant, plan_bytes(operations))
        return instant


def run_compaction(
    table: HudiTable, lock: TableLock, instant: str, executor: Executor = run_in_process
) -> None:
    """Execute a scheduled compaction beside the writes (Hudi's asynchronous
    compaction): the lock is held to start and to complete it, not while its files are
    written, so deltacommits go on meanwhile (their logs join the slice it creates)."""
    table = HudiTable.open(table.uri, table.location.storage_options)
    timeline = _timeline(table)
    with lock:
        operations = _stored_plan(table, instant)
        remove_written_files(table.location, instant)
        timeline.mark_compaction_inflight(instant)
    stats = executor(operations, _job(table, instant, operations))
    commit = CommitRecord(COMPACT_OPERATION, json.dumps(table.avro_schema), stats, compacted=True)
    with lock:
        timeline.complete(instant, Action.COMMIT, commit)
        table.location.remove_tree(marker_folder(table.location, instant))


def pending_compaction_groups(table: HudiTable) -> dict[tuple[str, str], str]:
    """(partition, file id) -> instant of the pending compaction planned over it: on
    version 6 a log appended to such a group is named for that instant's slice."""
    groups: dict[tuple[str, str], str] = {}
    for instant in pending_compactions(table):
        for operation in _stored_plan(table, instant):
            groups[(operation.partition_path, operation.file_id)] = instant
    return groups


def _timeline(table: HudiTable) -> TimelineWriter:
    location = table.location
    version = table.config.version
    folder = location.join(".hoodie") if version == 6 else location.join(".hoodie", "timeline")
    return data_timeline_writer(
        location, folder, version, table.config.raw, table.config.metadata_partitions
    )


def _job(table: HudiTable, instant: str, operations: list[CompactionOperation]) -> CompactionJob:
    return CompactionJob(
        table.uri,
        dict(table.location.storage_options),
        instant,
        table_merge_rules(table),
        table.view.committed_instants,
        snapshot_schema(table, [op.file_slice() for op in operations]),
    )


def _stored_plan(table: HudiTable, instant: str) -> list[CompactionOperation]:
    name = table.timeline.find_file(instant, f"{Action.COMPACTION}.requested")
    if name is None:
        raise CorruptTableError(f"{table.uri}: compaction {instant} has no requested plan")
    return read_plan(table.timeline.read_file(name), f"{table.uri}: {name}")


def _execute(
    table: HudiTable,
    timeline: TimelineWriter,
    instant: str,
    operations: list[CompactionOperation],
    executor: Executor,
) -> None:
    """Run a scheduled plan to completion; files of an earlier, interrupted attempt
    (found by their markers) are removed first."""
    location = table.location
    remove_written_files(location, instant)
    timeline.mark_compaction_inflight(instant)
    slices = [op.file_slice() for op in operations]
    job = CompactionJob(
        table.uri,
        dict(location.storage_options),
        instant,
        table_merge_rules(table),
        table.view.committed_instants,
        snapshot_schema(table, slices),
    )
    stats = executor(operations, job)
    commit = CommitRecord(COMPACT_OPERATION, json.dumps(table.avro_schema), stats, compacted=True)
    timeline.complete(instant, Action.COMMIT, commit)
    location.remove_tree(marker_folder(location, instant))
