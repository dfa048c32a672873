"""What a new user of ``hudi-sync`` meets first: help, ``--version``, piped output, the
options every sync command shares, empty backfill roots, bad sources."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import duckdb
import typer
from typer.testing import CliRunner

from hudi_sync.cli.app import app
from tests import hudi_oracle

runner = CliRunner()


def _commands(group: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path of the CLI (groups and leaves; typer bundles its own click, so
    groups are told by their ``commands``)."""
    found = [path]
    if hasattr(group, "commands"):
        for name, command in group.commands.items():
            found += _commands(command, (*path, name))
    return found


def test_every_boolean_option_is_a_plain_flag_in_help() -> None:
    root = typer.main.get_command(app)
    paths = _commands(root)
    assert ("sync", "duckdb") in paths and ("ingest", "debezium") in paths
    flags_seen = 0
    for path in paths:
        result = runner.invoke(app, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        assert "<bool>" not in result.output, path
        command = root
        for name in path:
            command = command.commands[name]
        for param in command.params:
            if param.param_type_name == "option" and getattr(param, "is_flag", False):
                flags_seen += 1
                line = next(ln for ln in result.output.splitlines() if param.opts[-1] in ln)
                after = line.split(param.opts[-1], 1)[1]
                assert not after.startswith(" <"), (path, line)  # no value placeholder
    assert flags_seen > 20  # --json, --dry-run, --force, ... across commands


def test_version_is_the_installed_distribution_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"hudi-sync {version('hudi-sync')}"


def test_piped_tables_print_every_value_whole(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("mor/parquet/v6_nonpartitioned_rollback")
    result = subprocess.run(
        [sys.executable, "-m", "hudi_sync.cli.app", "show", "files", str(path)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "COLUMNS": "40"},
    )
    rows = list(csv.DictReader(io.StringIO(result.stdout), delimiter="\t"))
    expected = hudi_oracle.slices(str(path))
    assert [r["base_file"] for r in rows] == [s["base_file"] for s in expected]
    assert [r["log_files"] for r in rows] == [", ".join(s["log_files"]) for s in expected]
    assert "…" not in result.stdout


def _properties(path: Path, values: dict[str, str]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()), encoding="utf-8")
    return path


def _views(database: Path) -> set[str]:
    with duckdb.connect(str(database), read_only=True) as con:
        rows = con.sql("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
    return {row[0] for row in rows}


def test_sync_duckdb_takes_props_and_conf_like_the_other_syncs(
    fixture_copy, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("cow/v6_nonpartitioned")
    from_props = tmp_path / "props.duckdb"
    props = _properties(
        tmp_path / "sync.properties", {"hoodie.duckdb.sync.database": str(from_props)}
    )
    result = runner.invoke(app, ["sync", "duckdb", str(path), "--props", str(props), "--json"])
    assert result.exit_code == 0, result.output
    name = json.loads(result.stdout)["results"][0]["objects"][0]
    assert name == "v6_nonpartitioned"  # the Hudi table's name when no table name is set
    assert {"v6_nonpartitioned", "v6_nonpartitioned_history"} <= _views(from_props)

    from_conf = tmp_path / "conf.duckdb"
    args = ["sync", "duckdb", str(path), "--props", str(props)]
    args += ["-c", f"hoodie.duckdb.sync.database={from_conf}", "--table", "trips"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "trips" in _views(from_conf)  # -c overrides the file, --table names the view
    assert "trips" not in _views(from_props)

    missing = runner.invoke(app, ["sync", "duckdb", str(path)])
    assert missing.exit_code == 2
    assert (
        missing.stderr.strip() == "error: the duckdb sync target needs hoodie.duckdb.sync.database"
    )


def test_watch_json_prints_one_json_line_per_event(fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("cow/v6_nonpartitioned")
    database = tmp_path / "w.duckdb"
    args = ["watch", str(path), "-c", "hoodie.meta.sync.client.tool.class=duckdb"]
    args += ["-c", f"hoodie.duckdb.sync.database={database}", "--max-syncs", "1", "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["event"] for e in events] == ["sync", "stopped"]
    report = events[0]
    assert report["instant"] == hudi_oracle.completed_instants(str(path))[-1][0]
    assert report["errors"] == {} and report["results"][0]["action"] == "create"


def test_backfill_of_a_root_without_tables_says_so(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    (root / "raw" / "2024").mkdir(parents=True)
    args = ["backfill", str(root), "-c", "hoodie.meta.sync.client.tool.class=duckdb"]
    args += ["-c", f"hoodie.duckdb.sync.database={tmp_path / 'w.duckdb'}"]
    refused = runner.invoke(app, args)
    assert refused.exit_code == 1
    assert refused.stderr.strip() == f"error: no Hudi table under {root}"
    allowed = runner.invoke(app, [*args, "--allow-empty"])
    assert allowed.exit_code == 0
    assert allowed.stderr.strip() == f"warning: no Hudi table under {root}"
    assert not (tmp_path / "w.duckdb").exists()


def test_write_with_a_missing_source_fails_before_spark_starts(tmp_path: Path) -> None:
    """With JAVA_HOME pointing nowhere, starting Spark would fail with a Java error: the
    source must be refused by name first."""
    missing = tmp_path / "day1.jsonl"
    table = tmp_path / "t"
    command = [sys.executable, "-m", "hudi_sync.cli.app", "write", str(table), str(missing)]
    command += ["-c", "hoodie.table.name=t", "-c", "hoodie.datasource.write.recordkey.field=id"]
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-java")}
    result = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: source {missing}: no such file or folder"
    assert not table.exists()


def test_write_without_java_says_what_spark_needs(tmp_path: Path) -> None:
    source = Path(__file__).resolve().parents[1] / "scripts" / "sample" / "trips_day1.jsonl"
    table = tmp_path / "t"
    command = [sys.executable, "-m", "hudi_sync.cli.app", "write", str(table), str(source)]
    command += [
        "-c",
        "hoodie.table.name=t",
        "-c",
        "hoodie.datasource.write.recordkey.field=trip_id",
    ]
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-java")}
    result = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: cannot start Spark") and str(tmp_path / "no-java") in last
    assert "Traceback" not in result.stderr and not table.exists()


def test_demo_refuses_a_folder_that_is_not_a_table(tmp_path: Path) -> None:
    demo = Path(__file__).resolve().parents[1] / "scripts" / "demo.sh"
    result = subprocess.run([str(demo), str(tmp_path)], capture_output=True, text=True, check=False)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == (
        f"demo.sh: {tmp_path} is not a Hudi table (.hoodie/hoodie.properties not found)"
    )
