"""File-system view: which base and log files make up a snapshot, as Hudi decides it.

The rules (see docs/table-core.md#snapshot-rules): a base file counts only if the
instant that wrote it completed (or is older than the active timeline); file groups
named by a completed replacecommit are gone; each file group contributes its latest
slice at or before the query instant; MOR log files join the slice they belong to
(by base instant in layout 1, by completion time in layout 2); a pending
compaction's slice is merged into the slice before it.

Where the files come from is the view's ``FileListing`` (``hudi_sync.table.files.listing``:
the storage by default); which instants count is ``visibility``; a partition's file
groups under the full rules are ``file_groups``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from hudi_sync.errors import CorruptTableError
from hudi_sync.gc_pause import cycle_collection_paused
from hudi_sync.storage import Location
from hudi_sync.table.config.properties import TableConfig
from hudi_sync.table.files.file_groups import (
    SliceBuilder,
    completion_times,
    latest_slice,
    log_order,
    slice_groups,
)
from hudi_sync.table.files.filenames import (
    PARTITION_METAFILE_PREFIX,
    BaseFile,
    LogFile,
    base_file_key,
    base_file_parts,
    is_log_file_name,
    parse_base_file,
    parse_log_file,
)
from hudi_sync.table.files.listing import FileListing, ListedFiles, StorageListing
from hudi_sync.table.files.visibility import CommittedInstants, visibility
from hudi_sync.table.timeline.active import Timeline
from hudi_sync.table.timeline.instant import Action, Instant, comparable_instant

__all__ = [
    "PARTITION_METAFILE_PREFIX",
    "CommittedInstants",
    "FileSlice",
    "FileSystemView",
    "PartitionFiles",
]


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
        return self.relative_path(self.base_file.name)

    def relative_path(self, name: str) -> str:
        """A file of the slice's partition, relative to the table's base path."""
        return f"{self.partition_path}/{name}" if self.partition_path else name

    def log_size(self, location: Location, log: LogFile) -> int:
        """A log file's size: from the listing (object stores), else its own stat (a
        local listing has none, and a version 6 writer appends blocks to a file it
        wrote before)."""
        if log.size:
            return log.size
        path = location.join(self.relative_path(log.name))
        if location.is_local:
            return location.size(path)
        return int(location.fs.size(path) or 0)  # a store that does not say: unknown, 0

    @property
    def listed_bytes(self) -> int | None:
        """Bytes of the slice's base file and log files by the listing alone (None when a
        size is unknown there: local listings carry none), for planning without a stat."""
        sizes = [self.base_file.size] if self.base_file else []
        sizes += [log.size for log in self.log_files]
        return sum(sizes) if all(sizes) else None

    def file_bytes(self, location: Location) -> int:
        """Bytes of the slice's base file and log files (what reading it costs); sizes
        from the listing, else a stat each."""
        total = sum(self.log_size(location, log) for log in self.log_files)
        if self.base_file is not None:
            stated = self.base_file.size or location.fs.size(
                location.join(self.relative_path(self.base_file.name))
            )
            total += int(stated or 0)
        return total

    def to_json(self) -> dict[str, Any]:
        return {
            "partition_path": self.partition_path,
            "file_id": self.file_id,
            "base_file": self.base_file.name if self.base_file else None,
            "log_files": [log.name for log in self.log_files],
        }


_object_new = object.__new__
_object_setattr = object.__setattr__
_tuple_new = tuple.__new__


@dataclass
class PartitionFiles:
    """The data files found in one partition directory."""

    base_files: list[BaseFile] = field(default_factory=list)
    log_files: list[LogFile] = field(default_factory=list)
    # CDC logs belong to the base file of the same file id and instant; never read as data.
    cdc_files: list[LogFile] = field(default_factory=list)


class FileSystemView:
    """Asks its listing for a table's data files once and answers snapshot questions
    over them."""

    def __init__(
        self,
        location: Location,
        config: TableConfig,
        timeline: Timeline,
        partitions: Collection[str] | None = None,
        listing: FileListing | None = None,
    ) -> None:
        """``partitions``: list only these partitions (the snapshot questions are then
        about them alone), e.g. those a few new commits wrote to. ``listing``: where
        the files come from (default: the storage itself)."""
        self.location = location
        self.config = config
        self.timeline = timeline
        self.listing: FileListing = StorageListing(location, config) if listing is None else listing
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
    def _listed(self) -> ListedFiles:
        """The listing's answer, asked once."""
        return self.listing.list_files(self.only_partitions)

    @property
    def _partition_listings(self) -> Mapping[str, Sequence[str]]:
        """``partition path -> file names`` (their sizes, where the listing gives
        them, in ``_file_sizes``)."""
        return self._listed.names

    @property
    def _file_sizes(self) -> Mapping[str, Mapping[str, int]]:
        """``partition path -> file name -> size`` where the listing gives sizes."""
        return self._listed.sizes

    def _classify(self, relative_dir: str, names: Iterable[str]) -> PartitionFiles:
        files = PartitionFiles()
        sizes = self._file_sizes.get(relative_dir)
        for name in names:
            if name.endswith(".crc") or name.startswith(PARTITION_METAFILE_PREFIX):
                continue
            size = sizes.get(name, 0) if sizes is not None else 0
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

    # -- snapshots -----------------------------------------------------------------------
    def slices_as_of(
        self, as_of: str | None = None, read_optimized: bool = False
    ) -> list[FileSlice]:
        """The file slices of the snapshot at instant ``as_of`` (latest when ``None``)."""
        with cycle_collection_paused(keeps_objects=True):
            return self._slices_as_of(as_of, read_optimized)

    def _slices_as_of(self, as_of: str | None, read_optimized: bool) -> list[FileSlice]:
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
        by_partition: dict[str, list[FileSlice]] = {}
        if "partitions" in self.__dict__:  # already classified into files: the full rules
            for partition, files in self.partitions.items():
                by_partition[partition] = self._partition_slices(
                    partition, files, visible, pending_compactions, replaced, read_optimized
                )
        else:
            replaced_in = {partition for partition, _ in replaced}
            shown: dict[str, str] = {}  # instant -> comparable form if visible, else ""
            for partition, names in self._partition_listings.items():
                newest = self._newest_base_files(partition, names, visible, shown)
                if newest is None:  # log files, or a file group only the full rules order
                    files = self._classify(partition, names)
                    by_partition[partition] = self._partition_slices(
                        partition, files, visible, pending_compactions, replaced, read_optimized
                    )
                else:
                    by_partition[partition] = self._base_file_slices(
                        partition, newest, replaced if partition in replaced_in else None
                    )
        # Sorted by (partition, file id): partitions in order, each one's slices already are.
        return [s for partition in sorted(by_partition) for s in by_partition[partition]]

    def _base_file_slices(
        self,
        partition: str,
        newest: dict[str, tuple[str, str, str, str]],
        replaced: Collection[tuple[str, str]] | None,
    ) -> list[FileSlice]:
        """The slices, by file id, of ``_newest_base_files`` (less the file groups in
        ``replaced``): each a base file alone."""
        sizes = self._file_sizes.get(partition)
        slices = []
        for file_id in sorted(newest):
            if replaced is not None and (partition, file_id) in replaced:
                continue
            _, instant, name, token = newest[file_id]
            size = sizes.get(name, 0) if sizes is not None else 0
            # FileSlice(partition, file_id, instant, BaseFile(...), ()) without the frozen
            # dataclass's __init__ and NamedTuple's __new__, for a quarter less time on a
            # listing of 100,000 slices: the very same objects.
            file_slice = _object_new(FileSlice)
            _object_setattr(file_slice, "partition_path", partition)
            _object_setattr(file_slice, "file_id", file_id)
            _object_setattr(file_slice, "base_instant", instant)
            _object_setattr(
                file_slice, "base_file", _tuple_new(BaseFile, (name, file_id, token, instant, size))
            )
            _object_setattr(file_slice, "log_files", ())
            slices.append(file_slice)
        return slices

    def _newest_base_files(
        self,
        partition: str,
        names: Iterable[str],
        visible: Callable[[str], bool],
        shown: dict[str, str],
    ) -> dict[str, tuple[str, str, str, str]] | None:
        """``file id -> (comparable instant, instant, name, write token)`` of the newest
        visible base file of each file group of a partition without log files, straight
        from its names: there each group's latest slice is that base file alone, and
        only those become objects.

        ``None`` when the partition needs the full rules (``_partition_slices``): it has
        data log files, or one file group has base files at two spellings of one instant
        (14 and 17 digits), which the rules order by listing. Names are judged as
        ``_classify`` judges them, and a malformed base file name fails the same way.
        ``shown`` caches ``visible`` (a few thousand instants wrote every file)."""
        extension = self.base_extension
        cut = -len(extension)
        newest: dict[str, tuple[str, str, str, str]] = {}
        for name in names:
            if not name.endswith(extension):
                # Data and CDC logs, the partition metafile, checksums, other files.
                if (
                    name[:1] == "."
                    and is_log_file_name(name)
                    and not name.endswith(".crc")
                    and not name.startswith(PARTITION_METAFILE_PREFIX)
                ):
                    log = parse_log_file(name)
                    if log is not None and not log.is_cdc:
                        return None
                continue
            try:
                file_id, token, instant = name[:cut].split("_")
            except ValueError:
                token = instant = ""
            if not token or name[0] in "._":  # no write token, no file id, or hidden
                if name[0] == ".":
                    continue  # e.g. .hoodie_partition_metadata.parquet: never a base file
                file_id, token, instant = self._base_file_parts(partition, name)
            key = shown.get(instant)
            if key is None:  # an instant not seen yet: judged once
                if not instant.isdigit():
                    file_id, token, instant = self._base_file_parts(partition, name)
                key = shown[instant] = comparable_instant(instant) if visible(instant) else ""
            if not key:
                continue
            current = newest.get(file_id)
            if current is not None and key <= current[0]:
                if key < current[0]:
                    continue
                if instant != current[1]:
                    return None
            newest[file_id] = (key, instant, name, token)
        return newest

    def _base_file_parts(self, partition: str, name: str) -> tuple[str, str, str]:
        """``base_file_parts`` of a name the quick split did not accept: it raises."""
        try:
            return base_file_parts(name)
        except CorruptTableError as exc:
            where = f"{partition}/{name}" if partition else name
            raise CorruptTableError(f"{self.location.uri}: {where}: {exc}") from None

    def _partition_slices(
        self,
        partition: str,
        files: PartitionFiles,
        visible: Callable[[str], bool],
        pending_compactions: set[str],
        replaced: Collection[tuple[str, str]],
        read_optimized: bool,
    ) -> list[FileSlice]:
        """The latest slice at the query instant of each file group of one partition,
        by file id, under the full rules."""
        result: list[FileSlice] = []
        groups = self._slice_groups(files)
        for file_id in sorted(groups):
            slices = groups[file_id]
            if (partition, file_id) in replaced:
                continue
            if len(slices) == 1:  # most groups: one slice, nothing to order or merge
                (only,) = slices.values()
                usable = visible(only.base_instant) and (
                    only.base_file is not None or not read_optimized
                )
                chosen = only if usable else None
            else:
                chosen = latest_slice(slices, visible, pending_compactions, read_optimized)
            if chosen is None:
                continue
            logs = () if read_optimized else tuple(sorted(chosen.log_files, key=log_order))
            base_file = chosen.base_file
            result.append(FileSlice(partition, file_id, chosen.base_instant, base_file, logs))
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
            for name in names:
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
        """The query instant and what is visible at it (``visibility.visibility``)."""
        return visibility(self.timeline, self.is_committed, as_of)

    def is_committed(self, instant: str) -> bool:
        """Whether files written at ``instant`` are committed: a completed write, or
        one older than the active timeline (archived)."""
        return self.committed_instants(instant)

    @cached_property
    def committed_instants(self) -> CommittedInstants:
        """``is_committed`` as plain data, for readers in other processes."""
        return CommittedInstants.of(self.timeline)

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

    def _slice_groups(self, files: PartitionFiles) -> dict[str, dict[str, SliceBuilder]]:
        """``file_groups.slice_groups`` of one partition's files."""
        layout_one = self.config.timeline_layout_version == 1
        completion_of = None if layout_one else self._completion_of
        return slice_groups(files.base_files, files.log_files, self.is_committed, completion_of)

    @cached_property
    def _completion_of(self) -> dict[str, str]:
        return completion_times(self.timeline)

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
