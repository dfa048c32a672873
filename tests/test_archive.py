"""Archived timelines: v6 archive log files and the v8+ LSM history.

The fixtures' archives are empty, so these tests archive a real fixture's oldest
commit the way Hudi does (move its instant files into the archive format) and check
that every instant of the table's life is still listed, and that files written by
archived commits still count as committed.
"""

from __future__ import annotations

from pathlib import Path

from hudi_sync.table import HudiTable, State
from hudi_sync.table.records.logfile import read_blocks
from tests import hudi_oracle
from tests.timeline_files import write_lsm_history, write_v1_archive


def test_v6_archive_log_is_listed_and_its_commits_stay_visible(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    path: Path = fixture_copy("cow/v6_simplekeygen_nonhivestyle")
    hoodie = path / ".hoodie"
    before = HudiTable.open(str(path))
    first, second = (i.requested_time for i in before.completed_commits())
    latest_before = before.file_slices()
    for name in (f"{first}.commit.requested", f"{first}.inflight", f"{first}.commit"):
        (hoodie / name).unlink()
    archive = write_v1_archive(
        hoodie / "archived",
        [
            ("20240101000000000", "commit", "COMPLETED"),
            ("20240101000000001", "clean", "COMPLETED"),
            (first, "commit", "REQUESTED"),
            (first, "commit", "INFLIGHT"),
            (first, "commit", "COMPLETED"),
        ],
    )
    assert [b.block_type for b in read_blocks(archive.read_bytes(), "test")] == [3]

    table = HudiTable.open(str(path))
    assert [i.requested_time for i in table.instants()] == [second]
    listed = [(i.requested_time, i.action, i.state) for i in table.instants(include_archived=True)]
    assert listed == [
        ("20240101000000000", "commit", State.COMPLETED),
        ("20240101000000001", "clean", State.COMPLETED),
        (first, "commit", State.COMPLETED),
        (second, "commit", State.COMPLETED),
    ]
    # The partition only the archived commit wrote ("20") is still in the snapshot.
    assert table.file_slices() == latest_before
    assert {s.partition_path for s in table.file_slices()} == {"10", "20", "30"}
    rows = sorted(
        (s.to_json() for s in table.file_slices()),
        key=lambda r: (r["partition_path"], r["file_id"]),
    )
    assert rows == hudi_oracle.slices(str(path))


def test_v8_lsm_history_is_listed_with_completion_times(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    path: Path = fixture_copy("cow/v8_simplekeygen_nonhivestyle")
    timeline = path / ".hoodie" / "timeline"
    before = HudiTable.open(str(path))
    first = before.completed_commits()[0]
    latest_before = before.file_slices()
    completed_file = timeline / first.file_name
    metadata = completed_file.read_bytes()
    for name in (f"{first.requested_time}.commit.requested", f"{first.requested_time}.inflight"):
        (timeline / name).unlink()
    completed_file.unlink()
    write_lsm_history(
        timeline / "history",
        [
            {
                "instantTime": first.requested_time,
                "completionTime": first.completion_time,
                "action": "commit",
                "metadata": metadata,
            }
        ],
    )
    table = HudiTable.open(str(path))
    archived = table.instants(include_archived=True)[0]
    assert (archived.requested_time, archived.completion_time, archived.action) == (
        first.requested_time,
        first.completion_time,
        "commit",
    )
    assert len(table.instants(include_archived=True)) == len(table.instants()) + 1
    assert table.file_slices() == latest_before
