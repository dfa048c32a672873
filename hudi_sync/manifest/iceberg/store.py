"""A table's synced snapshots published as Iceberg v2 metadata, beside its manifests.

Warehouses read Iceberg natively (partition pruning by the spec, statistics, position
deletes, time travel). Each sync publishes the snapshot it synced as one Iceberg
snapshot of the metadata under ``.hoodie/manifest/iceberg/``:

- ``metadata/v<N>.metadata.json`` — the table metadata, written once each;
  ``metadata/version-hint.text`` names the current N and is written last, so a sync
  killed at any step leaves the previous metadata current and complete (readers that
  follow the hint, or a catalog the target commits to afterwards, never see a half);
- ``metadata/snap-<snapshot id>.avro`` — a snapshot's manifest list;
  ``metadata/m-<snapshot id>-b<bucket>-<data|deletes>.avro`` — its manifests;
- ``data/`` and ``deletes/`` — a Merge-on-Read slice's live log rows and the position
  deletes of the base rows its logs replace or delete (``mor_files``), so the Iceberg
  snapshot is the merged snapshot (what ``_rt`` shows), not the base files alone.

Every file group's entries live in the manifest of its partition's bucket (a hash of
the partition path; the bucket count is fixed when the metadata is first written, about
a hundred file groups a manifest). A sync after a few commits reads the timeline
from the last published instant on (``tail_changes``): the partitions the commits
wrote to, and their new base files and replaced file groups. It rewrites those
partitions' buckets' manifests (the other entries of a bucket kept with their sequence
numbers, a base file's footer read only when it is new) and reuses every other
manifest unread. A Copy-on-Write table's touched partitions are not even listed: their
files are the previous entries with the commits' changes applied (``_derived_slices``);
a Merge-on-Read table lists them (its slices' logs need the view's rules). So the cost
follows the change, not the table, but for the manifest list (a record a bucket).

Snapshot ids are the snapshots' sequence numbers; each summary carries ``hudi.instant``
and ``hudi.action``. Snapshots expire with ``hoodie.manifest.snapshots.retained`` and
before the files they name may be gone: an instant a rollback or restore undid, one
before the latest clean's earliest retained commit, or one older than what the cleaner
keeps after one more commit. The files only expired snapshots named (manifest lists,
replaced manifests, our slice files) are deleted by ``collect`` once every reader of
the previous metadata (a catalog, a warehouse's Iceberg table) moved on; Hudi's own
files never are.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
import uuid
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import pyarrow as pa

from hudi_sync.config import COMMITS_RETAINED
from hudi_sync.errors import CorruptTableError
from hudi_sync.gc_pause import cycle_collection_paused
from hudi_sync.manifest.iceberg.avro_files import (
    ADDED,
    EXISTING,
    ManifestEntry,
    ManifestFile,
    manifest_entry,
    manifest_file,
    read_manifest,
    read_manifest_list,
    write_manifest,
    write_manifest_list,
)
from hudi_sync.manifest.iceberg.data_files import DataFile
from hudi_sync.manifest.iceberg.metadata import Snapshot, TableMetadata, hudi_properties
from hudi_sync.manifest.iceberg.mor_files import (
    DATA_FOLDER,
    DELETES_FOLDER,
    SliceFiles,
    slice_files,
)
from hudi_sync.manifest.iceberg.partitioning import (
    PartitionPlan,
    partition_plan,
    unpartitioned_plan,
)
from hudi_sync.manifest.iceberg.published import ICEBERG_FOLDER, PublishedIceberg
from hudi_sync.manifest.iceberg.schema import IcebergSchema, file_only_columns, iceberg_schema
from hudi_sync.manifest.iceberg.write_stats import FOOTERS, BaseFileItem, base_data_files
from hudi_sync.manifest.incremental import TailChanges, pending_writes, tail_changes
from hudi_sync.manifest.snapshot import PublishedManifest
from hudi_sync.storage import contained_name, contained_relative, reporting_storage_failures
from hudi_sync.table import HudiTable
from hudi_sync.table.avro.bounded import load_json
from hudi_sync.table.files.filenames import BaseFile, parse_base_file
from hudi_sync.table.files.fs_view import FileSlice, FileSystemView
from hudi_sync.table.read.snapshot import slice_merge_rules, snapshot_schema
from hudi_sync.table.timeline.active import Timeline, timeline_zone
from hudi_sync.table.timeline.instant import Action, comparable_instant
from hudi_sync.table.timeline.listing import TimelineListing

VERSION_HINT = "version-hint.text"
# Table property: the manifests' bucket count, fixed when the metadata is first written.
BUCKETS_PROPERTY = "hudi-sync.manifest.buckets"
# Table property: why the partition spec is unpartitioned ("" when it is not, or the
# table is not partitioned).
PARTITION_REASON_PROPERTY = "hudi-sync.partition.reason"
# Summary keys of each snapshot (besides Iceberg's own).
INSTANT_KEY = "hudi.instant"
ACTION_KEY = "hudi.action"
PENDING_KEY = "hudi.pending"
TOTAL_DATA_FILES = "total-data-files"
TOTAL_DELETE_FILES = "total-delete-files"
# A bucket's manifest is rewritten whole when a commit touches one of its partitions:
# measured on 100,000 file groups, 1,000 a manifest cost 1.87 s a commit, 100 cost 0.43 s
# (docs/benchmarks.md, Iceberg publication).
ENTRIES_PER_MANIFEST = 100
DEFAULT_CLEANER_RETAINED = int(COMMITS_RETAINED.read({}))
_MAX_BUCKETS = 4096
_MANIFEST_NAME = re.compile(r"m-(\d{1,19})-b(\d{1,5})-(data|deletes)\.avro")
_LIST_NAME = re.compile(r"snap-(\d{1,19})\.avro")
_REMOVED_NAME = re.compile(r"removed-(\d{1,19})\.json")
_CONTENT = {"data": 0, "deletes": 1}


@dataclass
class _Bucket:
    """One bucket's entries, data and deletes, while a snapshot is built."""

    data: list[ManifestEntry] = field(default_factory=list)
    deletes: list[ManifestEntry] = field(default_factory=list)


