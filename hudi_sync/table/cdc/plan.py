"""Planning the CDC query (RFC-51) on the driver: what changed in the commits of
``(begin, end]``, as one ``ChangeSplit`` per write stat (see ``splits`` for the cases).

Commits are chosen by requested time, as Hudi's CDC extractor does in every table
version; compaction and clustering commits carry no changes and are skipped. A begin
before the readable range (``readable_range``: cleaned or archived history) is refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import cached_property
from typing import Any, Literal

from hudi_sync import config
from hudi_sync.errors import BadInputError, CorruptTableError, UnsupportedTableError
from hudi_sync.table.cdc.log import (
    CdcMode,
    parse_cdc_mode,
)
from hudi_sync.table.cdc.readable_range import readable_range
from hudi_sync.table.cdc.splits import ChangePlan, ChangeSplit, InferenceCase
from hudi_sync.table.files.fs_view import FileSlice
from hudi_sync.table.read.snapshot import table_merge_rules
from hudi_sync.table.table import HudiTable
from hudi_sync.table.timeline.active import Timeline
from hudi_sync.table.timeline.commit_metadata import WriteStat
from hudi_sync.table.timeline.instant import Action, Instant, comparable_instant

BEGIN = config.BEGIN.key

END = config.END.key

# A requested time as Hudi writes it: seconds, or milliseconds.
_INSTANT_TIME = re.compile(r"[0-9]{14}(?:[0-9]{3})?")

# Operations whose commits change rows (Hudi's WriteOperationType.yieldChanges).
_NO_CHANGE_OPERATIONS = frozenset(
    {"CLUSTER", "COMPACT", "LOG_COMPACT", "INDEX", "ALTER_SCHEMA", "BOOTSTRAP", "UNKNOWN"}
)


def plan_changes(
    table: HudiTable,
    begin: str | None,
    end: str | None = None,
    infer: bool = False,
    boundary: str | Literal["unknown"] | None = "unknown",
    timeline: Timeline | None = None,
) -> ChangePlan:
    """Check a CDC query's range against the table and plan its splits.

    ``begin`` is exclusive (``earliest``, ``0``, ``000`` or any time before the first
    commit: from the oldest commit still readable),
    ``end`` inclusive (``None``: the latest commit). ``infer``: a table without CDC is
    planned too, its changes inferred from log files and base file versions
    (``BASE_FILE_DIFF``); it needs the record key meta field. ``boundary``: the
    table's ``earliest_valid_begin`` when the caller has it already. ``timeline``: the
    table's, or a tail of it holding every commit after ``begin`` (the commits a
    rewritten base file came from are then looked up by name, ``Timeline.including``)."""
    if not table.config.cdc_enabled:
        if not infer:
            raise BadInputError(
                f"{table.uri} is not a CDC table ({config.CDC_ENABLED.key} is not true); "
                "use the latest_state incremental query"
            )
        if not table.config.populate_meta_fields:
            raise UnsupportedTableError(
                f"{table.uri}: {config.CDC_ENABLED.key} is not true and "
                f"{config.POPULATE_META_FIELDS.key}=false: its changes cannot be inferred "
                "without the record key in its files"
            )
        mode = CdcMode.DATA_BEFORE_AFTER
    else:
        mode = parse_cdc_mode(table.config.cdc_logging_mode, f"{table.uri}: hoodie.properties")
    if boundary == "unknown":
        boundary = earliest_valid_begin(table)
    begin_time, end_time = table.incremental_range(begin, end)
    if begin_time is None:
        begin_time = boundary
    elif boundary is not None and comparable_instant(begin_time) < comparable_instant(boundary):
        if _before_first_write(table, begin_time):
            begin_time = boundary
        else:
            raise BadInputError(
                f"{table.uri}: {BEGIN}={begin} is before the earliest instant whose changes "
                f"are still readable; use {boundary} or later"
            )
    if begin_time and end_time and comparable_instant(begin_time) > comparable_instant(end_time):
        raise BadInputError(f"{table.uri}: {BEGIN}={begin} is after {END}={end}")
    timeline = timeline or table.timeline
    instants = tuple(_changing_commits(timeline, begin_time, end_time))
    timeline = timeline.including(_rewritten_from(timeline, instants))
    planner = _Planner(table, mode, timeline, inferred=not table.config.cdc_enabled)
    splits = [s for instant in instants for s in planner.splits_of(instant)]
    return ChangePlan(begin_time, end_time, instants, tuple(splits))


def _before_first_write(table: HudiTable, begin_time: str) -> bool:
    """Whether ``begin`` precedes the table's first write (archived ones included): such a
    begin means "from the start", like ``earliest``."""
    key = comparable_instant(begin_time)
    return all(
        key < comparable_instant(i.requested_time)
        for i in table.instants(include_archived=True)
        if i.is_write and i.is_completed
    )


def earliest_valid_begin(table: HudiTable) -> str | None:
    """The oldest ``begin`` whose every later commit can still be read: not before the
    last clean's earliest retained commit (older file versions may be gone), nor before
    the newest archived commit (older commit metadata left the active timeline)."""
    return readable_range(table).boundary


def _changing_commits(timeline: Timeline, begin: str | None, end: str | None) -> Iterable[Instant]:
    lo = comparable_instant(begin) if begin else None
    hi = comparable_instant(end) if end else None
    for instant in timeline.completed_writes:
        key = comparable_instant(instant.requested_time)
        if (lo is not None and key <= lo) or (hi is not None and key > hi):
            continue
        metadata = timeline.commit_metadata(instant)
        operation = (metadata.operation_type or "").upper()
        if operation in _NO_CHANGE_OPERATIONS or metadata.compacted:
            continue
        yield instant


def _rewritten_from(timeline: Timeline, instants: Iterable[Instant]) -> set[str]:
    """The commits that wrote the base files the ``instants`` rewrote, where their write
    stats do not name the file (``prevBaseFile``): their metadata names it. Instant
    times only (anything else is looked for in the table's listing, ``_base_files``)."""
    return {
        stat.prev_commit
        for instant in instants
        for stat in timeline.commit_metadata(instant).write_stats
        if stat.prev_commit
        and _INSTANT_TIME.fullmatch(stat.prev_commit)
        and not stat.prev_base_file
        and not stat.file_name.startswith(".")
    }


class _Planner:
    def __init__(
        self, table: HudiTable, mode: CdcMode, timeline: Timeline, inferred: bool = False
    ) -> None:
        self.table = table
        self.mode = mode
        # The planned commits' timeline (the table's, or a tail holding them); what a
        # slice's log files or a replaced group need is read from the table's.
        self.timeline = timeline
        self.inferred = inferred  # a table without CDC logs: rewrites are diffed
        self._slices: dict[str, dict[tuple[str, str], FileSlice]] = {}
        self._sizes: dict[FileSlice, int] = {}  # a rolled-over group's stats share one

    @cached_property
    def committed(self) -> tuple[str, ...]:
        """Every completed write: which log blocks a slice's reader applies."""
        return tuple(i.requested_time for i in self.table.timeline.completed_writes)

    def splits_of(self, instant: Instant) -> list[ChangeSplit]:
        metadata = self.timeline.commit_metadata(instant)
        ts = instant.requested_time
        splits = [
            self._split(ts, stat)
            for stat in metadata.write_stats
            # A file group rewritten without a change (every incoming record lost by
            # ordering value) has nothing to report and no CDC log.
            if stat.cdc_stats
            or stat.num_inserts
            or stat.num_updates
            or stat.num_deletes
            or stat.prev_commit is None
        ]
        if instant.action == Action.REPLACE_COMMIT:
            splits += self._replaced(instant, metadata.partition_to_replace_file_ids)
        return _one_per_log_file_group(splits)

    @cached_property
    def _rules(self) -> dict[str, Any]:
        """The table's merge rules as split fields (read once, when a slice has logs;
        UnsupportedTableError for rules hudi_sync cannot apply)."""
        rules = table_merge_rules(self.table)
        if rules.key_fields:
            raise UnsupportedTableError(
                f"{self.table.uri}: hoodie.populate.meta.fields=false: change data capture "
                "of log files is not supported for tables without meta fields"
            )
        return {
            "merge_mode": rules.mode.value,
            "ordering_field": rules.ordering_field,
            "delete_field": rules.delete_field,
            "delete_marker": rules.delete_marker,
        }

    def _split(self, ts: str, stat: WriteStat) -> ChangeSplit:
        def split(case: InferenceCase, **files: Any) -> ChangeSplit:
            return ChangeSplit(
                ts, case, stat.partition_path, stat.file_id, self.mode.value, **files
            )

        if stat.file_name.startswith("."):
            # The file group's slice at this commit: its base file and log files, as the
            # file-system view assigns them.
            found = self._slices_at(ts).get((stat.partition_path, stat.file_id))
            return split(
                InferenceCase.LOG_FILE,
                read_bytes=self._file_bytes(found) if found else 0,
                before_file=found.relative_base_path if found else None,
                log_files=_log_paths(found) if found else (),
                committed=self.committed,
                **self._rules,
            )
        previous = self._previous_base(stat)
        if stat.cdc_stats:
            # op_key_only reads the new and the previous base file (of about its size),
            # data_before the new one, data_before_after only the CDC log.
            base_reads = {CdcMode.OP_KEY_ONLY: 2, CdcMode.DATA_BEFORE: 1}.get(self.mode, 0)
            return split(
                InferenceCase.AS_IS,
                read_bytes=sum(stat.cdc_stats.values()) + base_reads * stat.file_size,
                cdc_files=tuple(sorted(stat.cdc_stats)),
                before_file=previous,
                after_file=stat.path,
            )
        if stat.num_updates == 0 and stat.num_writes == stat.num_inserts:
            return split(
                InferenceCase.BASE_FILE_INSERT,
                read_bytes=stat.file_size,
                after_file=stat.path,
            )
        if stat.num_writes == 0 and stat.num_deletes > 0:
            return split(
                InferenceCase.BASE_FILE_DELETE,
                before_file=previous,
            )
        if self.inferred:
            return split(
                InferenceCase.BASE_FILE_DIFF,
                read_bytes=None,
                before_file=previous,
                after_file=stat.path,
            )
        raise CorruptTableError(
            f"{self.table.uri}: commit {ts} rewrote file group {stat.file_id} "
            f"({stat.path}) without a CDC log file"
        )

    def _file_bytes(self, found: FileSlice) -> int:
        """What reading the slice's files costs, sized once a slice."""
        if found not in self._sizes:
            self._sizes[found] = found.file_bytes(self.table.location)
        return self._sizes[found]

    def _previous_base(self, stat: WriteStat) -> str | None:
        """The base file the commit rewrote (the one ``prevCommit`` wrote)."""
        if stat.prev_commit is None:
            return None
        name = (
            stat.prev_base_file
            or self._written_by_previous(stat)
            or self._base_files.get((stat.partition_path, stat.file_id, stat.prev_commit))
        )
        if name is None:
            return None
        return f"{stat.partition_path}/{name}" if stat.partition_path else name

    def _written_by_previous(self, stat: WriteStat) -> str | None:
        """The base file ``prevCommit`` wrote for the stat's file group, from that
        commit's write stats: no listing of the table (None when the commit is no longer
        on the active timeline, or wrote no base file of the group)."""
        previous = self._writes_by_time.get(stat.prev_commit or "")
        if previous is None:
            return None
        for earlier in self.timeline.commit_metadata(previous).write_stats:
            if (
                earlier.file_id == stat.file_id
                and earlier.partition_path == stat.partition_path
                and not earlier.file_name.startswith(".")
            ):
                return earlier.file_name
        return None

    @cached_property
    def _writes_by_time(self) -> dict[str, Instant]:
        return {i.requested_time: i for i in self.timeline.completed_writes}

    @cached_property
    def _base_files(self) -> dict[tuple[str, str, str], str]:
        """``(partition, file id, instant) -> base file name``, listed once per plan."""
        return {
            (partition, base.file_id, base.instant): base.name
            for partition, files in self.table.view.partitions.items()
            for base in files.base_files
        }

    def _slices_at(self, ts: str) -> dict[tuple[str, str], FileSlice]:
        """The snapshot's slices as of ``ts`` (with log files), computed once per instant."""
        if ts not in self._slices:
            self._slices[ts] = {
                (s.partition_path, s.file_id): s for s in self.table.view.slices_as_of(ts)
            }
        return self._slices[ts]

    def _replaced(
        self, instant: Instant, replaced: Mapping[str, tuple[str, ...]]
    ) -> list[ChangeSplit]:
        """Every replaced file group's rows are deleted, as of the commit before."""
        if not replaced:
            return []
        previous = [
            w.requested_time
            for w in self.table.timeline.completed_writes
            if comparable_instant(w.requested_time) < comparable_instant(instant.requested_time)
        ]
        if not previous:
            return []
        slices = self._slices_at(previous[-1])
        splits = []
        for partition, file_ids in sorted(replaced.items()):
            for file_id in file_ids:
                found = slices.get((partition, file_id))
                if found is None:
                    continue
                splits.append(
                    ChangeSplit(
                        instant=instant.requested_time,
                        case=InferenceCase.REPLACE_COMMIT,
                        partition_path=partition,
                        file_id=file_id,
                        mode=self.mode.value,
                        before_file=found.relative_base_path,
                        log_files=_log_paths(found),
                        committed=self.committed,
                        read_bytes=self._file_bytes(found),
                        **(self._rules if found.log_files else {}),
                    )
                )
        return splits


def _one_per_log_file_group(splits: list[ChangeSplit]) -> list[ChangeSplit]:
    """A commit's splits with one ``LOG_FILE`` split per file group: a deltacommit that
    rolled over to several log files has a write stat per file, and each split reads
    all of the commit's records of its file group."""
    seen: set[tuple[str, str]] = set()
    kept = []
    for split in splits:
        if split.case is InferenceCase.LOG_FILE:
            group = (split.partition_path, split.file_id)
            if group in seen:
                continue
            seen.add(group)
        kept.append(split)
    return kept


def _log_paths(found: FileSlice) -> tuple[str, ...]:
    """A slice's log files, table-relative, in the order the view sorted them."""
    partition = found.partition_path
    return tuple(f"{partition}/{log.name}" if partition else log.name for log in found.log_files)


__all__ = ["earliest_valid_begin", "plan_changes"]
