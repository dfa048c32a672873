"""Compaction of the metadata table (MDT): each file group's logs merged into a new
HFile base file, as Hudi 1.x's ``HoodieBackedTableMetadataWriter.compactIfNecessary``.

Due once ``hoodie.metadata.compact.max.delta.commits`` (10) deltacommits have been
requested on the MDT since its latest compaction, pending ones included (the
initialisation deltacommits ``00000000000000000``... count too). The instant is a new
instant time, unless a data instant is still pending though its MDT deltacommit
completed (a crashed write): then one millisecond before the earliest such instant, so
that the plan leaves its log out and a rollback can still undo it; an instant already
completed is not compacted again.

The plan (``<T>.compaction.requested``, Avro ``HoodieCompactionPlan`` version 2) has one
operation per file group whose latest slice has log files completed before T (every
group right after initialisation: each starts with an empty log file). ``<T>.compaction
.inflight`` (empty), then per operation ``<fileId>_<token>_<T>.hfile``: the slice's
records merged by ``HoodieMetadataPayload``'s rules, deleted ones dropped, with Hudi's
base-file file info and bloom filter; then ``<T>_<completion>.commit`` (``COMPACT``).
A compaction left pending by a crash is executed again from its plan first.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import json
import time
from collections.abc import Sequence
from typing import Any

import fastavro

from hudi_sync.errors import CorruptTableError
from hudi_sync.storage import contained_file
from hudi_sync.table.avro.bounded import read_container
from hudi_sync.table.files.fs_view import FileSlice
from hudi_sync.table.metadata_table.reader import MetadataTableReader
from hudi_sync.table.metadata_table.records import MetadataRecord, live_records, metadata_schema
from hudi_sync.table.timeline.active import Timeline, format_instant
from hudi_sync.table.timeline.commit_metadata import WriteStat
from hudi_sync.table.timeline.instant import (
    Action,
    Instant,
    comparable_instant,
    parse_instant_file_name,
)
from hudi_sync.table.write.compaction_plan import (
    JAVA_STRING,
    PLAN_RECORD,
    nullable_field,
)
from hudi_sync.table.write.metadata_table.bloom import (
    BLOOM_META_BLOCK,
    base_file_info,
    bloom_filter,
)
from hudi_sync.table.write.metadata_table.hfile_writer import write_hfile
from hudi_sync.table.write.timeline import CommitRecord, TimelineWriter

COMPACT_OPERATION = "COMPACT"
PLAN_VERSION = 2
_MB = 1024 * 1024
DEFAULT_BASE_FILE_MB = 120  # hoodie.parquet.max.file.size: the plan's write estimate
# Hudi 1.x's ``HoodieCompactionPlan`` (version 2: paths are file names) with its strategy
# fields: the strategy is never set, meta fields are not preserved, no partition is left out.
MDT_PLAN_SCHEMA = fastavro.parse_schema(
    {
        **PLAN_RECORD,
        "fields": [
            *PLAN_RECORD["fields"],
            nullable_field(
                "strategy",
                {
                    "type": "record",
                    "name": "HoodieCompactionStrategy",
                    "fields": [
                        nullable_field("compactorClassName", JAVA_STRING),
                        nullable_field("strategyParams", {"type": "map", "values": JAVA_STRING}),
                    ],
                },
            ),
            {"name": "preserveHoodieMetadata", "type": ["boolean", "null"], "default": False},
            nullable_field("missingSchedulePartitions", {"type": "array", "items": JAVA_STRING}),
        ],
    }
)


def one_ms_before(instant: str) -> str:
    moment = dt.datetime.strptime(comparable_instant(instant)[:17], "%Y%m%d%H%M%S%f")
    return format_instant(moment - dt.timedelta(milliseconds=1))


def latest_compaction_time(timeline: Timeline) -> str | None:
    done = [i.requested_time for i in timeline.completed([Action.COMMIT])]
    return max(done, key=comparable_instant, default=None)


def deltacommits_since_compaction(timeline: Timeline) -> int:
    """Deltacommits requested after the latest completed compaction, pending ones too (as
    Hudi's trigger counts its deltacommit timeline, every state of it)."""
    latest = latest_compaction_time(timeline)
    bound = comparable_instant(latest) if latest else ""
    return sum(
        1
        for i in timeline.instants
        if i.action == Action.DELTA_COMMIT and comparable_instant(i.requested_time) > bound
    )


def compaction_instant(
    mdt_timeline: Timeline, data_timeline: Timeline, writer: TimelineWriter
) -> str | None:
    """Hudi's instant for the next MDT compaction (module docstring); ``None`` when a
    compaction of that time already completed."""
    mdt_completed = {i.requested_time for i in mdt_timeline.instants if i.is_completed}
    stuck = sorted(
        (i.requested_time for i in data_timeline.pending if i.requested_time in mdt_completed),
        key=comparable_instant,
    )
    instant = one_ms_before(stuck[0]) if stuck else writer.new_instant_time()
    return None if instant in mdt_completed else instant


def _completion_times(timeline: Timeline) -> dict[str, str]:
    return {
        i.requested_time: i.completion_time or i.requested_time
        for i in timeline.with_completion_times()
        if i.is_completed
    }


def plan_operations(reader: MetadataTableReader, instant: str) -> list[dict[str, Any]]:
    """One operation per MDT file group whose latest slice has logs completed before
    ``instant``, in partition and file-id order."""
    completion = _completion_times(reader.timeline)
    bound = comparable_instant(instant)
    operations = []
    for partition in _mdt_partitions(reader):
        for file_slice in sorted(reader.partition_slices(partition), key=lambda s: s.file_id):
            logs = [
                log
                for log in file_slice.log_files
                if log.instant in completion and comparable_instant(completion[log.instant]) < bound
            ]
            if not logs:
                continue
            base = file_slice.base_file
            log_size = sum(log.size for log in logs)
            base_size = base.size if base is not None else 0
            read_mb = (base_size + log_size) // _MB
            write_mb = base_size // _MB if base is not None else DEFAULT_BASE_FILE_MB
            operations.append(
                {
                    "baseInstantTime": file_slice.base_instant,
                    "deltaFilePaths": [log.name for log in logs],
                    "dataFilePath": base.name if base is not None else None,
                    "fileId": file_slice.file_id,
                    "partitionPath": partition,
                    "metrics": {
                        "TOTAL_LOG_FILES": float(len(logs)),
                        "TOTAL_IO_MB": float(read_mb + write_mb),
                        "TOTAL_IO_READ_MB": float(read_mb),
                        "TOTAL_LOG_FILES_SIZE": float(log_size),
                        "TOTAL_IO_WRITE_MB": float(write_mb),
                    },
                    "bootstrapFilePath": None,
                }
            )
    return operations


def _mdt_partitions(reader: MetadataTableReader) -> list[str]:
    location = reader.location
    return sorted(
        name
        for name in location.names(location.path)
        if not name.startswith(".") and location.fs.isdir(location.join(name))
    )


def plan_bytes(operations: Sequence[dict[str, Any]]) -> bytes:
    buffer = io.BytesIO()
    record = {
        "operations": list(operations),
        "extraMetadata": {},
        "version": PLAN_VERSION,
        "strategy": None,
        "preserveHoodieMetadata": False,
        "missingSchedulePartitions": [],
    }
    fastavro.writer(buffer, MDT_PLAN_SCHEMA, [record])
    return buffer.getvalue()


def read_plan(data: bytes, source: str) -> list[dict[str, Any]]:
    """A stored plan's operations. Their names become paths: each partition must be one
    of the metadata table's folders and each file id and file name one name in it, else
    a ``CorruptTableError`` naming ``source``, the plan file."""
    records = read_container(data, source, 2, "compaction plan")
    if len(records) != 1 or not isinstance(records[0], dict):
        raise CorruptTableError(f"{source}: a compaction plan holds one record")
    try:
        operations = list(records[0].get("operations") or [])
        for op in operations:
            partition = op["partitionPath"]
            contained_file("", partition, source)  # one folder of the metadata table
            names = [op["fileId"], op.get("dataFilePath"), *(op.get("deltaFilePaths") or ())]
            for name in filter(None, names):
                contained_file(partition, name, source)
    except CorruptTableError:
        raise
    except (KeyError, TypeError, AttributeError) as exc:
        raise CorruptTableError(f"{source}: not a compaction plan ({exc})") from None
    return operations


class MetadataCompactor:
    """Schedules and executes compactions of one data table's MDT."""

    def __init__(self, reader: MetadataTableReader, writer: TimelineWriter, version: int):
        self.reader = reader
        self.writer = writer
        self.version = version
        self.codec_schema = json.dumps(metadata_schema(version), separators=(",", ":"))
        self.commit_schema = json.dumps(
            metadata_schema(version, meta_fields=False), separators=(",", ":")
        )

    def compact_if_due(self, data_timeline: Timeline, max_delta_commits: int) -> str | None:
        """Compact when due; returns the compaction instant."""
        timeline = self.reader.timeline
        if deltacommits_since_compaction(timeline) < max_delta_commits:
            return None
        instant = compaction_instant(timeline, data_timeline, self.writer)
        if instant is None:
            return None
        operations = plan_operations(self.reader, instant)
        if not operations:
            return None
        self.writer.request_compaction(instant, plan_bytes(operations))
        self.execute(instant, operations)
        return instant

    def pending(self) -> list[Instant]:
        """Compactions requested or inflight (a completed one is a ``commit``)."""
        return [i for i in self.reader.timeline.instants if i.action == Action.COMPACTION]

    def finish_pending(self) -> list[str]:
        """Execute again the compactions a crash left pending (Hudi's first step)."""
        finished = []
        for instant in self.pending():
            data = self.reader.location.read_file(self._plan_path(instant.requested_time))
            plan = read_plan(data, self._plan_source(instant.requested_time))
            self.execute(instant.requested_time, plan)
            finished.append(instant.requested_time)
        return finished

    def roll_back_pending_log_compactions(self) -> list[str]:
        """Roll back the log compactions left pending (``<T>.logcompaction.*``), the
        rollback instants. Hudi runs pending log compactions first and rolls an inflight
        one back (its plans are mutable: a new one is scheduled later); hudi_sync, which
        does not run log compactions, rolls back a requested one too (it wrote nothing).
        Its log files (named with its instant) go; the other logs keep every record."""
        rollbacks = []
        location = self.reader.location
        for pending in self.reader.timeline.pending:
            if pending.action != Action.LOG_COMPACTION:
                continue
            instant = pending.requested_time
            started = time.time()
            deleted: dict[str, list[str]] = {}
            written = f"_{instant}.log."
            for partition in _mdt_partitions(self.reader):
                for name in location.names(location.join(partition)):
                    if name.startswith(".") and written in name:
                        location.remove(location.join(partition, name))
                        deleted.setdefault(partition, []).append(f"{partition}/{name}")
            rollbacks.append(self.writer.rollback(instant, Action.LOG_COMPACTION, deleted, started))
            for name in location.names(self.writer.folder):
                parsed = parse_instant_file_name(name)
                if parsed is not None and parsed.requested_time == instant:
                    location.remove(f"{self.writer.folder}/{name}")
        return rollbacks

    def execute(self, instant: str, operations: Sequence[dict[str, Any]]) -> None:
        names = self.reader.location.names(self.writer.folder)
        if f"{instant}.{Action.COMPACTION}.inflight" not in names:
            self.writer.mark_compaction_inflight(instant)
        slices = {
            (s.partition_path, s.file_id): s
            for partition in {op["partitionPath"] for op in operations}
            for s in self.reader.partition_slices(partition)
        }
        stats = []
        for number, op in enumerate(operations):
            latest = slices.get((op["partitionPath"], op["fileId"]))
            if latest is None:
                raise CorruptTableError(
                    f"{self._plan_source(instant)}: plans file group {op['fileId']} of "
                    f"{op['partitionPath']}, which the metadata table does not have"
                )
            stats.append(self._compact(instant, number, op, latest))
        commit = CommitRecord(COMPACT_OPERATION, self.commit_schema, stats, compacted=True)
        self.writer.complete(instant, Action.COMMIT, commit)

    def _plan_path(self, instant: str) -> str:
        return f"{self.writer.folder}/{instant}.{Action.COMPACTION}.requested"

    def _plan_source(self, instant: str) -> str:
        """The plan file, as messages name it."""
        location = self.reader.location
        return location.uri_of(self._plan_path(instant)[len(location.path) :])

    def _compact(
        self, instant: str, number: int, operation: dict[str, Any], latest: FileSlice
    ) -> WriteStat:
        partition, file_id = operation["partitionPath"], operation["fileId"]
        wanted = set(operation.get("deltaFilePaths") or [])
        logs = tuple(log for log in latest.log_files if log.name in wanted)
        base = latest.base_file
        if base is not None and base.name != operation.get("dataFilePath"):
            base = None  # the slice moved on (a re-run): only the plan's files count
        file_slice = dataclasses.replace(latest, base_file=base, log_files=logs)
        base_only = dataclasses.replace(file_slice, log_files=())
        base_records = self.reader.read_slice(base_only) if base is not None else {}
        merged = live_records(self.reader.read_slice(file_slice))
        records = sorted(merged.values(), key=lambda r: r.key)
        data = base_hfile(records, self.version, self.codec_schema)
        name = f"{file_id}_{number}-0-{number}_{instant}.hfile"
        path = self.reader.location.file_inside(partition, name, self._plan_source(instant))
        self.reader.location.write_file(path, data)
        updated = sum(1 for key in merged if key in base_records)
        return WriteStat(
            file_id=file_id,
            path=f"{partition}/{name}",
            partition_path=partition,
            prev_commit=base.instant if base is not None else None,
            num_writes=len(merged),
            num_inserts=len(merged) - updated,
            num_updates=updated,
            total_write_bytes=len(data),
            file_size=len(data),
            prev_base_file=base.name if base is not None else None,
            total_log_records=len(merged),
            total_log_blocks=len(logs),
            total_log_files_compacted=len(logs),
            total_log_size_compacted=sum(log.size for log in logs),
            total_updated_records_compacted=len(merged),
        )


def base_hfile(
    records: Sequence[MetadataRecord],
    version: int,
    schema: str,
    create_time_ms: int | None = None,
) -> bytes:
    """An HFile base file of the MDT holding ``records`` (as Hudi writes one: file info
    with the schema, bloom filter type and min/max key; the bloom filter meta block)."""
    from hudi_sync.table.write.metadata_table.codec import HudiRecordCodec

    entries = HudiRecordCodec(version).encode(records)
    keys = [key for key, _ in entries]
    return write_hfile(
        entries,
        base_file_info(keys, schema.encode("utf-8")),
        meta_blocks={BLOOM_META_BLOCK: bloom_filter(keys, version)},
        create_time_ms=create_time_ms,
    )
