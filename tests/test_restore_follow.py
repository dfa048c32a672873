"""Restores followed: when a completed Hudi restore or rollback undid the instant a sync
published, every sync (the CLI's ``sync_table``, the post-commit hook) moves the
manifest pointers and the warehouse objects back to the table's latest commit without
``--force``, and says so (action ``restored``). A backwards move nothing on the timeline
explains stays refused (``skip-older``).

The restores are written by ``tests/hudi_restore.py`` (Hudi's jars cannot run here) with
Hudi's file names and Avro schemas; the rollback read in the first test is one Apache
Hudi wrote (``mor/parquet/v6_nonpartitioned_rollback``). After each restore hudi-rs reads
the table, and the views must show exactly its rows.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest

from hudi_sync.sync.hook import run_post_commit_hook
from hudi_sync.sync.job import sync_table
from hudi_sync.table import HudiTable
from hudi_sync.table.timeline.active import undone_by_record
from hudi_sync.warehouse.common import ObjectNames, SyncMarker, restore_reason
from hudi_sync.warehouse.duckdb import DuckDBTarget
from tests.fixture_tables import fixture_tables, without_metadata_table
from tests.hudi_restore import restore_to, roll_back_latest_commit
from tests.warehouse_rows import canonical, hudi_rs_rows, same_columns

# COW and MOR, table versions 6, 8 and 9 (tables with a metadata table lose it first:
# the restore helper does not restore one).
RESTORED = [
    "cow/v6_simplekeygen_nonhivestyle",
    "cow/v8_simplekeygen_nonhivestyle",
    "mor/parquet/v6_simplekeygen_nonhivestyle",
    "quickstart_trips_table/mor/avro/v8_trips_8i3u1d",
    "cow/v9_txns_simple_meta",
]
MODES = pytest.mark.parametrize("delta_commits", [0, 3], ids=["full", "delta"])


def _copy(unpack_table: Any, tmp_path: Path, suffix: str, name: str = "table") -> Path:
    """A writable copy of a fixture table, without a metadata table."""
    fixture = next(t for t in fixture_tables() if t.name.endswith(suffix))
    copy = tmp_path / name
    shutil.copytree(unpack_table(fixture), copy)
    return without_metadata_table(copy)


def _commits(path: Path) -> list[str]:
    return [i.requested_time for i in HudiTable.open(str(path)).completed_commits()]


def _marker(database: Path, view: str) -> SyncMarker | None:
    with duckdb.connect(str(database)) as con:
        row = con.execute(
            "SELECT comment FROM duckdb_views() WHERE view_name = ?", [view]
        ).fetchone()
    return SyncMarker.parse(str(row[0])) if row else None


def _assert_view_is_hudi_rs(database: Path, path: Path) -> None:
    """Every view (``t`` or ``t_ro`` and ``t_rt``) shows hudi-rs's rows of the table."""
    is_mor = HudiTable.open(str(path)).config.is_mor
    views = {"t_ro": True, "t_rt": False} if is_mor else {"t": False}
    for view, read_optimized in views.items():
        with duckdb.connect(str(database)) as con:
            con.execute("SET TimeZone = 'UTC'")
            rows = con.sql(f'SELECT * FROM "{view}"').to_arrow_table()
        theirs_all = hudi_rs_rows(str(path), read_optimized=read_optimized)
        ours, theirs = same_columns(rows, theirs_all)  # type: ignore[arg-type]
        assert theirs.num_rows > 0
        assert canonical(ours) == canonical(theirs), view


def _pointer(path: Path, name: str) -> Any:
    return json.loads((path / ".hoodie" / "manifest" / name).read_text())["instant"]


