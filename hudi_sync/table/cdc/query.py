"""The CDC query (RFC-51): what changed, row by row, in the commits of ``(begin, end]``.

Planning (``plan_changes``, on the driver) turns each write stat of each commit in
range into a ``ChangeSplit`` by Hudi's inference cases:

- ``AS_IS``: the stat lists CDC log files (``cdcStats``); their records are the
  changes. Images the logging mode did not keep are looked up by key: ``before`` in
  the file group's previous base file, ``after`` in the one the commit wrote.
- ``BASE_FILE_INSERT``: a new base file holding only inserts; every row is ``i``.
- ``BASE_FILE_DELETE``: a delete that emptied a file group; every row of the previous
  base file is ``d``.
- ``LOG_FILE`` (Merge-on-Read): the file group as a snapshot reader saw it just
  before the commit against what it sees after, both merged by the table's merge
  rules, for the keys the commit's log records name. One split per file group and
  commit, however many log files the commit rolled over to.
- ``REPLACE_COMMIT``: every row of a file group a replacecommit replaced is ``d``.
- ``BASE_FILE_DIFF`` (only when inferring the changes of a table without CDC, which
  Hudi's CDC query refuses): a base file rewritten without a CDC log, compared with the
  version it replaced by record key: its rows this commit wrote are ``i`` or ``u``, the
  keys it no longer holds ``d``. Reads both files.

Reading (``read_split``) runs wherever the files can be opened (Spark's Python
workers), one split at a time, and yields rows ``op``, ``ts_ms`` (the commit's
instant), ``before``, ``after`` (JSON of the images, without meta fields).

Commits are chosen by requested time, as Hudi's CDC extractor does in every table
version; compaction and clustering commits carry no changes and are skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from functools import cached_property
from typing import Any, Literal, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_sync import config
from hudi_sync.errors import BadInputError, CorruptTableError, UnsupportedTableError
from hudi_sync.storage import Location, read_parquet
from hudi_sync.table.cdc.log import (
    CdcMode,
    arrow_rows,
    image_json,
    image_json_column,
    images_at,
    parse_cdc_mode,
    read_cdc_columns,
    read_cdc_file,
)
from hudi_sync.table.cdc.readable_range import readable_range
from hudi_sync.table.config.schema import META_FIELDS
from hudi_sync.table.files.filenames import parse_base_file
from hudi_sync.table.files.fs_view import FileSlice
from hudi_sync.table.read.slice_reader import align, merge_entries
from hudi_sync.table.read.snapshot import table_merge_rules
from hudi_sync.table.records.log_records import LogRecord, read_slice_log_records
from hudi_sync.table.records.merge import MergeMode, MergeRules, merge_records
from hudi_sync.table.table import HudiTable
from hudi_sync.table.timeline.active import Timeline
from hudi_sync.table.timeline.commit_metadata import WriteStat
from hudi_sync.table.timeline.instant import Action, Instant, comparable_instant

BEGIN = config.BEGIN.key
END = config.END.key
COMMIT_TIME = META_FIELDS[0]
RECORD_KEY = META_FIELDS[2]
CHANGE_SCHEMA = pa.schema(
    [
        pa.field("op", pa.string()),
        pa.field("ts_ms", pa.string()),
        pa.field("before", pa.string()),
        pa.field("after", pa.string()),
    ]
)
# A requested time as Hudi writes it: seconds, or milliseconds.
_INSTANT_TIME = re.compile(r"[0-9]{14}(?:[0-9]{3})?")
# Operations whose commits change rows (Hudi's WriteOperationType.yieldChanges).
_NO_CHANGE_OPERATIONS = frozenset(
    {"CLUSTER", "COMPACT", "LOG_COMPACT", "INDEX", "ALTER_SCHEMA", "BOOTSTRAP", "UNKNOWN"}
)


class InferenceCase(StrEnum):
    AS_IS = "AS_IS"
    BASE_FILE_INSERT = "BASE_FILE_INSERT"
    BASE_FILE_DELETE = "BASE_FILE_DELETE"
    LOG_FILE = "LOG_FILE"
    REPLACE_COMMIT = "REPLACE_COMMIT"
    BASE_FILE_DIFF = "BASE_FILE_DIFF"


@dataclass(frozen=True)
class ChangeSplit:
    """The changes one commit made to one file group, and the files that tell them.

    Paths are relative to the table base. ``committed`` lists, for ``LOG_FILE``, the
    instants whose log blocks count as the file group's earlier state; ``merge_mode``,
    ``ordering_field``, ``delete_field`` and ``delete_marker`` are the table's merge
    rules, which merge a slice's log records (``LOG_FILE``, a replaced MOR slice)."""

    instant: str
    case: InferenceCase
    partition_path: str
    file_id: str
    mode: str = CdcMode.DATA_BEFORE_AFTER.value
    cdc_files: tuple[str, ...] = ()
    before_file: str | None = None
    after_file: str | None = None
    log_files: tuple[str, ...] = ()
    committed: tuple[str, ...] = ()
    merge_mode: str = MergeMode.COMMIT_TIME_ORDERING.value
    ordering_field: str | None = None
    delete_field: str | None = None
    delete_marker: str | None = None
    read_bytes: int | None = None  # what reading it costs, from the write stats (None: unknown)
    # AS_IS: the part-th of ``parts`` equal runs of the CDC log's records (a large log
    # read by several tasks); other cases are not divided.
    part: int = 0
    parts: int = 1

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @property
    def rules(self) -> MergeRules:
        return MergeRules(
            MergeMode(self.merge_mode), self.ordering_field, self.delete_field, self.delete_marker
        )

    @classmethod
    def from_json(cls, text: str) -> ChangeSplit:
        raw = json.loads(text)
        for name in ("cdc_files", "log_files", "committed"):
            raw[name] = tuple(raw[name])
        raw["case"] = InferenceCase(raw["case"])
        return cls(**raw)


