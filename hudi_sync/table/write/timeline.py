"""The write side of the timeline: instant files in the order Hudi writers create them.

A write moves through ``T.<action>.requested`` → inflight → completed; the completed
file is written last and published whole (locally a temporary file linked into place,
on object stores one PUT), so readers see the write entirely or not at all. It is a
conditional create on every store: a completed instant is never overwritten. v6 tables
serialize commit metadata as JSON, v8 tables as Avro; rollback and clean metadata are
Avro in both. Avro schemas here name Hudi's records and carry the fields hudi_sync
fills; readers resolve fields by name.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import fastavro

from hudi_sync import config as cfg
from hudi_sync.storage import Location
from hudi_sync.table.config.properties import TableConfig, decode_properties
from hudi_sync.table.timeline.active import format_instant, timeline_zone
from hudi_sync.table.timeline.commit_metadata import WriteStat
from hudi_sync.table.timeline.instant import Action, comparable_instant, parse_instant_file_name

_NAMESPACE = "org.apache.hudi.avro.model"
_STRING = {"type": "string", "avro.java.string": "String"}


def _nullable(name: str, avro_type: Any) -> dict[str, Any]:
    return {"name": name, "type": ["null", avro_type], "default": None}


_WRITE_STAT = {
    "type": "record",
    "name": "HoodieWriteStat",
    "fields": [
        _nullable("fileId", _STRING),
        _nullable("path", _STRING),
        _nullable("prevCommit", _STRING),
        _nullable("numWrites", "long"),
        _nullable("numDeletes", "long"),
        _nullable("numUpdateWrites", "long"),
        _nullable("totalWriteBytes", "long"),
        _nullable("totalWriteErrors", "long"),
        _nullable("partitionPath", _STRING),
        _nullable("numInserts", "long"),
        _nullable("fileSizeInBytes", "long"),
        _nullable("cdcStats", {"type": "map", "values": "long"}),
        _nullable("prevBaseFile", _STRING),
        _nullable("numUpdates", "long"),
        _nullable("totalLogRecords", "long"),
        _nullable("totalLogBlocks", "long"),
        _nullable("totalCorruptLogBlock", "long"),
        _nullable("totalRollbackBlocks", "long"),
        _nullable("totalLogFilesCompacted", "long"),
        _nullable("totalLogSizeCompacted", "long"),
        _nullable("totalUpdatedRecordsCompacted", "long"),
        # HoodieDeltaWriteStat's (Merge-on-Read log appends)
        _nullable("logVersion", "int"),
        _nullable("logOffset", "long"),
        _nullable("baseFile", _STRING),
        _nullable("logFiles", {"type": "array", "items": _STRING}),
    ],
}
_COMMON_COMMIT_FIELDS = [
    _nullable(
        "partitionToWriteStats", {"type": "map", "values": {"type": "array", "items": _WRITE_STAT}}
    ),
    _nullable("compacted", "boolean"),
    _nullable("extraMetadata", {"type": "map", "values": _STRING}),
    {"name": "version", "type": ["int", "null"], "default": 1},
    _nullable("operationType", _STRING),
]
COMMIT_SCHEMA = fastavro.parse_schema(
    {
        "type": "record",
        "name": "HoodieCommitMetadata",
        "namespace": _NAMESPACE,
        "fields": _COMMON_COMMIT_FIELDS,
    }
)
REPLACE_COMMIT_SCHEMA = fastavro.parse_schema(
    {
        "type": "record",
        "name": "HoodieReplaceCommitMetadata",
        "namespace": _NAMESPACE,
        "fields": [
            *_COMMON_COMMIT_FIELDS,
            _nullable(
                "partitionToReplaceFileIds",
                {"type": "map", "values": {"type": "array", "items": _STRING}},
            ),
        ],
    }
)
REQUESTED_REPLACE_SCHEMA = fastavro.parse_schema(
    {
        "type": "record",
        "name": "HoodieRequestedReplaceMetadata",
        "namespace": _NAMESPACE,
        "fields": [
            _nullable("operationType", _STRING),
            _nullable("extraMetadata", {"type": "map", "values": _STRING}),
            {"name": "version", "type": ["int", "null"], "default": 1},
        ],
    }
)
_PARTITION_FILES = {
    "type": "record",
    "fields": [
        {"name": "partitionPath", "type": _STRING},
        {"name": "successDeleteFiles", "type": {"type": "array", "items": _STRING}},
        {"name": "failedDeleteFiles", "type": {"type": "array", "items": _STRING}},
    ],
}
ROLLBACK_SCHEMA = fastavro.parse_schema(
    {
        "type": "record",
        "name": "HoodieRollbackMetadata",
        "namespace": _NAMESPACE,
        "fields": [
            {"name": "startRollbackTime", "type": _STRING},
            {"name": "timeTakenInMillis", "type": "long"},
            {"name": "totalFilesDeleted", "type": "int"},
            {"name": "commitsRollback", "type": {"type": "array", "items": _STRING}},
            {
                "name": "partitionMetadata",
                "type": {
                    "type": "map",
                    "values": {**_PARTITION_FILES, "name": "HoodieRollbackPartitionMetadata"},
                },
            },
            {"name": "version", "type": ["int", "null"], "default": 1},
            {
                "name": "instantsRollback",
                "type": {
                    "type": "array",
                    "items": {
                        "type": "record",
                        "name": "HoodieInstantInfo",
                        "fields": [
                            {"name": "commitTime", "type": _STRING},
                            {"name": "action", "type": _STRING},
                        ],
                    },
                },
                "default": [],
            },
        ],
    }
)
CLEAN_SCHEMA = fastavro.parse_schema(
    {
        "type": "record",
        "name": "HoodieCleanMetadata",
        "namespace": _NAMESPACE,
        "fields": [
            {"name": "startCleanTime", "type": _STRING},
            {"name": "timeTakenInMillis", "type": "long"},
            {"name": "totalFilesDeleted", "type": "int"},
            {"name": "earliestCommitToRetain", "type": _STRING},
            {"name": "lastCompletedCommitTimestamp", "type": _STRING, "default": ""},
            {
                "name": "partitionMetadata",
                "type": {
                    "type": "map",
                    "values": {
                        "type": "record",
                        "name": "HoodieCleanPartitionMetadata",
                        "fields": [
                            {"name": "partitionPath", "type": _STRING},
                            {"name": "policy", "type": _STRING},
                            {
                                "name": "deletePathPatterns",
                                "type": {"type": "array", "items": _STRING},
                            },
                            *_PARTITION_FILES["fields"][1:],
                            {
                                "name": "isPartitionDeleted",
                                "type": ["null", "boolean"],
                                "default": None,
                            },
                        ],
                    },
                },
            },
            {"name": "version", "type": ["int", "null"], "default": 1},
        ],
    }
)


def avro_bytes(schema: Any, record: Mapping[str, Any]) -> bytes:
    """One record in an Avro object-container file, as Hudi stores instant metadata."""
    buffer = io.BytesIO()
    fastavro.writer(buffer, schema, [dict(record)])
    return buffer.getvalue()


@dataclass(frozen=True)
class CommitRecord:
    """The completed file's content for a commit or replacecommit."""

    operation: str
    schema: str
    stats: Sequence[WriteStat]
    replaced_file_ids: Mapping[str, Sequence[str]] = field(default_factory=dict)
    extra_metadata: Mapping[str, str] = field(default_factory=dict)
    compacted: bool = False  # a compaction's commit

    def to_record(self, replace: bool) -> dict[str, Any]:
        by_partition: dict[str, list[dict[str, Any]]] = {}
        for stat in self.stats:
            by_partition.setdefault(stat.partition_path, []).append(stat.to_record())
        record: dict[str, Any] = {
            "partitionToWriteStats": by_partition,
            "compacted": self.compacted,
            "extraMetadata": {"schema": self.schema, **self.extra_metadata},
            "version": 1,
            "operationType": self.operation,
        }
        if replace:
            record["partitionToReplaceFileIds"] = {
                p: list(ids) for p, ids in self.replaced_file_ids.items()
            }
        return record


