"""Post-commit hook, ``watch`` and ``backfill`` over the DuckDB target."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import duckdb
import pytest

from hudi_sync.sync.backfill import backfill, discover_tables, warehouse_name
from hudi_sync.sync.hook import DUCKDB_DATABASE, DUCKDB_TABLE, SYNC_TOOLS, run_post_commit_hook
from hudi_sync.sync.watch import watch
from hudi_sync.table import HudiTable
from tests.fixture_tables import fixture_tables
from tests.timeline_files import HeldBackCommits
from tests.warehouse_rows import canonical, hudi_rs_rows, same_columns


def _view(database: Path, view: str):  # type: ignore[no-untyped-def]
    with duckdb.connect(str(database)) as con:
        con.execute("SET TimeZone = 'UTC'")
        return con.sql(f'SELECT * FROM "{view}"').to_arrow_table()


def test_hook_syncs_the_configured_targets(fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("cow/v9_txns_simple_meta")
    database = tmp_path / "w.duckdb"
    options = {SYNC_TOOLS: "duckdb", DUCKDB_DATABASE: str(database), DUCKDB_TABLE: "trips"}
    report = run_post_commit_hook(str(path), options)
    assert report.ok, report.errors
    assert [r.action for r in report.results] == ["create"]
    ours, theirs = same_columns(_view(database, "trips"), hudi_rs_rows(str(path)))
    assert canonical(ours) == canonical(theirs)
    # The warehouse name defaults to the Hudi table's name.
    report = run_post_commit_hook(str(path), {**options, DUCKDB_TABLE: ""})
    assert report.results[0].objects[0] == HudiTable.open(str(path)).config.name


def test_hook_reports_a_failing_target_and_runs_the_others(fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("cow/v6_nonpartitioned")
    good = tmp_path / "good.duckdb"
    options = {
        SYNC_TOOLS: "duckdb,bigquery",
        DUCKDB_DATABASE: str(good),
        # A BigQuery target on a local table cannot be synced: BigQuery reads gs:// only.
        "hoodie.gcp.bigquery.sync.project_id": "my-project",
        "hoodie.gcp.bigquery.sync.dataset_name": "lake",
    }
    report = run_post_commit_hook(str(path), options)
    assert list(report.errors) == ["bigquery:my-project.lake"]
    assert "gs://" in report.errors["bigquery:my-project.lake"]
    assert [r.target for r in report.results] == [f"duckdb:{good}"]
    assert _view(good, HudiTable.open(str(path)).config.name).num_rows > 0


def test_hook_never_raises_for_bad_options(tmp_path: Path) -> None:
    report = run_post_commit_hook(str(tmp_path), {SYNC_TOOLS: "duckdb"})
    assert not report.ok and "hoodie.properties" in report.errors["hook"]


def test_unknown_sync_tool_is_named(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("cow/v6_nonpartitioned")
    report = run_post_commit_hook(str(path), {SYNC_TOOLS: "duckdb,hive"})
    assert "'hive'" in report.errors["hook"]


def test_watch_syncs_each_new_commit(fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("cow/v8_simplekeygen_nonhivestyle")
    database = tmp_path / "w.duckdb"
    held = HeldBackCommits(path, keep=1)
    options = {SYNC_TOOLS: "duckdb", DUCKDB_DATABASE: str(database), DUCKDB_TABLE: "t"}
    seen: list[str | None] = []

    def on_report(report) -> None:  # type: ignore[no-untyped-def]
        assert report.ok, report.errors
        seen.append(report.instant)
        held.complete_next()  # the table gains its next commit

    syncs = watch(
        str(path), options, interval=0.01, max_syncs=len(held.commits), on_report=on_report
    )
    assert syncs == len(held.commits)
    assert seen == held.commits
    ours, theirs = same_columns(_view(database, "t"), hudi_rs_rows(str(path)))
    assert canonical(ours) == canonical(theirs)


def test_watch_stops_when_asked(fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("cow/v6_nonpartitioned")
    stop = threading.Event()
    reports = []

    def on_report(report) -> None:  # type: ignore[no-untyped-def]
        reports.append(report)
        stop.set()

    options = {SYNC_TOOLS: "duckdb", DUCKDB_DATABASE: str(tmp_path / "w.duckdb")}
    assert watch(str(path), options, interval=0.01, on_report=on_report, should_stop=stop.is_set)
    assert len(reports) == 1


def test_backfill_discovers_and_syncs_every_table(unpack_table, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "lake"
    chosen = [t for t in fixture_tables() if "empty" not in t.name][:4]
    for table in chosen:
        shutil.copytree(unpack_table(table), root / table.name.replace("/", "_") / "t")
    (root / "not_a_table" / "data").mkdir(parents=True)
    (root / ".hidden" / "x" / ".hoodie").mkdir(parents=True)
    found = discover_tables(str(root))
    assert sorted(found) == sorted(str(root / t.name.replace("/", "_") / "t") for t in chosen)
    database = tmp_path / "w.duckdb"
    reports = backfill(str(root), {SYNC_TOOLS: "duckdb", DUCKDB_DATABASE: str(database)})
    assert all(r.ok for _, r in reports)
    for uri in found:
        name = warehouse_name(str(root), uri)
        # MOR tables: the read-optimized view and the snapshot view (Hive sync's names).
        views = {name: False}
        if HudiTable.open(uri).config.is_mor:
            views = {f"{name}_ro": True, f"{name}_rt": False}
        for view, read_optimized in views.items():
            ours, theirs = same_columns(
                _view(database, view), hudi_rs_rows(uri, read_optimized=read_optimized)
            )
            assert canonical(ours) == canonical(theirs), view


@pytest.mark.parametrize(
    ("table_uri", "expected"),
    [("/lake/sales/orders", "sales_orders"), ("/lake/a-b c/t", "a_b_c_t")],
)
def test_warehouse_names_come_from_the_path(table_uri: str, expected: str) -> None:
    assert warehouse_name("/lake", table_uri) == expected
