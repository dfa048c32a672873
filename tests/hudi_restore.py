"""A test helper that restores a table to an earlier commit as Apache Hudi's restore does
(``HoodieTable.restore``; Hudi's jars cannot run here, so the helper writes it).

It follows Hudi's file names and Avro schemas (``HoodieRestorePlan``,
``HoodieRestoreMetadata``, ``HoodieRollbackMetadata`` in hudi-common's ``src/main/avro``):

- ``<R>.restore.requested``: the plan, the write instants after the restore point (newest
  first) as ``instantsToRollback`` (``HoodieInstantInfo`` records) and the restore point
  as ``savepointToRestoreTimestamp``;
- ``<R>.restore.inflight``: empty;
- each undone instant's data files deleted and its instant files removed;
- the completed ``<R>.restore`` (versions 8+: ``<R>_<completion>.restore``): the
  undone instants as ``instantsToRollback`` and ``restoreInstantInfo``, and per instant
  its ``HoodieRollbackMetadata`` in ``hoodieRestoreMetadata``.

Data files: every file an undone commit's write stats name is deleted, as Hudi 1.x's
rollback does. Hudi 0.x rolls back a log append to an existing log file with a rollback
command block instead; the helper refuses such a commit (the tables the tests restore
wrote each undone log file whole), so deleting is what readers see either way. The
table must have no metadata table (``fixture_tables.without_metadata_table``): Hudi
restores that too, which this helper does not.
"""

from __future__ import annotations

import time
from typing import Any

import fastavro

from hudi_sync.table import HudiTable
from hudi_sync.table.timeline.instant import Action, parse_instant_file_name
from hudi_sync.table.write.timeline import (
    _NAMESPACE,
    _STRING,
    TimelineWriter,
    avro_bytes,
)

_INSTANT_INFO = {
    "type": "record",
    "name": "HoodieInstantInfo",
    "fields": [{"name": "commitTime", "type": _STRING}, {"name": "action", "type": _STRING}],
}
RESTORE_PLAN_SCHEMA = fastavro.parse_schema(
    {
        "type": "record",
        "name": "HoodieRestorePlan",
        "namespace": _NAMESPACE,
        "fields": [
            {"name": "instantsToRollback", "type": {"type": "array", "items": _INSTANT_INFO}},
            {"name": "version", "type": ["int", "null"], "default": 2},
            {"name": "savepointToRestoreTimestamp", "type": [_STRING, "null"], "default": None},
        ],
    }
)
_ROLLBACK = {
    "type": "record",
    "name": "HoodieRollbackMetadata",
    "fields": [
        {"name": "startRollbackTime", "type": _STRING},
        {"name": "timeTakenInMillis", "type": "long"},
        {"name": "totalFilesDeleted", "type": "int"},
        {"name": "commitsRollback", "type": {"type": "array", "items": _STRING}},
        {
            "name": "partitionMetadata",
            "type": {
                "type": "map",
                "values": {
                    "type": "record",
                    "name": "HoodieRollbackPartitionMetadata",
                    "fields": [
                        {"name": "partitionPath", "type": _STRING},
                        {"name": "successDeleteFiles", "type": {"type": "array", "items": _STRING}},
                        {"name": "failedDeleteFiles", "type": {"type": "array", "items": _STRING}},
                    ],
                },
            },
        },
        {"name": "version", "type": ["int", "null"], "default": 1},
        {
            "name": "instantsRollback",
            "type": {"type": "array", "items": _INSTANT_INFO},
            "default": [],
        },
    ],
}
RESTORE_SCHEMA = fastavro.parse_schema(
    {
        "type": "record",
        "name": "HoodieRestoreMetadata",
        "namespace": _NAMESPACE,
        "fields": [
            {"name": "startRestoreTime", "type": _STRING},
            {"name": "timeTakenInMillis", "type": "long"},
            {"name": "instantsToRollback", "type": {"type": "array", "items": _STRING}},
            {
                "name": "hoodieRestoreMetadata",
                "type": {"type": "map", "values": {"type": "array", "items": ["null", _ROLLBACK]}},
            },
            {"name": "version", "type": ["int", "null"], "default": 1},
            {
                "name": "restoreInstantInfo",
                "type": {"type": "array", "items": f"{_NAMESPACE}.HoodieInstantInfo"},
                "default": [],
            },
            {
                "name": "extraMetadata",
                "type": ["null", {"type": "map", "values": _STRING}],
                "default": None,
            },
        ],
    }
)

