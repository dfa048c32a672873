"""Reliability of the sync: readers during syncs, killed syncs, concurrent syncs."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import duckdb
import pytest

from benchmarks.gen_table import TableSpec, generate
from hudi_sync.manifest.snapshot import LATEST_FILES, POINTER, ManifestStore, build_manifest
from hudi_sync.sync.job import sync_table
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.common import ObjectNames
from hudi_sync.warehouse.duckdb import DuckDBTarget
from tests.timeline_files import HeldBackCommits
from tests.warehouse_rows import canonical, hudi_rs_rows, same_columns

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def many_commits(tmp_path: Path) -> Path:
    """A generated table with 52 commits over 4 partitions (independent of hudi_sync)."""
    spec = TableSpec(
        commits=52,
        partitions=4,
        file_groups=40,
        insert_commits=2,
        updates_per_commit=3,
        replaced_groups=2,
        failed_writes=0,
        name="t",
    )
    generate(tmp_path / "gen", spec, verbose=False)
    return tmp_path / "gen" / "t"


def _snapshots(path: Path) -> dict[str, frozenset[str]]:
    """Every commit's complete file set, from full listings."""
    table = HudiTable.open(str(path))
    return {
        c.requested_time: frozenset(build_manifest(table, c.requested_time).names())
        for c in table.completed_commits()
    }


def test_a_reader_polling_during_50_syncs_never_sees_a_mixed_file_set(
    many_commits: Path, tmp_path: Path
) -> None:
    held = HeldBackCommits(many_commits, keep=2)
    folder = many_commits / ".hoodie" / "manifest"
    target = DuckDBTarget(str(tmp_path / "w.duckdb"), "t")
    sync_table(str(many_commits), [target])
    stop = threading.Event()
    seen: list[tuple[str, frozenset[str]]] = []
    latest_files: list[frozenset[str]] = []

    def poll() -> None:
        while not stop.is_set():
            pointer = json.loads((folder / POINTER).read_text())
            instant = pointer["instant"]
            files = (folder / "snapshots" / instant / "files.csv").read_text().split()
            seen.append((instant, frozenset(files)))
            latest_files.append(frozenset((folder / LATEST_FILES).read_text().split()))

    reader = threading.Thread(target=poll)
    reader.start()
    try:
        syncs = 0
        while held.complete_next() is not None:
            report = sync_table(str(many_commits), [target])
            assert report.results[0].action == "update"
            syncs += 1
    finally:
        stop.set()
        reader.join()
    assert syncs == 50
    valid = _snapshots(many_commits)
    assert len(set(valid.values())) > 40  # the file set really changes from sync to sync
    assert len({i for i, _ in seen}) > 1 and len(seen) > 50
    assert all(files == valid[instant] for instant, files in seen)
    assert all(files in set(valid.values()) for files in latest_files)
    assert target.current_marker(ObjectNames.for_table("t")).instant == held.commits[-1]  # type: ignore[union-attr]


KILLER = textwrap.dedent(
    """
    import os, sys
    from hudi_sync.sync.job import sync_table
    from hudi_sync.warehouse.duckdb import DuckDBTarget

    table, database, stop_at = sys.argv[1], sys.argv[2], int(sys.argv[3])
    # Every local manifest file is published by renaming a complete temporary file.
    moves = 0
    replace = os.replace

    def dying_replace(source, destination):
        global moves
        if moves == stop_at:
            os._exit(9)
        moves += 1
        replace(source, destination)

    class DyingConnection:
        # Dies inside the DuckDB transaction, after the views were replaced.
        def __init__(self, con):
            self.con = con
        def __enter__(self):
            return self
        def __exit__(self, *exc):
            return self.con.__exit__(*exc)
        def execute(self, sql, *args):
            if sql.startswith("COMMENT ON VIEW"):
                os._exit(9)
            return self.con.execute(sql, *args)
        def __getattr__(self, name):
            return getattr(self.con, name)

    os.replace = dying_replace
    if stop_at == 99:
        connect = DuckDBTarget._connect
        DuckDBTarget._connect = lambda self: DyingConnection(connect(self))
    sync_table(table, [DuckDBTarget(database, "t")])
    """
)
# The manifest files a sync moves into place, in order, then a kill inside the DuckDB transaction.
KILL_POINTS = {
    "files.csv": 0,
    "uris.csv": 1,
    "snapshot.json": 2,
    "latest_snapshot_files.csv": 3,
    "latest.json": 4,
    "duckdb-transaction": 99,
}


