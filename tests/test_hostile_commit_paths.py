"""Commit metadata names only files inside the table (issue 49, item 2).

The change feed and ``hudi-sync changes`` read the files a commit's write stats name:
``path`` (the new base file), ``prevBaseFile`` (the one it replaced), the keys of
``cdcStats`` (its CDC logs), in the stat's partition. Someone who can write one table's
timeline could point them at another table's Parquet and have its rows published as
this table's changes. Each test forges the newest commit of a real Hudi-written table
(a JSON commit, table version 6) so that one of them reaches ``other``, a copy of the
table beside it, and checks the refusal: one line naming the commit file, no change
file written.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hudi_sync.cli.app import app
from hudi_sync.errors import CorruptTableError
from hudi_sync.manifest.change_feed import CHANGES_FOLDER
from hudi_sync.sync.job import sync_table
from hudi_sync.warehouse.duckdb import DuckDBTarget
from tests.fixture_tables import fixture_tables

FIXTURE = "sample_table/cow/v6_simplekeygen_nonhivestyle"
COMMIT = "20240418172804498.commit"
# In the newest commit: partition 30's file group was inserted, partition 10's updated.
INSERTED = "6db57019-98ee-480e-8eb1-fb3de48e1c24-0_1-119-167_20240418172804498.parquet"
UPDATED_BEFORE = "97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0_1-98-142_20240418172802262.parquet"

Stats = dict[str, list[dict[str, Any]]]


def _path(stats: Stats) -> None:
    stats["30"][0]["path"] = f"../other/30/{INSERTED}"


def _partition(stats: Stats) -> None:
    (stat,) = stats.pop("10")
    stat["partitionPath"] = "../other/10"
    stat["prevBaseFile"] = UPDATED_BEFORE
    stats["../other/10"] = [stat]


def _prev_base_file(stats: Stats) -> None:
    stats["10"][0]["prevBaseFile"] = f"../../other/10/{UPDATED_BEFORE}"


def _cdc_stats(stats: Stats) -> None:
    stats["30"][0]["cdcStats"] = {f"../other/30/{INSERTED}": 1}


def _prev_base_file_deleted(stats: Stats) -> None:
    """The update made a delete of every row of the previous base file (no CDC log
    needed: its rows are the before images)."""
    stats["10"][0].update(numWrites=0, numUpdateWrites=0, numInserts=0, numDeletes=2)
    _prev_base_file(stats)


FORGERIES: dict[str, Callable[[Stats], None]] = {
    "path": _path,
    "partition": _partition,
    "prevBaseFile": _prev_base_file,
    "cdcStats": _cdc_stats,
}
# Against a CDC table (``hudi-sync changes``), whose update needs a CDC log: made an
# insert unless the forgery is about it.
CDC_FORGERIES: dict[str, Callable[[Stats], None]] = {
    "path": _path,
    "prevBaseFile": _prev_base_file_deleted,
    "cdcStats": _cdc_stats,
}


def _as_insert(stats: Stats) -> None:
    (stat,) = stats["10"]
    stat.update(numUpdateWrites=0, numInserts=stat["numWrites"], prevCommit="null")


def _tables(
    unpack_table: Any, tmp_path: Path, forge: Callable[[Stats], None], cdc: bool = False
) -> Path:
    """The attacker's table (its newest commit forged; with ``cdc``, a CDC table whose
    update is an insert) and ``other`` beside it."""
    (found,) = [t for t in fixture_tables() if t.name == FIXTURE]
    source = unpack_table(found)
    table = tmp_path / "lake" / "table"
    shutil.copytree(source, table)
    shutil.copytree(source, tmp_path / "lake" / "other")
    commit = table / ".hoodie" / COMMIT
    record = json.loads(commit.read_text())
    if cdc:
        properties = table / ".hoodie/hoodie.properties"
        properties.write_text(properties.read_text() + "hoodie.table.cdc.enabled=true\n")
        _as_insert(record["partitionToWriteStats"])
    forge(record["partitionToWriteStats"])
    commit.write_text(json.dumps(record))
    return table


def _assert_names_the_commit(message: str, table: Path) -> None:
    assert "\n" not in message
    assert message.startswith(f"{table}: ") and f"timeline file {COMMIT}: " in message, message
    assert "does not stay inside its table" in message or "not one file name" in message


@pytest.mark.parametrize("field", list(CDC_FORGERIES))
def test_hudi_sync_changes_refuses_a_commit_naming_another_tables_file(
    unpack_table: Any, tmp_path: Path, field: str
) -> None:
    table = _tables(unpack_table, tmp_path, CDC_FORGERIES[field], cdc=True)
    result = CliRunner().invoke(app, ["changes", str(table), "--from", "earliest", "--json"])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""  # no row of any file printed
    message = result.stderr.strip()
    assert message.startswith("error: ")
    _assert_names_the_commit(message.removeprefix("error: "), table)


@pytest.mark.parametrize("field", list(FORGERIES))
def test_the_change_feed_refuses_a_commit_naming_another_tables_file(
    unpack_table: Any, tmp_path: Path, field: str
) -> None:
    table = _tables(unpack_table, tmp_path, FORGERIES[field])
    database = tmp_path / "w.duckdb"
    with pytest.raises(CorruptTableError) as refused:
        sync_table(str(table), [DuckDBTarget(str(database), "t")], change_feed="on")
    _assert_names_the_commit(str(refused.value), table)
    assert not list((table / CHANGES_FOLDER).rglob("*.parquet"))


def test_the_unforged_commits_read_as_before(unpack_table: Any, tmp_path: Path) -> None:
    """The check refuses nothing Hudi writes: the same tables, not forged, answer."""
    table = _tables(unpack_table, tmp_path, lambda stats: None, cdc=True)
    result = CliRunner().invoke(app, ["changes", str(table), "--from", "earliest", "--json"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert rows and {r["op"] for r in rows} == {"i"}
    shutil.rmtree(tmp_path / "lake")
    table = _tables(unpack_table, tmp_path, lambda stats: None)
    report = sync_table(
        str(table), [DuckDBTarget(str(tmp_path / "w.duckdb"), "t")], change_feed="on"
    )
    assert report.ok, report.errors
    assert len(list((table / CHANGES_FOLDER).rglob("*.parquet"))) == 2