_UNDONE_ACTIONS = (
    Action.COMMIT,
    Action.DELTA_COMMIT,
    Action.REPLACE_COMMIT,
    Action.COMPACTION,
    Action.CLUSTERING,
    Action.LOG_COMPACTION,
)


def restore_to(table: HudiTable, instant: str) -> str:
    """Restore ``table`` (local or an object store) to its completed write ``instant``:
    every write instant requested after it is undone. Returns the restore instant."""
    timeline = table.timeline
    location = table.location
    undone = [
        i
        for i in reversed(timeline.instants)
        if i.action in _UNDONE_ACTIONS and i.requested_time > instant
    ]
    assert undone, f"nothing after {instant} to restore"
    kept_files = {
        stat.path
        for write in timeline.completed_writes
        if write.requested_time <= instant
        for stat in timeline.commit_metadata(write).write_stats
    }
    writer = TimelineWriter(location, timeline.folder, table.config.version)
    started = time.time()
    restore = writer.new_instant_time()
    infos = [{"commitTime": i.requested_time, "action": i.action} for i in undone]
    plan = {"instantsToRollback": infos, "version": 2, "savepointToRestoreTimestamp": instant}
    folder = timeline.folder.rstrip("/")
    location.write_file(
        f"{folder}/{restore}.{Action.RESTORE}.requested",
        avro_bytes(RESTORE_PLAN_SCHEMA, plan),
        exclusive=True,
    )
    location.write_file(f"{folder}/{restore}.{Action.RESTORE}.inflight", b"")
    rollbacks: dict[str, list[dict[str, Any]]] = {}
    for undone_instant in undone:
        deleted: dict[str, list[str]] = {}
        if undone_instant.is_completed:
            for stat in timeline.commit_metadata(undone_instant).write_stats:
                assert stat.path not in kept_files, f"{stat.path}: appended to a kept file"
                if location.remove(location.join(stat.path)):
                    deleted.setdefault(stat.partition_path, []).append(stat.path)
        rollbacks[undone_instant.requested_time] = [
            {
                "startRollbackTime": restore,
                "timeTakenInMillis": 0,
                "totalFilesDeleted": sum(len(f) for f in deleted.values()),
                "commitsRollback": [undone_instant.requested_time],
                "partitionMetadata": {
                    p: {"partitionPath": p, "successDeleteFiles": f, "failedDeleteFiles": []}
                    for p, f in deleted.items()
                },
                "version": 1,
                "instantsRollback": [
                    {"commitTime": undone_instant.requested_time, "action": undone_instant.action}
                ],
            }
        ]
        for name in location.names(folder):
            parsed = parse_instant_file_name(name)
            if parsed is not None and parsed.requested_time == undone_instant.requested_time:
                location.remove(f"{folder}/{name}")
    metadata = {
        "startRestoreTime": restore,
        "timeTakenInMillis": int((time.time() - started) * 1000),
        "instantsToRollback": [i.requested_time for i in undone],
        "hoodieRestoreMetadata": rollbacks,
        "version": 1,
        "restoreInstantInfo": infos,
        "extraMetadata": None,
    }
    # The completed file last, named as the table's version names it.
    writer._complete_file(restore, Action.RESTORE, avro_bytes(RESTORE_SCHEMA, metadata))
    return restore


def roll_back_latest_commit(table: HudiTable) -> str:
    """Roll back the table's latest completed write as Hudi's ``rollback`` of a commit
    does: its files deleted, a completed ``<R>.rollback`` (``HoodieRollbackMetadata``
    naming it in ``commitsRollback`` and ``instantsRollback``), its instant files
    removed. Returns the rollback instant."""
    timeline = table.timeline
    location = table.location
    latest = timeline.completed_writes[-1]
    kept_files = {
        stat.path
        for write in timeline.completed_writes[:-1]
        for stat in timeline.commit_metadata(write).write_stats
    }
    writer = TimelineWriter(location, timeline.folder, table.config.version)
    started = time.time()
    deleted: dict[str, list[str]] = {}
    for stat in timeline.commit_metadata(latest).write_stats:
        assert stat.path not in kept_files, f"{stat.path}: appended to a kept file"
        if location.remove(location.join(stat.path)):
            deleted.setdefault(stat.partition_path, []).append(stat.path)
    rollback = writer.rollback(latest.requested_time, latest.action, deleted, started)
    folder = timeline.folder.rstrip("/")
    for name in location.names(folder):
        parsed = parse_instant_file_name(name)
        if parsed is not None and parsed.requested_time == latest.requested_time:
            location.remove(f"{folder}/{name}")
    return rollback
