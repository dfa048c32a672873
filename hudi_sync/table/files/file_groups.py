"""A partition's file groups under Hudi's full slice rules.

Each committed base file starts a slice of its file group; MOR log files join the
slice they belong to (by base instant in timeline layout 1, by completion time in
layout 2); the query instant then picks each group's newest visible slice, a pending
compaction's slice merged into the slice before it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from hudi_sync.table.files.filenames import BaseFile, LogFile
from hudi_sync.table.timeline.active import Timeline
from hudi_sync.table.timeline.instant import comparable_instant


@dataclass
class SliceBuilder:
    """One slice of a file group while its files are gathered."""

    base_instant: str
    base_file: BaseFile | None = None
    log_files: list[LogFile] = field(default_factory=list)


def log_order(log: LogFile) -> tuple[str, int, str]:
    """Log files in the order they were written."""
    return (comparable_instant(log.instant), log.version, log.write_token)


def completion_times(timeline: Timeline) -> dict[str, str]:
    """Each completed write's completion time (its requested time in layout 1)."""
    return {
        i.requested_time: i.completion_time or i.requested_time for i in timeline.completed_writes
    }


def slice_groups(
    base_files: Iterable[BaseFile],
    log_files: Iterable[LogFile],
    committed: Callable[[str], bool],
    completion_of: Mapping[str, str] | None,
) -> dict[str, dict[str, SliceBuilder]]:
    """``file id -> base instant -> slice`` of one partition: every committed base
    file's slice, with the log files that belong to it. ``completion_of`` (from
    ``completion_times``) in timeline layout 2, ``None`` in layout 1. The query
    instant picks among the slices later."""
    groups: dict[str, dict[str, SliceBuilder]] = defaultdict(dict)
    for base in base_files:
        if committed(base.instant):
            groups[base.file_id][base.instant] = SliceBuilder(base.instant, base)
    # Oldest first: in layout 2 the first log of a group without a base file (the
    # bucket index writes such groups) starts its slice, and later ones join it.
    for log in sorted(log_files, key=log_order):
        if completion_of is None:
            key: str | None = log.instant
        else:
            key = _slice_key_for_log(log, groups, committed, completion_of)
        if key is not None:
            slices = groups[log.file_id]
            slices.setdefault(key, SliceBuilder(key)).log_files.append(log)
    return groups


def _slice_key_for_log(
    log: LogFile,
    groups: dict[str, dict[str, SliceBuilder]],
    committed: Callable[[str], bool],
    completion_of: Mapping[str, str],
) -> str | None:
    """Layout 2: a committed log file belongs to the slice with the largest base
    instant at or before its deltacommit's completion time.

    Like hudi-rs, a slice keeps every committed log file even when the query is
    as of an earlier instant: readers skip log blocks newer than the query
    instant, so the slice's files do not depend on it.
    """
    if not committed(log.instant):
        return None
    completion = comparable_instant(completion_of.get(log.instant, log.instant))
    candidates = [ts for ts in groups.get(log.file_id, {}) if comparable_instant(ts) <= completion]
    return max(candidates, key=comparable_instant) if candidates else log.instant


def latest_slice(
    slices: dict[str, SliceBuilder],
    visible: Callable[[str], bool],
    pending_compactions: set[str],
    read_optimized: bool,
) -> SliceBuilder | None:
    """The newest usable slice of a file group; a pending compaction's slice (logs but no
    base yet) is merged into the slice before it."""
    ordered = sorted(slices.values(), key=lambda s: comparable_instant(s.base_instant))
    usable: list[SliceBuilder] = []
    for builder in ordered:
        merges_into_previous = (
            builder.base_file is None and builder.base_instant in pending_compactions and usable
        )
        if merges_into_previous:
            usable[-1].log_files.extend(builder.log_files)
            continue
        if not visible(builder.base_instant):
            continue
        usable.append(builder)
    if read_optimized:
        usable = [s for s in usable if s.base_file is not None]
    return usable[-1] if usable else None