def now_instant(zone: dt.tzinfo | None = dt.UTC) -> str:
    """Now as an instant time in ``zone`` (``None``: the local zone, Hudi's LOCAL)."""
    return format_instant(dt.datetime.now(zone))


def table_zone(location: Location) -> dt.tzinfo | None:
    """The zone of the table's instant times, ``hoodie.table.timeline.timezone``: UTC,
    or (``None``) the local zone for LOCAL, Hudi's default. Hudi writers of one table
    share it: instants written in another zone would land hours before or after
    theirs (a later Hudi rollback then refuses an instant older than one completed)."""
    path = location.join(".hoodie", cfg.PROPERTIES_FILE)
    try:
        data = location.read_file(path)
    except FileNotFoundError:
        return None  # no table yet: Hudi's default
    where = location.uri_of(f".hoodie/{cfg.PROPERTIES_FILE}")
    return timeline_zone(TableConfig.parse(decode_properties(data, where), where))


def _one_ms_after(instant: str) -> str:
    if instant.startswith("0000"):
        # The metadata table's initialisation instants (00000000000000000...) are no
        # dates; any real time is after them.
        return f"{int(instant) + 1:017d}"
    moment = dt.datetime.strptime(comparable_instant(instant)[:17], "%Y%m%d%H%M%S%f")
    return format_instant(moment + dt.timedelta(milliseconds=1))


