"""Archival: move old instants off the active timeline, as Hudi's timeline archiver does.

A timeline that only grows makes every reader list and parse more files. Once more than
``hoodie.keep.max.commits`` completed writes are active, the oldest are archived down to
``hoodie.keep.min.commits``, with the clean and rollback instants older than the newest
archived write. Archival never passes the oldest pending write, nor the earliest commit
the latest clean retains (files written before it may already be gone, which is what
makes time travel refuse those instants). Without a clean it stops before the first
replacecommit: the file groups it replaced would otherwise become visible again.

Archives are written first, then the instant files are deleted (pending states first,
the completed file last), so a crash in between leaves an instant in both places, which
readers merge. Layout 1 (v6) appends one archive log file of ``HoodieArchivedMetaEntry``
records per run; layout 2 (v8) adds a parquet file to the LSM history and publishes a
new ``manifest_<N>`` through ``_version_``. The LSM tree is never compacted here: each
archival adds a level-0 file, which the readers accept.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError, CorruptTableError
from hudi_sync.storage import Location, contained_file, open_location
from hudi_sync.table.records.logfile import BlockType, encode_avro_block
from hudi_sync.table.table import HudiTable
from hudi_sync.table.timeline.active import Timeline
from hudi_sync.table.timeline.archived import ARCHIVE_LOG_FILE, HISTORY_MANIFEST_FILE
from hudi_sync.table.timeline.instant import (
    Action,
    Instant,
    State,
    comparable_instant,
    parse_instant_file_name,
)
from hudi_sync.table.write.metadata_table.writer import latest_compaction

ARCHIVED_ENTRY_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieArchivedMetaEntry",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "commitTime", "type": ["null", "string"], "default": None},
        {"name": "actionType", "type": ["null", "string"], "default": None},
        {"name": "version", "type": ["int", "null"], "default": 1},
        {"name": "actionState", "type": ["null", "string"], "default": None},
        {"name": "stateTransitionTime", "type": ["null", "string"], "default": None},
    ],
}

LSM_INSTANT_SCHEMA = pa.schema(
    [
        ("instantTime", pa.string()),
        ("completionTime", pa.string()),
        ("action", pa.string()),
        ("metadata", pa.binary()),
        ("plan", pa.binary()),
        ("version", pa.int32()),
    ]
)

SERVICE_ACTIONS = (Action.CLEAN, Action.ROLLBACK)


@dataclass(frozen=True)
class ArchivalPolicy:
    """``hoodie.keep.min.commits`` / ``hoodie.keep.max.commits``."""

    min_commits: int = cfg.KEEP_MIN_COMMITS.read({})
    max_commits: int = cfg.KEEP_MAX_COMMITS.read({})

    def check(self, commits_retained: int) -> None:
        """Hudi's own rule: archiving a commit the cleaner retains would lose data that
        incremental and time-travel queries are promised."""
        if self.min_commits <= commits_retained:
            raise BadInputError(
                f"{cfg.KEEP_MIN_COMMITS.key}={self.min_commits} must be greater than "
                f"{cfg.COMMITS_RETAINED.key}={commits_retained}"
            )
        if self.max_commits <= self.min_commits:
            raise BadInputError(
                f"{cfg.KEEP_MAX_COMMITS.key}={self.max_commits} must be greater than "
                f"{cfg.KEEP_MIN_COMMITS.key}={self.min_commits}"
            )


def instants_to_archive(
    table: HudiTable, policy: ArchivalPolicy, limit: str | None = None
) -> list[Instant]:
    """The completed instants the policy moves off ``table``'s active timeline (none at
    or after ``limit``: the metadata table's own archival passes its bounds)."""
    timeline = table.timeline
    writes = list(timeline.completed_writes)
    if len(writes) <= policy.max_commits:
        return []
    # Never past the oldest pending write, nor the latest clean's earliest retained commit.
    bounds = [i.requested_time for i in timeline.pending if i.action not in SERVICE_ACTIONS][:1]
    latest_clean = timeline.latest_clean()
    if latest_clean is not None:
        retained = timeline.clean_metadata(latest_clean).earliest_commit_to_retain
        bounds += [retained] if retained else []
    if table.config.metadata_partitions:
        # Metadata records of instants after the metadata table's latest compaction
        # live in its log files, which readers trust only for instants on the active
        # data timeline: those instants stay (as Hudi's archiver keeps them).
        bounds.append(latest_compaction(table.location) or "0" * 17)
    if limit is not None:
        bounds.append(limit)
    bound = min((comparable_instant(b) for b in bounds), default=None)
    archived: list[Instant] = []
    for instant in writes[: len(writes) - policy.min_commits]:
        if bound is not None and comparable_instant(instant.requested_time) >= bound:
            break
        if latest_clean is None and instant.action == Action.REPLACE_COMMIT:
            break
        archived.append(instant)
    if not archived:
        return []
    newest = comparable_instant(archived[-1].requested_time)
    services = [
        i
        for i in timeline.completed(SERVICE_ACTIONS)
        if comparable_instant(i.requested_time) < newest
    ]
    return sorted(archived + services, key=lambda i: comparable_instant(i.requested_time))


