"""Snapshot manifests (RFC-34): which base files make up a table's snapshot.

Layout under ``<table>/.hoodie/manifest/``:

- ``snapshots/<instant>/files.csv`` — base-file names, one per line, no header;
- ``snapshots/<instant>/uris.csv`` — the same files as absolute URIs (BigQuery
  manifest-file tables);
- ``latest_snapshot_files.csv`` — copy of the newest ``files.csv`` (the RFC's name);
- ``snapshots/<instant>/snapshot.json`` — instant, pending writes, file count; written
  last, so a snapshot folder without it is incomplete;
- ``latest.json`` — pointer to the newest snapshot (a copy of its ``snapshot.json``),
  written last.

Snapshot files are immutable and each is written under a temporary name and then moved
into place (an atomic rename locally, a single PUT on object stores), so a reader sees
either the old or the new complete set. Warehouse objects point at one immutable file
and are switched to the next in one metadata update. The last ``keep`` snapshots are
kept, older ones deleted.

A later publication derives the new file set from the previous one plus the new
commits' write stats and replaced file ids, and falls back to a full listing when that
is not safe (previous snapshot archived, a rollback or restore since, a write
that was pending at the previous publication has completed since). It reads only the
timeline's tail from the previous snapshot on (plus its pending writes), and handles the
file lists as Arrow arrays (``hudi_sync.manifest.file_set``), never a Python object per file: the
previous ``uris.csv`` and ``files.csv`` are read, and the commits' changes spliced into
both sorted lists.
With ``hoodie.manifest.delta.commits`` the latest snapshot is published as a delta on a
base snapshot instead (``hudi_sync.manifest.delta``).

A table without a completed commit has the empty manifest: no instant, no files. It is
published like any other, so a reader tells "empty" from "never synced": under
``snapshots/empty/`` (the one snapshot folder not named by an instant; it sorts before
them all and is pruned like them), with ``"instant": null`` in ``snapshot.json`` and
``latest.json`` and an empty ``latest_snapshot_files.csv``. The warehouse targets create
their objects empty, with the columns of ``hoodie.table.create.schema``.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from hudi_sync import config
from hudi_sync.errors import BadInputError, CorruptTableError
from hudi_sync.gc_pause import cycle_collection_paused
from hudi_sync.manifest.file_set import FileSet, lines_bytes
from hudi_sync.manifest.incremental import (
    commit_changes,
    pending_writes,
    timeline_tail,
    why_not_incremental,
)
from hudi_sync.manifest.listed_files import INSTANT
from hudi_sync.manifest.safe_paths import check_paths
from hudi_sync.storage import remove_stale_temporaries, temporary_path_beside
from hudi_sync.table import HudiTable
from hudi_sync.table.timeline.active import Timeline
from hudi_sync.table.timeline.instant import comparable_instant
from hudi_sync.table.timeline.listing import TimelineListing

if TYPE_CHECKING:  # the feed's and Iceberg's stores read this module
    from hudi_sync.manifest.change_feed import PublishedChanges
    from hudi_sync.manifest.iceberg.published import PublishedIceberg

MANIFEST_FOLDER = ".hoodie/manifest"
LATEST_FILES = "latest_snapshot_files.csv"
POINTER = "latest.json"
SNAPSHOT_META = "snapshot.json"
DEFAULT_KEEP = config.MANIFEST_KEEP.read({})  # hoodie.manifest.snapshots.retained
# Folders of the manifest folder whose own stores remove their temporaries
# (``listed_files``: the folded log files, the change feed), with thousands of files.
_LISTED_FOLDERS = frozenset({"logs", "changes"})
# The snapshot folder of the empty manifest (a table without a completed commit).
EMPTY_SNAPSHOT = "empty"


def checked_instant(value: object, where: str) -> str:
    """An instant read from one of the manifests' pointers, which names a folder: digits
    only (a ``../`` would name another table's lists)."""
    if not isinstance(value, str) or not INSTANT.fullmatch(value):
        raise CorruptTableError(f"{where}: {value!r} is not an instant")
    return value


def snapshot_folder(instant: str | None) -> str:
    """The folder under ``snapshots/`` (and the name in delta files) of a snapshot."""
    return instant or EMPTY_SNAPSHOT


def _folder_order(folder: str) -> str:
    """Snapshot folders in publication order: the empty snapshot before every instant."""
    return "" if folder == EMPTY_SNAPSHOT else comparable_instant(folder)


@dataclass(frozen=True)
class Manifest:
    """The base files of one snapshot, keyed by ``(partition, file id)``."""

    instant: str | None
    files: Mapping[tuple[str, str], str]  # a FileSet when read back or derived
    pending: tuple[str, ...] = ()
    derived_incrementally: bool = False
    full_listing_reason: str = ""

    @property
    def is_empty(self) -> bool:
        """The table has no completed commit (at or before the requested time)."""
        return self.instant is None

    def relative_paths(self) -> list[str]:
        return sorted(f"{p}/{name}" if p else name for (p, _), name in self.files.items())

    def names(self) -> list[str]:
        return sorted(self.files.values())

    def depths(self) -> list[int]:
        """The partition folder depths of the snapshot's files."""
        return FileSet.of(self.files).depths()


@dataclass(frozen=True)
class DeltaManifest:
    """A snapshot as its base snapshot plus the file groups changed since."""

    instant: str
    base: str
    changes: dict[tuple[str, str], str]  # file name, "" when the group was removed
    pending: tuple[str, ...]
    files: int
    depths: tuple[int, ...]  # partition folder depths of the snapshot's files
    commits: int  # commits applied since the base
    compaction_reason: str = ""  # why this publication wrote a new base, if it did

    def pointer(self) -> dict[str, Any]:
        return {
            "instant": self.instant,
            "base": self.base,
            "pending": list(self.pending),
            "files": self.files,
            "depths": list(self.depths),
            "commits": self.commits,
        }


@dataclass(frozen=True)
class PublishedDelta:
    """Where a published delta lives; the base is the ``PublishedManifest``'s URIs."""

    manifest: DeltaManifest
    changes_uri: str
    base_prefix: str  # the table URI the base's URIs start with


@dataclass(frozen=True)
class PublishedLogs:
    """The folded log files of one snapshot: where their lists live, and the columns
    their rows have (the table's, then ``log_parquet.EXTRA_COLUMNS``)."""

    instant: str | None
    names: tuple[str, ...]
    files_uri: str
    uris_uri: str
    folder_uri: str  # the Parquet files' folder (external tables match ``*.parquet`` in it)
    schema: pa.Schema
    ordering_field: str | None  # what the view compares base and log versions by
    converted: int = 0  # files this publication wrote (the rest were reused)


@dataclass(frozen=True)
class PublishedManifest:
    """Where a published manifest lives."""

    manifest: Manifest
    files_uri: str
    uris_uri: str
    # Delta mode: the full snapshot ``files_uri``/``uris_uri`` name is the base, and
    # ``manifest`` holds no files; the snapshot is the base plus these changes.
    delta: PublishedDelta | None = None
    # Merge-on-Read: the snapshot's folded log files (``hudi_sync.manifest.log_parquet``),
    # None for Copy-on-Write tables and MOR tables whose snapshot a view cannot show.
    logs: PublishedLogs | None = None
    # A CDC table's change feed as of this snapshot (``hudi_sync.manifest.change_feed``);
    # None for other tables and time-travel syncs.
    changes: PublishedChanges | None = None
    # The listing of the timeline folder the sync read (``TimelineListing``), which the
    # targets read the declared schema's tail from rather than listing the folder again.
    timeline_listing: TimelineListing | None = field(default=None, compare=False, repr=False)
    # The snapshot published as Iceberg metadata (``hudi_sync.manifest.iceberg``), when a
    # target wants it (``wants_iceberg``); None otherwise.
    iceberg: PublishedIceberg | None = None

    @property
    def file_count(self) -> int:
        """Base files in the snapshot."""
        return self.delta.manifest.files if self.delta else len(self.manifest.files)


def build_manifest(table: HudiTable, as_of: str | None = None) -> Manifest:
    """Full listing: the base files of the latest snapshot, or as of a time. Names only,
    so any base file format; which warehouse can read the files is the sync's concern
    (``hudi_sync.sync.job.format_refusal``)."""
    instant = table.as_of_commit(as_of) if as_of is not None else table.latest_instant()
    with cycle_collection_paused(keeps_objects=True):
        files = table.view.base_files_as_of(instant) if instant else {}
    return Manifest(instant, files, pending_writes(table.timeline, instant))


def derive_manifest(
    table: HudiTable,
    previous: Manifest,
    target: str | None = None,
    timeline: Timeline | None = None,
) -> Manifest:
    """The snapshot at ``target`` (default latest) from ``previous`` plus the commit
    metadata in between; a full listing when that cannot be trusted. ``timeline``: the
    table's, or its tail from ``previous`` on (``timeline_tail``)."""
    timeline = timeline or table.timeline
    latest = timeline.latest_completed_write()
    target = target or (latest.requested_time if latest else None)
    if target is None or previous.instant is None:
        return build_manifest(table, target)
    if comparable_instant(target) < comparable_instant(previous.instant):
        raise BadInputError(
            f"{table.uri}: cannot derive the snapshot at {target} "
            f"from a later one ({previous.instant})"
        )
    reason = why_not_incremental(timeline, previous.instant, previous.pending)
    if reason is not None:
        full = build_manifest(table, target)
        return Manifest(full.instant, full.files, full.pending, False, reason)
    changes = {
        key: name for key, name, _new in commit_changes(table, previous.instant, target, timeline)
    }
    files = FileSet.of(previous.files).apply(changes)
    return Manifest(target, files, pending_writes(timeline, target), derived_incrementally=True)


class ManifestStore:
    """Reads and publishes a table's manifests under ``.hoodie/manifest``."""

    def __init__(
        self,
        table: HudiTable,
        keep: int = DEFAULT_KEEP,
        listing: TimelineListing | None = None,
    ) -> None:
        """``listing``: the sync's listing of the timeline folder, which the tail since
        the previous manifest is read from (``TimelineListing``); else a new one."""
        if keep < 1:
            raise BadInputError(f"manifest retention must keep at least 1 snapshot, got {keep}")
        self.table = table
        self.keep = keep
        self.listing = listing
        self.folder = table.location.join(MANIFEST_FOLDER)
        # The timeline the last ``build`` read: the table's, or a tail of it.
        self.timeline = table.timeline

    def path(self, *parts: str) -> str:
        return "/".join([self.folder, *parts])

    def uri(self, *parts: str) -> str:
        return self.table.location.uri_of("/".join([MANIFEST_FOLDER, *parts]))

    def latest(self) -> Manifest | None:
        """The last published manifest, or ``None`` before the first publication."""
        fs = self.table.location.fs
        try:
            pointer = json.loads(bytes(fs.cat_file(self.path(POINTER))))
            instant = pointer["instant"]
            if instant is None:  # the empty table's manifest
                return Manifest(None, {})
            instant = checked_instant(instant, f"{self.table.uri}: {MANIFEST_FOLDER}/{POINTER}")
            pending = tuple(pointer.get("pending", ()))
            data = bytes(fs.cat_file(self.path("snapshots", instant, "uris.csv")))
            names = bytes(fs.cat_file(self.path("snapshots", instant, "files.csv")))
        except FileNotFoundError:
            return None
        except (KeyError, TypeError, ValueError, RecursionError) as exc:
            raise CorruptTableError(
                f"{self.table.uri}: {MANIFEST_FOLDER}/{POINTER} is corrupt ({exc})"
            ) from None
        where = f"{self.table.uri}: {MANIFEST_FOLDER}/snapshots/{instant}/uris.csv"
        try:
            files = FileSet.read_lines(data, self._base(), where).with_names(names)
        except (ValueError, pa.ArrowException) as exc:
            raise CorruptTableError(f"{where} is corrupt ({exc})") from None
        return Manifest(instant, files, pending)

    def _base(self) -> str:
        """What every URI in ``uris.csv`` starts with."""
        return self.table.location.uri.rstrip("/") + "/"

    def build(self, as_of: str | None = None) -> Manifest:
        """The manifest to publish: derived from the last one when possible."""
        if as_of is not None:
            return build_manifest(self.table, as_of)
        previous = self.latest()
        if previous is None or previous.instant is None:
            return build_manifest(self.table)
        tail = timeline_tail(self.table, previous.instant, previous.pending, self.listing)
        latest = tail.latest_completed_write()
        if latest is None or (
            comparable_instant(latest.requested_time) < comparable_instant(previous.instant)
        ):
            return build_manifest(self.table)  # archived or restored past the previous one
        self.timeline = tail
        return derive_manifest(self.table, previous, latest.requested_time, tail)

    def snapshot_uris(self, instant: str) -> tuple[str, str]:
        return self.uri("snapshots", instant, "files.csv"), self.uri(
            "snapshots", instant, "uris.csv"
        )

    def publish(self, manifest: Manifest, make_latest: bool = True) -> PublishedManifest:
        """Write the immutable snapshot files, then (optionally) switch the pointers.

        The pointers never move backwards: a publisher that lost a race to a newer
        snapshot (a sync that started before the latest commit) points them at the
        newest complete snapshot instead of its own, and checks again after writing.
        The empty manifest (no instant) is published as ``snapshots/empty/``. A path
        no manifest line can carry (``safe_paths``) is refused before anything is written.
        """
        folder = snapshot_folder(manifest.instant)
        files = FileSet.of(manifest.files)
        check_paths(files.paths, self.table.uri)  # before anything is written
        meta = {
            "instant": manifest.instant,
            "pending": list(manifest.pending),
            "files": len(manifest.files),
        }
        # The two lists are encoded, written and fsynced side by side (Arrow, the writes
        # and fsync release the GIL): most of a large publication is waiting on the disk.
        with ThreadPoolExecutor(max_workers=2) as pool:
            written = [
                pool.submit(self._write_list, folder, "files.csv", files.sorted_names, ""),
                pool.submit(self._write_list, folder, "uris.csv", files.sorted_paths, self._base()),
            ]
            for future in written:
                future.result()
        # Written last: a snapshot folder without it is incomplete and never pointed at.
        self.write_once(self.path("snapshots", folder, SNAPSHOT_META), json.dumps(meta).encode())
        if make_latest:
            newest = folder
            for _attempt in range(3):
                newest = self._newest_snapshot(folder)
                self._point_at(newest)
                if self._newest_snapshot(folder) == newest:
                    break
            self._prune(newest)
        files_uri, uris_uri = self.snapshot_uris(folder)
        return PublishedManifest(manifest, files_uri, uris_uri)

    def _write_list(
        self, folder: str, name: str, values: Callable[[], pa.Array], prefix: str
    ) -> None:
        self.write_once(self.path("snapshots", folder, name), lines_bytes(values(), prefix))

    def _point_at(self, instant: str) -> None:
        """Make a complete snapshot the latest: its names become
        ``latest_snapshot_files.csv`` (a hard link locally, a server-side copy on object
        stores: no second write of a million names), then its meta the pointer."""
        fs = self.table.location.fs
        names = self.path("snapshots", instant, "files.csv")
        latest = self.path(LATEST_FILES)
        if self.table.location.is_local:
            temporary = temporary_path_beside(latest)
            os.link(names, temporary)
            os.replace(temporary, latest)
            # Renaming a link over another link of the same file does nothing (POSIX),
            # so a re-publication of the latest snapshot would leave the temporary.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
        else:
            fs.cp_file(names, latest)  # one object: copy() would glob the path
        meta = bytes(fs.cat_file(self.path("snapshots", instant, SNAPSHOT_META))).decode()
        self.write_atomic(self.path(POINTER), meta.encode())

    def snapshot_folders(self) -> list[str]:
        """The snapshot folders, oldest first: ``empty`` (if published), then instants."""
        try:
            entries = self.table.location.fs.ls(self.path("snapshots"), detail=False)
        except FileNotFoundError:
            return []
        names = (str(e).rstrip("/").rsplit("/", 1)[-1] for e in entries)
        folders = (n for n in names if n.isdigit() or n == EMPTY_SNAPSHOT)
        return sorted(folders, key=_folder_order)

    def snapshot_instants(self) -> list[str]:
        return [f for f in self.snapshot_folders() if f != EMPTY_SNAPSHOT]

    def still_committed(self, instant: str) -> bool:
        """Whether ``instant`` is a completed write on a fresh read of the timeline's
        tail from it: a restore or rollback since removes it, and a pointer naming it
        then follows the table back."""
        fresh = Timeline(self.table.location, self.table.config, since=instant)
        return any(i.requested_time == instant for i in fresh.completed_writes)

    def _newest_snapshot(self, own: str) -> str:
        """The newest complete snapshot at or after ``own`` (a folder) whose instant is
        a completed write on a fresh read of the timeline (a restore can remove a newer
        one)."""
        newer = [i for i in self.snapshot_instants() if comparable_instant(i) > _folder_order(own)]
        if not newer:
            return own
        fs = self.table.location.fs
        fresh = HudiTable(self.table.location, self.table.config).timeline
        completed = {i.requested_time for i in fresh.completed_writes}
        for candidate in reversed(newer):
            if candidate in completed and fs.exists(
                self.path("snapshots", candidate, SNAPSHOT_META)
            ):
                return candidate
        return own

    def write_once(self, path: str, data: bytes) -> None:
        """Immutable files: an existing one (same instant, same content) is left as is."""
        fs = self.table.location.fs
        if fs.exists(path):
            return
        self.write_atomic(path, data)

    def write_atomic(self, path: str, data: bytes) -> None:
        """Locally: write a temporary file and rename it over ``path``. Object stores
        publish an object in one PUT (readers see the old or the new object, never a
        part), and their "rename" is a copy, so there the object is written directly."""
        self.table.location.write_file(path, data)

    def _prune(self, current: str) -> None:
        """Keep the newest ``keep`` snapshots up to ``current`` (the empty one counts, as
        the oldest); snapshots after it are in-flight publications of newer commits or
        were restored away, and stay."""
        folders = [f for f in self.snapshot_folders() if _folder_order(f) <= _folder_order(current)]
        for folder in folders[: -self.keep]:
            if folder != current:
                self.table.location.remove_tree(self.path("snapshots", folder))
        if self.table.location.is_local:  # a publisher killed mid-write
            remove_stale_temporaries(self.folder, skip=_LISTED_FOLDERS)


def manifest_summary(published: PublishedManifest) -> dict[str, Any]:
    manifest = published.manifest
    return {
        "instant": manifest.instant,
        "files": len(manifest.files),
        "incremental": manifest.derived_incrementally,
        "full_listing_reason": manifest.full_listing_reason,
        "files_uri": published.files_uri,
        "uris_uri": published.uris_uri,
    }


__all__ = [
    "Manifest",
    "ManifestStore",
    "PublishedManifest",
    "build_manifest",
    "derive_manifest",
]
