"""Delta manifests: at every commit of every fixture (replacecommits, rollbacks, cleans
included) and across 50 syncs watched by a concurrent reader, the DuckDB manifest view
over base + delta lists exactly the full listing's files."""

from __future__ import annotations

import json
import shutil
import threading
from collections import Counter
from pathlib import Path

import duckdb
import pytest

from benchmarks.gen_table import TableSpec, append_upsert, generate
from hudi_sync.errors import BadInputError
from hudi_sync.manifest.delta import DELTA_POINTER, DeltaStore
from hudi_sync.manifest.snapshot import LATEST_FILES, MANIFEST_FOLDER, ManifestStore, build_manifest
from hudi_sync.sync.job import sync_table
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.common import SyncMarker
from hudi_sync.warehouse.duckdb import DuckDBTarget
from tests.fixture_tables import fixture_tables

TABLES = [t for t in fixture_tables() if "empty" not in t.name]


def _manifest_names(con: duckdb.DuckDBPyConnection) -> tuple[str | None, list[str]]:
    """The instant the view shows and its manifest's file names, in one transaction."""
    con.execute("BEGIN TRANSACTION")
    try:
        comment = con.execute(
            # MOR tables: the read-optimized view t_ro lists the manifest's base files.
            "SELECT comment FROM duckdb_views() WHERE view_name IN ('t', 't_ro') AND NOT internal"
        ).fetchone()
        names = [str(r[0]) for r in con.execute('SELECT filename FROM "t_manifest"').fetchall()]
    finally:
        con.execute("COMMIT")
    marker = SyncMarker.parse(str(comment[0]) if comment else None)
    return (marker.instant if marker else None), names


def _timeline_folder(path: Path) -> Path:
    timeline = path / ".hoodie" / "timeline"
    return timeline if timeline.is_dir() else path / ".hoodie"


