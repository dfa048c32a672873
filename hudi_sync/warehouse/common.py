"""What every warehouse target shares: object names, the sync marker, plans and results."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hudi_sync.errors import BadInputError
from hudi_sync.table.instant import comparable_instant

MARKER_PREFIX = "hudi_sync"
# The instant a marker records for objects created empty, before the table's first
# completed commit: it sorts before every real instant, so the sync after the first
# commit updates the objects in place (never "skip-older"), and a rerun is a no-op.
EMPTY_INSTANT = "0"
_MARKER = re.compile(r"hudi_sync instant=(?P<instant>\d+) base=(?P<base>\S+) mode=(?P<mode>\S+)")


@dataclass(frozen=True)
class ObjectNames:
    """``<t>`` (the view), ``<t>_manifest`` and ``<t>_history``; time-travel syncs add
    ``_as_of_<instant>`` so they never replace the live objects."""

    view: str
    manifest: str
    history: str

    @classmethod
    def for_table(cls, name: str, as_of_instant: str | None = None) -> ObjectNames:
        if not name or "\x00" in name:
            raise BadInputError(f"warehouse table name {name!r} is empty or has a NUL byte")
        view = f"{name}_as_of_{as_of_instant}" if as_of_instant else name
        return cls(view, f"{view}_manifest", f"{view}_history")


@dataclass(frozen=True)
class SyncMarker:
    """Recorded on the warehouse objects: the instant they show, the table base and mode."""

    instant: str
    base: str
    mode: str

    @classmethod
    def of(cls, instant: str | None, base: str, mode: str) -> SyncMarker:
        """The marker of a sync to ``instant`` (``None``: the table's empty snapshot)."""
        return cls(instant or EMPTY_INSTANT, base, mode)

    @property
    def is_empty(self) -> bool:
        """The objects were created empty, before the table's first commit."""
        return self.instant == EMPTY_INSTANT

    def render(self) -> str:
        return f"{MARKER_PREFIX} instant={self.instant} base={self.base} mode={self.mode}"

    def same_objects(self, other: SyncMarker | None) -> bool:
        """Same table base and mode: the objects can be updated in place."""
        return other is not None and (self.base, self.mode) == (other.base, other.mode)

    @classmethod
    def parse(cls, text: str | None) -> SyncMarker | None:
        match = _MARKER.search(text or "")
        if match is None:
            return None
        return cls(match["instant"], match["base"], match["mode"])


@dataclass(frozen=True)
class SyncPlan:
    """What a sync will do: statements or API calls, in order, for ``--dry-run``."""

    target: str
    action: str  # "create", "update", "noop", "skip-older"
    steps: list[str] = field(default_factory=list)
    reason: str = ""

    def result(
        self, instant: str | None, objects: tuple[str, ...], dry_run: bool = False
    ) -> SyncResult:
        """The result of this plan: applied, or only printed (``dry-run``)."""
        action = "dry-run" if dry_run else self.action
        return SyncResult(self.target, instant, action, objects, self.reason)


def settled_plan(
    target: str,
    view: str,
    current: SyncMarker | None,
    wanted: SyncMarker,
    force: bool,
    unchanged: bool = True,
) -> SyncPlan | None:
    """The plan when the objects stay as they are: the view already shows ``wanted``
    (and its definitions are ``unchanged``), or the same objects show a newer instant,
    which a sync never moves back from without ``force``. None when they must change."""
    if force or current is None:
        return None
    if current == wanted and unchanged:
        shown = "the empty table (no commit yet)" if wanted.is_empty else wanted.instant
        return SyncPlan(target, "noop", [], f"{view} already shows {shown}")
    newer = comparable_instant(current.instant) > comparable_instant(wanted.instant)
    if current.same_objects(wanted) and newer:
        reason = f"{view} shows newer {current.instant}; use --force"
        return SyncPlan(target, "skip-older", [], reason)
    return None


@dataclass(frozen=True)
class SyncResult:
    target: str
    instant: str | None
    action: str
    objects: tuple[str, ...] = ()
    reason: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "target": self.target,
            "instant": self.instant,
            "action": self.action,
            "objects": list(self.objects),
            "reason": self.reason,
        }
