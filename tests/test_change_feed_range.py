"""The change feed's readable range moves on the timeline's tail (issue 51, P13): a sync
after one commit reads the timeline files of the instants since the previous sync only
(not the latest clean's again), and the range it publishes is, sync after sync, the one
the whole timeline gives, through new cleans and an archival; the feed then holds
exactly the commits the CDC query can read."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from fsspec.implementations.local import LocalFileSystem

from benchmarks.gen_table import TableSpec, append_upsert, generate
from hudi_sync.errors import CorruptTableError
from hudi_sync.manifest.change_feed import CHANGES_FOLDER, ChangeFeedStore
from hudi_sync.storage import Location
from hudi_sync.sync.job import SyncReport, sync_table
from hudi_sync.table import HudiTable
from hudi_sync.table.cdc.plan import earliest_valid_begin, plan_changes
from hudi_sync.table.cdc.readable_range import readable_range
from hudi_sync.table.write.archiver import ArchivalPolicy, archive
from hudi_sync.warehouse.duckdb import DuckDBTarget
from tests.timeline_files import write_clean

SPEC = TableSpec(
    commits=8, partitions=2, file_groups=12, insert_commits=2, failed_writes=1, name="t"
)


class ReadLog(LocalFileSystem):
    """The local file system, noting every file it reads whole."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.read: list[str] = []

    def cat_file(self, path: Any, start: Any = None, end: Any = None, **kwargs: Any) -> Any:
        self.read.append(str(path))
        return super().cat_file(path, start, end, **kwargs)


def _table(tmp_path: Path) -> tuple[Path, list[str]]:
    """A generated Copy-on-Write table (no CDC logs: its changes are inferred) and its
    completed writes."""
    generate(tmp_path, SPEC, verbose=False)
    path = tmp_path / SPEC.name
    return path, _writes(path)


def _writes(path: Path) -> list[str]:
    return [i.requested_time for i in HudiTable.open(str(path)).completed_commits()]


def _sync(table: HudiTable | Path, database: Path) -> SyncReport:
    opened = table if isinstance(table, HudiTable) else str(table)
    report = sync_table(opened, [DuckDBTarget(str(database), "t")], change_feed="on")
    assert report.ok, report.errors
    return report


def _assert_the_whole_timelines_range(path: Path, database: Path, report: SyncReport) -> None:
    """The range the sync published and kept is the whole timeline's, and the feed holds
    the changes of every commit the CDC query can read, and of no other."""
    table = HudiTable.open(str(path))
    boundary = earliest_valid_begin(table)
    assert report.changes is not None and report.changes.after == boundary
    described = path / CHANGES_FOLDER / "snapshots" / str(report.instant) / "feed.json"
    kept = json.loads(described.read_text())["readable"]
    assert kept == dataclasses.asdict(readable_range(table))
    with duckdb.connect(str(database), read_only=True) as con:
        shown = {r[0] for r in con.execute("SELECT DISTINCT commit_time FROM t_changes").fetchall()}
    assert shown == {i.requested_time for i in plan_changes(table, "earliest", infer=True).instants}


def _logged_table(path: Path) -> tuple[HudiTable, ReadLog]:
    """The table at ``path`` opened through a file system that records every file read."""
    opened = HudiTable.open(str(path))
    log = ReadLog(skip_instance_cache=True)
    return HudiTable(Location(log, opened.location.path, opened.uri), opened.config), log


def test_a_sync_after_one_commit_reads_no_older_timeline_file(tmp_path: Path) -> None:
    """With a clean before the synced commit, the next sync after one commit reads the
    new commit's metadata and that of the commit whose files it rewrote, and no older
    instant's (the clean's range is kept from the previous sync)."""
    path, writes = _table(tmp_path)
    clean = writes[-2][:14] + "500"  # between the last two commits, as Hudi's cleaner runs
    write_clean(path / ".hoodie", clean, earliest_to_retain=writes[2])
    database = tmp_path / "w.duckdb"
    synced = _sync(path, database).instant
    assert synced == writes[-1]
    appended = append_upsert(path, 3)
    table, log = _logged_table(path)
    report = _sync(table, database)
    assert report.instant == appended.instant
    timeline = str(path / ".hoodie")
    instants = {Path(p).name.split(".", 1)[0] for p in log.read if str(Path(p).parent) == timeline}
    assert instants == {synced, appended.instant}, sorted(instants)
    assert report.changes is not None and report.changes.after == writes[2]
    _assert_the_whole_timelines_range(path, database, report)