@dataclass(frozen=True)
class _Build:
    """What a publication is made of: the slices listed, their schemas and the plan."""

    slices: list[FileSlice]
    arrow: pa.Schema
    schema: IcebergSchema
    plan: PartitionPlan


@dataclass(frozen=True)
class CurrentMetadata:
    """The published metadata the pointer names."""

    version: int
    metadata: TableMetadata


class IcebergStore:
    """Publishes a table's synced snapshots as Iceberg metadata (module docstring)."""

    def __init__(
        self,
        table: HudiTable,
        keep: int,
        listing: TimelineListing | None = None,
        entries_per_manifest: int = ENTRIES_PER_MANIFEST,
        cleaner_retained: int = DEFAULT_CLEANER_RETAINED,
        metrics: str = FOOTERS,
    ):
        """``keep``: ``hoodie.manifest.snapshots.retained``; ``listing``: the sync's
        listing of the timeline folder, which the tail since the previous snapshot is
        read from; ``entries_per_manifest`` sets the bucket count of a first
        publication (file groups a manifest holds, about); ``cleaner_retained``: the
        writer's ``hoodie.cleaner.commits.retained``, which bounds how old a kept
        snapshot may be (``_validity``); ``metrics``: where a new base file's metrics
        come from (``write_stats``: ``FOOTERS`` or ``COMMIT``)."""
        self.table = table
        self.metrics = metrics
        self.keep = keep
        # One listing of the timeline folder for every tail read here (the table's
        # when the sync gives none: a second listing would read the folder again).
        self.listing = listing if listing is not None else table.timeline.listing
        self.entries_per_manifest = max(1, entries_per_manifest)
        self.cleaner_retained = cleaner_retained
        # Previous manifests' entries by (path, spec, fields), read once a publication.
        self._entries_read: dict[tuple[str, str, tuple[tuple[str, str], ...]], Any] = {}
        self._partitions_of: dict[str, str] = {}  # an entry's file -> its partition

    # --- paths ---------------------------------------------------------------------
    def path(self, *parts: str) -> str:
        return self.table.location.join(ICEBERG_FOLDER, *parts)

    def uri(self, *parts: str) -> str:
        return self.table.location.uri_of("/".join([ICEBERG_FOLDER, *parts]))

    def _metadata_name(self, version: int) -> str:
        return f"v{version}.metadata.json"

    def _own_file(self, uri: str, where: str) -> str:
        """The relative path (under the table) of a manifest or list that one of our
        own files names: it must be in the metadata folder and named as we name them."""
        prefix = self.uri("metadata") + "/"
        if not uri.startswith(prefix):
            raise CorruptTableError(f"{where}: {uri!r} is not a file of {self.uri('metadata')}")
        name = contained_name(uri[len(prefix) :], where)
        if not (_MANIFEST_NAME.fullmatch(name) or _LIST_NAME.fullmatch(name)):
            raise CorruptTableError(f"{where}: {name!r} is not a manifest hudi_sync writes")
        return f"metadata/{name}"

    # --- reading what is published ------------------------------------------------------
    def current(self) -> CurrentMetadata | None:
        """The metadata the version hint names, or None before the first publication."""
        location = self.table.location
        hint_uri = self.uri("metadata", VERSION_HINT)
        try:
            text = location.read_file(self.path("metadata", VERSION_HINT))
        except FileNotFoundError:
            return None
        value = text.decode("ascii", "replace").strip()
        if not re.fullmatch(r"[0-9]{1,9}", value):
            raise CorruptTableError(f"{hint_uri}: {value[:40]!r} is not a metadata version")
        version = int(value)
        name = self._metadata_name(version)
        try:
            data = location.read_file(self.path("metadata", name))
        except FileNotFoundError:
            raise CorruptTableError(f"{hint_uri}: names {name}, which is missing") from None
        return CurrentMetadata(version, TableMetadata.read(data, self.uri("metadata", name)))

    # --- publishing -------------------------------------------------------------------
    def publish(
        self, published: PublishedManifest, as_of: str | None = None, dry_run: bool = False
    ) -> PublishedIceberg:
        """Publish the snapshot of ``published`` (its instant) as the current Iceberg
        snapshot; with ``as_of`` (time travel) as a metadata file of its own that the
        version hint does not name. A rerun at the published instant writes nothing."""
        # A first publication makes a few objects per file group and keeps them to the
        # end (100,000 slices, their entries and data files): the cycle collector's
        # passes over them would find nothing (``gc_pause``).
        with reporting_storage_failures(self.table.location), cycle_collection_paused():
            return self._publish(published.manifest.instant, as_of, dry_run)

    def _publish(self, instant: str | None, as_of: str | None, dry_run: bool) -> PublishedIceberg:
        current = self.current() if as_of is None else None
        previous = current.metadata if current is not None else None
        version = (current.version if current is not None else 0) + 1
        if current is not None and previous is not None and instant is not None:
            shown = previous.current_snapshot
            if shown is not None and shown.summary.get(INSTANT_KEY) == instant:
                return self._unchanged(current, previous, shown)
        name = (
            f"asof-{instant}.metadata.json" if as_of is not None else self._metadata_name(version)
        )
        if instant is None:
            return self._empty(previous, name, dry_run)
        tail = self._tail(previous, instant)
        touched = tail.partitions if tail is not None else None
        old = self._previous_buckets(previous)
        derived = None
        stored = self._stored_buckets(previous)
        if tail is not None and previous is not None and stored and not self.table.config.is_mor:
            derived = self._derived_slices(previous, tail, stored, old)
        build = self._build(instant, previous, touched, derived)
        if (
            previous is not None
            and touched is not None
            and previous.default_spec_id != build.plan.spec_id
        ):
            touched = None  # the spec changed (a partition path that does not parse): all anew
            tail = None
            build = self._build(instant, previous, None)
        if dry_run:
            return PublishedIceberg(
                instant,
                self.uri("metadata", name),
                None,
                build.plan.reason,
                full_listing=touched is None,
                dry_run=True,
            )
        buckets = self._bucket_count(previous if touched is not None else None, len(build.slices))
        reused_old = old if touched is not None else {}
        rebuilt, removed = self._entries(build, buckets, as_of, reused_old, touched)
        if touched is None and previous is not None:
            removed |= self._own_slice_files() - {
                self._relative(e.file.path, name)
                for bucket in rebuilt.values()
                for e in [*bucket.data, *bucket.deletes]
                if self._is_own(e.file.path)
            }
        return self._commit(
            instant,
            as_of,
            name,
            version,
            previous,
            build,
            buckets,
            old,
            rebuilt,
            removed,
            touched is None,
            tail.timeline if tail is not None else self.table.timeline,
        )

    def _build(
        self,
        instant: str,
        previous: TableMetadata | None,
        touched: set[str] | None,
        derived: list[FileSlice] | None = None,
    ) -> _Build:
        """The slices to publish (all, or those of the ``touched`` partitions: the
        ``derived`` ones when given, else listed again), the schema and the partition
        plan they give."""
        table = self.table
        if derived is not None:
            slices = derived
        elif touched is None:
            slices = table.view.slices_as_of(instant)
        else:
            view = FileSystemView(
                table.location, table.config, table.timeline, touched, table.view.listing
            )
            slices = view.slices_as_of(instant)
        arrow = snapshot_schema(table, slices)
        file_only = file_only_columns(table)
        if previous is None:
            schema = iceberg_schema(arrow, None, table.uri, file_only)
        else:
            schema = previous.next_schema(arrow, table.uri, file_only)
        plan = partition_plan(table, schema)
        partitions = {s.partition_path for s in slices}  # each parsed once, not per slice
        if plan.fields and any(plan.values(p) is None for p in partitions):
            plan = _unpartitioned(plan, slices)
        if previous is not None:
            plan = previous.next_plan(plan)
        return _Build(slices, arrow, schema, plan)

    def _tail(self, previous: TableMetadata | None, instant: str) -> TailChanges | None:
        """What the commits since the previous snapshot changed (the partitions to
        publish again), or None: list all."""
        if previous is None:
            return None
        shown = previous.current_snapshot
        if shown is None:
            return None
        before = shown.summary.get(INSTANT_KEY)
        if not before or comparable_instant(before) > comparable_instant(instant):
            return None
        pending = tuple(p for p in shown.summary.get(PENDING_KEY, "").split(",") if p)
        return tail_changes(self.table, before, pending, instant, self.listing)

    def _derived_slices(
        self,
        previous: TableMetadata,
        tail: TailChanges,
        buckets: int,
        old: dict[tuple[int, int], ManifestFile],
    ) -> list[FileSlice] | None:
        """A Copy-on-Write table's slices in the partitions the commits since the
        previous snapshot touched, without listing them: the previous snapshot's base
        files there (its touched buckets' manifests, kept for ``_entries``) with the
        commits' write stats and replaced file groups applied, as the manifest is
        derived. Every slice is a base file alone (no logs in Copy-on-Write). None when the
        previous manifests were written under another spec than the table's now gives
        (published unpartitioned, its paths not parsing): then the partitions are listed."""
        touched = tail.partitions
        plan = previous.next_plan(partition_plan(self.table, previous.current_schema))
        if plan.spec_id != previous.default_spec_id:
            return None
        changed = {bucket_of(p, buckets) for p in touched}
        found: dict[tuple[str, str], str] = {}
        for (bucket, _content), manifest in old.items():
            if bucket not in changed:
                continue
            for entry in self._read_entries(manifest, plan):
                uri = entry.file.path
                if entry.file.content != 0 or self._is_own(uri):
                    continue
                partition = self._entry_partition(uri, manifest.path)
                if partition in touched:
                    name = uri.rpartition("/")[2]
                    found[(partition, self._base_file(name, manifest.path).file_id)] = name
        found.update(tail.base_files)
        slices = []
        for (partition, file_id), name in sorted(found.items()):
            if name:
                base = self._base_file(name, partition)
                slices.append(FileSlice(partition, file_id, base.instant, base))
        return slices

    def _base_file(self, name: str, where: str) -> BaseFile:
        try:
            return parse_base_file(name)
        except CorruptTableError as exc:
            raise CorruptTableError(f"{self.table.uri}: {where}: {exc}") from None

    def _read_entries(self, manifest: ManifestFile, plan: PartitionPlan) -> list[ManifestEntry]:
        """A previous manifest's entries, read once a publication (under one plan)."""
        key = (manifest.path, json.dumps(plan.spec_json, sort_keys=True), plan.fields)
        cached = self._entries_read.get(key)
        if cached is None:
            location = self.table.location
            data = location.read_file(self.path(self._own_file(manifest.path, manifest.path)))
            cached = read_manifest(
                data,
                plan,
                manifest.path,
                manifest.sequence,
                manifest.added_snapshot_id,
                location.uri,
            )
            self._entries_read[key] = cached
        return cached

    def _bucket_count(self, previous: TableMetadata | None, slices: int) -> int:
        stored = self._stored_buckets(previous)
        if stored:
            return stored
        return max(1, min(_MAX_BUCKETS, -(-slices // self.entries_per_manifest)))

    def _stored_buckets(self, previous: TableMetadata | None) -> int:
        """The bucket count the metadata was first written with (0: none valid)."""
        if previous is not None:
            stored = previous.properties.get(BUCKETS_PROPERTY, "")
            if stored.isdigit() and 0 < int(stored) <= _MAX_BUCKETS:
                return int(stored)
        return 0

    def _previous_buckets(
        self, previous: TableMetadata | None
    ) -> dict[tuple[int, int], ManifestFile]:
        """The current snapshot's manifests by ``(bucket, content)``."""
        if previous is None:
            return {}
        shown = previous.current_snapshot
        if shown is None:
            return {}
        where = shown.manifest_list
        relative = self._own_file(where, self.uri("metadata"))
        data = self.table.location.read_file(self.path(relative))
        manifests = read_manifest_list(data, where, self.table.location.uri)
        found: dict[tuple[int, int], ManifestFile] = {}
        for manifest in manifests:
            name = self._own_file(manifest.path, where).rsplit("/", 1)[-1]
            match = _MANIFEST_NAME.fullmatch(name)
            if match is None or _CONTENT[match.group(3)] != manifest.content:
                raise CorruptTableError(f"{where}: {manifest.path!r} is not a bucket manifest")
            found[(int(match.group(2)), manifest.content)] = manifest
        return found

    def _entries(
        self,
        build: _Build,
        buckets: int,
        as_of: str | None,
        old: dict[tuple[int, int], ManifestFile],
        touched: set[str] | None,
    ) -> tuple[dict[int, _Bucket], set[str]]:
        """The entries of every bucket that changes: the slices' files (reusing the
        previous entry of a file that stays), plus the previous entries of the bucket's
        partitions not listed again; and the slice files of ours the previous entries
        named that this snapshot no longer does (relative to the Iceberg folder)."""
        table = self.table
        location = table.location
        slices, plan = build.slices, build.plan
        # Per partition, not per slice: its bucket and values (a first publication
        # enters 100,000 slices of 1,000 partitions).
        bucket_by = {p: bucket_of(p, buckets) for p in {s.partition_path for s in slices}}
        values_by = {p: plan.values(p) if plan.fields else () for p in bucket_by}
        changed = set(bucket_by.values())
        if touched is not None:
            changed |= {bucket_of(p, buckets) for p in touched}
        listed_again: dict[str, ManifestEntry] = {}
        rebuilt: dict[int, _Bucket] = {b: _Bucket() for b in changed}
        for (bucket, _content), manifest in old.items():
            if bucket not in changed:
                continue
            for entry in self._read_entries(manifest, plan):
                partition = self._entry_partition(entry.file.path, manifest.path)
                if touched is not None and partition in touched:
                    listed_again[entry.file.path] = entry  # reused below if it stays
                    continue
                into = rebuilt[bucket].data if entry.file.content == 0 else rebuilt[bucket].deletes
                into.append(_existing(entry))
        with_logs = [s for s in slices if s.log_files]
        made_for: dict[tuple[str, str], SliceFiles] = {}
        if with_logs:  # one SliceFiles a slice with logs, in order
            rules = slice_merge_rules(table, with_logs)
            made = slice_files(table, with_logs, build.arrow, build.schema, plan, rules, as_of)
            made_for = {
                (s.partition_path, s.file_id): files
                for s, files in zip(with_logs, made, strict=True)
            }
        kept: set[str] = set()
        new_bases: list[tuple[_Bucket, BaseFileItem]] = []  # metrics read together
        for file_slice in slices:
            group = rebuilt[bucket_by[file_slice.partition_path]]
            values = values_by[file_slice.partition_path]
            if values is None:  # ``_build`` made the plan unpartitioned then
                raise AssertionError(f"unparsed partition {file_slice.partition_path!r}")
            if file_slice.base_file is not None:
                relative = file_slice.relative_path(file_slice.base_file.name)
                previous = listed_again.get(location.uri_of(relative)) if listed_again else None
                if previous is not None:
                    group.data.append(_existing(previous))
                else:
                    base = file_slice.base_file
                    item = _tuple_new(BaseFileItem, (relative, values, base.instant, base.size))
                    new_bases.append((group, item))
            if not made_for:
                continue
            files = made_for.get((file_slice.partition_path, file_slice.file_id))
            if files is None:
                continue
            for own, into in ((files.live, group.data), (files.deletes, group.deletes)):
                if own is None:
                    continue
                kept.add(own.path)
                previous = listed_again.get(own.path)
                into.append(_existing(previous) if previous is not None else _added(own))
        items = [item for _, item in new_bases]
        made_bases = base_data_files(table, items, build.schema, self.metrics)
        for (group, _), made_base in zip(new_bases, made_bases, strict=True):
            group.data.append(_added(made_base))
        removed = {
            self._relative(path, "a previous manifest")
            for path in listed_again
            if self._is_own(path) and path not in kept
        }
        return rebuilt, removed

    def _is_own(self, uri: str) -> bool:
        """A slice file of ours (not one of Hudi's base files)."""
        return uri.startswith(self._own_prefix)

    @cached_property
    def _own_prefix(self) -> str:
        return self.uri() + "/"

    def _relative(self, uri: str, where: str) -> str:
        """A file of ours by its path under the Iceberg folder, checked to stay there."""
        prefix = self.uri() + "/"
        if not uri.startswith(prefix):
            raise CorruptTableError(f"{where}: {uri!r} is not a file of {self.uri()}")
        return contained_relative(uri[len(prefix) :], where)

    def _own_slice_files(self) -> set[str]:
        """Every slice file of ours on storage, relative to the Iceberg folder."""
        found: set[str] = set()
        for folder in (DATA_FOLDER, DELETES_FOLDER):
            found.update(
                f"{folder}/{f}" for f in self.table.location.files_under(self.path(folder))
            )
        return found

    def _entry_partition(self, uri: str, where: str) -> str:
        """The partition path of a manifest entry's file: a base file's folder, or the
        folder under ``data/`` or ``deletes/`` of a slice file of ours (each file's
        worked out once a publication: the touched buckets' entries are read twice)."""
        found = self._partitions_of.get(uri)
        if found is None:
            found = self._partitions_of[uri] = self._partition_of(uri, where)
        return found

    def _partition_of(self, uri: str, where: str) -> str:
        if self._is_own(uri):
            relative = self._relative(uri, where)
            return relative.split("/", 1)[1].rpartition("/")[0]
        base = self.table.location.uri.rstrip("/") + "/"
        if not uri.startswith(base):
            raise CorruptTableError(f"{where}: {uri!r} is not a file of {self.table.uri}")
        return contained_relative(uri[len(base) :], where).rpartition("/")[0]

    def _commit(
        self,
        instant: str,
        as_of: str | None,
        name: str,
        version: int,
        previous: TableMetadata | None,
        build: _Build,
        buckets: int,
        old: dict[tuple[int, int], ManifestFile],
        rebuilt: dict[int, _Bucket],
        removed: set[str],
        full: bool,
        timeline: Timeline,
    ) -> PublishedIceberg:
        """Write the changed manifests and the list, then the metadata, then the hint
        (what only expired snapshots name is deleted later, by ``collect``). ``full``:
        every slice was listed, so no previous manifest is kept (``old`` are the previous
        snapshot's); ``timeline``: the table's, or its tail since the previous snapshot
        (the instant's action and the writes pending at it are read there)."""
        location = self.table.location
        schema, plan = build.schema, build.plan
        sequence = (previous.last_sequence if previous is not None else 0) + 1
        snapshot_id = sequence
        prefix = f"asof{instant}-" if as_of is not None else ""
        manifests: list[ManifestFile] = []
        writes: list[tuple[str, bytes]] = []
        replaced = set(removed)
        reused = 0
        for (bucket, _content), manifest in sorted(old.items()):
            if full or bucket in rebuilt:
                replaced.add(self._own_file(manifest.path, manifest.path))
            else:
                manifests.append(manifest)
                reused += 1
        for bucket, entries in sorted(rebuilt.items()):
            for content, listed in ((0, entries.data), (1, entries.deletes)):
                if not listed:
                    continue
                kind = "data" if content == 0 else "deletes"
                relative = f"metadata/{prefix}m-{snapshot_id}-b{bucket}-{kind}.avro"
                data = write_manifest(listed, schema, plan, content)
                writes.append((self.path(relative), data))
                manifests.append(
                    manifest_file(
                        self.uri(relative), data, listed, plan, content, sequence, snapshot_id
                    )
                )
        list_relative = f"metadata/{prefix}snap-{snapshot_id}.avro"
        parent = previous.current_snapshot_id if previous is not None else None
        writes.append(
            (
                self.path(list_relative),
                write_manifest_list(manifests, snapshot_id, parent, sequence),
            )
        )
        location.ensure_folder(self.path("metadata"))
        location.write_files(writes)
        data_files = sum(m.added_files + m.existing_files for m in manifests if m.content == 0)
        delete_files = sum(m.added_files + m.existing_files for m in manifests if m.content == 1)
        action = next(
            (i.action for i in timeline.completed_writes if i.requested_time == instant), ""
        )
        summary = {
            "operation": "overwrite",
            INSTANT_KEY: instant,
            ACTION_KEY: str(action),
            PENDING_KEY: ",".join(pending_writes(timeline, instant)),
            TOTAL_DATA_FILES: str(data_files),
            TOTAL_DELETE_FILES: str(delete_files),
            "total-records": str(
                sum(m.added_rows + m.existing_rows for m in manifests if m.content == 0)
            ),
        }
        moment = instant_millis(instant, self.table)
        if previous is not None and previous.snapshots:
            moment = max(moment, max(s.timestamp_ms for s in previous.snapshots))
        snapshot = Snapshot(
            snapshot_id,
            parent,
            sequence,
            moment,
            self.uri(list_relative),
            summary,
            schema.schema_id,
        )
        now = int(time.time() * 1000)
        if previous is None:
            properties = hudi_properties(self.table)
            metadata = TableMetadata.create(
                str(uuid.uuid4()), location.uri, schema, plan, properties, now
            )
            previous_file = None
        else:
            metadata = previous
            previous_file = self.uri("metadata", self._metadata_name(version - 1))
        metadata = metadata.with_snapshot(snapshot, schema, plan, now, previous_file)
        own = {BUCKETS_PROPERTY: str(buckets), PARTITION_REASON_PROPERTY: plan.reason or ""}
        metadata = replace(metadata, properties={**metadata.properties, **own})
        expired: list[Snapshot] = []
        if as_of is None:
            metadata, expired = metadata.expired(self.keep, self._validity(metadata.snapshots))
        if replaced:  # named only by the snapshots before this one
            record = json.dumps({"files": sorted(replaced)}).encode()
            location.write_file(self.path("metadata", f"removed-{snapshot_id}.json"), record)
        location.write_file(self.path("metadata", name), metadata.to_json())
        if as_of is None:
            location.write_file(self.path("metadata", VERSION_HINT), str(version).encode())
        return PublishedIceberg(
            instant,
            self.uri("metadata", name),
            snapshot_id,
            plan.reason,
            data_files,
            delete_files,
            manifests_written=len(manifests) - reused,
            manifests_reused=reused,
            snapshots_expired=len(expired),
            full_listing=full,
        )

    def _validity(self, snapshots: Sequence[Snapshot]) -> Callable[[Snapshot], bool]:
        """Whether a snapshot's files are all there and stay through the next commit's
        clean: its instant was not undone by a rollback or restore, no clean removed what
        it needs, and it is not older than what the cleaner keeps after one more commit
        (``hoodie.cleaner.commits.retained`` N keeps the file versions of the N newest
        commits, so of the N-1 newest now). Only the timeline's tail since the oldest
        snapshot is read, once for all of them: a rollback, restore, clean or write
        before it bounds nothing a kept snapshot needs (a limit below every snapshot),
        so the rollbacks and restores since it, its latest clean's metadata and its
        newest writes give the same answer as the whole timeline."""
        instants = [s.summary.get(INSTANT_KEY, "") for s in snapshots]
        named = [i for i in instants if i]
        first = min(named, key=comparable_instant, default=None)
        oldest = comparable_instant(first) if first is not None else ""
        timeline = (
            Timeline(self.table.location, self.table.config, since=first, listing=self.listing)
            if first is not None
            else self.table.timeline
        )
        undone: set[str] = set()
        for undoing in timeline.completed([Action.ROLLBACK, Action.RESTORE]):
            if comparable_instant(undoing.requested_time) > oldest:
                undone |= timeline.undone_instants(undoing)
        limits = [""]
        writes = timeline.completed_writes
        horizon = max(1, self.cleaner_retained - 1)
        if len(writes) >= horizon:
            limits.append(comparable_instant(writes[-horizon].requested_time))
        clean = timeline.latest_clean()
        if clean is not None:
            retained = timeline.clean_metadata(clean).earliest_commit_to_retain
            limits.append(comparable_instant(retained or clean.requested_time))
        lowest = max(limits)

        def valid(snapshot: Snapshot) -> bool:
            instant = snapshot.summary.get(INSTANT_KEY, "")
            return bool(instant) and instant not in undone and comparable_instant(instant) >= lowest

        return valid

    def collect(self) -> int:
        """Delete what only expired snapshots name: their manifest lists, and the files
        each ``removed-<id>.json`` lists once no snapshot before it is kept. Run after
        every reader of the previous metadata moved on (the sync runs it once its
        catalogs and warehouse tables show the new metadata: a catalog that failed to move
        still names the old snapshots). Returns the files deleted."""
        location = self.table.location
        current = self.current()
        if current is None:
            return 0
        metadata = current.metadata
        deleted = 0
        named = {s.manifest_list for s in metadata.snapshots}
        newest = max((s.snapshot_id for s in metadata.snapshots), default=0)
        for name in location.names(self.path("metadata")):
            match = _LIST_NAME.fullmatch(name)
            # A list of a snapshot since expired (not a newer one a killed sync left).
            if match and int(match.group(1)) < newest and self.uri("metadata", name) not in named:
                deleted += location.remove(self.path("metadata", name))
        kept = [s.snapshot_id for s in metadata.snapshots]
        oldest = min(kept) if kept else None
        for name in location.names(self.path("metadata")):
            match = _REMOVED_NAME.fullmatch(name)
            if match is None or oldest is None or int(match.group(1)) > oldest:
                continue
            where = self.uri("metadata", name)
            record = load_json(location.read_file(self.path("metadata", name)), where, "list")
            files = record.get("files") if isinstance(record, dict) else None
            if not isinstance(files, list):
                raise CorruptTableError(f"{where}: not a list of removed files")
            for relative in files:
                checked = contained_relative(str(relative), where)
                if not checked.startswith(("metadata/", f"{DATA_FOLDER}/", f"{DELETES_FOLDER}/")):
                    raise CorruptTableError(f"{where}: {checked!r} is not a file of ours")
                deleted += location.remove(self.path(checked))
            location.remove(self.path("metadata", name))
        return deleted

    def _unchanged(
        self, current: CurrentMetadata, metadata: TableMetadata, shown: Snapshot
    ) -> PublishedIceberg:
        """A rerun at the published instant: what the current metadata shows."""

        def count(key: str) -> int:
            value = shown.summary.get(key, "")
            return int(value) if value.isdigit() else 0

        return PublishedIceberg(
            shown.summary.get(INSTANT_KEY),
            self.uri("metadata", self._metadata_name(current.version)),
            shown.snapshot_id,
            metadata.properties.get(PARTITION_REASON_PROPERTY) or None,
            count(TOTAL_DATA_FILES),
            count(TOTAL_DELETE_FILES),
            full_listing=False,
        )

    def _empty(self, previous: TableMetadata | None, name: str, dry_run: bool) -> PublishedIceberg:
        """A table without a completed commit: metadata with no snapshot (its columns
        from ``hoodie.table.create.schema``), so a reader tells empty from never synced."""
        table = self.table
        arrow = snapshot_schema(table, [])
        schema = iceberg_schema(arrow, None, table.uri, file_only_columns(table))
        plan = partition_plan(table, schema)
        if not dry_run and previous is None:
            now = int(time.time() * 1000)
            properties = hudi_properties(table)
            metadata = TableMetadata.create(
                str(uuid.uuid4()), table.location.uri, schema, plan, properties, now
            )
            table.location.ensure_folder(self.path("metadata"))
            table.location.write_file(self.path("metadata", name), metadata.to_json())
            table.location.write_file(self.path("metadata", VERSION_HINT), b"1")
        location = self.uri("metadata", name)
        return PublishedIceberg(None, location, None, plan.reason, dry_run=dry_run)


_tuple_new = tuple.__new__  # a NamedTuple without its __new__: the same tuple


def bucket_of(partition: str, buckets: int) -> int:
    """The manifest bucket of a partition path: stable across syncs and processes."""
    return zlib.crc32(partition.encode("utf-8")) % buckets


def instant_millis(instant: str, table: HudiTable) -> int:
    """An instant's time in epoch milliseconds, read in the table's timeline zone."""
    digits = instant.ljust(17, "0")[:17]
    moment = dt.datetime.strptime(digits[:14], "%Y%m%d%H%M%S").replace(
        microsecond=int(digits[14:17]) * 1000
    )
    zone = timeline_zone(table.config)
    moment = moment.replace(tzinfo=zone) if zone is not None else moment.astimezone()
    return int(moment.timestamp() * 1000)


def _unpartitioned(plan: PartitionPlan, slices: Sequence[FileSlice]) -> PartitionPlan:
    """The unpartitioned plan, saying which partition path did not parse."""
    bad = next(s.partition_path for s in slices if plan.values(s.partition_path) is None)
    return unpartitioned_plan(f"partition path {bad!r} does not carry the partition values")


def _added(made: DataFile) -> ManifestEntry:
    return manifest_entry(ADDED, None, None, None, made)


def _existing(entry: ManifestEntry) -> ManifestEntry:
    """An entry carried into a new manifest: EXISTING, its sequence numbers explicit
    (built directly: ``dataclasses.replace`` cost a third of a bucket's rewrite)."""
    return manifest_entry(
        EXISTING, entry.snapshot_id, entry.data_sequence, entry.file_sequence, entry.file
    )