def archive(table: HudiTable, policy: ArchivalPolicy, limit: str | None = None) -> list[str]:
    """Archive what the policy allows on ``table`` (nothing at or after ``limit``);
    returns the archived instants. The caller holds the table lock."""
    doomed = instants_to_archive(table, policy, limit)
    if not doomed:
        return []
    timeline = table.timeline
    times = {i.requested_time for i in doomed}
    # Each archived instant's state files, requested first and the completed file last.
    states: dict[str, list[Instant]] = {t: [] for t in times}
    for name in timeline.file_names:
        parsed = parse_instant_file_name(name)
        if parsed is not None and parsed.requested_time in states:
            states[parsed.requested_time].append(parsed)
    for files in states.values():
        files.sort(key=lambda state_file: state_file.state_rank)
    location = table.location
    hoodie = location.join(".hoodie")
    config = table.config
    if config.timeline_layout_version == 1:
        # Layout-1 completion times are the completed files' modification times.
        completion = {i.requested_time: i.completion_time for i in timeline.with_completion_times()}
        entries = [
            {
                "commitTime": i.requested_time,
                "actionType": i.action,
                "version": 1,
                "actionState": state.value,
                "stateTransitionTime": (
                    completion.get(i.requested_time) if state is State.COMPLETED else None
                ),
            }
            for i in doomed
            for state in (State.REQUESTED, State.INFLIGHT, State.COMPLETED)
        ]
        append_archive_log(_below(location, f"{hoodie}/{config.archive_folder}"), entries)
    else:
        rows = [
            {
                "instantTime": i.requested_time,
                "completionTime": i.completion_time,
                "action": i.action,
                "metadata": timeline.read_file(i.file_name),
                "plan": _requested_plan(timeline, states[i.requested_time]),
                "version": 1,
            }
            for i in doomed
        ]
        history = f"{hoodie}/{config.timeline_path}/{config.timeline_history_path}"
        add_lsm_history_layer(_below(location, history), rows)
    for requested_time in sorted(times):
        for state_file in states[requested_time]:
            location.remove(f"{timeline.folder.rstrip('/')}/{state_file.file_name}")
    return sorted(times, key=comparable_instant)


def _below(location: Location, path: str) -> Location:
    """The folder ``path`` (on ``location.fs``) as a location of its own."""
    relative = path[len(location.path) :].strip("/")
    return Location(location.fs, path, location.uri_of(relative), location.storage_options)


def _as_location(folder: Location | str) -> Location:
    return open_location(folder) if isinstance(folder, str) else folder


def _requested_plan(timeline: Timeline, states: Sequence[Instant]) -> bytes | None:
    requested = [s for s in states if s.state is State.REQUESTED]
    return (timeline.read_file(requested[0].file_name) or None) if requested else None


def append_archive_log(folder: Location | str, entries: Sequence[Mapping[str, Any]]) -> str:
    """A new layout-1 archive log file holding one Avro block of ``entries`` in
    ``folder`` (a location, or a local path); returns its path. Numbered after the
    existing ones so none is ever rewritten."""
    where = _as_location(folder)
    where.ensure_folder(where.path)
    names = where.names(where.path)
    numbers = [int(m.group(1)) for n in names if (m := ARCHIVE_LOG_FILE.match(n))]
    path = where.join(f".commits_.archive.{max(numbers, default=0) + 1}_1-0-1")
    block = encode_avro_block(list(entries), ARCHIVED_ENTRY_SCHEMA, {}, BlockType.AVRO_DATA)
    where.write_file(path, block, exclusive=True)
    return path


def add_lsm_history_layer(folder: Location | str, rows: Sequence[Mapping[str, Any]]) -> str:
    """Write one level-0 parquet file of archived instants to the layout-2 history in
    ``folder`` (a location, or a local path) and publish it: a new ``manifest_<N>``
    listing every live file, then ``_version_``."""
    where = _as_location(folder)
    where.ensure_folder(where.path)
    times = sorted(str(r["instantTime"]) for r in rows)
    name = f"{times[0]}_{times[-1]}_0.parquet"
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist(list(rows), schema=LSM_INSTANT_SCHEMA), sink)
    data = sink.getvalue().to_pybytes()
    where.write_file(where.join(name), data)
    names = where.names(where.path)
    live: list[dict[str, Any]] = []
    if "_version_" in names:
        live = [f for f in _live_files(where) if f["fileName"] != name]
    live.append({"fileName": name, "fileLen": len(data)})
    version = (
        max((int(m.group(1)) for n in names if (m := HISTORY_MANIFEST_FILE.match(n))), default=0)
        + 1
    )
    manifest = json.dumps({"files": live}, indent=2).encode()
    where.write_file(where.join(f"manifest_{version}"), manifest)
    where.write_file(where.join("_version_"), str(version).encode())
    return name


def _live_files(where: Location) -> list[dict[str, Any]]:
    """The entries of the manifest ``_version_`` names: its number and their file names
    are read from storage, so the manifest and the files must be in ``where`` (else
    one ``CorruptTableError`` line naming the file they came from)."""
    pointer = where.uri_of("_version_")
    current = where.read_file(where.join("_version_")).decode("utf-8", "replace").strip()
    if not (current.isascii() and current.isdigit()):
        raise CorruptTableError(f"{pointer}: names manifest {current!r}, not a number")
    source = where.uri_of(f"manifest_{current}")
    try:
        live = list(json.loads(where.read_file(where.join(f"manifest_{current}")))["files"])
        for entry in live:
            contained_file("", entry["fileName"], source)
    except (FileNotFoundError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise CorruptTableError(f"{source}: not a timeline history manifest ({exc})") from None
    return live
