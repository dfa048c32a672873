"""A base path holding a control character (a folder ``evil\\n40`` under a root) is
refused when the table is opened, in one line naming it: its manifest lines would split
at the newline and its warehouse markers break. ``--root`` discovery reports it as that
table's error and syncs the others."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from hudi_sync.cli.app import app
from hudi_sync.errors import BadInputError
from hudi_sync.sync.backfill import backfill
from hudi_sync.sync.hook import DUCKDB_DATABASE, SYNC_TOOLS
from hudi_sync.sync.watch import WatchEvent, watch
from hudi_sync.table import HudiTable
from tests.fixture_tables import fixture_tables

TABLE = "cow/v6_nonpartitioned"


def _lake(unpack_table, root: Path, names: list[str]) -> list[Path]:  # type: ignore[no-untyped-def]
    fixture = next(t for t in fixture_tables() if t.name.endswith(TABLE))
    paths = [root / name for name in names]
    for path in paths:
        shutil.copytree(unpack_table(fixture), path)
    return paths


def _views(database: Path) -> set[str]:
    with duckdb.connect(str(database)) as con:
        rows = con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
    return {str(r[0]) for r in rows}


@pytest.mark.parametrize("character", ["\n", "\r", "\t", "\x1f", "\x7f", "\x85", "\u2028"])
def test_open_refuses_a_base_path_with_a_control_character(  # type: ignore[no-untyped-def]
    character: str, unpack_table, tmp_path: Path
) -> None:
    (path,) = _lake(unpack_table, tmp_path, [f"evil{character}40"])
    with pytest.raises(BadInputError) as refused:
        HudiTable.open(str(path))
    message = str(refused.value)
    assert len(message.splitlines()) == 1 and repr(str(path)) in message
    assert "control character" in message
    assert not (path / ".hoodie" / "manifest").exists()


def test_backfill_reports_the_table_and_syncs_the_others(unpack_table, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "lake"
    evil, good = _lake(unpack_table, root, ["evil\n40", "good"])
    database = tmp_path / "w.duckdb"
    reports = dict(backfill(str(root), {SYNC_TOOLS: "duckdb", DUCKDB_DATABASE: str(database)}))
    assert reports[str(good)].ok, reports[str(good)].errors
    (error,) = reports[str(evil)].errors.values()
    assert len(error.splitlines()) == 1 and repr(str(evil)) in error
    assert not (evil / ".hoodie" / "manifest").exists()
    assert _views(database) == {"good", "good_manifest", "good_history"}


def test_backfill_cli_prints_one_row_per_table(unpack_table, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "lake"
    _lake(unpack_table, root, ["evil\n40", "good"])
    database = tmp_path / "w.duckdb"
    conf = ["-c", "hoodie.meta.sync.client.tool.class=duckdb"]
    conf += ["-c", f"hoodie.duckdb.sync.database={database}"]
    result = CliRunner().invoke(app, ["backfill", str(root), *conf, "--json"])
    assert result.exit_code == 1
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    rows = {Path(r["table"]).name: r["errors"] for r in lines if r["event"] == "table"}
    assert rows["good"] == "" and "control character" in rows["evil\n40"]


def test_watch_root_reports_it_every_poll_and_syncs_the_others(  # type: ignore[no-untyped-def]
    unpack_table, tmp_path: Path
) -> None:
    root = tmp_path / "lake"
    evil, good = _lake(unpack_table, root, ["evil\n40", "good"])
    database = tmp_path / "w.duckdb"
    events: list[WatchEvent] = []
    stop = threading.Event()

    def on_event(event: WatchEvent) -> None:
        events.append(event)
        errors = sum(e.event == "error" for e in events)
        if errors >= 3 or sum(e.event == "sync" for e in events) >= 2:
            stop.set()  # the one sync expected, three refusals (or a wrong second sync)

    options = {SYNC_TOOLS: "duckdb", DUCKDB_DATABASE: str(database)}
    watch(
        roots=[str(root)],
        options=options,
        interval=0.01,
        max_backoff=0.01,
        stop=stop,
        on_event=on_event,
    )
    errors = [e for e in events if e.event == "error"]
    assert {e.table for e in errors} == {str(evil)}
    assert all("control character" in (e.error or "") for e in errors)
    assert [e.table for e in events if e.event == "sync"] == [str(good)]
    # Each event prints as one line, whatever the table's path holds.
    assert all(len(e.line().splitlines()) == 1 for e in events)
    assert not (evil / ".hoodie" / "manifest").exists()
    assert _views(database) == {"good", "good_manifest", "good_history"}
