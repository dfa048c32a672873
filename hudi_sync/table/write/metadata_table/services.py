"""The metadata table's own table services: clean, compaction, archival.

Hudi 1.x runs them (``HoodieBackedTableMetadataWriter.performTableServices``) when a
data write starts, before the write's own MDT deltacommit: first any compaction a crash
left pending, then

- clean, unless fewer than 3 instants completed on the MDT since its latest compaction
  (readers that opened the old slice get time to finish): KEEP_LATEST_COMMITS with
  ``min(hoodie.cleaner.commits.retained, 20)`` commits retained;
- compaction when due (``compaction``);
- archival with the data table's ``hoodie.keep.min.commits``/``max.commits``, never at
  or past the MDT's latest compaction (deltacommits after it are what the next
  compaction counts and merges) nor the data table's earliest active write or earliest
  pending instant (the MDT deltacommit of a data instant stays while the data instant
  is active).

Here they run in the same place: just before the data instant's MDT deltacommit, under
the data table's lock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hudi_sync import config as cfg
from hudi_sync.storage import Location
from hudi_sync.table.metadata_table.reader import MetadataTableReader
from hudi_sync.table.table import HudiTable
from hudi_sync.table.timeline.active import Timeline
from hudi_sync.table.timeline.instant import Action, comparable_instant
from hudi_sync.table.write.archiver import ArchivalPolicy, archive
from hudi_sync.table.write.cleaner import clean
from hudi_sync.table.write.metadata_table.compaction import (
    MetadataCompactor,
    latest_compaction_time,
)
from hudi_sync.table.write.timeline import TimelineWriter

METADATA_CLEANER_COMMITS_RETAINED = 20  # Hudi's cap on the MDT's retained commits
CLEAN_AFTER_COMPACTION = 3  # completed MDT instants after a compaction before a clean


@dataclass(frozen=True)
class MetadataServicesSettings:
    """What the MDT's services follow (Hudi's options; the last two are the data
    table's own, applied to the MDT as Hudi does)."""

    max_delta_commits: int = cfg.METADATA_COMPACT_MAX_DELTA_COMMITS.read({})
    commits_retained: int = cfg.COMMITS_RETAINED.read({})
    archival: ArchivalPolicy = field(default_factory=ArchivalPolicy)

    @property
    def mdt_commits_retained(self) -> int:
        return min(self.commits_retained, METADATA_CLEANER_COMMITS_RETAINED)


@dataclass(frozen=True)
class ServicesRun:
    """What one run did (for tests and logs)."""

    cleaned: str | None = None
    compacted: str | None = None
    archived: tuple[str, ...] = ()


def open_metadata_table(data_location: Location, data_timeline: Timeline) -> HudiTable:
    """The MDT as a table of its own (cleaner and archiver work on it)."""
    reader = MetadataTableReader(data_location, data_timeline)
    return HudiTable(reader.location, reader.config)


def archival_limit(mdt: Timeline, data: Timeline) -> str:
    """The earliest MDT instant its archival must keep (module docstring)."""
    bounds = [latest_compaction_time(mdt) or "0" * 17]
    bounds += [i.requested_time for i in data.instants if i.is_write][:1]
    bounds += [i.requested_time for i in data.pending][:1]
    return min(bounds, key=comparable_instant)


def run_table_services(
    data_location: Location,
    data_timeline: Timeline,
    writer: TimelineWriter,
    version: int,
    settings: MetadataServicesSettings,
) -> ServicesRun:
    """Clean, compact and archive the MDT as Hudi would at this point."""
    reader = MetadataTableReader(data_location, data_timeline)
    compactor = MetadataCompactor(reader, writer, version)
    compactor.finish_pending()
    compactor.roll_back_pending_log_compactions()
    reader = MetadataTableReader(data_location, data_timeline)
    if not reader.timeline.completed([Action.DELTA_COMMIT]):
        return ServicesRun()
    cleaned = None
    latest = latest_compaction_time(reader.timeline)
    since = [
        i
        for i in reader.timeline.instants
        if i.is_completed
        and (latest is None or comparable_instant(i.requested_time) > comparable_instant(latest))
    ]
    if latest is None or len(since) >= CLEAN_AFTER_COMPACTION:
        mdt = HudiTable(reader.location, reader.config)
        cleaned = clean(mdt, writer, settings.mdt_commits_retained)
        reader = MetadataTableReader(data_location, data_timeline)
    compacted = MetadataCompactor(reader, writer, version).compact_if_due(
        data_timeline, settings.max_delta_commits
    )
    mdt = HudiTable(reader.location, reader.config)
    archived = archive(mdt, settings.archival, archival_limit(mdt.timeline, data_timeline))
    return ServicesRun(cleaned, compacted, tuple(archived))