class InstantListener(Protocol):
    """Told of each instant just before it completes (the metadata table's writer:
    its deltacommit or rollback of the same time must be complete first). Each returns
    the completion time of what it published (``None``: nothing), which the instant's
    own completion time must follow."""

    def before_commit(self, instant: str, action: str, commit: CommitRecord) -> str | None: ...

    def before_clean(
        self,
        instant: str,
        deleted: Mapping[str, Sequence[str]],
        dropped: Sequence[str] = (),
    ) -> str | None: ...

    def before_rollback(self, rolled_back: str, instant: str) -> str | None: ...


class TimelineWriter:
    """Creates instant files in a table's timeline folder (``timeline_folder`` is a
    path on ``location.fs``), on local disk or an object store; ``listener`` hears of
    each completion before it happens."""

    def __init__(
        self,
        location: Location,
        timeline_folder: str,
        version: int,
        listener: InstantListener | None = None,
    ) -> None:
        self.location = location
        self.folder = timeline_folder
        self.version = version
        self.listener = listener
        # The completion time of the instant this writer completed last (versions 8+).
        self.last_completion: str | None = None
        self._zone: tuple[dt.tzinfo | None] | None = None

    @property
    def zone(self) -> dt.tzinfo | None:
        """The zone of the (data) table's instant times, read once (``table_zone``); the
        metadata table's instants share its data table's."""
        if self._zone is None:
            self._zone = (table_zone(self.location),)
        return self._zone[0]

    def now(self) -> str:
        """Now, as an instant time of this table."""
        return now_instant(self.zone)

    def _path(self, name: str) -> str:
        return f"{self.folder.rstrip('/')}/{name}"

    def new_instant_time(self) -> str:
        """Now (ms, in the table's timeline zone), but always after every instant
        already on the timeline."""
        latest = ""
        for name in self.location.names(self.folder):
            instant = parse_instant_file_name(name)
            if instant is None:
                continue
            for ts in (instant.requested_time, instant.completion_time or ""):
                latest = max(latest, comparable_instant(ts)) if ts else latest
        candidate = self.now()
        return _one_ms_after(latest) if latest and candidate <= latest else candidate

    # -- commits -------------------------------------------------------------------------
    def request(self, instant: str, action: str, operation: str) -> None:
        if action == Action.REPLACE_COMMIT:
            data = avro_bytes(REQUESTED_REPLACE_SCHEMA, {"operationType": operation})
        else:
            data = b""
        self.location.write_file(self._path(f"{instant}.{action}.requested"), data, exclusive=True)

    def request_compaction(self, instant: str, plan: bytes) -> None:
        """``<instant>.compaction.requested`` holding the plan (Avro)."""
        name = f"{instant}.{Action.COMPACTION}.requested"
        self.location.write_file(self._path(name), plan, exclusive=True)

    def mark_compaction_inflight(self, instant: str) -> None:
        """``<instant>.compaction.inflight`` (empty, as Hudi writes it)."""
        self.location.write_file(self._path(f"{instant}.{Action.COMPACTION}.inflight"), b"")

    def mark_inflight(self, instant: str, action: str, operation: str) -> None:
        name = f"{instant}.inflight" if action == Action.COMMIT else f"{instant}.{action}.inflight"
        record = CommitRecord(operation, "", ()).to_record(action == Action.REPLACE_COMMIT)
        self.location.write_file(self._path(name), self._commit_bytes(record, action))

    def complete(self, instant: str, action: str, commit: CommitRecord) -> str:
        """Publish the completed file (last, whole); returns its file name. An instant
        already completed (by another writer) is a ``FileExistsError``."""
        record = commit.to_record(action == Action.REPLACE_COMMIT)
        data = self._commit_bytes(record, action)
        after = None
        if self.listener is not None:
            after = self.listener.before_commit(instant, action, commit)
        return self._complete_file(instant, action, data, after)

    def _complete_file(
        self, instant: str, action: str, data: bytes, after: str | None = None
    ) -> str:
        """Write the completed file; on versions 8+ its completion time is now, but
        after the instant and after ``after`` (what the listener completed first)."""
        if self.version == 6:
            name = f"{instant}.{action}"
        else:
            completion = max(self.now(), _one_ms_after(instant))
            if after is not None:
                completion = max(completion, _one_ms_after(after))
            self.last_completion = completion
            name = f"{instant}_{completion}.{action}"
            # The name carries the completion time: another completed file of this
            # instant would not clash with it, so look for one first.
            for existing in self.location.names(self.folder):
                parsed = parse_instant_file_name(existing)
                if parsed and parsed.requested_time == instant and parsed.is_completed:
                    raise FileExistsError(f"{self._path(existing)}: instant already completed")
        self.location.write_file(self._path(name), data, exclusive=True)
        return name

    def _commit_bytes(self, record: dict[str, Any], action: str) -> bytes:
        if self.version == 6:
            return json.dumps(record, indent=2).encode()
        schema = REPLACE_COMMIT_SCHEMA if action == Action.REPLACE_COMMIT else COMMIT_SCHEMA
        return avro_bytes(schema, record)

    def remove_pending(self, instant: str) -> None:
        """Delete a never-completed instant's requested and inflight files."""
        for name in self.location.names(self.folder):
            parsed = parse_instant_file_name(name)
            if parsed is not None and parsed.requested_time == instant and not parsed.is_completed:
                self.location.remove(self._path(name))

    # -- table services ------------------------------------------------------------------
    def rollback(
        self,
        rolled_back: str,
        action: str,
        deleted: Mapping[str, Sequence[str]],
        started: float,
        instant: str | None = None,
    ) -> str:
        """Record a completed rollback of ``rolled_back`` (at ``instant``, a new instant
        when not given); returns the rollback instant."""
        instant = instant or self.new_instant_time()
        record = {
            "startRollbackTime": instant,
            "timeTakenInMillis": int((dt.datetime.now(dt.UTC).timestamp() - started) * 1000),
            "totalFilesDeleted": sum(len(files) for files in deleted.values()),
            "commitsRollback": [rolled_back],
            "partitionMetadata": {
                p: {"partitionPath": p, "successDeleteFiles": list(f), "failedDeleteFiles": []}
                for p, f in deleted.items()
            },
            "version": 1,
            "instantsRollback": [{"commitTime": rolled_back, "action": action}],
        }
        self._service(instant, Action.ROLLBACK)
        after = None
        if self.listener is not None:
            after = self.listener.before_rollback(rolled_back, instant)
        self._complete_file(instant, Action.ROLLBACK, avro_bytes(ROLLBACK_SCHEMA, record), after)
        return instant

    def clean(
        self,
        earliest_retained: str,
        last_completed: str,
        deleted: Mapping[str, Sequence[str]],
        dropped: Sequence[str] = (),
    ) -> str:
        """Record a completed clean; returns the clean instant. Its metadata names each
        deleted file by its name alone, as Hudi's does (``deleted`` holds paths), and marks
        ``isPartitionDeleted`` on the ``dropped`` partitions (no file group left in them)."""
        instant = self.new_instant_time()
        names = {p: [posixpath.basename(path) for path in f] for p, f in deleted.items()}
        record = {
            "startCleanTime": instant,
            "timeTakenInMillis": 0,
            "totalFilesDeleted": sum(len(files) for files in deleted.values()),
            "earliestCommitToRetain": earliest_retained,
            "lastCompletedCommitTimestamp": last_completed,
            "partitionMetadata": {
                p: {
                    "partitionPath": p,
                    "policy": "KEEP_LATEST_COMMITS",
                    "deletePathPatterns": f,
                    "successDeleteFiles": f,
                    "failedDeleteFiles": [],
                    "isPartitionDeleted": p in dropped,
                }
                for p, f in names.items()
            },
            "version": 2,
        }
        self._service(instant, Action.CLEAN)
        after = None
        if self.listener is not None:
            after = self.listener.before_clean(instant, deleted, dropped)
        self._complete_file(instant, Action.CLEAN, avro_bytes(CLEAN_SCHEMA, record), after)
        return instant

    def _service(self, instant: str, action: str) -> None:
        """A table service's requested and inflight files (the caller completes it)."""
        self.location.write_file(self._path(f"{instant}.{action}.requested"), b"", exclusive=True)
        self.location.write_file(self._path(f"{instant}.{action}.inflight"), b"")
