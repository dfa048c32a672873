"""Delta manifests: a full base snapshot plus the changes since it, so that a sync after
one commit reads and writes that commit's files, not the table's.

Layout under ``<table>/.hoodie/manifest/``, beside the full snapshots of ``manifest.py``:

- ``deltas/<base>_<instant>.csv`` — the changes from the base snapshot to ``<instant>``
  (named by both: two publishers of one instant from different bases never share a
  file), one
  ``<partition>/<file id>,<base file name>`` row per changed file group (the name empty
  when a replacecommit removed the group). Cumulative, so a reader needs the base and
  one delta file; immutable, written under a temporary name and moved into place;
- ``delta.json`` — pointer to the newest delta (instant, base instant, pending writes,
  file count, partition folder depths, commits since the base), written last.

A publication reads only the tail of the timeline from the previous delta's instant
(``Timeline(since=...)``), the new commits' metadata and the previous delta file. Every
``delta_commits`` commits, and whenever a derivation is not safe
(``manifest.why_not_incremental``: a rollback, restore or archival since, a
pending write completed), it compacts: a full snapshot is published as the new base
(``ManifestStore.publish``), which is also when ``latest_snapshot_files.csv`` and
``latest.json`` move. Between compactions they show the base, at most
``delta_commits`` commits behind; ``delta.json`` names the latest snapshot.

The file count is kept from the commit metadata (a write stat without ``prevCommit``
adds a file group, a replacecommit removes one) and is exact again at each compaction.

A table without a completed commit publishes the empty base (``snapshots/empty/``, see
``manifest``) and an empty ``deltas/empty_empty.csv``, and ``delta.json`` names them with
``"instant": null`` and ``"base": null``; the first commit's publication compacts.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from typing import Any

from hudi_sync import config
from hudi_sync.errors import BadInputError, CorruptTableError
from hudi_sync.manifest.file_set import relative_path
from hudi_sync.manifest.incremental import (
    commit_changes,
    pending_writes,
    timeline_tail,
    why_not_incremental,
)
from hudi_sync.manifest.safe_paths import check_path
from hudi_sync.manifest.snapshot import (
    EMPTY_SNAPSHOT,
    MANIFEST_FOLDER,
    SNAPSHOT_META,
    DeltaManifest,
    Manifest,
    ManifestStore,
    PublishedDelta,
    PublishedManifest,
    checked_instant,
)
from hudi_sync.storage import contained_name, contained_partition
from hudi_sync.table import HudiTable
from hudi_sync.table.avro.bounded import load_json
from hudi_sync.table.timeline.instant import comparable_instant

DELTA_POINTER = "delta.json"
DELTA_FOLDER = "deltas"
DELTA_COMMITS_OPTION = config.DELTA_COMMITS.key

FileKey = tuple[str, str]  # (partition, file id)


def delta_commits_option(options: Mapping[str, Any]) -> int:
    """``hoodie.manifest.delta.commits`` from write or sync options: 0 (full manifests)
    when unset."""
    return config.DELTA_COMMITS.read(options)


def changes_file_name(base: str, instant: str) -> str:
    return f"{base}_{instant}.csv"


def partition_depth(partition: str) -> int:
    return partition.count("/") + 1 if partition else 0


def _changes_csv(changes: dict[FileKey, str]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for (partition, file_id), name in sorted(changes.items()):
        writer.writerow([relative_path(partition, file_id), name])
    return out.getvalue()


def _parse_changes(text: str, where: str) -> dict[FileKey, str]:
    """A delta file's rows; each partition inside the table and each name one file name
    (or empty): the rows are published, and warehouses read the files they name."""
    changes: dict[FileKey, str] = {}
    for row in csv.reader(io.StringIO(text)):
        if len(row) != 2:
            raise CorruptTableError(f"{where}: a row of {len(row)} fields, expected 2")
        partition, _, file_id = row[0].rpartition("/")
        contained_partition(partition, where)
        if row[1]:
            contained_name(row[1], where)
        changes[(partition, file_id)] = row[1]
    return changes


class DeltaStore:
    """Publishes delta manifests for a table, compacting every ``delta_commits``."""

    def __init__(self, store: ManifestStore, delta_commits: int) -> None:
        if delta_commits < 1:
            raise BadInputError(
                f"{DELTA_COMMITS_OPTION} must be at least 1 to publish delta manifests, "
                f"got {delta_commits}"
            )
        self.store = store
        self.table = store.table
        self.delta_commits = delta_commits

    def _changes_path(self, base: str, instant: str) -> str:
        return self.store.path(DELTA_FOLDER, changes_file_name(base, instant))

    def published(self, delta: DeltaManifest) -> PublishedManifest:
        files_uri, uris_uri = self.store.snapshot_uris(delta.base)
        manifest = Manifest(delta.instant, {}, delta.pending, not delta.compaction_reason)
        changes_uri = self.store.uri(DELTA_FOLDER, changes_file_name(delta.base, delta.instant))
        prefix = self.table.location.uri.rstrip("/") + "/"
        return PublishedManifest(
            manifest, files_uri, uris_uri, PublishedDelta(delta, changes_uri, prefix)
        )

    def _pointer_instant(self) -> str | None:
        """The instant ``delta.json`` names now (the pointer only, not its changes);
        None before the first publication or while it names the empty table."""
        try:
            data = self.table.location.read_file(self.store.path(DELTA_POINTER))
        except FileNotFoundError:
            return None
        where = f"{self.table.uri}: {MANIFEST_FOLDER}/{DELTA_POINTER}"
        try:
            instant = load_json(data, where, "delta pointer")["instant"]
            return None if instant is None else checked_instant(instant, where)
        except (KeyError, TypeError) as exc:
            raise CorruptTableError(f"{where} is corrupt ({exc})") from None

    def latest(self) -> DeltaManifest | None:
        """The last published delta, or None before the first delta of a commit."""
        fs = self.table.location.fs
        where = f"{self.table.uri}: {MANIFEST_FOLDER}/{DELTA_POINTER}"
        try:
            pointer = load_json(
                bytes(fs.cat_file(self.store.path(DELTA_POINTER))), where, "pointer"
            )
            if pointer["instant"] is None:  # the empty table's
                return None
            instant = checked_instant(pointer["instant"], where)
            base = pointer["base"]
            base = base if base == EMPTY_SNAPSHOT else checked_instant(base, where)
            text = bytes(fs.cat_file(self._changes_path(base, instant))).decode()
            return DeltaManifest(
                instant,
                base,
                _parse_changes(
                    text, f"{where} -> {DELTA_FOLDER}/{changes_file_name(base, instant)}"
                ),
                tuple(str(p) for p in pointer["pending"]),
                int(pointer["files"]),
                tuple(int(d) for d in pointer["depths"]),
                int(pointer["commits"]),
            )
        except FileNotFoundError:
            return None
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptTableError(f"{where} is corrupt ({exc})") from None

    def publish(self) -> PublishedManifest | None:
        """Publish the latest snapshot as a delta (or, when due, as a new base); None
        for a table without a completed commit (nothing is written)."""
        previous = self.latest()
        if previous is None:
            return self._compact("no delta manifest of a commit yet")
        tail = timeline_tail(self.table, previous.instant, previous.pending, self.store.listing)
        latest = tail.latest_completed_write()
        if latest is None:
            return self._compact("the previous delta's instant is no longer active")
        target = latest.requested_time
        if comparable_instant(target) < comparable_instant(previous.instant):
            return self._compact(f"the latest commit {target} is older than the last delta")
        reason = why_not_incremental(tail, previous.instant, previous.pending)
        if reason is not None:
            return self._compact(reason)
        if not self.table.location.fs.exists(
            self.store.path("snapshots", previous.base, SNAPSHOT_META)
        ):
            return self._compact(f"the base snapshot {previous.base} is gone")
        if target == previous.instant:
            tail.snapshot_write(target)  # a corrupt newest commit is reported, as in full mode
            return self.published(previous)
        lo, hi = comparable_instant(previous.instant), comparable_instant(target)
        new_commits = sum(
            1 for i in tail.completed_writes if lo < comparable_instant(i.requested_time) <= hi
        )
        if previous.commits + new_commits > self.delta_commits:
            return self._compact(f"{self.delta_commits} commits since the base")
        changes = dict(previous.changes)
        files = previous.files
        depths = set(previous.depths)
        for key, name, new_group in commit_changes(self.table, previous.instant, target, tail):
            before = changes.get(key)
            present = bool(before) if before is not None else not (name and new_group)
            files += (1 if name else 0) - (1 if present else 0)
            changes[key] = name
            if name:
                depths.add(partition_depth(key[0]))
        tail.snapshot_write(target)
        delta = DeltaManifest(
            target,
            previous.base,
            changes,
            pending_writes(tail, target),
            files,
            tuple(sorted(depths)),
            previous.commits + new_commits,
        )
        self._write(delta)
        return self.published(delta)

    def _compact(self, reason: str) -> PublishedManifest | None:
        manifest = self.store.build()
        if manifest.instant is None:
            return None
        self.store.timeline.snapshot_write(manifest.instant)  # corrupt: raises, nothing written
        self.store.publish(manifest)
        delta = DeltaManifest(
            manifest.instant,
            manifest.instant,
            {},
            manifest.pending,
            len(manifest.files),
            tuple(manifest.depths()),
            0,
            reason,
        )
        self._write(delta)
        self._prune()
        return self.published(delta)

    def publish_empty(self) -> None:
        """Name the published empty base in ``delta.json`` (with its empty changes file),
        unless the pointer already names a commit that is still on the timeline."""
        name = changes_file_name(EMPTY_SNAPSHOT, EMPTY_SNAPSHOT)
        self.store.write_once(self.store.path(DELTA_FOLDER, name), b"")
        current = self._pointer_instant()
        if current is not None:
            fresh = HudiTable(self.table.location, self.table.config).timeline
            if current in {i.requested_time for i in fresh.completed_writes}:
                return
        pointer: dict[str, Any] = {
            "instant": None,
            "base": None,
            "pending": [],
            "files": 0,
            "depths": [],
            "commits": 0,
        }
        self.store.write_atomic(self.store.path(DELTA_POINTER), json.dumps(pointer).encode())

    def _write(self, delta: DeltaManifest) -> None:
        """The changes file (immutable), then the pointer, unless a concurrent
        publication already moved it past this instant to a commit still on the
        timeline (one a restore or rollback removed is followed back from)."""
        for (partition, file_id), name in delta.changes.items():
            for checked in (file_id, name):  # before anything is written
                check_path(partition, checked, self.table.uri)
        changes = _changes_csv(delta.changes).encode()
        self.store.write_once(self._changes_path(delta.base, delta.instant), changes)
        current = self._pointer_instant()
        if (
            current is not None
            and comparable_instant(current) > comparable_instant(delta.instant)
            and self.store.still_committed(current)
        ):
            return
        pointer = json.dumps(delta.pointer()).encode()
        self.store.write_atomic(self.store.path(DELTA_POINTER), pointer)

    def _prune(self) -> None:
        """Delta files on a base older than the oldest retained snapshot (the empty
        table's once its empty base is gone)."""
        folders = self.store.snapshot_folders()
        retained = [f for f in folders if f != EMPTY_SNAPSHOT]
        if not retained:
            return
        oldest = comparable_instant(retained[0])
        fs = self.table.location.fs
        try:
            entries = fs.ls(self.store.path(DELTA_FOLDER), detail=False)
        except FileNotFoundError:
            return
        for entry in entries:
            name = str(entry).rstrip("/").rsplit("/", 1)[-1]
            base = name.removesuffix(".csv").partition("_")[0]
            if base == EMPTY_SNAPSHOT:
                gone = EMPTY_SNAPSHOT not in folders
            else:
                gone = base.isdigit() and comparable_instant(base) < oldest
            if gone:
                self.table.location.remove(str(entry))


__all__ = [
    "DELTA_COMMITS_OPTION",
    "DeltaManifest",
    "DeltaStore",
    "PublishedDelta",
    "delta_commits_option",
]