@dataclass(frozen=True)
class ChangePlan:
    """A CDC query's commits and splits."""

    begin: str | None
    end: str | None
    instants: tuple[Instant, ...]
    splits: tuple[ChangeSplit, ...] = field(default_factory=tuple)

    @property
    def read_bytes(self) -> int | None:
        """Bytes the splits read, from the commits' write stats and the slices' files
        (``None`` if any split reads files of unknown size: a base file a commit
        deleted from, an inferred diff)."""
        sizes = [s.read_bytes for s in self.splits]
        return None if any(size is None for size in sizes) else sum(s or 0 for s in sizes)


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


# -- reading ------------------------------------------------------------------------------
Image = Mapping[str, Any]
Change = tuple[str, Image | None, Image | None]


def read_split(location: Location, split: ChangeSplit) -> pa.Table:
    """The change rows of one split (``CHANGE_SCHEMA``), in the order they were logged.

    CDC logs (``AS_IS``) and base files are read column-wise: a CDC block is decoded
    into Arrow columns (``avro_arrow``), images the logging mode left out are looked up
    by key with Arrow kernels (a hash join), and the JSON images are built column by
    column (``image_json_column``). Other cases, and CDC blocks with a type the column
    decoder lacks, are read row by row, with the same result."""
    columns = _columns_of(location, split)
    if columns is None:
        return _rows_table(split, _split_changes(location, split))
    ops, before, after = columns
    count = len(ops)
    return pa.table(
        {
            "op": ops,
            "ts_ms": pa.array([split.instant] * count, pa.string()) if count else _EMPTY,
            "before": before,
            "after": after,
        },
        schema=CHANGE_SCHEMA,
    )


_EMPTY = pa.array([], pa.string())


def _rows_table(split: ChangeSplit, changes: list[Change]) -> pa.Table:
    ts = split.instant
    return pa.table(
        {
            "op": pa.array([c[0] for c in changes], pa.string()),
            "ts_ms": pa.array([ts] * len(changes), pa.string()),
            "before": pa.array([image_json(c[1], META_FIELDS) for c in changes], pa.string()),
            "after": pa.array([image_json(c[2], META_FIELDS) for c in changes], pa.string()),
        },
        schema=CHANGE_SCHEMA,
    )


Columns = tuple[pa.Array, pa.Array, pa.Array]  # op, before JSON, after JSON


def _columns_of(location: Location, split: ChangeSplit) -> Columns | None:
    """A split's ``op``, ``before`` and ``after`` columns read column-wise, or ``None``
    when it must be read row by row."""
    case = split.case
    if case is InferenceCase.AS_IS:
        return _as_is_columns(location, split)
    if case in (InferenceCase.BASE_FILE_INSERT, InferenceCase.BASE_FILE_DELETE):
        inserted = case is InferenceCase.BASE_FILE_INSERT
        table = _read_table(location, split.after_file if inserted else split.before_file)
        if table is None:
            return _EMPTY, _EMPTY, _EMPTY
        images = image_json_column(table, META_FIELDS)
        nothing = pa.nulls(table.num_rows, pa.string())
        ops = pa.array(["i" if inserted else "d"] * table.num_rows, pa.string())
        return (ops, nothing, images) if inserted else (ops, images, nothing)
    return None


