"""The change feed's lists are a base plus a delta (issue 51): a sync after one commit
writes a list of the commits since the base, not of the whole feed, and DuckDB's
``<t>_changes`` is the same query whatever the feed's length; the rows stay the table's
changes (replayed on hudi-rs's snapshots).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq
import pytest

from hudi_sync.errors import CorruptTableError
from hudi_sync.manifest.change_feed import CHANGES_FOLDER, ChangeFeedStore
from hudi_sync.table import HudiTable
from hudi_sync.table.cdc.plan import plan_changes
from tests.test_change_feed import (
    _assert_replay_gives_the_latest_snapshot,
    _cdc_query,
    _feed,
    _rows,
    _sync,
    _trips_with_cdc,
)
from tests.timeline_files import HeldBackCommits


def _view_sql(database: Path) -> str:
    with duckdb.connect(str(database), read_only=True) as con:
        (sql,) = con.execute(
            "SELECT sql FROM duckdb_views() WHERE view_name = 't_changes'"
        ).fetchone()  # type: ignore[misc]
    return str(sql)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_a_sync_after_one_commit_lists_the_commits_since_the_base_only(  # type: ignore[no-untyped-def]
    unpack_table, tmp_path: Path
) -> None:
    """Synced after each commit, each snapshot after the first lists only the commits
    since the first (no list of the whole feed), the view's SQL never changes, and the
    feed replayed on hudi-rs's first snapshot gives its latest."""
    path = _trips_with_cdc(unpack_table, tmp_path / "t")
    database = tmp_path / "w.duckdb"
    held = HeldBackCommits(path, keep=1)
    first = _sync(path, database)
    assert first is not None
    snapshots = path / CHANGES_FOLDER / "snapshots"
    first_listed = len(_lines(snapshots / first / "files.csv"))
    sql = _view_sql(database)
    synced = [first]
    while held.complete_next() is not None:
        instant = _sync(path, database)
        assert instant is not None
        synced.append(instant)
        folder = snapshots / instant
        since = plan_changes(HudiTable.open(str(path)), first, instant).instants
        written = [p for p in folder.iterdir() if p.name not in ("pending.csv", "feed.json")]
        lines = sum(len(_lines(p)) for p in written)
        assert lines == 2 * len(since), f"{instant}: {lines} lines listed, not the new commits'"
        assert len(_lines(folder / "added.csv")) == len(since), instant
        assert json.loads((folder / "feed.json").read_text())["base"] == first
        assert _view_sql(database) == sql, f"{instant}: the view's SQL changed"
    assert len(synced) > 4
    feed = _feed(database)
    assert len({r["ts_ms"] for r in feed}) == first_listed + len(since)
    assert _rows(feed) == _rows(_cdc_query(path, "earliest", synced[-1]))
    _assert_replay_gives_the_latest_snapshot(path, first, feed)


def _listed_rows(store: ChangeFeedStore, folder: str) -> list[dict[str, Any]]:
    """The rows of the change files snapshot ``folder`` lists, read by pyarrow."""
    rows: list[dict[str, Any]] = []
    for name in sorted(store.names_of(folder)):
        rows += pq.read_table(store.path(name)).to_pylist()
    return rows


def test_deltas_roll_into_a_base_and_the_old_chain_goes(  # type: ignore[no-untyped-def]
    unpack_table, tmp_path: Path
) -> None:
    """With a new base after each commit of a delta and 2 snapshots kept: each
    snapshot's lists (base and delta) name every change of the feed once, a delta lists
    at most 1 commit,
    and the lists of a chain no kept snapshot extends are gone with no file left that no
    list names."""
    path = _trips_with_cdc(unpack_table, tmp_path / "t")
    held = HeldBackCommits(path, keep=1)
    bases = 0
    while True:
        table = HudiTable.open(str(path))
        instant = table.latest_instant()
        assert instant is not None
        store = ChangeFeedStore(table, keep=2, roll_commits=1)
        published = store.publish(instant)
        meta = store.meta(instant)
        assert meta is not None and meta.commits <= 1
        bases += meta.base is None
        assert (published.delta_files_uri is None) == (meta.base is None)
        expected = _rows(_cdc_query(path, "earliest", instant))
        assert _rows(_listed_rows(store, instant)) == expected
        assert published.count == len(store.names_of(instant))
        if held.complete_next() is None:
            break
    assert bases >= 3, "the deltas never rolled into a new base"
    folders = store.snapshot_folders()
    assert len(folders) <= 3  # the 2 kept, and the base the older one extends
    named = set().union(*(store.names_of(f) for f in folders))
    assert store.existing() == named


def test_a_feed_description_names_only_its_own_lists(unpack_table, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``feed.json`` is read back: a base outside the snapshots or a file outside the
    feed in it is refused in one line naming it, before anything is written."""
    path = _trips_with_cdc(unpack_table, tmp_path / "t")
    database = tmp_path / "w.duckdb"
    held = HeldBackCommits(path, keep=1)
    first = _sync(path, database)
    assert first is not None
    described = path / CHANGES_FOLDER / "snapshots" / first / "feed.json"
    meta = json.loads(described.read_text())
    held.complete_next()
    for field, value in (
        ("base", "../../../../victim"),
        ("digests", {"0123456789ab": "../../../victim.parquet"}),
    ):
        described.write_text(json.dumps({**meta, field: value}))
        written = sorted(p for p in (path / CHANGES_FOLDER).rglob("*") if p.is_file())
        with pytest.raises(CorruptTableError) as refused:
            _sync(path, database)
        message = str(refused.value)
        assert "\n" not in message and message.startswith(f"{described}: "), message
        assert sorted(p for p in (path / CHANGES_FOLDER).rglob("*") if p.is_file()) == written


def test_bigquery_changes_table_reads_the_base_list_and_the_delta_list(  # type: ignore[no-untyped-def]
    unpack_table, tmp_path: Path
) -> None:
    """After a sync on a base, ``<t>_changes``' file set is the base's ``uris.csv`` and
    the delta's ``added_uris.csv``: together they name each change file of the feed's
    commits once."""
    from hudi_sync.warehouse.bigquery import BigQuerySyncConfig, BigQueryTarget

    path = _trips_with_cdc(unpack_table, tmp_path / "t")
    held = HeldBackCommits(path, keep=2)
    base = HudiTable.open(str(path))
    ChangeFeedStore(base, keep=2).publish(base.latest_instant())
    held.complete_all()
    table = HudiTable.open(str(path))
    instant = table.latest_instant()
    published = ChangeFeedStore(table, keep=2).publish(instant)
    config = BigQuerySyncConfig.from_options(
        {"project_id": "lake-project", "dataset_name": "lake", "table_name": "t"}
    )
    resource = BigQueryTarget(config)._changes_resource(
        "t_changes", published, {"description": "synced"}, lambda uri: uri
    )
    sources = resource["externalDataConfiguration"]["sourceUris"]
    folder = f"{path}/{CHANGES_FOLDER}/snapshots"
    assert sources == [
        f"{folder}/{base.latest_instant()}/uris.csv",
        f"{folder}/{instant}/added_uris.csv",
    ]
    uris = [line for source in sources for line in _lines(Path(source))]
    commits = [i.requested_time for i in plan_changes(table, "earliest").instants]
    assert sorted(Path(u).parent.name.removeprefix("commit_time=") for u in uris) == commits
    assert all(Path(u).is_file() for u in uris)
