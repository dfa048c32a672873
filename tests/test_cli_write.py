"""``hudi-sync write``: data files into a Hudi table through PySpark, exit codes 0/2/1.

Runs the CLI in-process (typer's runner), so it shares the session's Spark; the sample
files are the demo's own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
from typer.testing import CliRunner

from hudi_sync.cli.app import app
from hudi_sync.spark.writing.options import META_SYNC
from hudi_sync.sync.hook import DUCKDB_DATABASE, SYNC_TOOLS
from tests.warehouse_rows import canonical, hudi_rs_rows

runner = CliRunner()
SAMPLE = Path(__file__).resolve().parents[1] / "scripts" / "sample"
PROPS = ["--props", str(SAMPLE / "trips.properties")]


def _hook(database: Path) -> list[str]:
    pairs = [
        f"{META_SYNC}=true",
        f"{SYNC_TOOLS}=duckdb",
        f"{DUCKDB_DATABASE}={database}",
    ]
    return [arg for pair in pairs for arg in ("--conf", pair)]


def _rows(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (SAMPLE / name).read_text().splitlines()]


def test_write_then_upsert_with_the_hook_syncs_duckdb(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    table, database = tmp_path / "trips", tmp_path / "w.duckdb"
    first = runner.invoke(
        app,
        [
            "write",
            str(table),
            str(SAMPLE / "trips_day1.jsonl"),
            *PROPS,
            "--json",
            "--conf",
            "hoodie.datasource.write.operation=insert",
        ],
    )
    assert first.exit_code == 0, first.output
    day1, day2 = _rows("trips_day1.jsonl"), _rows("trips_day2.jsonl")
    assert json.loads(first.stdout)["inserts"] == len(day1)

    hook = _hook(database)
    second = runner.invoke(
        app, ["write", str(table), str(SAMPLE / "trips_day2.jsonl"), *PROPS, "--json", *hook]
    )
    assert second.exit_code == 0, second.output
    summary = json.loads(second.stdout)

    # Expected outcome from the files: the higher ts wins, a flagged row deletes.
    latest = {r["trip_id"]: r for r in day1}
    for row in day2:
        if row["ts"] >= latest.get(row["trip_id"], {"ts": -1})["ts"]:
            latest[row["trip_id"]] = row
    expected = {k: r for k, r in latest.items() if not r["_hoodie_is_deleted"]}
    new_keys = {r["trip_id"] for r in day2} - {r["trip_id"] for r in day1}
    assert summary["inserts"] == len(new_keys)
    assert summary["deletes"] == len(latest) - len(expected)

    oracle = hudi_rs_rows(str(table))
    assert {r["trip_id"]: r["fare"] for r in oracle.to_pylist()} == {
        k: r["fare"] for k, r in expected.items()
    }
    with duckdb.connect(str(database), read_only=True) as con:
        view = con.sql("SELECT * FROM trips").to_arrow_table()
    assert canonical(view) == canonical(oracle)


def test_bad_input_exits_2_and_creates_nothing(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    table = tmp_path / "t"
    source = str(SAMPLE / "trips_day1.jsonl")
    cases = [
        ([str(tmp_path / "missing.json")], ["--conf", "a=b"], "missing.json: no such file"),
        ([source], ["--conf", "hoodie.datasource.write.operation=merge"], "operation='merge'"),
        ([source], ["--format", "avro"], "--format 'avro'"),
        ([str(SAMPLE / "trips.properties")], [], "pass --format"),
    ]
    for sources, extra, message in cases:
        result = runner.invoke(app, ["write", str(table), *sources, *PROPS, *extra])
        assert result.exit_code == 2, (extra, result.output)
        assert message in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    assert not table.exists()


def test_failed_sync_keeps_the_commit_and_exits_1(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    table = tmp_path / "trips"
    (tmp_path / "blocked").write_text("a file where the database folder should be")
    result = runner.invoke(
        app,
        [
            "write",
            str(table),
            str(SAMPLE / "trips_day1.jsonl"),
            *PROPS,
            *_hook(tmp_path / "blocked" / "w.duckdb"),
        ],
    )
    assert result.exit_code == 1
    assert "but the sync failed" in result.stderr
    assert hudi_rs_rows(str(table)).num_rows == len(_rows("trips_day1.jsonl"))