@pytest.mark.parametrize("fixture", TABLES, ids=[t.id for t in TABLES])
def test_delta_view_equals_full_listing_at_every_commit(
    fixture, fixture_copy, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """The table grows one commit at a time (later timeline files hidden, then put
    back); each delta-mode sync must list what a full listing at that commit lists."""
    path: Path = fixture_copy(fixture.name.split("/", 1)[1])
    table = HudiTable.open(str(path))
    instants = [i.requested_time for i in table.completed_commits()]
    folder = _timeline_folder(path)
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    later = [p for p in folder.iterdir() if p.is_file() and p.name[:1].isdigit()]
    database = tmp_path / "db.duckdb"
    compactions = 0
    for instant in instants:
        for file in later:
            if file.name.split(".", 1)[0].split("_", 1)[0] > instant:
                shutil.move(file, hidden / file.name)
        report = sync_table(
            str(path), [DuckDBTarget(str(database), "t")], delta_commits=2, continue_on_error=True
        )
        for file in hidden.iterdir():
            shutil.move(file, folder / file.name)
        expected = build_manifest(HudiTable.open(str(path)), instant)
        with duckdb.connect(str(database)) as con:
            shown, names = _manifest_names(con)
        assert (report.instant, shown) == (instant, instant)
        assert sorted(names) == expected.names(), instant
        assert report.manifest_files == len(expected.files), instant
        pointer = json.loads((path / MANIFEST_FOLDER / DELTA_POINTER).read_text())
        compactions += pointer["commits"] == 0
        assert pointer["commits"] <= 2
        # latest_snapshot_files.csv is the base snapshot's full list.
        base = build_manifest(HudiTable.open(str(path)), pointer["base"])
        latest = (path / MANIFEST_FOLDER / LATEST_FILES).read_text().splitlines()
        assert latest == base.names()
    if len(instants) > 3:
        assert compactions < len(instants)  # some syncs were deltas, not compactions


def test_fifty_syncs_never_show_a_torn_or_duplicated_snapshot(tmp_path: Path) -> None:
    """A reader queries the manifest view in a loop while 50 commits are synced as
    deltas; every snapshot it sees is the full listing's at the instant it shows."""
    spec = TableSpec(
        commits=12, partitions=3, file_groups=60, insert_commits=3, failed_writes=0, name="t50"
    )
    generate(tmp_path, spec)
    path = tmp_path / "t50"
    database = tmp_path / "db.duckdb"
    target = DuckDBTarget(str(database), "t")
    sync_table(str(path), [target], delta_commits=4)
    seen: list[tuple[str | None, list[str]]] = []
    done = threading.Event()
    failures: list[BaseException] = []

    def read() -> None:
        try:
            with duckdb.connect(str(database)) as con:
                while not done.is_set():
                    seen.append(_manifest_names(con))
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for _ in range(50):
            append_upsert(path, 3)
            report = sync_table(str(path), [target], delta_commits=4)
            assert report.ok and report.results[0].action == "update"
    finally:
        done.set()
        reader.join()
    assert not failures, failures
    table = HudiTable.open(str(path))
    shown = {instant for instant, _ in seen}
    assert len(shown) > 5, "the reader saw too few snapshots to mean anything"
    expected = {instant: build_manifest(table, instant).names() for instant in shown if instant}
    for instant, names in seen:
        assert instant is not None
        duplicates = [n for n, c in Counter(names).items() if c > 1]
        assert not duplicates, (instant, duplicates)
        assert sorted(names) == expected[instant], instant
    with duckdb.connect(str(database)) as con:
        last, names = _manifest_names(con)
        rows = con.execute('SELECT count(*), count(DISTINCT _hoodie_file_name) FROM "t"').fetchone()
    assert last == table.latest_instant()
    assert rows is not None and rows[1] == len(names) == spec.file_groups
    # Retention: the 5 newest bases are kept, and only the delta files on them.
    manifest = path / MANIFEST_FOLDER
    bases = {p.name for p in (manifest / "snapshots").iterdir()}
    deltas = {p.name.partition("_")[0] for p in (manifest / "deltas").iterdir()}
    assert len(bases) == 5 and deltas == bases


def test_delta_commits_below_one_is_refused_before_anything_is_written(
    fixture_copy, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    path: Path = fixture_copy("cow/v9_txns_simple_meta")
    with pytest.raises(BadInputError, match=r"hoodie\.manifest\.delta\.commits"):
        DeltaStore(ManifestStore(HudiTable.open(str(path))), 0)
    with pytest.raises(BadInputError, match=r"hoodie\.manifest\.delta\.commits"):
        sync_table(str(path), [DuckDBTarget(str(tmp_path / "db.duckdb"), "t")], delta_commits=-1)
    assert not (path / MANIFEST_FOLDER).exists()


def test_cli_delta_commits_option_and_a_bad_value(fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``--delta-commits`` (or ``-c hoodie.manifest.delta.commits=N``) publishes delta
    manifests; a value that is not a number is one line naming the option, exit 2,
    nothing written."""
    from typer.testing import CliRunner

    from hudi_sync.cli.app import app
    from tests.timeline_files import HeldBackCommits

    path: Path = fixture_copy("cow/v9_txns_simple_meta")
    database = str(tmp_path / "db.duckdb")
    command = ["sync", "duckdb", str(path), "--database", database, "--table", "t"]
    bad = CliRunner().invoke(app, [*command, "-c", "hoodie.manifest.delta.commits=often"])
    assert bad.exit_code == 2
    assert bad.output.strip().splitlines() == [
        "error: hoodie.manifest.delta.commits='often' is not a whole number"
    ]
    assert not (path / MANIFEST_FOLDER).exists()
    held = HeldBackCommits(path, keep=1)
    assert CliRunner().invoke(app, [*command, "--delta-commits", "2"]).exit_code == 0
    held.complete_next()
    assert (
        CliRunner().invoke(app, [*command, "-c", "hoodie.manifest.delta.commits=2"]).exit_code == 0
    )
    pointer = json.loads((path / MANIFEST_FOLDER / DELTA_POINTER).read_text())
    latest = HudiTable.open(str(path)).latest_instant()
    assert (pointer["instant"], pointer["commits"]) == (latest, 1)
    with duckdb.connect(database) as con:
        shown, names = _manifest_names(con)
    assert (shown, sorted(names)) == (latest, build_manifest(HudiTable.open(str(path))).names())


def test_hook_option_publishes_deltas_and_reports_a_bad_value(fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from hudi_sync.sync.hook import run_post_commit_hook

    path: Path = fixture_copy("cow/v9_txns_simple_meta")
    options = {
        "hoodie.meta.sync.client.tool.class": "duckdb",
        "hoodie.duckdb.sync.database": str(tmp_path / "db.duckdb"),
        "hoodie.manifest.delta.commits": "x",
    }
    bad = run_post_commit_hook(str(path), options)
    assert bad.errors == {"hook": "hoodie.manifest.delta.commits='x' is not a whole number"}
    assert not (path / MANIFEST_FOLDER).exists()
    report = run_post_commit_hook(str(path), options | {"hoodie.manifest.delta.commits": "2"})
    assert report.ok and report.results[0].action == "create"
    pointer = json.loads((path / MANIFEST_FOLDER / DELTA_POINTER).read_text())
    assert pointer["instant"] == pointer["base"] == HudiTable.open(str(path)).latest_instant()