def test_the_range_follows_new_cleans_and_an_archival(tmp_path: Path) -> None:
    """Synced after each change to the timeline: a clean (the range moves on the tail),
    a later one, then an archival of the oldest commits (the oldest write leaves the
    timeline: the range is found on the whole timeline again)."""
    path, writes = _table(tmp_path)
    database = tmp_path / "w.duckdb"
    _assert_the_whole_timelines_range(path, database, _sync(path, database))
    for retained in (writes[1], writes[3]):
        clean = append_upsert(path, 2).instant[:14] + "500"
        write_clean(path / ".hoodie", clean, earliest_to_retain=retained)
        append_upsert(path, 2)
        report = _sync(path, database)
        assert report.changes is not None and report.changes.after == retained
        _assert_the_whole_timelines_range(path, database, report)
    archived = archive(HudiTable.open(str(path)), ArchivalPolicy(min_commits=4, max_commits=6))
    assert writes[0] in archived
    append_upsert(path, 2)
    _assert_the_whole_timelines_range(path, database, _sync(path, database))


def test_an_archival_alone_moves_the_range(tmp_path: Path) -> None:
    """Without a clean the newest archived commit bounds the range: found after the
    archival although the previous sync's range had none."""
    path, writes = _table(tmp_path)
    database = tmp_path / "w.duckdb"
    first = _sync(path, database)
    assert first.changes is not None and first.changes.after is None
    archived = archive(HudiTable.open(str(path)), ArchivalPolicy(min_commits=3, max_commits=4))
    assert archived and archived[0] == writes[0]
    append_upsert(path, 2)
    report = _sync(path, database)
    assert report.changes is not None and report.changes.after == max(
        a for a in archived if a in writes
    )
    _assert_the_whole_timelines_range(path, database, report)


@pytest.mark.parametrize(
    "readable",
    [
        {"first_write": "../../victim", "clean": None, "retained": None, "archived": None},
        {"first_write": "20240101000000000", "clean": None, "retained": None},
        ["20240101000000000"],
    ],
)
def test_a_kept_range_that_is_not_instants_is_refused_in_one_line(
    tmp_path: Path, readable: Any
) -> None:
    path, _ = _table(tmp_path)
    database = tmp_path / "w.duckdb"
    synced = _sync(path, database).instant
    described = path / CHANGES_FOLDER / "snapshots" / str(synced) / "feed.json"
    meta = json.loads(described.read_text())
    described.write_text(json.dumps({**meta, "readable": readable}))
    append_upsert(path, 2)
    with pytest.raises(CorruptTableError) as refused:
        ChangeFeedStore(HudiTable.open(str(path)), keep=2).meta(str(synced))
    message = str(refused.value)
    assert "\n" not in message and message.startswith(f"{described}"), message


def test_a_sync_lists_the_timeline_once_and_reads_each_new_commit_once(tmp_path: Path) -> None:
    """The manifest, the change feed and the warehouse's declared schema read the tail
    of one listing of the timeline folder (``TimelineListing``): the new commit's file is
    read once for all three, and they agree on the synced commit."""
    path, _writes_before = _table(tmp_path)
    database = tmp_path / "w.duckdb"
    _sync(path, database)
    appended = append_upsert(path, 3)
    table, log = _logged_table(path)
    report = _sync(table, database)
    assert report.instant == appended.instant
    commit = path / ".hoodie" / f"{appended.instant}.commit"
    reads = [p for p in log.read if Path(p).name.startswith(appended.instant)]
    assert reads == [str(commit)], reads
    with duckdb.connect(str(database), read_only=True) as con:
        query = "SELECT count(*) FROM t_changes WHERE commit_time = ?"
        assert con.execute(query, [appended.instant]).fetchone() == (3,)
