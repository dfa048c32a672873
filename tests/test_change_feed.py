"""The change feed (``<t>_changes``): each synced commit's CDC rows once, in DuckDB.

Proof against the CDC query (itself checked against hudi-rs snapshots in test_cdc.py),
commit by commit, on a Hudi-written Merge-on-Read table with CDC switched on (Hudi infers
its changes from the log files) and on Copy-on-Write tables our writer logged CDC for.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pytest

from hudi_sync.errors import UnsupportedTableError
from hudi_sync.manifest.change_feed import (
    CHANGES_FOLDER,
    ChangeFeedStore,
    change_file,
    schema_digest,
)
from hudi_sync.sync.job import sync_table
from hudi_sync.table import HudiTable
from hudi_sync.table.cdc.log import json_value
from hudi_sync.table.cdc.plan import plan_changes
from hudi_sync.table.cdc.read import change_rows
from hudi_sync.table.config.schema import META_FIELDS
from hudi_sync.warehouse.duckdb import DuckDBTarget
from tests.fixture_tables import fixture_tables
from tests.test_cdc import _subset, _with_cdc_enabled, run_sequence
from tests.test_snowflake_target import emulation  # noqa: F401  (the fixture)
from tests.timeline_files import HeldBackCommits
from tests.warehouse_rows import hudi_rs_rows

REPO = Path(__file__).resolve().parents[1]
FEED_COLUMNS = ("op", "ts_ms", "before", "after")


def _feed(database: Path, where: str = "true") -> list[dict[str, Any]]:
    with duckdb.connect(str(database), read_only=True) as con:
        return con.sql(f"SELECT * FROM t_changes WHERE {where}").to_arrow_table().to_pylist()


def _rows(rows: list[dict[str, Any]]) -> Counter[str]:
    """The rows as the CDC query gives them (images compared as parsed JSON)."""
    return Counter(
        json.dumps(
            [
                r["op"],
                r["ts_ms"],
                json.loads(r["before"]) if r["before"] else None,
                json.loads(r["after"]) if r["after"] else None,
            ],
            sort_keys=True,
        )
        for r in rows
    )


def _cdc_query(path: Path, begin: str, end: str) -> list[dict[str, Any]]:
    table = HudiTable.open(str(path))
    plan = plan_changes(table, begin, end)
    return list(change_rows(table.location, plan.splits).to_pylist())


def _sync(path: Path, database: Path) -> str | None:
    report = sync_table(str(path), [DuckDBTarget(str(database), "t")])
    assert report.ok, report.errors
    return report.instant


def _follow_commit_by_commit(path: Path, database: Path) -> list[str]:
    """Sync after each commit; after each, the feed equals the CDC query from the
    start, and the new commit's rows (by the hive column ``commit_time``) equal the
    CDC query of that commit alone. Returns the instants synced."""
    held = HeldBackCommits(path, keep=1)
    synced = [_sync(path, database)]
    while held.complete_next() is not None:
        instant = _sync(path, database)
        assert instant is not None and instant != synced[-1]
        assert _rows(_feed(database)) == _rows(_cdc_query(path, "earliest", instant))
        newest = _feed(database, f"commit_time = '{instant}'")
        assert _rows(newest) == _rows(_cdc_query(path, synced[-1] or "earliest", instant))
        synced.append(instant)
    return [s for s in synced if s is not None]


def _assert_replay_gives_the_latest_snapshot(
    path: Path, first: str, feed: list[dict[str, Any]]
) -> None:
    """Replaying the feed's commits after ``first`` on hudi-rs's snapshot at ``first``
    (each commit's deletes, then its inserts and updates) gives its latest snapshot."""
    table = HudiTable.open(str(path))
    key = table.config.record_key_fields[0]
    fields = [f["name"] for f in table.avro_schema["fields"] if f["name"] not in META_FIELDS]

    def snapshot(instant: str | None) -> dict[Any, Any]:
        rows = hudi_rs_rows(str(path), as_of=instant).to_pylist()
        return {r[key]: json_value({k: r[k] for k in fields}) for r in rows}

    state = snapshot(first)
    later = [r for r in feed if r["ts_ms"] > first]
    for commit in sorted({r["ts_ms"] for r in later}):
        rows = [r for r in later if r["ts_ms"] == commit]
        for row in rows:
            if row["op"] == "d":
                state.pop(json.loads(row["before"])[key])
        for row in rows:
            if row["op"] != "d":
                state[json.loads(row["after"])[key]] = _subset(row["after"], fields)
    assert state == snapshot(None)


def _trips_with_cdc(unpack_table, target: Path) -> Path:  # type: ignore[no-untyped-def]
    """A Hudi-written MOR table (inserts, updates, a delete) with CDC switched on."""
    (fixture,) = [t for t in fixture_tables() if t.name.endswith("mor/avro/v8_trips_8i3u1d")]
    return _with_cdc_enabled(unpack_table(fixture), target)


def test_a_merge_on_read_table_feed_follows_every_commit_and_replays_to_the_snapshot(  # type: ignore[no-untyped-def]
    unpack_table, tmp_path: Path
) -> None:
    path = _trips_with_cdc(unpack_table, tmp_path / "t")
    database = tmp_path / "w.duckdb"
    synced = _follow_commit_by_commit(path, database)
    assert len(synced) > 3
    feed = _feed(database)
    assert {r["op"] for r in feed} == {"i", "u", "d"}
    # The typed columns are the JSON images' values; the key is the record key field's.
    for row in feed:
        for side in ("before", "after"):
            image = json.loads(row[side]) if row[side] else {}
            assert row[f"{side}_uuid"] == image.get("uuid")
            assert row[f"{side}_fare"] == image.get("fare")
        assert row["record_key"] == json.loads(row["after"] or row["before"])["uuid"]
    _assert_replay_gives_the_latest_snapshot(path, synced[0], feed)


@pytest.mark.parametrize(
    ("table_type", "version"),
    [("COPY_ON_WRITE", 6), ("COPY_ON_WRITE", 8), ("MERGE_ON_READ", 8)],
)
def test_a_table_our_writer_logged_feeds_the_cdc_query_commit_by_commit(  # type: ignore[no-untyped-def]
    spark, tmp_path: Path, table_type: str, version: int
) -> None:
    """Upserts, a late event, a soft delete, deletes, re-inserts, insert_overwrite,
    delete_partition, insert_overwrite_table; Merge-on-Read with inline compaction."""
    path = tmp_path / "t"
    cdc: dict[str, Any] = {
        "hoodie.table.cdc.enabled": "true",
        "hoodie.datasource.write.table.type": table_type,
    }
    if table_type == "MERGE_ON_READ":
        cdc |= {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": 2}
    run_sequence(spark, path, version, cdc)
    if table_type == "MERGE_ON_READ":  # compactions: commits without changes in the feed
        assert any(i.action == "commit" for i in HudiTable.open(str(path)).completed_commits())
    synced = _follow_commit_by_commit(path, tmp_path / "w.duckdb")
    assert len(synced) >= 8
    feed = _feed(tmp_path / "w.duckdb")
    assert {r["op"] for r in feed} == {"i", "u", "d"}
    _assert_replay_gives_the_latest_snapshot(path, synced[0], feed)
    assert all(r["after_id"] == json.loads(r["after"])["id"] for r in feed if r["after"])
    assert all(r["record_key"] == str(json.loads(r["after"] or r["before"])["id"]) for r in feed)


def test_reruns_and_time_travel_write_no_changes_twice(  # type: ignore[no-untyped-def]
    unpack_table, tmp_path: Path
) -> None:
    path = _trips_with_cdc(unpack_table, tmp_path / "t")
    database = tmp_path / "w.duckdb"
    table = HudiTable.open(str(path))
    commits = [c.requested_time for c in table.completed_commits()]
    # A time-travel sync writes no change file.
    sync_table(str(path), [DuckDBTarget(str(database), "t")], as_of=commits[1])
    assert not (path / CHANGES_FOLDER).exists()
    latest = _sync(path, database)
    files = {p: p.stat().st_mtime_ns for p in (path / CHANGES_FOLDER).rglob("changes-*.parquet")}
    before = _rows(_feed(database))
    assert _sync(path, database) == latest  # a rerun: no file rewritten, the same rows
    assert {p: p.stat().st_mtime_ns for p in files} == files
    assert _rows(_feed(database)) == before
    store = ChangeFeedStore(HudiTable.open(str(path)), keep=2)
    changing = plan_changes(table, "earliest", latest).instants
    existing = store.existing()
    assert existing == {
        change_file(c.requested_time, schema_digest(n))
        for c, n in zip(changing, sorted(existing), strict=True)
    }
    assert sorted(n.split("/")[1] for n in existing) == [
        f"commit_time={c.requested_time}" for c in changing
    ]


def test_a_table_without_cdc_gets_no_change_feed(fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("mor/avro/v8_trips_8i3u1d")
    database = tmp_path / "w.duckdb"
    _sync(path, database)
    assert not (path / CHANGES_FOLDER).exists()
    with duckdb.connect(str(database), read_only=True) as con:
        views = {r[0] for r in con.sql("SELECT view_name FROM duckdb_views()").fetchall()}
    assert "t_rt" in views and "t_changes" not in views


KILLER = textwrap.dedent(
    """
    import os, sys
    from hudi_sync.sync.job import sync_table
    from hudi_sync.warehouse.duckdb import DuckDBTarget

    table, database, stop_at = sys.argv[1], sys.argv[2], int(sys.argv[3])
    moves = 0
    replace = os.replace

    def dying_replace(source, destination):  # every local file is published by a rename
        global moves
        if moves == stop_at:
            os._exit(9)
        moves += 1
        replace(source, destination)

    os.replace = dying_replace
    sync_table(table, [DuckDBTarget(database, "t")])
    """
)


def test_a_sync_killed_at_each_file_it_publishes_leaves_no_gap_or_duplicate(  # type: ignore[no-untyped-def]
    unpack_table, tmp_path: Path
) -> None:
    """Killed before each file it moves into place (change files, their lists, the
    manifests), the sync leaves the feed as it was, and the rerun gives every commit's
    changes once."""
    path = _trips_with_cdc(unpack_table, tmp_path / "t")
    database = tmp_path / "w.duckdb"
    held = HeldBackCommits(path, keep=2)
    first = _sync(path, database)
    before = _rows(_feed(database))
    held.complete_all()
    latest = HudiTable.open(str(path)).latest_instant()
    expected = _rows(_cdc_query(path, "earliest", latest))  # type: ignore[arg-type]
    killed_at = 0
    while True:
        killed = subprocess.run(
            [sys.executable, "-c", KILLER, str(path), str(database), str(killed_at)],
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        if killed.returncode == 0:  # the sync ran past its last file: nothing left to kill
            break
        assert killed.returncode == 9, killed.stderr[-2000:]
        feed = _rows(_feed(database))
        assert feed in (before, expected), f"killed at file {killed_at}: a torn feed"
        killed_at += 1
    assert killed_at > 4, "the sync published fewer files than the commits' changes"
    assert first != latest and _rows(_feed(database)) == expected
    assert _sync(path, database) == latest and _rows(_feed(database)) == expected


def _net_changes(rows: list[dict[str, Any]], fields: list[str]) -> dict[str, Any]:
    """A commit's feed rows as their net effect by record key (a replaced group's ``d``
    and the ``i`` of the same key are one update)."""
    net: dict[str, list[Any]] = {}
    for row in sorted(rows, key=lambda r: r["op"] != "d"):
        entry = net.setdefault(row["record_key"], [_subset(row["before"], fields), None])
        if row["op"] != "d":
            entry[1] = _subset(row["after"], fields)
    return {k: (b, a) for k, (b, a) in net.items()}


@pytest.mark.parametrize(
    "suffix",
    ["cow/v9_txns_simple_meta", "cow/v6_complexkeygen_hivestyle", "mor/avro/v6_trips_8i3d"],
)
def test_a_table_without_cdc_gets_an_inferred_feed_when_asked(  # type: ignore[no-untyped-def]
    fixture_copy, tmp_path: Path, suffix: str
) -> None:
    """``hudi_sync.sync.change.feed=on``: Copy-on-Write changes by comparing base file
    versions, Merge-on-Read ones from the log files; each commit's net changes equal
    the difference of hudi-rs's snapshots before and after it."""
    path = fixture_copy(suffix)
    table = HudiTable.open(str(path))
    assert not table.config.cdc_enabled
    fields = [f["name"] for f in table.avro_schema["fields"] if f["name"] not in META_FIELDS]
    database = tmp_path / "w.duckdb"
    report = sync_table(str(path), [DuckDBTarget(str(database), "t")], change_feed="on")
    assert report.ok, report.errors

    def snapshot(instant: str | None) -> dict[str, tuple[str, Any]]:
        """hudi-rs's rows by key: the commit that wrote each, and its data."""
        if instant is None:
            return {}
        rows = hudi_rs_rows(str(path), as_of=instant).to_pylist()
        return {
            r["_hoodie_record_key"]: (
                r["_hoodie_commit_time"],
                json_value({k: r[k] for k in fields}),
            )
            for r in rows
        }

    previous = None
    commits = [c.requested_time for c in table.completed_commits()]
    for instant in commits:
        before, after = snapshot(previous), snapshot(instant)
        # A key changes when the commit wrote its row or removed it. Merge-on-Read
        # inference compares the merged rows, so a rewrite to equal values is none there.
        want = {}
        for key in before.keys() | after.keys():
            old, new = before.get(key), after.get(key)
            if (new is not None and new[0] == instant) or (new is None and old is not None):
                images = (old[1] if old else None, new[1] if new else None)
                if images[0] != images[1] or not table.config.is_mor:
                    want[key] = images
        assert _net_changes(_feed(database, f"commit_time = '{instant}'"), fields) == want
        previous = instant
    assert len(commits) > 1 and _feed(database)


def test_a_feed_turned_on_or_off_at_the_instant_already_synced_changes_the_views(  # type: ignore[no-untyped-def]
    fixture_copy, tmp_path: Path
) -> None:
    """A warehouse already showing the latest instant: the sync that turns the feed on
    creates ``t_changes``, the one that turns it off drops it (neither is a no-op), and a
    sync after either is a no-op again."""
    path = fixture_copy("cow/v9_txns_simple_meta")
    database = tmp_path / "w.duckdb"
    first = sync_table(str(path), [DuckDBTarget(str(database), "t")])
    assert first.ok and first.results[0].action == "create"
    report = sync_table(str(path), [DuckDBTarget(str(database), "t")], change_feed="on")
    assert report.ok, report.errors
    assert report.results[0].action != "noop" and "t_changes" in report.results[0].objects
    assert _feed(database)  # the view exists and holds the commits' changes
    again = sync_table(str(path), [DuckDBTarget(str(database), "t")], change_feed="on")
    assert again.results[0].action == "noop"
    off = sync_table(str(path), [DuckDBTarget(str(database), "t")], change_feed="off")
    assert off.results[0].action != "noop"
    with duckdb.connect(str(database), read_only=True) as con:
        views = {r[0] for r in con.sql("SELECT view_name FROM duckdb_views()").fetchall()}
    assert "t" in views and not {"t_changes", "t_changes_manifest"} & views
    again = sync_table(str(path), [DuckDBTarget(str(database), "t")], change_feed="off")
    assert again.results[0].action == "noop"


def test_a_feed_that_cannot_be_inferred_is_refused_in_one_line(  # type: ignore[no-untyped-def]
    fixture_copy, tmp_path: Path
) -> None:
    path = fixture_copy("cow/v8_simplekeygen_hivestyle_no_metafields")
    database = tmp_path / "w.duckdb"
    with pytest.raises(UnsupportedTableError, match=r"hoodie\.table\.cdc\.enabled") as refused:
        sync_table(str(path), [DuckDBTarget(str(database), "t")], change_feed="on")
    assert "\n" not in str(refused.value)
    with duckdb.connect(str(database), read_only=True) as con:  # the other objects synced
        views = {r[0] for r in con.sql("SELECT view_name FROM duckdb_views()").fetchall()}
    assert "t" in views and "t_changes" not in views
    # The hook records the refusal and syncs the rest.
    report = sync_table(
        str(path), [DuckDBTarget(str(database), "t")], change_feed="on", continue_on_error=True
    )
    assert list(report.errors) == ["_changes"]


# What a dbt ``incremental`` model runs against the feed: the changes after the newest
# commit it has merged, the last change of each key winning (the docs show this query).
INCREMENTAL_QUERY = """
SELECT record_key, op, after_uuid, after_fare, ts_ms
FROM t_changes
WHERE commit_time > ?
QUALIFY row_number() OVER (PARTITION BY record_key ORDER BY ts_ms DESC, op = 'd') = 1
"""


def test_the_cli_reports_the_feed_and_an_incremental_model_catches_up(  # type: ignore[no-untyped-def]
    unpack_table, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from hudi_sync.cli.app import app

    path = _trips_with_cdc(unpack_table, tmp_path / "t")
    database = tmp_path / "w.duckdb"
    held = HeldBackCommits(path, keep=2)
    args = ["sync", "duckdb", str(path), "--database", str(database), "--table", "t", "--json"]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    report = json.loads(first.output)
    assert report["changes"]["commits"] == report["changes"]["written"] == 2
    assert report["changes"]["through"] == report["instant"]
    merged_through = report["instant"]
    model: dict[str, Any] = {}  # the model's first full build: the feed so far, in order
    for row in sorted(_feed(database), key=lambda r: (r["ts_ms"], r["op"] != "d")):
        if row["op"] == "d":
            model.pop(row["record_key"], None)
        else:
            model[row["record_key"]] = row
    held.complete_all()
    second = CliRunner().invoke(app, args)
    assert second.exit_code == 0, second.output
    changing = plan_changes(HudiTable.open(str(path)), "earliest").instants
    assert json.loads(second.output)["changes"]["written"] == len(changing) - 2
    with duckdb.connect(str(database), read_only=True) as con:
        latest = con.sql(INCREMENTAL_QUERY, params=[merged_through]).to_arrow_table().to_pylist()
    for row in latest:  # the model's MERGE
        if row["op"] == "d":
            model.pop(row["record_key"], None)
        else:
            model[row["record_key"]] = row
    snapshot = {r["uuid"]: r["fare"] for r in hudi_rs_rows(str(path)).to_pylist()}
    assert {k: r["after_fare"] for k, r in model.items()} == snapshot


def test_a_query_for_recent_changes_opens_only_their_files(  # type: ignore[no-untyped-def]
    unpack_table, tmp_path: Path
) -> None:
    """A filter on ``commit_time`` prunes the feed's files by their hive folders: with the
    oldest change file made unreadable, the recent changes still read, all of them not."""
    path = _trips_with_cdc(unpack_table, tmp_path / "t")
    database = tmp_path / "w.duckdb"
    latest = _sync(path, database)
    oldest = sorted((path / CHANGES_FOLDER).rglob("changes-*.parquet"))[0]
    oldest.write_bytes(b"not parquet")
    recent = _feed(database, f"commit_time = '{latest}'")
    assert recent and {r["ts_ms"] for r in recent} == {latest}
    with pytest.raises(duckdb.Error, match=r"changes-\w+\.parquet"):
        _feed(database)


def test_a_restore_takes_the_undone_commits_out_of_the_feed(  # type: ignore[no-untyped-def]
    unpack_table, tmp_path: Path
) -> None:
    """After a restore (written as Hudi writes one, ``tests.hudi_restore``: Hudi's jars
    cannot run here) the feed holds the changes of the commits still on the table only,
    and the commits written after the restore are added once."""
    from tests.fixture_tables import without_metadata_table
    from tests.hudi_restore import restore_to

    path = without_metadata_table(_trips_with_cdc(unpack_table, tmp_path / "t"))
    database = tmp_path / "w.duckdb"
    table = HudiTable.open(str(path))
    changing = [i.requested_time for i in plan_changes(table, "earliest").instants]
    latest = _sync(path, database)
    assert {r["ts_ms"] for r in _feed(database)} == set(changing)
    kept = changing[-3]
    restore_to(table, kept)
    restored = HudiTable.open(str(path))
    assert _sync(path, database) == restored.latest_instant()
    feed = _feed(database)
    assert {r["ts_ms"] for r in feed} == {c for c in changing if c <= kept}
    assert _rows(feed) == _rows(_cdc_query(path, "earliest", restored.latest_instant()))
    assert latest not in {r["ts_ms"] for r in feed}


@pytest.fixture(scope="module")
def written_cow_cdc(spark, tmp_path_factory: pytest.TempPathFactory) -> Path:  # type: ignore[no-untyped-def]
    """A Copy-on-Write CDC table our writer wrote (``test_cdc.SEQUENCE``: upserts, a late
    event, deletes, re-inserts, the replace operations), non-hive partitions (v6)."""
    path = tmp_path_factory.mktemp("cow-cdc") / "t"
    run_sequence(spark, path, 6, {"hoodie.table.cdc.enabled": "true"})
    return path


def _warehouse_source(kind: str, unpack_table: Any, written: Path, target: Path) -> Path:
    """A writable copy of the table a warehouse test syncs: a Hudi-written MOR table
    with CDC switched on (non-partitioned), or our writer's COW CDC table."""
    if kind == "cow":
        shutil.copytree(written, target)
        return target
    (fixture,) = [t for t in fixture_tables() if t.name.endswith("mor/parquet/v6_nonpartitioned")]
    return _with_cdc_enabled(unpack_table(fixture), target)


@pytest.mark.parametrize("kind", ["mor", "cow"])
def test_bigquery_changes_table_lists_the_feed_and_reads_the_same_rows(  # type: ignore[no-untyped-def]
    kind, unpack_table, written_cow_cdc, gcs_server, client, dataset, tmp_path: Path
) -> None:
    """``<t>_changes`` in the BigQuery emulator: a PARQUET external table whose file set
    is the feed's list (manifest file) with hive keys ``commit_date``/``commit_time``.
    The emulator's external tables read no file, so the stored configuration is checked
    exactly, then materialised with its own load job over the listed files, and read
    through BigQuery SQL: the rows equal the CDC query's, commit by commit."""
    from hudi_sync.warehouse.bigquery import (
        MANIFEST_FILE_SET,
        BigQuerySyncConfig,
        BigQueryTarget,
    )
    from tests.bigquery_emulator import materialise

    # No hive partitions: the emulator cannot create views over hive-partitioned external
    # tables before they are materialised (it does not add the hive keys as columns).
    local = _warehouse_source(kind, unpack_table, written_cow_cdc, tmp_path / "t")
    uri = gcs_server.upload_dir(local, gcs_server.make_bucket(), "lake/t")
    table = HudiTable.open(uri, gcs_server.storage_options)
    config = BigQuerySyncConfig.from_options(
        {"project_id": client.project, "dataset_name": dataset, "table_name": "t"}
    )
    report = sync_table(table, [BigQueryTarget(config, client)])
    assert report.ok, report.errors
    assert "t_changes" in report.results[0].objects
    table_id = f"{client.project}.{dataset}.t_changes"
    stored = client.get_table(table_id)
    external = dict(stored.external_data_configuration.to_api_repr())
    changes = f"{uri}/.hoodie/manifest/changes"
    assert external["sourceUris"] == [f"{changes}/snapshots/{report.instant}/uris.csv"]
    assert external["fileSetSpecType"] == MANIFEST_FILE_SET
    assert external["hivePartitioningOptions"]["sourceUriPrefix"] == (
        f"{changes}/{{commit_date:DATE}}/{{commit_time:STRING}}"
    )
    assert f"through {report.instant}" in stored.description
    listed = gcs_server.fs().cat_file(external["sourceUris"][0].removeprefix("gs://"))
    uris = listed.decode().split()
    assert len(uris) == len(plan_changes(table, "earliest").instants)
    materialise(client, table_id, uris=uris)
    rows = client.query_and_wait(f"SELECT * FROM `{table_id}`").to_arrow().to_pylist()
    assert _rows(rows) == _rows(_cdc_query(local, "earliest", report.instant))  # type: ignore[arg-type]
    assert {str(r["commit_time"]) for r in rows} == {r["ts_ms"] for r in rows}
    typed = [c for c in rows[0] if c.startswith("after_")]
    assert len(typed) > 3
    for row in rows:  # the typed columns are the JSON images' values
        image = json.loads(row["after"]) if row["after"] else {}
        for column in typed:
            value = image.get(column.removeprefix("after_"))
            assert json_value(row[column]) == value, column


@pytest.mark.usefixtures("emulation")
@pytest.mark.parametrize("kind", ["mor", "cow"])
def test_snowflake_changes_view_reads_the_listed_change_files(  # type: ignore[no-untyped-def]
    kind, unpack_table, written_cow_cdc, s3_server, tmp_path: Path
) -> None:
    """``<t>_changes`` in Snowflake: an external table over the change files (partitioned
    by ``commit_date``/``commit_time`` from the path), one over the snapshot's list, and a
    view of the listed files' rows. fakesnow cannot run external tables; the emulation
    (``tests/snowflake_emulation.py``) runs their own DDL over the real files in S3. The
    rows equal the CDC query's, and a sync after more commits shows theirs too."""
    import snowflake.connector

    from hudi_sync.warehouse.snowflake import SnowflakeTarget
    from tests.test_snowflake_target import DATABASE, SCHEMA, _options

    local = _warehouse_source(kind, unpack_table, written_cow_cdc, tmp_path / "t")
    held = HeldBackCommits(local, keep=1)
    uri = s3_server.upload_dir(local, s3_server.make_bucket(), "tables/t")

    def sync() -> str | None:
        table = HudiTable.open(uri, s3_server.storage_options)
        target = SnowflakeTarget.from_options(_options(), "trips", environ={})
        report = sync_table(table, [target])
        assert report.ok, report.errors
        assert "trips_changes" in report.results[0].objects
        return report.instant

    def feed() -> list[dict[str, Any]]:
        connection = snowflake.connector.connect(database=DATABASE, schema=SCHEMA)
        cursor = connection.cursor()
        cursor.execute("SELECT op, ts_ms, before, after, commit_time FROM trips_changes")
        names = [d[0].lower() for d in cursor.description]
        rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        connection.close()
        return rows

    first = sync()
    assert first is not None
    shown = feed()
    assert _rows(shown) == _rows(_cdc_query(local, "earliest", first))
    assert all(r["commit_time"] == r["ts_ms"] for r in shown)
    held.complete_all()
    s3_server.upload_dir(local, uri.removeprefix("s3://").split("/")[0], "tables/t")
    latest = sync()
    assert latest != first
    assert _rows(feed()) == _rows(_cdc_query(local, "earliest", latest))  # type: ignore[arg-type]


@pytest.mark.usefixtures("emulation")
def test_snowflake_feed_turned_on_or_off_at_the_instant_already_synced(  # type: ignore[no-untyped-def]
    unpack_table, s3_server, tmp_path: Path
) -> None:
    """A CDC table synced with the feed off, then at the same instant with it on (the
    default, ``auto``): ``trips_changes`` is created and reads the commits' changes;
    turned off again, its view and external tables are dropped; neither sync is a no-op,
    and a sync after either is one."""
    import snowflake.connector

    from hudi_sync.warehouse.snowflake import SnowflakeTarget
    from tests.test_snowflake_target import DATABASE, SCHEMA, _options

    local = _warehouse_source("mor", unpack_table, tmp_path / "unused", tmp_path / "t")
    uri = s3_server.upload_dir(local, s3_server.make_bucket(), "tables/t")

    def sync(feed: str) -> str:
        table = HudiTable.open(uri, s3_server.storage_options)
        target = SnowflakeTarget.from_options(_options(), "trips", environ={})
        report = sync_table(table, [target], change_feed=feed)
        assert report.ok, report.errors
        synced.append(report.instant)
        return report.results[0].action

    synced: list[str | None] = []

    def shown() -> set[str]:
        """The feed's objects that exist (views and external tables alike)."""
        connection = snowflake.connector.connect(database=DATABASE, schema=SCHEMA)
        cursor = connection.cursor()
        cursor.execute(
            f"SELECT DISTINCT table_name FROM {DATABASE}.INFORMATION_SCHEMA.COLUMNS "
            f"WHERE table_schema = '{SCHEMA.upper()}'"
        )
        found = {str(r[0]).lower() for r in cursor.fetchall()}
        connection.close()
        # (an emulated external table keeps its rows in ``<name>__files``)
        return {n for n in found if n.startswith("trips_changes") and "__" not in n}

    def feed() -> list[dict[str, Any]]:
        connection = snowflake.connector.connect(database=DATABASE, schema=SCHEMA)
        cursor = connection.cursor()
        cursor.execute("SELECT op, ts_ms, before, after FROM trips_changes")
        names = [d[0].lower() for d in cursor.description]
        rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        connection.close()
        return rows

    feed_objects = {"trips_changes", "trips_changes_history", "trips_changes_manifest"}
    assert sync("off") == "create" and not shown()
    assert sync("auto") == "update" and shown() == feed_objects
    assert len(set(synced)) == 1 and synced[0] is not None
    assert _rows(feed()) == _rows(_cdc_query(local, "earliest", synced[0]))
    assert sync("auto") == "noop"
    assert sync("off") == "update" and not shown()
    assert sync("off") == "noop"


def test_the_feed_follows_cleaning_and_prunes_with_the_manifests_retention(  # type: ignore[no-untyped-def]
    spark, tmp_path: Path
) -> None:
    """Commits whose changes the cleaner made unreadable leave the feed (its range, in the
    view's description, starts at the earliest readable commit); their files go once no
    retained list names them."""
    from hudi_sync.spark import write
    from hudi_sync.table.cdc.plan import earliest_valid_begin
    from tests.test_spark_writer import frame, options

    path, database = tmp_path / "t", tmp_path / "w.duckdb"
    keep = 2
    for round_ in range(6):
        rows = [{"id": i, "p": "a", "name": f"n{i}-{round_}", "ts": round_} for i in range(3)]
        write(
            frame(spark, rows, False),
            str(path),
            options(
                "t",
                8,
                "upsert",
                **{"hoodie.table.cdc.enabled": "true", "hoodie.cleaner.commits.retained": 2},
            ),
        )
        report = sync_table(str(path), [DuckDBTarget(str(database), "t")], keep=keep)
        assert report.ok, report.errors
        table = HudiTable.open(str(path))
        readable = [i.requested_time for i in plan_changes(table, "earliest").instants]
        assert sorted({r["ts_ms"] for r in _feed(database)}) == readable
        boundary = earliest_valid_begin(table)
        with duckdb.connect(str(database), read_only=True) as con:
            (comment,) = con.execute(
                "SELECT comment FROM duckdb_views() WHERE view_name = 't_changes'"
            ).fetchone()  # type: ignore[misc]
        start = f"after {boundary}" if boundary else "from the first commit"
        assert f"changes of the commits {start} through {report.instant}" in comment
    assert boundary is not None, "the cleaner moved the readable range"
    store = ChangeFeedStore(HudiTable.open(str(path)), keep=keep)
    listed = set().union(*(store.listed(f) for f in store.snapshot_folders()))
    assert len(store.snapshot_folders()) == keep
    assert store.existing() == listed  # the files of commits no kept list names are gone
    assert len(listed) < 6
