"""When the metadata table's compaction is due: Hudi counts every deltacommit requested
since the latest compaction, pending ones too (``CompactionUtils
.getDeltaCommitsSinceLatestCompaction`` takes the whole deltacommit timeline)."""

from __future__ import annotations

from hudi_sync.storage import open_location
from hudi_sync.table import HudiTable
from hudi_sync.table.metadata_table.reader import MetadataTableReader
from hudi_sync.table.read.snapshot import read_snapshot
from hudi_sync.table.timeline.instant import Action
from hudi_sync.table.write.metadata_table.compaction import latest_compaction_time
from hudi_sync.table.write.metadata_table.services import (
    MetadataServicesSettings,
    run_table_services,
)
from hudi_sync.table.write.timeline import TimelineWriter
from tests.metadata_checks import listed_files, mdt_files, rows_by_key
from tests.warehouse_rows import hudi_rs_rows

MDT = ".hoodie/metadata"


def test_a_pending_deltacommit_counts_towards_the_compaction_trigger(  # type: ignore[no-untyped-def]
    fixture_copy,
) -> None:
    path = fixture_copy("cow/v9_txns_simple_meta")
    table = HudiTable.open(str(path))
    rows = rows_by_key(read_snapshot(table), "txn_id")
    mdt_timeline = MetadataTableReader.of(table).timeline
    latest = latest_compaction_time(mdt_timeline)
    completed = [
        i
        for i in mdt_timeline.completed([Action.DELTA_COMMIT])
        if latest is None or i.requested_time > latest
    ]
    # A write that died after its metadata deltacommit started: pending on both timelines.
    location = open_location(str(path))
    writer = TimelineWriter(location, str(path / MDT / ".hoodie/timeline"), 9)
    crashed = writer.new_instant_time()
    (path / ".hoodie/timeline" / f"{crashed}.commit.requested").write_bytes(b"")
    for state in ("requested", "inflight"):
        (path / MDT / ".hoodie/timeline" / f"{crashed}.deltacommit.{state}").write_bytes(b"")
    settings = MetadataServicesSettings(max_delta_commits=len(completed) + 1)
    table = HudiTable.open(str(path))
    run = run_table_services(location, table.timeline, writer, 9, settings)
    assert run.compacted is not None  # due: the pending deltacommit is the one more
    compacted = HudiTable.open(str(path))
    assert latest_compaction_time(MetadataTableReader.of(compacted).timeline) == run.compacted
    assert rows_by_key(hudi_rs_rows(str(path)), "txn_id") == rows
    partitions, files = mdt_files(path)
    assert files == listed_files(path) and partitions == sorted(files)
