"""The cleaner (KEEP_LATEST_COMMITS): delete file versions no retained query can read.

A version is a file slice: its base file with its CDC logs and, in a Merge-on-Read
table, the log files that belong to it."""

from __future__ import annotations

from hudi_sync.storage import contained_file
from hudi_sync.table.files.fs_view import PartitionFiles
from hudi_sync.table.table import HudiTable
from hudi_sync.table.timeline.instant import comparable_instant
from hudi_sync.table.write.listing_source import listing_source
from hudi_sync.table.write.timeline import TimelineWriter


def clean(table: HudiTable, timeline: TimelineWriter, retained: int) -> str | None:
    """Keep what queries as of the last ``retained`` commits need: every version written
    at or after the earliest retained commit, plus the version visible at it; drop file
    groups replaced before it. Returns the clean instant, or ``None`` if nothing to do."""
    writes = table.timeline.completed_writes
    if len(writes) <= retained:
        return None
    earliest = writes[-retained].requested_time
    limit = comparable_instant(earliest)
    replaced_before = {
        key
        for key, instant in table.timeline.replaced_file_ids().items()
        if comparable_instant(instant) < limit
    }
    deleted: dict[str, list[str]] = {}
    dropped: list[str] = []  # partitions this clean leaves without a file group
    source = listing_source(table.view)
    for partition, files in table.view.partitions.items():
        # A CDC log is part of the slice its commit wrote, a Merge-on-Read log part of
        # the slice it belongs to: cleaned with that slice's base file.
        slice_logs: dict[tuple[str, str], list[str]] = {}
        for log in files.cdc_files:
            slice_logs.setdefault((log.file_id, log.instant), []).append(log.name)
        mor_slices: set[tuple[str, str]] = set()
        for log, slice_instant in table.view.slice_of_logs(files):
            slice_logs.setdefault((log.file_id, slice_instant), []).append(log.name)
            mor_slices.add((log.file_id, slice_instant))
        versions: dict[str, list[tuple[str, str]]] = {}
        names_of: dict[str, list[str]] = {}
        with_base: set[tuple[str, str]] = set()
        for base in files.base_files:
            if table.view.is_committed(base.instant):
                versions.setdefault(base.file_id, []).append(
                    (comparable_instant(base.instant), base.name)
                )
                version_logs = slice_logs.get((base.file_id, base.instant), [])
                names_of[base.name] = [base.name, *version_logs]
                with_base.add((base.file_id, base.instant))
        # A slice of log files alone older than a doomed version (e.g. logs whose
        # deltacommit's completion time was archived, so they no longer join the slice
        # they completed in) goes with it.
        log_only: dict[str, list[tuple[str, str]]] = {}
        for file_id, slice_instant in sorted(mor_slices - with_base):
            key = f"\0{file_id}\0{slice_instant}"
            log_only.setdefault(file_id, []).append((comparable_instant(slice_instant), key))
            names_of[key] = list(slice_logs[(file_id, slice_instant)])
        for file_id, group in versions.items():
            group.sort()
            if (partition, file_id) in replaced_before:
                doomed = [name for _, name in group]
            else:
                # Queries as of `earliest` or later read the newest version at or
                # before `earliest`, or a later one.
                older = [(key, name) for key, name in group if key <= limit][:-1]
                doomed = [name for _, name in older]
                if older:
                    newest_doomed = older[-1][0]
                    doomed += [n for k, n in log_only.get(file_id, []) if k < newest_doomed]
            for name in (n for doomed_name in doomed for n in names_of[doomed_name]):
                # Listed names are refused here, before anything is recorded or
                # deleted, unless they name a file inside the table.
                deleted.setdefault(partition, []).append(contained_file(partition, name, source))
        if partition and _emptied(files, deleted.get(partition, [])):
            dropped.append(partition)
    if not deleted:
        return None
    # Recorded before deleting: once a file may be gone, time travel before `earliest`
    # must already be refused (a crash in between leaves only extra files).
    instant = timeline.clean(earliest, writes[-1].requested_time, deleted, dropped)
    for relative_paths in deleted.values():
        for relative in relative_paths:
            table.location.remove(table.location.join(relative))
    return instant


def _emptied(files: PartitionFiles, deleted: list[str]) -> bool:
    """Whether a clean deleting ``deleted`` (table-relative paths) leaves the partition
    without a data file: its file groups were all replaced (a ``delete_partition``), which
    Hudi's clean marks ``isPartitionDeleted``."""
    present = [f.name for f in files.base_files] + [
        f.name for f in (*files.log_files, *files.cdc_files)
    ]
    gone = {path.rsplit("/", 1)[-1] for path in deleted}
    return bool(present) and gone.issuperset(present)
