"""A log compaction left pending on the metadata table is dealt with before anything else.

Hudi runs the metadata table's pending log compactions first; one found inflight is rolled
back (``logCompact``: "log compaction plans are mutable plans"): its log files deleted, a
rollback instant recorded, the instant gone. hudi_sync does the same, and also rolls back
one only requested (it runs no log compaction; nothing was written yet).
"""

from __future__ import annotations

import io

import fastavro
import pytest

from hudi_sync.storage import open_location
from hudi_sync.table import HudiTable
from hudi_sync.table.metadata_table.reader import MetadataTableReader
from hudi_sync.table.read.snapshot import read_snapshot
from hudi_sync.table.write.metadata_table.compaction import plan_bytes, plan_operations
from hudi_sync.table.write.metadata_table.services import (
    MetadataServicesSettings,
    run_table_services,
)
from hudi_sync.table.write.timeline import TimelineWriter
from tests.metadata_checks import listed_files, mdt_files, rows_by_key
from tests.warehouse_rows import hudi_rs_rows

MDT = ".hoodie/metadata"


@pytest.mark.parametrize("state", ["requested", "inflight"])
def test_a_pending_log_compaction_is_rolled_back_first(  # type: ignore[no-untyped-def]
    fixture_copy, state: str
) -> None:
    path = fixture_copy("cow/v9_txns_simple_meta")
    table = HudiTable.open(str(path))
    rows = rows_by_key(read_snapshot(table), "txn_id")
    location = open_location(str(path))
    timeline = path / MDT / ".hoodie/timeline"
    writer = TimelineWriter(location, str(timeline), 9)
    instant = writer.new_instant_time()
    plan = plan_bytes(plan_operations(MetadataTableReader.of(table), instant))
    (timeline / f"{instant}.logcompaction.requested").write_bytes(plan)
    partial = None
    if state == "inflight":  # the crash came as it began its log file
        (timeline / f"{instant}.logcompaction.inflight").write_bytes(b"")
        partial = path / MDT / "files" / f".files-0000-0_{instant}.log.1_0-1-0"
        partial.write_bytes(b"")
    settings = MetadataServicesSettings(max_delta_commits=100)
    run_table_services(location, table.timeline, writer, 9, settings)
    assert not list(timeline.glob(f"{instant}.*")) and not list(timeline.glob(f"{instant}_*"))
    (rollback,) = [
        record
        for file in timeline.glob("*.rollback")
        for record in fastavro.reader(io.BytesIO(file.read_bytes()))
        if record["commitsRollback"] == [instant]
    ]
    assert rollback["instantsRollback"] == [{"commitTime": instant, "action": "logcompaction"}]
    if partial is not None:
        assert not partial.exists()
        assert rollback["totalFilesDeleted"] == 1
    assert rows_by_key(read_snapshot(HudiTable.open(str(path))), "txn_id") == rows
    assert rows_by_key(hudi_rs_rows(str(path)), "txn_id") == rows
    partitions, files = mdt_files(path)
    assert files == listed_files(path) and partitions == sorted(files)
