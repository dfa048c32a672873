"""Deriving a snapshot from the previous one: the timeline's tail since it, each commit's
changes to the file groups, and why a derivation is not safe (then a full listing).

The snapshot manifests, the deltas, the folded logs and the change feed all derive the
next publication this way; a rollback or restore since, or a write pending at the
previous publication that has completed since, makes them list in full.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from hudi_sync.table import HudiTable
from hudi_sync.table.timeline.active import Timeline
from hudi_sync.table.timeline.instant import Action, comparable_instant
from hudi_sync.table.timeline.listing import TimelineListing


def timeline_tail(
    table: HudiTable,
    instant: str,
    pending: Sequence[str],
    listing: TimelineListing | None = None,
) -> Timeline:
    """The table's timeline from a published snapshot's instant on, plus the writes that
    were pending at it: all a derivation from that snapshot reads, without parsing the
    names of the (possibly tens of thousands of) instants before it. ``listing``: the
    sync's listing of the timeline folder (``TimelineListing``), else a new one."""
    return Timeline(table.location, table.config, since=instant, also=pending, listing=listing)


def commit_changes(
    table: HudiTable, after: str, up_to: str, timeline: Timeline | None = None
) -> Iterator[tuple[tuple[str, str], str, bool]]:
    """``((partition, file id), base file name, new group)`` of every completed write
    after ``after`` up to ``up_to``, in commit order; the name is empty for a file group
    a replacecommit removed, ``new group`` true for a write stat without
    ``prevCommit``. ``timeline`` defaults to the table's (a tail is enough)."""
    timeline = timeline or table.timeline
    lo, hi = comparable_instant(after), comparable_instant(up_to)
    extension = "." + table.config.base_file_format.lower()
    for instant in timeline.completed_writes:
        key = comparable_instant(instant.requested_time)
        if key <= lo or key > hi:
            continue
        metadata = timeline.commit_metadata(instant)
        for partition, file_ids in metadata.partition_to_replace_file_ids.items():
            for file_id in file_ids:
                yield (partition, file_id), "", False
        for stat in metadata.write_stats:
            if stat.path.endswith(extension):
                yield (stat.partition_path, stat.file_id), stat.file_name, stat.prev_commit is None


def why_not_incremental(
    timeline: Timeline, instant: str | None, pending: tuple[str, ...]
) -> str | None:
    """Why the snapshot after ``instant`` (published with these ``pending`` writes)
    cannot be derived from it plus the commit metadata since; None when it can. A tail
    of the timeline from the oldest of ``instant`` and ``pending`` is enough."""
    known = {i.requested_time for i in timeline.instants}
    if instant not in known:
        return "the previous snapshot's instant is no longer on the active timeline"
    since = comparable_instant(instant or "")
    # A clean deletes only file versions no latest snapshot has (older slices, groups
    # replaced earlier), so it leaves the derivation valid; with Hudi's automatic clean
    # after most commits, treating it as unsafe would mean a full listing every sync.
    for candidate in timeline.instants:
        if (
            candidate.action in (Action.ROLLBACK, Action.RESTORE)
            and candidate.is_completed
            and comparable_instant(candidate.requested_time) > since
        ):
            return f"{candidate.action} {candidate.requested_time} since the previous snapshot"
    completed = {i.requested_time for i in timeline.completed_writes}
    if any(p in completed for p in pending):
        return "a write pending at the previous snapshot has completed since"
    return None


@dataclass(frozen=True)
class TailChanges:
    """What the completed writes after a published snapshot up to the next one changed,
    read from their commit metadata alone (``tail_changes``)."""

    timeline: Timeline  # the tail they were read from (``timeline_tail``)
    partitions: set[str]  # partitions written to or with file groups replaced
    # ``(partition, file id) -> base file name`` of the groups' newest base files, the
    # name empty for a group a replacecommit removed (``commit_changes``, last one wins).
    base_files: dict[tuple[str, str], str]


def tail_changes(
    table: HudiTable,
    before: str,
    pending: Sequence[str],
    instant: str,
    listing: TimelineListing | None = None,
) -> TailChanges | None:
    """The changes of the completed writes after ``before`` up to ``instant``: all a
    publication derived from the one at ``before`` (with those ``pending`` writes)
    needs, from the timeline's tail only, so its cost follows the commits, not the
    table. None when a derivation is not safe (``why_not_incremental``)."""
    tail = timeline_tail(table, before, pending, listing)
    if why_not_incremental(tail, before, tuple(pending)) is not None:
        return None
    lo, hi = comparable_instant(before), comparable_instant(instant)
    touched: set[str] = set()
    for write in tail.completed_writes:
        if lo < comparable_instant(write.requested_time) <= hi:
            metadata = tail.commit_metadata(write)
            touched.update(stat.partition_path for stat in metadata.write_stats)
            touched.update(metadata.partition_to_replace_file_ids)
    files = {key: name for key, name, _new in commit_changes(table, before, instant, tail)}
    return TailChanges(tail, touched, files)


def touched_partitions(
    table: HudiTable,
    before: str,
    pending: Sequence[str],
    instant: str,
    listing: TimelineListing | None = None,
) -> set[str] | None:
    """The partitions the completed writes after ``before`` up to ``instant`` wrote to
    or replaced file groups in: all a publication derived from the one at ``before``
    (with those ``pending`` writes) must list again. None when a derivation is not safe
    (``why_not_incremental``): list the whole table."""
    changes = tail_changes(table, before, pending, instant, listing)
    return None if changes is None else changes.partitions


def pending_writes(timeline: Timeline, instant: str | None) -> tuple[str, ...]:
    """Writes requested before ``instant`` that had not completed: they would change the
    snapshot behind an incremental derivation's back when they complete."""
    if instant is None:
        return ()
    limit = comparable_instant(instant)
    return tuple(
        i.requested_time
        for i in timeline.pending
        if comparable_instant(i.requested_time) < limit
        and i.action
        in (
            Action.COMMIT,
            Action.DELTA_COMMIT,
            Action.REPLACE_COMMIT,
            Action.COMPACTION,
            Action.CLUSTERING,
        )
    )