def _view_rows(database: Path):  # type: ignore[no-untyped-def]
    with duckdb.connect(str(database)) as con:
        con.execute("SET TimeZone = 'UTC'")
        return con.sql('SELECT * FROM "t"').to_arrow_table()


@pytest.mark.parametrize("step", list(KILL_POINTS))
def test_a_sync_killed_at_each_step_converges_on_rerun(  # type: ignore[no-untyped-def]
    step: str, fixture_copy, tmp_path: Path
) -> None:
    path = fixture_copy("cow/v9_txns_simple_meta")
    held = HeldBackCommits(path, keep=1)
    database = tmp_path / "w.duckdb"
    first = held.commits[0]
    sync_table(str(path), [DuckDBTarget(str(database), "t")])
    before = canonical(_view_rows(database))
    assert held.complete_all() == held.commits[1:]
    killed = subprocess.run(
        [sys.executable, "-c", KILLER, str(path), str(database), str(KILL_POINTS[step])],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert killed.returncode == 9, killed.stderr
    # Readers still see the previous complete state.
    assert canonical(_view_rows(database)) == before
    store = ManifestStore(HudiTable.open(str(path)))
    latest = store.latest()
    assert latest is not None and latest.instant in (first, held.commits[-1])
    assert latest.names() == build_manifest(HudiTable.open(str(path)), latest.instant).names()
    # The rerun converges on the newest snapshot.
    report = sync_table(str(path), [DuckDBTarget(str(database), "t")])
    assert report.instant == held.commits[-1]
    ours, theirs = same_columns(_view_rows(database), hudi_rs_rows(str(path)))
    assert canonical(ours) == canonical(theirs) != before
    assert store.latest().instant == held.commits[-1]  # type: ignore[union-attr]


def test_a_publisher_that_lost_the_race_does_not_move_the_pointer_back(  # type: ignore[no-untyped-def]
    fixture_copy,
) -> None:
    path = fixture_copy("cow/v9_txns_simple_meta")
    table = HudiTable.open(str(path))
    commits = [c.requested_time for c in table.completed_commits()]
    store = ManifestStore(table)
    store.publish(build_manifest(table))
    # A sync that read the table before the last commit finishes after the fresh one.
    store.publish(build_manifest(table, commits[0]), make_latest=True)
    latest = store.latest()
    assert latest is not None and latest.instant == commits[-1]
    files = (path / ".hoodie" / "manifest" / LATEST_FILES).read_text().split()
    assert sorted(files) == build_manifest(table).names()


def test_two_concurrent_syncs_end_at_the_newest_instant(  # type: ignore[no-untyped-def]
    fixture_copy, tmp_path: Path
) -> None:
    path = fixture_copy("cow/v8_simplekeygen_nonhivestyle")
    held = HeldBackCommits(path, keep=1)
    database = tmp_path / "w.duckdb"
    command = [str(REPO / ".venv" / "bin" / "hudi-sync"), "sync", "duckdb", str(path)]
    command += ["--database", str(database), "--table", "t", "--json"]
    while True:
        runs = [subprocess.Popen(command, stdout=subprocess.PIPE, text=True) for _ in range(2)]
        outputs = [run.communicate()[0] for run in runs]
        assert [run.returncode for run in runs] == [0, 0], outputs
        actions = {json.loads(o)["results"][0]["action"] for o in outputs}
        # One applied the new snapshot; the other did too, or found it applied.
        assert actions & {"create", "update"} and actions <= {"create", "update", "noop"}
        if held.complete_next() is None:
            break
    table = HudiTable.open(str(path))
    assert ManifestStore(table).latest().instant == held.commits[-1]  # type: ignore[union-attr]
    marker = DuckDBTarget(str(database), "t").current_marker(ObjectNames.for_table("t"))
    assert marker is not None and marker.instant == held.commits[-1]
    ours, theirs = same_columns(_view_rows(database), hudi_rs_rows(str(path)))
    assert canonical(ours) == canonical(theirs)
