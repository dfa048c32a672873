"""DuckDB target: the view shows exactly hudi-rs's snapshot rows on every fixture table."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from hudi_sync.sync.job import sync_table
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.duckdb import DuckDBTarget
from tests.fixture_tables import fixture_tables
from tests.warehouse_rows import canonical, hudi_rs_rows, same_columns

# Empty tables have no rows to compare: tests/test_empty_table_sync.py covers them.
TABLES = [t for t in fixture_tables() if "empty" not in t.name]
# Full manifests, and delta manifests compacted every 3 commits (hudi_sync.manifest.delta).
MODES = pytest.mark.parametrize("delta_commits", [0, 3], ids=["full", "delta"])


def _view_rows(database: Path, view: str) -> object:
    with duckdb.connect(str(database)) as con:
        con.execute("SET TimeZone = 'UTC'")
        return con.sql(f'SELECT * FROM "{view}"').to_arrow_table()


@MODES
@pytest.mark.parametrize("fixture", TABLES, ids=[t.id for t in TABLES])
def test_view_equals_hudi_rs_snapshot(
    fixture, fixture_copy, tmp_path: Path, delta_commits: int
) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy(fixture.name.split("/", 1)[1])
    database = tmp_path / "warehouse.duckdb"
    table = HudiTable.open(str(path))
    target = DuckDBTarget(str(database), "t")
    report = sync_table(str(path), [target], delta_commits=delta_commits)
    assert [r.action for r in report.results] == ["create"]
    # A MOR table has Hive sync's two views: read-optimized and snapshot.
    views = {"t_ro": True, "t_rt": False} if table.config.is_mor else {"t": False}
    for view, read_optimized in views.items():
        ours, theirs = same_columns(
            _view_rows(database, view),
            hudi_rs_rows(str(path), read_optimized=read_optimized),  # type: ignore[arg-type]
        )
        assert theirs.num_rows > 0
        assert canonical(ours) == canonical(theirs), view
    # The history holds every version; the view filters it down.
    with duckdb.connect(str(database)) as con:
        history = con.execute('SELECT count(*) FROM "t_history"').fetchone()
    assert history is not None and history[0] >= theirs.num_rows


def test_as_of_objects_are_suffixed_and_show_that_snapshot(fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("cow/v9_txns_simple_meta")
    database = tmp_path / "w.duckdb"
    commits = [i.requested_time for i in HudiTable.open(str(path)).completed_commits()]
    middle = commits[len(commits) // 2]
    sync_table(str(path), [DuckDBTarget(str(database), "t")])
    report = sync_table(str(path), [DuckDBTarget(str(database), "t")], as_of=middle)
    assert report.results[0].objects[0] == f"t_as_of_{middle}"
    ours, theirs = same_columns(
        _view_rows(database, f"t_as_of_{middle}"), hudi_rs_rows(str(path), as_of=middle)
    )  # type: ignore[arg-type]
    assert canonical(ours) == canonical(theirs)
    latest_ours, latest_theirs = same_columns(_view_rows(database, "t"), hudi_rs_rows(str(path)))  # type: ignore[arg-type]
    assert canonical(latest_ours) == canonical(latest_theirs) != canonical(theirs)


def test_rerun_is_a_noop_and_older_instants_do_not_move_the_target(
    fixture_copy, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("cow/v8_simplekeygen_nonhivestyle")
    database = str(tmp_path / "w.duckdb")
    target = DuckDBTarget(database, "t")
    assert sync_table(str(path), [target]).results[0].action == "create"
    assert sync_table(str(path), [target]).results[0].action == "noop"
    # Roll the table's pointer back by hand-publishing an older snapshot to the target.
    from hudi_sync.manifest.snapshot import ManifestStore

    table = HudiTable.open(str(path))
    older = ManifestStore(table).publish(
        ManifestStore(table).build(as_of=table.completed_commits()[0].requested_time),
        make_latest=False,
    )
    _plan, result = target.sync(table, older)
    assert result.action == "skip-older"
    _plan, result = target.sync(table, older, force=True)
    assert result.action == "update"
    marker = target.current_marker(
        __import__("hudi_sync.warehouse.common", fromlist=["ObjectNames"]).ObjectNames.for_table(
            "t"
        )
    )
    assert marker is not None and marker.instant == table.completed_commits()[0].requested_time


def test_identifiers_with_quotes_are_safe(fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("cow/v6_nonpartitioned")
    database = tmp_path / "w.duckdb"
    name = 'we"ird; DROP TABLE x; --'
    sync_table(str(path), [DuckDBTarget(str(database), name)])
    with duckdb.connect(str(database)) as con:
        views = {
            r[0]
            for r in con.execute(
                "SELECT view_name FROM duckdb_views() WHERE NOT internal"
            ).fetchall()
        }
    assert views == {name, f"{name}_manifest", f"{name}_history"}


def test_failed_sync_leaves_previous_objects(fixture_copy, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A statement failing after the views were replaced rolls the whole sync back."""
    from hudi_sync.errors import HudiSyncError
    from hudi_sync.warehouse.common import ObjectNames

    path = fixture_copy("cow/v6_nonpartitioned")
    database = tmp_path / "w.duckdb"
    target = DuckDBTarget(str(database), "t")
    first = HudiTable.open(str(path)).completed_commits()[0].requested_time
    sync_table(str(path), [target], as_of=None)
    before = canonical(_view_rows(database, "t"))  # type: ignore[arg-type]
    marker_before = target.current_marker(ObjectNames.for_table("t"))
    original = DuckDBTarget._statements

    def failing_last(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return [*original(self, *args, **kwargs), "SELECT * FROM table_that_does_not_exist"]

    monkeypatch.setattr(DuckDBTarget, "_statements", failing_last)
    table = HudiTable.open(str(path))
    from hudi_sync.manifest.snapshot import ManifestStore

    older = ManifestStore(table).publish(ManifestStore(table).build(as_of=first), make_latest=False)
    with pytest.raises(HudiSyncError, match="DuckDB sync"):
        target.sync(table, older, force=True)
    assert canonical(_view_rows(database, "t")) == before
    assert target.current_marker(ObjectNames.for_table("t")) == marker_before


@MODES
def test_a_new_snapshot_replaces_only_the_manifest_view(
    fixture_copy, tmp_path: Path, delta_commits: int
) -> None:  # type: ignore[no-untyped-def]
    """Only the first sync (or a changed history SQL: a new column) creates the history
    and the view; later syncs swap the manifest view."""
    from tests.timeline_files import HeldBackCommits

    path = fixture_copy("cow/v9_txns_simple_meta")
    held = HeldBackCommits(path, keep=1)
    target = DuckDBTarget(str(tmp_path / "w.duckdb"), "t")
    first = sync_table(str(path), [target], delta_commits=delta_commits).plans[0].steps
    assert sum(s.startswith("CREATE OR REPLACE VIEW") for s in first) == 3
    held.complete_next()
    report = sync_table(str(path), [target], delta_commits=delta_commits)
    assert report.incremental
    assert ("deltas/" in " ".join(report.plans[0].steps)) == bool(delta_commits)
    creates = [s for s in report.plans[0].steps if s.startswith("CREATE")]
    assert creates == [s for s in creates if s.startswith('CREATE OR REPLACE VIEW "t_manifest"')]
    assert len(creates) == 1
    ours, theirs = same_columns(
        _view_rows(tmp_path / "w.duckdb", "t"),
        hudi_rs_rows(str(path)),  # type: ignore[arg-type]
    )
    assert canonical(ours) == canonical(theirs)