def _as_is_columns(location: Location, split: ChangeSplit) -> Columns | None:
    files = [
        (_read_bytes(location, relative, location.uri_of(relative)), location.uri_of(relative))
        for relative in split.cdc_files
    ]
    records = read_cdc_columns(files, split.part, split.parts)
    if records is None:
        return None
    names = {f.name for f in records.type}
    if "op" not in names:
        return None
    ops = records.field("op").cast(pa.string())
    count = len(records)

    def image(name: str) -> pa.Array:
        if name not in names:
            return pa.nulls(count, pa.string())
        return image_json_column(records.field(name))

    mode = CdcMode(split.mode)
    if mode is CdcMode.DATA_BEFORE_AFTER:
        return ops, image("before"), image("after")
    if "record_key" not in names:
        return None
    # As str(record["record_key"]) of a record decoded one by one.
    keys = pc.fill_null(records.field("record_key").cast(pa.string()), "None")
    after = _images_by_key(location, split.after_file, keys, pc.not_equal(ops, "d"))
    if mode is CdcMode.DATA_BEFORE:
        return ops, image("before"), after
    before = _images_by_key(location, split.before_file, keys, pc.not_equal(ops, "i"))
    return ops, before, after


def _images_by_key(
    location: Location, relative: str | None, keys: pa.Array, wanted: pa.Array
) -> pa.Array:
    """For each of ``keys`` where ``wanted``, the JSON image of the base file's row with
    that record key (the last such row), else null: a hash join of the keys with the
    file's rows. Only the record-key and data columns are read."""
    wanted = pc.fill_null(wanted, True)  # a null op is neither "i" nor "d"
    count = len(keys)
    if relative is None or not pc.any(wanted).as_py():
        return pa.nulls(count, pa.string())
    table = _read_table(location, relative, data_only=True)
    if table is None or RECORD_KEY not in table.column_names:
        return pa.nulls(count, pa.string())
    needed = pc.unique(keys.filter(wanted))
    stored = table.column(RECORD_KEY).cast(pa.string())
    found = table.filter(pc.is_in(stored, value_set=needed))
    # The last row of a key wins (index_in finds the first: reverse).
    found = found.take(pa.array(np.arange(found.num_rows - 1, -1, -1, dtype=np.int64)))
    position = pc.index_in(keys, value_set=found.column(RECORD_KEY).cast(pa.string()))
    position = pc.if_else(wanted, position, pa.scalar(None, position.type))
    data = found.drop_columns([c for c in found.column_names if c in META_FIELDS])
    return image_json_column(images_at(data, position))


def _split_changes(location: Location, split: ChangeSplit) -> list[Change]:
    case = split.case
    if case is InferenceCase.BASE_FILE_INSERT:
        return [("i", None, row) for row in _rows(location, split.after_file)]
    if case is InferenceCase.BASE_FILE_DELETE:
        return [("d", row, None) for row in _rows(location, split.before_file)]
    if case is InferenceCase.REPLACE_COMMIT:  # the replaced slice, logs merged (MOR)
        base, records = _slice_records(location, split)
        if not records:
            return [("d", row, None) for row in _rows(location, split.before_file)]
        merged = _merged(base, records, split.rules, _where(location, split))
        return [("d", row, None) for row in merged.values()]
    if case is InferenceCase.LOG_FILE:
        return _log_file_changes(location, split)
    if case is InferenceCase.BASE_FILE_DIFF:
        return _base_file_diff(location, split)
    return _as_is_changes(location, split)


def _base_file_diff(location: Location, split: ChangeSplit) -> list[Change]:
    """BASE_FILE_DIFF: the rewritten base file against its previous version, by record
    key: rows the commit wrote (their commit time is its instant) are ``i`` or ``u``,
    keys only the previous version holds ``d``; rows copied over unchanged (a record
    that lost by ordering value keeps its old commit time) are no change."""
    before = {str(row[RECORD_KEY]): row for row in _rows(location, split.before_file)}
    changes: list[Change] = []
    kept: set[str] = set()
    for row in _rows(location, split.after_file):
        key = str(row[RECORD_KEY])
        kept.add(key)
        if row[COMMIT_TIME] == split.instant:
            old = before.get(key)
            changes.append(("u", old, row) if old is not None else ("i", None, row))
    changes += [("d", row, None) for key, row in before.items() if key not in kept]
    return changes


