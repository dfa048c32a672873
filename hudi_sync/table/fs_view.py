"""File-system view: which base and log files make up a snapshot, as Hudi decides it.

The rules (see docs/table-core.md#snapshot-rules): a base file counts only if the
instant that wrote it completed (or is older than the active timeline); file groups
named by a completed replacecommit are gone; each file group contributes its latest
slice at or before the query instant; MOR log files join the slice they belong to
(by base instant in layout 1, by completion time in layout 2); a pending
compaction's slice is merged into the slice before it.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from hudi_sync.errors import CorruptTableError
from hudi_sync.storage import Location
from hudi_sync.table.filenames import (
    BaseFile,
    LogFile,
    base_file_key,
    is_log_file_name,
    parse_base_file,
    parse_log_file,
)
from hudi_sync.table.instant import Action, Instant, comparable_instant
from hudi_sync.table.properties import TableConfig
from hudi_sync.table.timeline import Timeline

PARTITION_METAFILE_PREFIX = ".hoodie_partition_metadata"


@dataclass(frozen=True)
class FileSlice:
    """A file group's files at one base instant: an optional base file plus log files."""

    partition_path: str
    file_id: str
    base_instant: str
    base_file: BaseFile | None
    log_files: tuple[LogFile, ...] = ()

    @property
    def relative_base_path(self) -> str | None:
        if self.base_file is None:
            return None
        if self.partition_path:
            return f"{self.partition_path}/{self.base_file.name}"
        return self.base_file.name

    def to_json(self) -> dict[str, Any]:
        return {
            "partition_path": self.partition_path,
            "file_id": self.file_id,
            "base_file": self.base_file.name if self.base_file else None,
            "log_files": [log.name for log in self.log_files],
        }


@dataclass(frozen=True)
class CommittedInstants:
    """Whether files written at an instant are committed: a completed write, or one
    older than the active timeline (archived). Picklable: Spark's workers ask it."""

    completed: frozenset[str]
    timeline_start: str | None  # comparable form; None on an empty timeline

    def __call__(self, instant: str) -> bool:
        if instant in self.completed:
            return True
        start = self.timeline_start
        return start is not None and comparable_instant(instant) < start


@dataclass
class PartitionFiles:
    """The data files found in one partition directory."""

    base_files: list[BaseFile] = field(default_factory=list)
    log_files: list[LogFile] = field(default_factory=list)
    # CDC logs belong to the base file of the same file id and instant; never read as data.
    cdc_files: list[LogFile] = field(default_factory=list)


@dataclass
class _SliceBuilder:
    base_instant: str
    base_file: BaseFile | None = None
    log_files: list[LogFile] = field(default_factory=list)


