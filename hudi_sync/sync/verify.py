"""``hudi-sync verify``: compare each target's objects with the table, so drift is found
before a user finds it; ``--repair`` re-syncs what a sync can fix and verifies again.

What is compared, per target (its objects read through ``inspect``, never written):

- the marker's instant against the timeline: equal, behind (completed writes not
  synced) or ahead (an instant no longer on the timeline: a restore or rollback the
  objects did not follow, or one nothing on the timeline explains);
- the objects a sync makes exist (manifest, history, view; ``_rt`` and ``_changes``
  where the table asks), and none shows another table;
- the declared columns and types against those a sync declares (the target's own
  mapping, ``declared_columns``), and the table's partition fields among the history's;
- the base files the manifest object lists against a listing of the snapshot the
  marker names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError
from hudi_sync.manifest.change_feed import feed_enabled
from hudi_sync.manifest.log_parquet import LogParquetStore
from hudi_sync.manifest.snapshot import DEFAULT_KEEP
from hudi_sync.sync.hook import sync_with_options
from hudi_sync.sync.job import Target, built_keys_refusal
from hudi_sync.table import HudiTable
from hudi_sync.table.timeline.instant import comparable_instant
from hudi_sync.warehouse.common import ObjectNames
from hudi_sync.warehouse.common.state import Columns, TargetState

# Kinds of difference; a sync fixes all but OTHER_TABLE, UNMARKED (an object no sync
# made, or whose marker was removed) and UNEXPLAINED_AHEAD: ``sync --force`` replaces them.
NOT_SYNCED = "not-synced"
BEHIND = "behind"
AHEAD = "ahead"
UNEXPLAINED_AHEAD = "ahead-unexplained"
OTHER_TABLE = "other-table"
UNMARKED = "unmarked"
MISSING_OBJECT = "missing-object"
COLUMNS = "columns"
PARTITIONS = "partitions"
MANIFEST = "manifest"
_NOT_REPAIRABLE = frozenset({OTHER_TABLE, UNMARKED, UNEXPLAINED_AHEAD})
# Drift a sync leaves alone unless forced: its marker says the objects are current, so
# only re-creating every object (``force``) repairs them.
_NEEDS_RECREATE = frozenset({MISSING_OBJECT, COLUMNS, PARTITIONS, MANIFEST})
_SHOWN_NAMES = 5  # file names a manifest difference lists


@runtime_checkable
class Inspectable(Protocol):
    """A target whose objects verify can read (read-only)."""

    @property
    def name(self) -> str: ...

    def inspect(self, table: HudiTable, change_feed: bool) -> TargetState:
        """The target's objects for ``table``, read without writing anything."""
        ...

    def declared_columns(
        self, table: HudiTable, names: ObjectNames, instant: str | None
    ) -> dict[str, Columns]:
        """The columns a sync to ``instant`` declares, by object (the sync's mapping)."""
        ...


@dataclass(frozen=True)
class Difference:
    """One way a target's objects differ from the table."""

    kind: str
    object: str
    detail: str

    @property
    def repairable(self) -> bool:
        return self.kind not in _NOT_REPAIRABLE

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "object": self.object, "detail": self.detail}


@dataclass(frozen=True)
class TargetCheck:
    """A target compared with the table: the instant its objects show and the table's
    latest completed write, and every difference found."""

    target: str
    shown: str | None
    latest: str | None
    differences: tuple[Difference, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.differences

    def lines(self) -> list[str]:
        """One line per difference, or one saying the target agrees."""
        if self.ok:
            return [f"{self.target}: in sync at {self.latest or 'the empty table'}"]
        return [f"{self.target}: {d.kind}: {d.object}: {d.detail}" for d in self.differences]

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "ok": self.ok,
            "shown": self.shown,
            "latest": self.latest,
            "differences": [d.to_json() for d in self.differences],
        }


@dataclass(frozen=True)
class VerifyReport:
    """Every target's check; after ``--repair``, the checks before it, the sync's errors
    and what the second verify still found."""

    table: str
    checks: tuple[TargetCheck, ...]
    before_repair: tuple[TargetCheck, ...] | None = None
    repair_errors: Mapping[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def lines(self) -> list[str]:
        shown: list[str] = []
        if self.before_repair is not None:
            for check in self.before_repair:
                shown += [f"found: {line}" for line in check.lines() if not check.ok]
            shown += [f"not repaired: {w}: {m}" for w, m in self.repair_errors.items()]
        for check in self.checks:
            shown += check.lines()
        return shown

    def to_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "table": self.table,
            "ok": self.ok,
            "targets": [c.to_json() for c in self.checks],
        }
        if self.before_repair is not None:
            shown["repair"] = {
                "found": [c.to_json() for c in self.before_repair],
                "errors": dict(self.repair_errors),
            }
        return shown