def _as_is_changes(location: Location, split: ChangeSplit) -> list[Change]:
    records: list[dict[str, Any]] = []
    for relative in split.cdc_files:
        where = location.uri_of(relative)
        records.extend(read_cdc_file(_read_bytes(location, relative, where), where))
    total = len(records)
    records = records[total * split.part // split.parts : total * (split.part + 1) // split.parts]
    mode = CdcMode(split.mode)
    if mode is CdcMode.DATA_BEFORE_AFTER:
        return [(r["op"], r.get("before"), r.get("after")) for r in records]
    needs_after = [str(r["record_key"]) for r in records if r["op"] != "d"]
    after = _rows_by_key(location, split.after_file, needs_after)
    if mode is CdcMode.DATA_BEFORE:
        return [
            (r["op"], r.get("before"), after.get(str(r["record_key"])) if r["op"] != "d" else None)
            for r in records
        ]
    needs_before = [str(r["record_key"]) for r in records if r["op"] != "i"]
    before = _rows_by_key(location, split.before_file, needs_before)
    return [
        (
            r["op"],
            before.get(str(r["record_key"])) if r["op"] != "i" else None,
            after.get(str(r["record_key"])) if r["op"] != "d" else None,
        )
        for r in records
    ]


def _log_file_changes(location: Location, split: ChangeSplit) -> list[Change]:
    """LOG_FILE: for each key the commit's log records name, what a snapshot reader saw
    just before the commit against what it sees after it, both merged by the table's
    rules: ``i`` when the key appears, ``d`` when it goes (a delete block's record or
    a delete in a data block that wins), ``u`` when the record it shows changes (a
    record that loses by ordering value changes nothing)."""
    base, records = _slice_records(location, split)
    keys = list(dict.fromkeys(r.key for r in records if r.instant == split.instant))
    if not keys:
        return []
    wanted, where = set(keys), _where(location, split)
    before = _merged(base, records, split.rules, where, wanted, leave_out=split.instant)
    after = _merged(base, records, split.rules, where, wanted)
    changes: list[Change] = []
    for key in keys:
        old, new = before.get(key), after.get(key)
        if old is None and new is not None:
            changes.append(("i", None, new))
        elif old is not None and new is None:
            changes.append(("d", old, None))
        elif old is not None and new is not None and old != new:
            changes.append(("u", old, new))
    return changes


def _slice_records(
    location: Location, split: ChangeSplit
) -> tuple[pa.Table | None, list[LogRecord]]:
    """A file group's base file rows and its log records up to ``split.instant`` (the
    committed blocks written after the base file), in merge order."""
    base_instant = (
        parse_base_file(split.before_file.rsplit("/", 1)[-1]).instant if split.before_file else None
    )
    ts = comparable_instant(split.instant)
    applies = {
        c
        for c in split.committed
        if comparable_instant(c) <= ts
        and (base_instant is None or comparable_instant(c) > comparable_instant(base_instant))
    }
    files = [
        (_read_bytes(location, relative, location.uri_of(relative)), location.uri_of(relative))
        for relative in split.log_files
    ]
    # Read as one slice: a rollback block in a later file cancels blocks of earlier ones.
    records = read_slice_log_records(files, applies.__contains__)
    return _read_table(location, split.before_file), records


def _merged(
    base: pa.Table | None,
    records: list[LogRecord],
    rules: MergeRules,
    where: str,
    keys: set[str] | None = None,
    leave_out: str | None = None,
) -> dict[str, dict[str, Any]]:
    """The rows a snapshot reader sees for ``keys`` (all: None): the base rows merged
    with the log records by the table's rules (``merge_records``), without the records
    of the instant ``leave_out``."""
    rows, entries = merge_entries(
        [r for r in records if r.instant != leave_out and (keys is None or r.key in keys)]
    )
    if base is not None and keys is not None:
        stored = base.column(RECORD_KEY).cast(pa.string())
        base = base.filter(pc.is_in(stored, value_set=pa.array(sorted(keys), pa.string())))
    schema = _rows_schema(base, rows)
    if base is not None:
        base = align(base, schema, where)
    log_rows = pa.Table.from_pylist(rows, schema=schema)
    merged = merge_records(base, log_rows, entries, rules)
    return {str(row[RECORD_KEY]): row for row in arrow_rows(merged)}


def _where(location: Location, split: ChangeSplit) -> str:
    return location.uri_of(split.before_file or split.partition_path)


def _rows_schema(base: pa.Table | None, rows: list[dict[str, Any]]) -> pa.Schema:
    """The base file's columns, then those only log records have (a later schema's)."""
    fields = list(base.schema.remove_metadata()) if base is not None else []
    names = {f.name for f in fields}
    if rows and any(name not in names for row in rows for name in row):
        inferred = pa.array(rows).type
        fields += [f for f in inferred if f.name not in names]
    return pa.schema(fields)


def _read_bytes(location: Location, relative: str, where: str) -> bytes:
    try:
        return bytes(location.fs.cat_file(location.join(relative)))
    except FileNotFoundError:
        raise CorruptTableError(f"{where}: file listed by the commit is missing") from None


def _read_table(
    location: Location, relative: str | None, data_only: bool = False
) -> pa.Table | None:
    """A base file's rows; ``data_only``: only the record key and the data columns
    (no other meta field), string columns that are all dictionary-encoded read as
    dictionaries (decoded after the rows are picked)."""
    if relative is None:
        return None
    path = location.join(relative)
    try:
        with location.fs.open(path, "rb") as handle:
            if not data_only:
                return cast(pa.Table, read_parquet(handle))
            parquet = pq.ParquetFile(handle)
            names = [
                n for n in parquet.schema_arrow.names if n == RECORD_KEY or n not in META_FIELDS
            ]
            dictionaries = _dictionary_columns(parquet, names)
            if dictionaries:
                parquet = pq.ParquetFile(handle, read_dictionary=dictionaries)
            # One thread: splits are read in parallel already (tasks, or driver threads).
            return parquet.read(columns=names, use_threads=False)
    except FileNotFoundError:
        raise CorruptTableError(
            f"{location.uri_of(relative)}: base file needed by the CDC query is missing (cleaned?)"
        ) from None


def _dictionary_columns(parquet: pq.ParquetFile, names: list[str]) -> list[str]:
    """Top-level string columns small enough per row (under 4 bytes, less than a plain
    string's length prefix) to be dictionary indices in every row group: read as
    dictionaries they skip building every row's string."""
    metadata = parquet.metadata
    schema = parquet.schema_arrow
    sizes: dict[str, int] = {}
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for index in range(row_group.num_columns):
            column = row_group.column(index)
            sizes[column.path_in_schema] = (
                sizes.get(column.path_in_schema, 0) + column.total_uncompressed_size
            )
    rows = max(metadata.num_rows, 1)
    return [
        name
        for name in names
        if pa.types.is_string(schema.field(name).type)
        and name in sizes
        and sizes[name] < 4 * rows
        and metadata.num_rows > 0
    ]


def _rows(location: Location, relative: str | None) -> list[dict[str, Any]]:
    table = _read_table(location, relative)
    return arrow_rows(table) if table is not None else []


def _rows_by_key(
    location: Location, relative: str | None, keys: list[str]
) -> dict[str, dict[str, Any]]:
    """Rows of a base file whose record key is one of ``keys``."""
    if not keys:
        return {}
    table = _read_table(location, relative)
    if table is None:
        return {}
    wanted = table.filter(pc.is_in(table.column(RECORD_KEY), value_set=pa.array(keys)))
    return {str(row[RECORD_KEY]): row for row in arrow_rows(wanted)}


def change_rows(location: Location, splits: Iterable[ChangeSplit], threads: int = 1) -> pa.Table:
    """Every split's rows, in split order (for callers without Spark), read by up to
    ``threads`` threads (Parquet and Arrow kernels run without the interpreter lock)."""
    todo = list(splits)
    if threads > 1 and len(todo) > 1:
        with ThreadPoolExecutor(max_workers=min(threads, len(todo))) as pool:
            tables = list(pool.map(lambda split: read_split(location, split), todo))
    else:
        tables = [read_split(location, split) for split in todo]
    return pa.concat_tables(tables) if tables else CHANGE_SCHEMA.empty_table()


def divide_splits(splits: Iterable[ChangeSplit], part_bytes: int, most: int) -> list[ChangeSplit]:
    """The splits with each large CDC log that needs no lookup (``data_before_after``)
    divided into parts of about ``part_bytes`` (at most ``most``), so that several
    tasks decode it; splits that look images up in base files stay whole (each part
    would read the whole base files again)."""
    divided: list[ChangeSplit] = []
    for split in splits:
        count = 1
        if (
            split.case is InferenceCase.AS_IS
            and CdcMode(split.mode) is CdcMode.DATA_BEFORE_AFTER
            and split.read_bytes
            and split.parts == 1
        ):
            count = max(1, min(most, -(-split.read_bytes // max(part_bytes, 1))))
        if count == 1:
            divided.append(split)
        else:
            divided += [replace(split, part=k, parts=count) for k in range(count)]
    return divided


__all__ = [
    "CHANGE_SCHEMA",
    "ChangePlan",
    "ChangeSplit",
    "InferenceCase",
    "change_rows",
    "divide_splits",
    "earliest_valid_begin",
    "plan_changes",
    "read_split",
]