class FileSystemView:
    """Lists a table's data files once and answers snapshot questions over them."""

    def __init__(
        self,
        location: Location,
        config: TableConfig,
        timeline: Timeline,
        partitions: Collection[str] | None = None,
    ) -> None:
        """``partitions``: list only these partition folders (the snapshot questions are
        then about them alone), e.g. those a few new commits wrote to."""
        self.location = location
        self.config = config
        self.timeline = timeline
        self.base_extension = "." + config.base_file_format.lower()
        self.only_partitions = None if partitions is None else sorted(set(partitions))

    # -- listing -------------------------------------------------------------------------
    @cached_property
    def partitions(self) -> dict[str, PartitionFiles]:
        """``partition path -> files``, for every partition directory of the table."""
        return {
            relative_dir: self._classify(relative_dir, names)
            for relative_dir, names in self._partition_listings.items()
        }

    @cached_property
    def _partition_listings(self) -> dict[str, list[tuple[str, int]]]:
        """``partition path -> [(file name, size)]`` of the partition directories.

        Like Hudi, a directory is a partition when it holds a partition metadata file;
        a non-partitioned table has the single partition ``""``.
        """
        result: dict[str, list[tuple[str, int]]] = {}
        for relative_dir, names in self._list_tree().items():
            if not self.config.is_partitioned:
                if relative_dir != "":
                    continue
            elif not any(n.startswith(PARTITION_METAFILE_PREFIX) for n, _ in names):
                continue
            result[relative_dir] = names
        return result

    def _classify(self, relative_dir: str, names: Iterable[tuple[str, int]]) -> PartitionFiles:
        files = PartitionFiles()
        for name, size in names:
            if name.endswith(".crc") or name.startswith(PARTITION_METAFILE_PREFIX):
                continue
            if is_log_file_name(name):
                log = parse_log_file(name, size)
                if log is not None:
                    (files.cdc_files if log.is_cdc else files.log_files).append(log)
                continue
            if name.startswith(".") or not name.endswith(self.base_extension):
                continue
            try:
                files.base_files.append(parse_base_file(name, size))
            except CorruptTableError as exc:
                where = f"{relative_dir}/{name}" if relative_dir else name
                raise CorruptTableError(f"{self.location.uri}: {where}: {exc}") from None
        return files

    def _list_tree(self) -> dict[str, list[tuple[str, int]]]:
        """``relative dir -> [(file name, size)]`` for the table tree, skipping dot dirs
        (``.hoodie``, ``.temp``...)."""
        if self.only_partitions is not None:
            return self._list_partitions(self.only_partitions)
        if self.location.is_local:
            return _walk_local(self.location.path, recursive=self.config.is_partitioned)
        return _walk_remote(self.location, recursive=self.config.is_partitioned)

    def _list_partitions(self, partitions: list[str]) -> dict[str, list[tuple[str, int]]]:
        """The files of each given partition folder (one listing each); a folder that
        is gone (a dropped partition) has none."""
        result: dict[str, list[tuple[str, int]]] = {}
        fs = self.location.fs
        for partition in partitions:
            folder = self.location.join(partition)
            try:
                entries = fs.ls(folder, detail=True)
            except FileNotFoundError:
                continue
            result[partition] = [
                (str(e["name"]).rstrip("/").rsplit("/", 1)[-1], int(e.get("size") or 0))
                for e in entries
                if e.get("type") != "directory"
            ]
        return result

    # -- snapshots -----------------------------------------------------------------------
    def slices_as_of(
        self, as_of: str | None = None, read_optimized: bool = False
    ) -> list[FileSlice]:
        """The file slices of the snapshot at instant ``as_of`` (latest when ``None``)."""
        rules = self._visibility(as_of)
        if rules is None:
            return []
        as_of, visible = rules
        timeline = self.timeline
        pending_compactions = {
            i.requested_time
            for i in timeline.instants
            if i.action in (Action.COMPACTION, Action.LOG_COMPACTION) and not i.is_completed
        }
        replaced = timeline.replaced_file_ids(as_of)
        result: list[FileSlice] = []
        for partition, files in self.partitions.items():
            for file_id, slices in self._slice_groups(files).items():
                if (partition, file_id) in replaced:
                    continue
                if len(slices) == 1:  # most groups: one slice, nothing to order or merge
                    (only,) = slices.values()
                    usable = visible(only.base_instant) and (
                        only.base_file is not None or not read_optimized
                    )
                    chosen = only if usable else None
                else:
                    chosen = _latest_slice(slices, visible, pending_compactions, read_optimized)
                if chosen is None:
                    continue
                logs = () if read_optimized else tuple(sorted(chosen.log_files, key=_log_order))
                result.append(
                    FileSlice(partition, file_id, chosen.base_instant, chosen.base_file, logs)
                )
        result.sort(key=lambda s: (s.partition_path, s.file_id))
        return result

    def base_files_as_of(self, as_of: str | None = None) -> dict[tuple[str, str], str]:
        """``(partition, file id) -> base file name`` of the read-optimized snapshot.

        The same files as the base files of ``slices_as_of(as_of, read_optimized=True)``
        (the newest visible base file of each file group that was not replaced), taken
        straight from the listed names: manifests of a million files need no slice
        objects.
        """
        rules = self._visibility(as_of)
        if rules is None:
            return {}
        as_of, visible = rules
        replaced = self.timeline.replaced_file_ids(as_of)
        visible_instants: dict[str, bool] = {}  # a few instants wrote a million files
        extension = self.base_extension
        result: dict[tuple[str, str], str] = {}
        for partition, names in self._partition_listings.items():
            newest: dict[str, tuple[str, str]] = {}
            for name, _ in names:
                if name.startswith(".") or not name.endswith(extension):
                    continue
                try:
                    file_id, instant = base_file_key(name)
                except CorruptTableError as exc:
                    where = f"{partition}/{name}" if partition else name
                    raise CorruptTableError(f"{self.location.uri}: {where}: {exc}") from None
                shown = visible_instants.get(instant)
                if shown is None:
                    shown = visible_instants[instant] = visible(instant)
                if not shown:
                    continue
                key = comparable_instant(instant)
                current = newest.get(file_id)
                if current is None or key > current[0]:
                    newest[file_id] = (key, name)
            for file_id, (_, name) in newest.items():
                if (partition, file_id) not in replaced:
                    result[(partition, file_id)] = name
        return result

    def _visibility(self, as_of: str | None) -> tuple[str, Callable[[str], bool]] | None:
        """For a query at ``as_of`` (latest when ``None``): the instant, and whether a
        file instant is visible at it (committed, not later). ``None`` when nothing has
        been written.

        The commit metadata of the write the snapshot is read at is parsed first
        (``Timeline.snapshot_write``): a corrupt one fails the query."""
        snapshot = self.timeline.snapshot_write(as_of)
        if as_of is None:
            if snapshot is None:
                return None
            as_of = snapshot.requested_time
        limit = comparable_instant(as_of)
        committed = self.is_committed

        def visible(ts: str) -> bool:
            return comparable_instant(ts) <= limit and committed(ts)

        return as_of, visible

    def is_committed(self, instant: str) -> bool:
        """Whether files written at ``instant`` are committed: a completed write, or
        one older than the active timeline (archived)."""
        return self.committed_instants(instant)

    @cached_property
    def committed_instants(self) -> CommittedInstants:
        """``is_committed`` as plain data, for readers in other processes."""
        return CommittedInstants(self._completed_write_times, self._timeline_start)

    @cached_property
    def _completed_write_times(self) -> frozenset[str]:
        return frozenset(i.requested_time for i in self.timeline.completed_writes)

    @cached_property
    def _timeline_start(self) -> str | None:
        """Instants older than the first write-type instant of the active timeline were
        archived; Hudi treats files they wrote as committed."""
        write_like = {
            Action.COMMIT,
            Action.DELTA_COMMIT,
            Action.REPLACE_COMMIT,
            Action.COMPACTION,
            Action.LOG_COMPACTION,
            Action.CLUSTERING,
        }
        for instant in self.timeline.instants:
            if instant.action in write_like:
                return comparable_instant(instant.requested_time)
        return None

    def slice_of_logs(self, files: PartitionFiles) -> list[tuple[LogFile, str]]:
        """``(log file, base instant of its slice)`` for the data logs of one partition,
        as ``slices_as_of`` assigns them: what the cleaner deletes with a slice's base
        file."""
        return [
            (log, slice_instant)
            for slices in self._slice_groups(files).values()
            for slice_instant, builder in slices.items()
            for log in builder.log_files
        ]

    def _slice_groups(self, files: PartitionFiles) -> dict[str, dict[str, _SliceBuilder]]:
        """``file id -> base instant -> slice`` of one partition: every committed base
        file's slice, with the log files that belong to it (by base instant in layout 1,
        by completion time in layout 2). The query instant picks among them later."""
        committed = self.is_committed
        groups: dict[str, dict[str, _SliceBuilder]] = defaultdict(dict)
        for base in files.base_files:
            if committed(base.instant):
                groups[base.file_id][base.instant] = _SliceBuilder(base.instant, base)
        layout_one = self.config.timeline_layout_version == 1
        # Oldest first: in layout 2 the first log of a group without a base file (the
        # bucket index writes such groups) starts its slice, and later ones join it.
        for log in sorted(files.log_files, key=_log_order):
            if layout_one:
                key: str | None = log.instant
            else:
                key = self._slice_key_for_log(log, groups)
            if key is not None:
                slices = groups[log.file_id]
                slices.setdefault(key, _SliceBuilder(key)).log_files.append(log)
        return groups

    @cached_property
    def _completion_of(self) -> dict[str, str]:
        """Each completed write's completion time (its requested time in layout 1)."""
        return {
            i.requested_time: i.completion_time or i.requested_time
            for i in self.timeline.completed_writes
        }

    def _slice_key_for_log(
        self, log: LogFile, groups: dict[str, dict[str, _SliceBuilder]]
    ) -> str | None:
        """Layout 2: a committed log file belongs to the slice with the largest base
        instant at or before its deltacommit's completion time.

        Like hudi-rs, a slice keeps every committed log file even when the query is
        as of an earlier instant: readers skip log blocks newer than the query
        instant, so the slice's files do not depend on it.
        """
        if not self.is_committed(log.instant):
            return None
        completion = comparable_instant(self._completion_of.get(log.instant, log.instant))
        candidates = [
            ts for ts in groups.get(log.file_id, {}) if comparable_instant(ts) <= completion
        ]
        return max(candidates, key=comparable_instant) if candidates else log.instant

    # -- incremental ---------------------------------------------------------------------
    def slices_changed_between(self, begin: str | None, end: str | None) -> list[FileSlice]:
        """File slices written by completed instants in ``(begin, end]``, at their state
        as of ``end``: what an incremental query reads."""
        instants = self.instants_in_range(begin, end)
        if not instants:
            return []
        touched: set[tuple[str, str]] = set()
        for instant in instants:
            for stat in self.timeline.commit_metadata(instant).write_stats:
                touched.add((stat.partition_path, stat.file_id))
        end_time = max((i.requested_time for i in instants), key=comparable_instant)
        return [s for s in self.slices_as_of(end_time) if (s.partition_path, s.file_id) in touched]

    @property
    def ranges_by_completion(self) -> bool:
        """Whether incremental ranges select by completion time (layout 2, Hudi 1.x) rather
        than by requested time."""
        return self.config.timeline_layout_version == 2

    def range_position(self, instant: Instant) -> str:
        """Where a completed write sits for an incremental range (comparable form)."""
        ts = instant.completion_time if self.ranges_by_completion else None
        return comparable_instant(ts or instant.requested_time)

    def instants_in_range(self, begin: str | None, end: str | None) -> list[Instant]:
        """Completed writes in ``(begin, end]``: by requested time in layout 1, by
        completion time in layout 2 (Hudi 1.x)."""
        lo = comparable_instant(begin) if begin else None
        hi = comparable_instant(end) if end else None
        return [
            i
            for i in self.timeline.completed_writes
            if (lo is None or self.range_position(i) > lo)
            and (hi is None or self.range_position(i) <= hi)
        ]


