"""The ``hudi-sync show`` commands: stable JSON shapes, exit codes, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from hudi_sync.cli.app import app
from tests import hudi_oracle

runner = CliRunner()


def test_show_instants_json(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("cow/v9_txns_simple_meta")
    (path / ".hoodie" / "timeline" / "20270101000000000.commit.requested").write_bytes(b"")
    result = runner.invoke(app, ["show", "instants", str(path), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert all(set(r) == {"instant", "completion", "action", "state"} for r in rows)
    completed = [
        (r["instant"], r["action"])
        for r in rows
        if r["state"] == "COMPLETED" and r["action"] in ("commit", "deltacommit", "replacecommit")
    ]
    assert sorted(completed) == hudi_oracle.completed_instants(str(path))
    assert rows[-1] == {
        "instant": "20270101000000000",
        "completion": None,
        "action": "commit",
        "state": "REQUESTED",
    }
    indexing = [r for r in rows if r["action"] == "indexing"]
    assert len(indexing) == 2 and all(r["completion"] for r in indexing)


def test_show_files_json_matches_hudi_rs(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("mor/parquet/v6_nonpartitioned_rollback")
    result = runner.invoke(app, ["show", "files", str(path), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert all(set(r) == {"partition_path", "file_id", "base_file", "log_files"} for r in rows)
    assert rows == hudi_oracle.slices(str(path))
    assert len(rows[0]["log_files"]) == 3


def test_show_files_as_of_and_read_optimized(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("mor/parquet/v6_complexkeygen_hivestyle")
    first = "20250118044623136"
    result = runner.invoke(app, ["show", "files", str(path), "--as-of", first, "--json"])
    assert json.loads(result.stdout) == hudi_oracle.slices(str(path), as_of=first)
    result = runner.invoke(app, ["show", "files", str(path), "--read-optimized", "--json"])
    rows = json.loads(result.stdout)
    assert rows and all(r["log_files"] == [] and r["base_file"] for r in rows)
    assert [r["base_file"] for r in rows] == [r["base_file"] for r in hudi_oracle.slices(str(path))]


def test_bad_input_exits_2_with_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "hudi_sync.cli.app", "show", "files", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(tmp_path) in lines[0] and "not a Hudi table" in lines[0]


def test_bad_time_travel_value_exits_2(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("cow/v6_nonpartitioned")
    result = runner.invoke(app, ["show", "files", str(path), "--as-of", "last tuesday"])
    assert result.exit_code == 2
    assert "'last tuesday'" in result.stderr


def test_human_output_lists_instants(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("cow/v6_nonpartitioned")
    result = runner.invoke(app, ["show", "instants", str(path)])
    assert result.exit_code == 0
    assert "20240418173551906" in result.stdout and "COMPLETED" in result.stdout
