"""What every warehouse target shares: object names, the sync marker, plans and results."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hudi_sync.errors import BadInputError

MARKER_PREFIX = "hudi_sync"
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

    def render(self) -> str:
        return f"{MARKER_PREFIX} instant={self.instant} base={self.base} mode={self.mode}"

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