def _inspectable(target: Target) -> Inspectable:
    if not isinstance(target, Inspectable):
        raise BadInputError(
            f"{target.name}: verify does not read this target's objects yet "
            "(it reads duckdb, bigquery and snowflake targets)"
        )
    return target


def check_target(table: HudiTable, target: Target, change_feed: str = "auto") -> TargetCheck:
    """Compare one target's objects with ``table`` (``change_feed``:
    ``hudi_sync.sync.change.feed``, which decides whether ``<t>_changes`` is expected)."""
    inspectable = _inspectable(target)
    feed = bool(getattr(target, "supports_change_feed", False)) and feed_enabled(table, change_feed)
    state = inspectable.inspect(table, feed)
    timeline = table.timeline
    writes = [i.requested_time for i in timeline.completed_writes]
    latest = writes[-1] if writes else None
    names = state.names
    marker = state.marker
    found = _other_tables(state)
    if found:
        return TargetCheck(target.name, marker.instant if marker else None, latest, tuple(found))
    shown, on_timeline, marker_found = _marker_differences(table, state, writes)
    found += marker_found
    found += _missing_objects(table, target, state, feed)
    if not state.objects:
        return TargetCheck(target.name, None, latest, tuple(found))
    if on_timeline:
        declared = inspectable.declared_columns(table, names, shown)
        found += _column_differences(state, declared)
        found += _manifest_differences(table, state, shown)
    found += _partition_differences(table, state)
    return TargetCheck(target.name, shown, latest, tuple(found))


def _other_tables(state: TargetState) -> list[Difference]:
    found = []
    for name, shown in state.objects.items():
        if shown.marker is None and shown.marked:
            detail = (
                "has no sync marker: made by hand or its marker removed (sync --force replaces it)"
            )
            found.append(Difference(UNMARKED, name, detail))
        elif shown.marker is not None and shown.marker.base != state.base:
            detail = (
                f"shows the table at {shown.marker.base!r}, not {state.base!r} "
                "(sync --force replaces it)"
            )
            found.append(Difference(OTHER_TABLE, name, detail))
    return found


def _marker_differences(
    table: HudiTable, state: TargetState, writes: list[str]
) -> tuple[str | None, bool, list[Difference]]:
    """The instant the objects show, whether it is the table's (a completed write, or
    the empty table before the first), and how the marker differs from the timeline."""
    names, marker = state.names, state.marker
    latest = writes[-1] if writes else None
    marked = names.view
    if names.snapshot_view is not None and names.snapshot_view in state.objects:
        marked = names.snapshot_view
    if marker is None and marked not in state.objects:
        # The marked object is gone (reported missing): the others tell the instant.
        marker = next((o.marker for o in state.objects.values() if o.marker), None)
    if marker is None:
        if not state.objects:
            return None, False, [Difference(NOT_SYNCED, names.view, "no objects: never synced")]
        # The marked object is missing (reported so) and no other carries a marker
        # (Snowflake's external tables): the instant shown is unknown.
        return None, False, []
    shown = None if marker.is_empty else marker.instant
    if shown == latest:
        return shown, True, []
    if shown is None or shown in writes:
        behind = writes if shown is None else writes[writes.index(shown) + 1 :]
        detail = (
            f"shows {_instant(shown)}, the table is at {latest}: {len(behind)} commit(s) not synced"
        )
        return shown, True, [Difference(BEHIND, marked, detail)]
    if latest is not None and comparable_instant(shown) < comparable_instant(latest):
        detail = f"shows {shown}, no longer on the active timeline; the table is at {latest}"
        return shown, False, [Difference(BEHIND, marked, detail)]
    undone = table.timeline.undone_by(shown)
    if undone is not None:
        detail = (
            f"shows {shown}, which {undone.action} {undone.requested_time} undid; "
            f"the table is at {_instant(latest)}"
        )
        return shown, False, [Difference(AHEAD, marked, detail)]
    detail = (
        f"shows {shown}, not a completed write of the table and undone by no restore or "
        f"rollback; the table is at {_instant(latest)} (sync --force moves it back)"
    )
    return shown, False, [Difference(UNEXPLAINED_AHEAD, marked, detail)]


def _instant(instant: str | None) -> str:
    return instant or "the empty table"


def _missing_objects(
    table: HudiTable, target: Target, state: TargetState, feed: bool
) -> list[Difference]:
    names = state.names
    if not state.objects:
        return []  # never synced: said once (NOT_SYNCED)
    expected = list(state.made or (names.view, names.manifest, names.history))
    rt = names.snapshot_view
    if state.made is None and rt is not None and _gets_snapshot_view(table, target):
        expected.append(rt)
    if feed and names.changes is not None and names.changes not in expected:
        expected.append(names.changes)
    return [
        Difference(MISSING_OBJECT, name, "does not exist")
        for name in expected
        if name not in state.objects
    ]


