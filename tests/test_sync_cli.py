"""``hudi-sync sync``, ``watch`` and ``backfill`` from the command line: exit codes, one-line
errors, no partial state; and the DuckDB target over tables on object stores."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from hudi_sync.cli.app import app
from hudi_sync.sync.job import sync_table
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.duckdb import DuckDBTarget
from tests.fixture_tables import fixture_tables
from tests.warehouse_rows import canonical, hudi_rs_rows, same_columns

runner = CliRunner()


def _one_line_error(result) -> str:  # type: ignore[no-untyped-def]
    assert result.exit_code == 2, result.output
    # a misspelt key of hudi_sync's namespaces is also warned of, on a line of its own
    lines = [line for line in result.stderr.splitlines() if not line.startswith("warning: ")]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def _views(database: Path) -> set[str]:
    if not database.exists():
        return set()
    with duckdb.connect(str(database)) as con:
        rows = con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
    return {r[0] for r in rows}


def test_not_a_hudi_table_exits_2_and_creates_nothing(tmp_path: Path) -> None:
    database = tmp_path / "w.duckdb"
    args = ["sync", "duckdb", str(tmp_path), "--database", str(database), "--table", "t"]
    message = _one_line_error(runner.invoke(app, args))
    assert str(tmp_path) in message and "not a Hudi table" in message
    assert _views(database) == set()
    assert not (tmp_path / ".hoodie").exists()


def test_non_parquet_table_exits_2_and_writes_no_manifest(fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("cow/v6_nonpartitioned")
    props = path / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text() + "hoodie.table.base.file.format=HFILE\n")
    database = tmp_path / "w.duckdb"
    args = ["sync", "duckdb", str(path), "--database", str(database), "--table", "t"]
    assert "HFILE" in _one_line_error(runner.invoke(app, args))
    assert not (path / ".hoodie" / "manifest").exists()
    assert _views(database) == set()


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--table-name", "tri`ps"], "table_name"),
        (["--dataset-name", "lake;drop"], "dataset_name"),
        (["--conf", "hoodie.gcp.bigquery.sync.no_such=1"], "no_such"),
        (["--props", "/nonexistent/bq.properties"], "/nonexistent/bq.properties"),
    ],
)
def test_bad_bigquery_options_exit_2_before_anything_is_written(  # type: ignore[no-untyped-def]
    extra: list[str], fragment: str, fixture_copy
) -> None:
    path = fixture_copy("cow/v6_nonpartitioned")
    args = ["sync", "bigquery", str(path), "--project-id", "my-project"]
    args += ["--dataset-name", "lake", "--table-name", "trips", *extra]
    assert fragment in _one_line_error(runner.invoke(app, args))
    assert not (path / ".hoodie" / "manifest").exists()


def test_bigquery_needs_a_gcs_table(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("cow/v6_nonpartitioned")
    args = ["sync", "bigquery", str(path), "--project-id", "my-project"]
    args += ["--dataset-name", "lake", "--table-name", "trips", "--dry-run"]
    assert "gs://" in _one_line_error(runner.invoke(app, args))


def test_dry_run_prints_sql_and_changes_nothing(fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("cow/v6_nonpartitioned")
    database = tmp_path / "w.duckdb"
    args = ["sync", "duckdb", str(path), "--database", str(database), "--table", "t", "--dry-run"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert 'CREATE OR REPLACE VIEW "t_history"' in result.stdout
    assert not database.exists()  # not even an empty database file
    assert not (path / ".hoodie" / "manifest").exists()


def test_empty_table_gets_empty_objects_and_says_so(fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Before the first commit the objects are created empty (tests/test_empty_table_sync.py
    checks their columns, the empty manifest and the first commit filling them)."""
    path = fixture_copy("cow/v8_empty")  # a copy: the sync publishes the empty manifest
    database = tmp_path / "w.duckdb"
    args = ["sync", "duckdb", str(path), "--database", str(database), "--table", "t"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "no completed commit yet: empty objects created" in result.stdout
    assert "\tcreate\t" in result.stdout
    assert _views(database) == {"t", "t_manifest", "t_history"}
    assert (path / ".hoodie" / "manifest" / "latest_snapshot_files.csv").read_text() == ""


def test_backfill_cli_exits_1_when_a_table_fails(unpack_table, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import shutil

    root = tmp_path / "lake"
    good = next(t for t in fixture_tables() if t.name.endswith("cow/v6_nonpartitioned"))
    shutil.copytree(unpack_table(good), root / "good")
    shutil.copytree(unpack_table(good), root / "broken")
    props = root / "broken" / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text().replace("hoodie.table.version=6", "hoodie.table.version=3"))
    database = tmp_path / "w.duckdb"
    conf = ["-c", "hoodie.meta.sync.client.tool.class=duckdb"]
    conf += ["-c", f"hoodie.duckdb.sync.database={database}"]
    result = runner.invoke(app, ["backfill", str(root), *conf, "--json"])
    assert result.exit_code == 1
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    rows = {Path(r["table"]).name: r for r in lines if r["event"] == "table"}
    assert rows["good"]["errors"] == "" and "version 3" in rows["broken"]["errors"]
    assert _views(database) == {"good", "good_manifest", "good_history"}


@pytest.mark.parametrize("store_name", ["s3_server", "gcs_server"])
def test_duckdb_target_reads_tables_on_object_stores(  # type: ignore[no-untyped-def]
    store_name: str, request, unpack_table, tmp_path: Path
) -> None:
    store = request.getfixturevalue(store_name)
    fixture = next(t for t in fixture_tables() if t.name.endswith("cow/v6_complexkeygen_hivestyle"))
    local = unpack_table(fixture)
    uri = store.upload_dir(local, store.make_bucket(), "lake/t")
    database = tmp_path / "w.duckdb"
    table = HudiTable.open(uri, store.storage_options)
    report = sync_table(table, [DuckDBTarget(str(database), "t")])
    assert report.results[0].action == "create"
    # The views read through fsspec: query them with the table's file system registered.
    with duckdb.connect(str(database)) as con:
        con.register_filesystem(table.location.fs)
        con.execute("SET TimeZone = 'UTC'")
        rows = con.sql('SELECT * FROM "t"').to_arrow_table()
    ours, theirs = same_columns(rows, hudi_rs_rows(str(local)))
    assert canonical(ours) == canonical(theirs)
