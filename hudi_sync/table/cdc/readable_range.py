"""The commits whose changes the CDC query can still read, and how that range moves.

A ``begin`` is readable when it is not before the last clean's earliest retained commit
(older file versions may be gone) nor before the newest archived commit (older commit
metadata left the active timeline). ``readable_range`` finds both on the whole active
timeline. A reader that comes back after each commit (the change feed) keeps the range
and moves it on the timeline's tail since (``ReadableRange.advanced``): only a new
clean moves it there, and whatever else could (an archival, a restore, a write pending
then that completed) removes an instant the tail is asked to hold, which sends the
reader back to the whole timeline.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from hudi_sync.table.table import HudiTable
from hudi_sync.table.timeline.active import Timeline
from hudi_sync.table.timeline.instant import Action, comparable_instant


@dataclass(frozen=True)
class ReadableRange:
    """The parts of the readable range: the oldest completed write on the active
    timeline, the latest completed clean and its earliest retained commit, and the
    newest archived completed write before that oldest one."""

    first_write: str | None
    clean: str | None
    retained: str | None
    archived: str | None

    @property
    def boundary(self) -> str | None:
        """The oldest readable ``begin`` (exclusive), None: from the first commit."""
        candidates = [c for c in (self.retained, self.archived) if c]
        return max(candidates, key=comparable_instant) if candidates else None

    def watched(self) -> tuple[str, ...]:
        """The older instants ``advanced`` needs the tail to hold besides its own."""
        return tuple(i for i in (self.first_write, self.clean) if i)

    def advanced(self, tail: Timeline, pending: Collection[str]) -> ReadableRange | None:
        """The range now, from ``tail``: the timeline from the instant this range was
        found at on, with ``watched`` and the instants ``pending`` then. None when only
        the whole timeline can tell: the oldest write or the latest clean left it
        (archived, rolled back, restored away), or an instant pending then completed as
        a write or left (it may be older than the oldest write)."""
        found = {i.requested_time: i for i in tail.instants}
        for requested in pending:
            instant = found.get(requested)
            if instant is None or (instant.is_completed and instant.is_write):
                return None
        first = found.get(self.first_write or "")
        if first is None or not (first.is_completed and first.is_write):
            return None
        cleans = tail.completed([Action.CLEAN])
        if self.clean is not None and self.clean not in {c.requested_time for c in cleans}:
            return None
        latest = max(cleans, key=lambda c: comparable_instant(c.requested_time), default=None)
        if latest is None or latest.requested_time == self.clean:
            return self
        retained = tail.clean_metadata(latest).earliest_commit_to_retain or None
        return ReadableRange(self.first_write, latest.requested_time, retained, self.archived)


def readable_range(table: HudiTable) -> ReadableRange:
    """The readable range on the table's whole active timeline (and archived one)."""
    timeline = table.timeline
    clean = timeline.latest_clean()
    retained = timeline.clean_metadata(clean).earliest_commit_to_retain if clean else None
    writes = timeline.completed_writes
    archived = None
    if writes:
        first_active = comparable_instant(writes[0].requested_time)
        # Requested times only: no completion time (a file's mtime on older tables) is read.
        older = [
            i.requested_time
            for i in table.archived_instants()
            if i.is_write and i.is_completed and comparable_instant(i.requested_time) < first_active
        ]
        archived = max(older, key=comparable_instant) if older else None
    return ReadableRange(
        writes[0].requested_time if writes else None,
        clean.requested_time if clean else None,
        retained or None,
        archived,
    )


__all__ = ["ReadableRange", "readable_range"]