def _gets_snapshot_view(table: HudiTable, target: Target) -> bool:
    """A sync gives this Merge-on-Read table an ``_rt`` view on ``target`` (its merge
    rules can be shown by a view, and the target can build keys the table lacks)."""
    if built_keys_refusal(table, target) is not None:
        return False
    return LogParquetStore(table, DEFAULT_KEEP).rules_refusal() is None


def _column_differences(state: TargetState, declared: Mapping[str, Columns]) -> list[Difference]:
    found = []
    for name, columns in declared.items():
        present = state.objects.get(name)
        if present is None:
            continue
        has, wants = dict(present.columns), dict(columns)
        details = [f"column {c} is missing ({t})" for c, t in wants.items() if c not in has]
        details += [
            f"column {c} is not the table's ({t})" for c, t in has.items() if c not in wants
        ]
        details += [
            f"column {c} is {has[c]}, the table's schema gives {t}"
            for c, t in wants.items()
            if c in has and has[c] != t
        ]
        found += [Difference(COLUMNS, name, detail) for detail in details]
    return found


def _partition_differences(table: HudiTable, state: TargetState) -> list[Difference]:
    history = state.objects.get(state.partitioned or state.names.history)
    if history is None:
        return []
    fields = tuple(p.name for p in table.partition_fields)
    if state.partition_columns is not None and state.wanted_partitions is not None:
        if state.partition_columns == state.wanted_partitions:
            return []
        detail = (
            f"partition columns {', '.join(state.partition_columns) or 'none'}, a sync "
            f"declares {', '.join(state.wanted_partitions) or 'none'}"
        )
        return [Difference(PARTITIONS, history.name, detail)]
    columns = {c for c, _ in history.columns}
    return [
        Difference(PARTITIONS, history.name, f"partition field {f} is not a column")
        for f in fields
        if f not in columns
    ]


def _manifest_differences(
    table: HudiTable, state: TargetState, instant: str | None
) -> list[Difference]:
    manifest = state.manifest_object or state.names.manifest
    if manifest not in state.objects:
        return []
    if state.manifest_files is None:
        if state.manifest_error is None:
            return []  # the target does not tell them (a delta manifest)
        return [Difference(MANIFEST, manifest, f"cannot be read: {state.manifest_error}")]
    listed = set(table.view.base_files_as_of(instant).values()) if instant else set()
    missing = sorted(listed - state.manifest_files)
    extra = sorted(state.manifest_files - listed)
    found = []
    if missing:
        detail = f"{len(missing)} base file(s) of {instant} missing: {_some(missing)}"
        found.append(Difference(MANIFEST, manifest, detail))
    if extra:
        detail = f"{len(extra)} file(s) not in the snapshot at {_instant(instant)}: {_some(extra)}"
        found.append(Difference(MANIFEST, manifest, detail))
    return found


def _some(names: Sequence[str]) -> str:
    more = len(names) - _SHOWN_NAMES
    return ", ".join(names[:_SHOWN_NAMES]) + (f" and {more} more" if more > 0 else "")


def verify_table(
    table: HudiTable, targets: Sequence[Target], change_feed: str = "auto"
) -> VerifyReport:
    """Check every target (``check_target``); nothing is written."""
    if not targets:
        raise BadInputError(f"verify needs a target: set {cfg.SYNC_TOOLS.key}")
    for target in targets:
        _inspectable(target)  # refused before any target is read
    return VerifyReport(table.uri, tuple(check_target(table, t, change_feed) for t in targets))


def repair_table(
    table: HudiTable, targets: Sequence[Target], options: Mapping[str, Any]
) -> VerifyReport:
    """Verify; re-sync each target whose differences a sync fixes (re-creating its
    objects where their marker says they are current: missing objects, altered columns,
    an unreadable manifest), then verify again. A target with a difference no sync
    should fix (another table's objects, an instant ahead nothing explains) is left
    as it is and stays in the report. ``options``: the hook's options the sync reads."""
    change_feed = cfg.CHANGE_FEED.read(options)
    before = verify_table(table, targets, change_feed)
    errors: dict[str, str] = {}
    plain: list[Target] = []
    recreated: list[Target] = []
    for target, check in zip(targets, before.checks, strict=True):
        if check.ok:
            continue
        if not all(d.repairable for d in check.differences):
            kept = sorted({d.kind for d in check.differences if not d.repairable})
            errors[target.name] = "not re-synced: " + ", ".join(kept)
            continue
        kinds = {d.kind for d in check.differences}
        (recreated if kinds & _NEEDS_RECREATE else plain).append(target)
    for group, force in ((plain, False), (recreated, True)):
        if group:
            report = sync_with_options(table, group, options, force)
            errors.update(report.errors)
    fresh = HudiTable.open(table.uri, table.location.storage_options)
    after = verify_table(fresh, targets, change_feed)
    return VerifyReport(table.uri, after.checks, before.checks, errors)


__all__ = [
    "Difference",
    "Inspectable",
    "TargetCheck",
    "VerifyReport",
    "check_target",
    "repair_table",
    "verify_table",
]