def test_timeline_names_what_a_rollback_hudi_wrote_undid(  # type: ignore[no-untyped-def]
    unpack_table, tmp_path: Path
) -> None:
    """Apache Hudi rolled back 20250126040826878 at 20250126040936578 in this table."""
    path = _copy(unpack_table, tmp_path, "mor/parquet/v6_nonpartitioned_rollback")
    timeline = HudiTable.open(str(path)).timeline
    undone_by = timeline.undone_by("20250126040826878")
    assert undone_by is not None
    assert (undone_by.action, undone_by.requested_time) == ("rollback", "20250126040936578")
    # A commit still on the timeline, and one after the rollback, were undone by nothing.
    assert timeline.undone_by("20250126040823628") is None
    assert timeline.undone_by("20250126060846931") is None


def test_restore_records_name_the_undone_instants_in_any_of_their_fields() -> None:
    """Older restores carry only the per-instant rollbacks; plans carry instant infos."""
    nested = {"hoodieRestoreMetadata": {"1": [None, {"commitsRollback": ["1"]}]}}
    assert undone_by_record(nested) == {"1"}
    assert undone_by_record({"instantsToRollback": [{"commitTime": "2", "action": "commit"}]}) == {
        "2"
    }
    assert undone_by_record({"restoreInstantInfo": [{"commitTime": "3", "action": "x"}]}) == {"3"}
    assert undone_by_record({"instantsRollback": [], "commitsRollback": []}) == frozenset()


@MODES
@pytest.mark.parametrize("suffix", RESTORED, ids=[s.replace("/", "-") for s in RESTORED])
def test_duckdb_follows_a_restore_without_force(  # type: ignore[no-untyped-def]
    suffix: str, delta_commits: int, unpack_table, tmp_path: Path
) -> None:
    path = _copy(unpack_table, tmp_path, suffix)
    database = tmp_path / "w.duckdb"
    target = DuckDBTarget(str(database), "t")
    commits = _commits(path)
    latest, kept = commits[-1], commits[-2]
    assert sync_table(str(path), [target], delta_commits=delta_commits).instant == latest
    marked = "t_rt" if HudiTable.open(str(path)).config.is_mor else "t"

    restore = restore_to(HudiTable.open(str(path)), kept)
    report = sync_table(str(path), [target], delta_commits=delta_commits)
    assert report.ok and report.instant == kept
    assert [r.action for r in report.results] == ["restored"]
    assert report.results[0].reason == (
        f"{marked} showed {latest}, which restore {restore} undid: moved back to {kept}"
    )
    marker = _marker(database, marked)
    assert marker is not None and marker.instant == kept
    _assert_view_is_hudi_rs(database, path)
    # The manifest pointers follow the table back too.
    assert _pointer(path, "latest.json") == kept
    if delta_commits:
        assert _pointer(path, "delta.json") == kept
    # Settled: the next sync changes nothing.
    again = sync_table(str(path), [target], delta_commits=delta_commits)
    assert [r.action for r in again.results] == ["noop"]


