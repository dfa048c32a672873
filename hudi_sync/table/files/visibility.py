"""Which written files a query sees: committed instants, and visibility at a query instant.

A file counts only if the instant that wrote it completed, or is older than the active
timeline (archived: Hudi treats what it wrote as committed); a query at instant ``t``
sees the committed files written at or before ``t``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hudi_sync.table.timeline.active import Timeline
from hudi_sync.table.timeline.instant import Action, comparable_instant

# The actions whose instants write data files: the first of them on the active
# timeline marks where archival stopped.
_WRITE_LIKE = frozenset(
    {
        Action.COMMIT,
        Action.DELTA_COMMIT,
        Action.REPLACE_COMMIT,
        Action.COMPACTION,
        Action.LOG_COMPACTION,
        Action.CLUSTERING,
    }
)


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

    @classmethod
    def of(cls, timeline: Timeline) -> CommittedInstants:
        """The committed instants of a table's timeline."""
        completed = frozenset(i.requested_time for i in timeline.completed_writes)
        return cls(completed, _timeline_start(timeline))


def _timeline_start(timeline: Timeline) -> str | None:
    """Instants older than the first write-type instant of the active timeline were
    archived; Hudi treats files they wrote as committed."""
    for instant in timeline.instants:
        if instant.action in _WRITE_LIKE:
            return comparable_instant(instant.requested_time)
    return None


def visibility(
    timeline: Timeline, committed: Callable[[str], bool], as_of: str | None
) -> tuple[str, Callable[[str], bool]] | None:
    """For a query at ``as_of`` (latest when ``None``): the instant, and whether a file
    instant is visible at it (committed, not later). ``None`` when nothing has been
    written.

    The commit metadata of the write the snapshot is read at is parsed first
    (``Timeline.snapshot_write``): a corrupt one fails the query."""
    snapshot = timeline.snapshot_write(as_of)
    if as_of is None:
        if snapshot is None:
            return None
        as_of = snapshot.requested_time
    limit = comparable_instant(as_of)

    def visible(ts: str) -> bool:
        return comparable_instant(ts) <= limit and committed(ts)

    return as_of, visible