def _log_order(log: LogFile) -> tuple[str, int, str]:
    return (comparable_instant(log.instant), log.version, log.write_token)


def _latest_slice(
    slices: dict[str, _SliceBuilder],
    visible: Any,
    pending_compactions: set[str],
    read_optimized: bool,
) -> _SliceBuilder | None:
    """The newest usable slice of a file group; a pending compaction's slice (logs but no
    base yet) is merged into the slice before it."""
    ordered = sorted(slices.values(), key=lambda s: comparable_instant(s.base_instant))
    usable: list[_SliceBuilder] = []
    for builder in ordered:
        merges_into_previous = (
            builder.base_file is None and builder.base_instant in pending_compactions and usable
        )
        if merges_into_previous:
            usable[-1].log_files.extend(builder.log_files)
            continue
        if not visible(builder.base_instant):
            continue
        usable.append(builder)
    if read_optimized:
        usable = [s for s in usable if s.base_file is not None]
    return usable[-1] if usable else None


def _walk_local(root: str, recursive: bool) -> dict[str, list[tuple[str, int]]]:
    """Fast local listing with ``os.scandir`` (file sizes from the same stat)."""
    result: dict[str, list[tuple[str, int]]] = {}
    stack = [""]
    while stack:
        relative = stack.pop()
        directory = os.path.join(root, relative) if relative else root
        names: list[tuple[str, int]] = []
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        if recursive and not entry.name.startswith("."):
                            stack.append(f"{relative}/{entry.name}" if relative else entry.name)
                    else:
                        names.append((entry.name, 0))
        except FileNotFoundError:
            continue
        result[relative] = names
    return result


def _walk_remote(location: Location, recursive: bool) -> dict[str, list[tuple[str, int]]]:
    """Object-store listing: one recursive ``find`` (paginated by the store), then the
    ``.hoodie`` tree and other dot directories are dropped."""
    fs = location.fs
    root = location.path.rstrip("/")
    if recursive:
        entries: Iterator[tuple[str, Any]] = iter(
            fs.find(root, detail=True, withdirs=False).items()
        )
    else:
        entries = (
            (str(e["name"]), e) for e in fs.ls(root, detail=True) if e.get("type") != "directory"
        )
    result: dict[str, list[tuple[str, int]]] = defaultdict(list)
    prefix = root + "/"
    for path, info in entries:
        path = path.rstrip("/")
        if not path.startswith(prefix):
            continue
        relative = path[len(prefix) :]
        directory, _, name = relative.rpartition("/")
        if any(part.startswith(".") for part in directory.split("/") if part):
            continue
        result[directory].append((name, int(info.get("size") or 0)))
    return dict(result)