def test_the_post_commit_hook_follows_a_restore(unpack_table, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = _copy(unpack_table, tmp_path, "cow/v8_simplekeygen_nonhivestyle")
    database = tmp_path / "w.duckdb"
    options = {
        "hoodie.meta.sync.client.tool.class": "duckdb",
        "hoodie.duckdb.sync.database": str(database),
        "hoodie.duckdb.sync.table_name": "t",
        "hoodie.manifest.delta.commits": "2",
    }
    commits = _commits(path)
    assert run_post_commit_hook(str(path), options).instant == commits[-1]
    restore_to(HudiTable.open(str(path)), commits[-2])
    report = run_post_commit_hook(str(path), options)
    assert report.ok, report.errors
    assert [r.action for r in report.results] == ["restored"]
    marker = _marker(database, "t")
    assert marker is not None and marker.instant == commits[-2]
    _assert_view_is_hudi_rs(database, path)
    assert _pointer(path, "delta.json") == commits[-2]


@pytest.mark.parametrize("suffix", [RESTORED[0], RESTORED[3]], ids=["cow-v6", "mor-v8"])
def test_duckdb_follows_a_rollback_of_the_latest_commit(  # type: ignore[no-untyped-def]
    suffix: str, unpack_table, tmp_path: Path
) -> None:
    path = _copy(unpack_table, tmp_path, suffix)
    database = tmp_path / "w.duckdb"
    target = DuckDBTarget(str(database), "t")
    commits = _commits(path)
    assert sync_table(str(path), [target]).instant == commits[-1]
    rollback = roll_back_latest_commit(HudiTable.open(str(path)))
    report = sync_table(str(path), [target])
    assert report.instant == commits[-2]
    assert [r.action for r in report.results] == ["restored"]
    assert f"which rollback {rollback} undid: moved back to {commits[-2]}" in (
        report.results[0].reason
    )
    _assert_view_is_hudi_rs(database, path)


def _remove_commit_by_hand(path: Path, instant: str) -> None:
    """The commit's instant files deleted (no restore, no rollback): unexplained."""
    removed = [p for p in (path / ".hoodie").rglob(f"{instant}*") if p.is_file()]
    assert removed
    for p in removed:
        p.unlink()


@pytest.mark.parametrize("how", ["removed-by-hand", "copied-back", "other-table"])
def test_unexplained_backwards_moves_stay_refused(  # type: ignore[no-untyped-def]
    how: str, unpack_table, tmp_path: Path
) -> None:
    path = _copy(unpack_table, tmp_path, "cow/v8_simplekeygen_nonhivestyle")
    older = _copy(unpack_table, tmp_path, "cow/v8_simplekeygen_nonhivestyle", "older")
    database = tmp_path / "w.duckdb"
    target = DuckDBTarget(str(database), "t")
    commits = _commits(path)
    assert sync_table(str(path), [target]).instant == commits[-1]
    if how == "removed-by-hand":
        _remove_commit_by_hand(path, commits[-1])
    elif how == "copied-back":  # a copy of the folder from before the last commit
        _remove_commit_by_hand(older, commits[-1])
        shutil.rmtree(path)
        shutil.copytree(older, path)
    else:  # another table (with older commits) now at the same path
        other = _copy(unpack_table, tmp_path, "cow/v6_simplekeygen_nonhivestyle", "other")
        shutil.rmtree(path)
        shutil.copytree(other, path)
    report = sync_table(str(path), [target])
    assert [r.action for r in report.results] == ["skip-older"]
    assert f"shows newer {commits[-1]}; use --force" in report.results[0].reason
    marker = _marker(database, "t")
    assert marker is not None and marker.instant == commits[-1]
    forced = sync_table(str(path), [target], force=True)
    assert [r.action for r in forced.results] == ["update"]


def test_a_restore_explains_only_the_instants_it_undid(unpack_table, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = _copy(unpack_table, tmp_path, "cow/v8_simplekeygen_nonhivestyle")
    commits = _commits(path)
    view = ObjectNames.for_table("t").view
    uri = HudiTable.open(str(path)).uri
    wanted = SyncMarker(commits[-2], uri, "view")
    shown = SyncMarker(commits[-1], uri, "view")
    # Still a commit: the sync publishing the older one is behind (a race), no restore.
    assert restore_reason(HudiTable.open(str(path)), view, shown, wanted) is None
    restore_to(HudiTable.open(str(path)), commits[-2])
    table = HudiTable.open(str(path))
    assert restore_reason(table, view, shown, wanted) is not None
    # An instant the restore did not list (never on this timeline): unexplained.
    unknown = SyncMarker(str(int(commits[-1]) + 1), uri, "view")
    assert restore_reason(table, view, unknown, wanted) is None
    # Other objects (another base path) are no backwards move of these.
    elsewhere = SyncMarker(commits[-1], uri + "-elsewhere", "view")
    assert restore_reason(table, view, elsewhere, wanted) is None


# -- the other targets, where their own tests run them ---------------------------------


@pytest.mark.parametrize(
    "suffix", ["cow/v6_simplekeygen_nonhivestyle", "mor/parquet/v6_simplekeygen_nonhivestyle"]
)
def test_snowflake_follows_a_restore_in_s3(  # type: ignore[no-untyped-def]
    suffix: str, unpack_table, s3_server, emulation, tmp_path: Path
) -> None:
    from tests.test_snowflake_target import _hudi_rs, _target, _upload, _view_comment, _view_rows

    local = _copy(unpack_table, tmp_path, suffix)
    commits = _commits(local)
    table = _upload(s3_server, local)
    view = "trips_rt" if table.config.is_mor else "trips"
    assert sync_table(table, [_target()]).instant == commits[-1]
    restore_to(table, commits[-2])
    table = HudiTable.open(table.uri, s3_server.storage_options)
    report = sync_table(table, [_target()])
    assert report.ok and report.instant == commits[-2], report.errors
    assert [r.action for r in report.results] == ["restored"]
    assert "which restore " in report.results[0].reason
    assert f"instant={commits[-2]} base={table.uri}/ mode=view" in _view_comment(view)
    assert _view_rows(table, view) == _hudi_rs(table, local, as_of=commits[-2])
    assert [r.action for r in sync_table(table, [_target()]).results] == ["noop"]


# Non-partitioned: a restored commit that made a partition leaves its folder (Hudi keeps
# the partition metadata file), and the history's URI pattern for it then matches no file,
# which the emulator refuses (a history_uris matter, not a restore's).
@pytest.mark.parametrize("suffix", ["cow/v8_nonpartitioned", "mor/parquet/v6_nonpartitioned"])
def test_bigquery_follows_a_restore_in_gcs(  # type: ignore[no-untyped-def]
    suffix: str, unpack_table, gcs_server, client, dataset, tmp_path: Path
) -> None:
    from tests.bigquery_emulator import materialise
    from tests.test_bigquery_target import _external, _maps_as_dicts, _query, _target

    local = _copy(unpack_table, tmp_path, suffix)
    commits = _commits(local)
    uri = gcs_server.upload_dir(local, gcs_server.make_bucket(), "lake/t")
    table = HudiTable.open(uri, gcs_server.storage_options)
    stem = f"{client.project}.{dataset}.t"
    marked = f"{stem}_rt" if table.config.is_mor else stem
    assert sync_table(table, [_target(client, dataset)]).instant == commits[-1]
    restore_to(table, commits[-2])
    table = HudiTable.open(uri, gcs_server.storage_options)
    report = sync_table(table, [_target(client, dataset)])
    assert report.ok and report.instant == commits[-2], report.errors
    assert [r.action for r in report.results] == ["restored"]
    view = f"{stem}_ro" if table.config.is_mor else stem
    assert client.get_table(view).description.startswith(f"hudi_sync instant={commits[-2]} ")
    if table.config.is_mor:
        # The restored deltacommit's log file is gone: t_rt reads t_ro alone, and the log
        # objects go. (The emulator answers no GET of this view once it reads a view, so
        # its step shows the marker, and a rerun is not planned against it here.)
        (rt_step,) = [s for s in report.plans[0].steps if s.startswith(f"update {marked} ")]
        assert f"hudi_sync instant={commits[-2]} " in rt_step
        assert f"FROM `{stem}_ro`" in rt_step
        tables = {t.table_id for t in client.list_tables(dataset)}
        assert tables == {"t_history", "t_manifest", "t_ro", "t_rt"}
    assert _external(client, f"{stem}_manifest")["sourceUris"] == [
        f"{uri}/.hoodie/manifest/snapshots/{commits[-2]}/files.csv"
    ]
    if table.config.is_mor:
        return  # the read-optimized rows are the COW case's (and see the GET above)
    assert [r.action for r in sync_table(table, [_target(client, dataset)]).results] == ["noop"]
    materialise(client, f"{stem}_history")
    materialise(client, f"{stem}_manifest")
    rows = _query(client, f"SELECT * FROM `{stem}`")
    ours, theirs = same_columns(rows, hudi_rs_rows(str(local), as_of=commits[-2]))  # type: ignore[arg-type]
    assert theirs.num_rows > 0
    normalise = _maps_as_dicts(theirs)
    assert canonical(ours, normalise) == canonical(theirs, normalise)
