"""What a sync will do and did: its plan (``--dry-run`` prints it), the plan when the
objects stay as they are or follow a restore back, and the result."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hudi_sync.table.timeline.instant import comparable_instant
from hudi_sync.warehouse.common.marker import SyncMarker

if TYPE_CHECKING:
    from hudi_sync.table import HudiTable
    from hudi_sync.warehouse.common.names import ObjectNames


@dataclass(frozen=True)
class SyncPlan:
    """What a sync will do: statements or API calls, in order, for ``--dry-run``."""

    target: str
    action: str  # "create", "update", "recreate", "restored", "noop", "skip-older"
    steps: list[str] = field(default_factory=list)
    reason: str = ""

    def result(
        self, instant: str | None, objects: tuple[str, ...], dry_run: bool = False
    ) -> SyncResult:
        """The result of this plan: applied, or only printed (``dry-run``)."""
        action = "dry-run" if dry_run else self.action
        return SyncResult(self.target, instant, action, objects, self.reason)


def restore_reason(
    table: HudiTable, view: str, current: SyncMarker | None, wanted: SyncMarker
) -> str | None:
    """Why the objects follow the table back from the newer instant they show to
    ``wanted``: that instant is no completed write of the table's timeline any more, and
    a completed restore or rollback on it lists the instant as undone. None otherwise
    (not older, other objects, or a backwards move nothing explains: another table at
    the same path, a folder copied back, commit files removed by hand)."""
    if current is None or current.is_empty or not current.same_objects(wanted):
        return None
    if comparable_instant(current.instant) <= comparable_instant(wanted.instant):
        return None
    timeline = table.timeline
    if any(i.requested_time == current.instant for i in timeline.completed_writes):
        return None  # still a commit: this sync is the one behind
    undone_by = timeline.undone_by(current.instant)
    if undone_by is None:
        return None
    shown = "the empty table" if wanted.is_empty else wanted.instant
    return (
        f"{view} showed {current.instant}, which {undone_by.action} "
        f"{undone_by.requested_time} undid: moved back to {shown}"
    )


def settled_plan(
    target: str,
    view: str,
    current: SyncMarker | None,
    wanted: SyncMarker,
    force: bool,
    unchanged: bool = True,
    restored: str | None = None,
) -> SyncPlan | None:
    """The plan when the objects stay as they are: the view already shows ``wanted``
    (and its definitions are ``unchanged``), or the same objects show a newer instant,
    which a sync never moves back from without ``force`` unless a restore or rollback
    undid it (``restored``: ``restore_reason``). None when they must change."""
    if force or current is None:
        return None
    if current == wanted and unchanged:
        shown = "the empty table (no commit yet)" if wanted.is_empty else wanted.instant
        return SyncPlan(target, "noop", [], f"{view} already shows {shown}")
    newer = comparable_instant(current.instant) > comparable_instant(wanted.instant)
    if current.same_objects(wanted) and newer and restored is None:
        reason = f"{view} shows newer {current.instant}; use --force"
        return SyncPlan(target, "skip-older", [], reason)
    return None


def retired_feed(names: ObjectNames, as_of: bool) -> tuple[str, ...]:
    """``<t>_changes`` when this sync publishes no change feed: an earlier sync's is
    dropped (``hudi_sync.sync.change.feed`` turned off). Empty for a time-travel sync,
    whose objects never have one."""
    return (names.feed,) if names.changes is None and not as_of else ()


def objects_settled(
    wanted: Iterable[str], retired: Iterable[str], exists: Callable[[str], bool]
) -> bool:
    """Every object of ``wanted`` exists and none of ``retired`` does. A sync at the
    instant its objects already show still changes them when not: an option turned on
    or off with no new commit (the change feed, a renamed view) names other objects,
    and reporting ``noop`` would leave them missing or stale (``settled_plan``'s
    ``unchanged``)."""
    return all(exists(n) for n in wanted) and not any(exists(n) for n in retired)


def offline_note(why: str, needs: str) -> str:
    """The one line an offline dry run's plan carries (``SyncPlan.reason``)."""
    return (
        f"(offline: {why}) existing objects were NOT compared: this is a first sync's "
        f"plan; a real run needs {needs}"
    )


def changing_plan(target: str, action: str, steps: list[str], restored: str | None) -> SyncPlan:
    """The plan of a sync that changes the objects; one that follows a restore or
    rollback back (``restore_reason``) is ``restored`` and says why."""
    if restored is not None:
        return SyncPlan(target, "restored", steps, restored)
    return SyncPlan(target, action, steps)


@dataclass(frozen=True)
class SyncResult:
    target: str
    instant: str | None
    action: str
    objects: tuple[str, ...] = ()
    reason: str = ""
    # What the target published in the table's own storage, for the report: the Iceberg
    # target's ``PublishedIceberg.summary()`` (naming its ``metadata_location``).
    iceberg: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, object]:
        shown: dict[str, object] = {
            "target": self.target,
            "instant": self.instant,
            "action": self.action,
            "objects": list(self.objects),
            "reason": self.reason,
        }
        if self.iceberg is not None:  # the whole summary is the report's "iceberg"
            shown["metadata_location"] = self.iceberg.get("metadata_location")
        return shown
