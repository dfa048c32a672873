"""``hudi-sync verify`` on DuckDB: a fresh sync verifies clean; each drift, made the way
it happens (a commit after the sync, a restore after it, a dropped view, a column altered
in the warehouse, a manifest file removed, another table's objects), is reported by name
with exit 1 and nothing written; ``--repair`` fixes what a sync can, after which the
views show the table's rows (as hudi-rs reads them) and a second verify is clean.

Tables come from the Arrow writer (two commits, partitioned by ``city``); restores from
``tests/hudi_restore.py`` (Hudi's restore, written as Hudi writes it).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
from typer.testing import CliRunner

from hudi_sync.cli.app import app
from hudi_sync.spark.writing.writer import write_arrow
from hudi_sync.sync.job import sync_table
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.duckdb import DuckDBTarget
from tests.hudi_restore import restore_to
from tests.warehouse_rows import canonical, hudi_rs_rows, same_columns


def _options(table_type: str = "COPY_ON_WRITE") -> dict[str, object]:
    return {
        "hoodie.table.name": "trips",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.metadata.enable": "false",  # the restore helper restores no metadata table
        "hoodie.datasource.write.operation": "upsert",
    }


def _rows(ids: list[int], city: str, ts: int = 1) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "city": pa.array([city] * len(ids)),
            "fare": pa.array([1.5 * i for i in ids]),
            "ts": pa.array([ts] * len(ids), pa.int64()),
        }
    )


class Setup:
    """A table synced to a DuckDB file, and the verify command's arguments for it."""

    def __init__(self, tmp_path: Path, table_type: str = "COPY_ON_WRITE") -> None:
        self.path = tmp_path / "trips"
        self.database = tmp_path / "w.duckdb"
        self.table_type = table_type
        self.write([1, 2], "sfo")
        self.write([3], "nyc")
        self.target = DuckDBTarget(str(self.database), "trips")
        sync_table(str(self.path), [self.target])

    def write(self, ids: list[int], city: str, ts: int = 1) -> None:
        write_arrow(_rows(ids, city, ts), str(self.path), _options(self.table_type))

    def commits(self) -> list[str]:
        return [i.requested_time for i in HudiTable.open(str(self.path)).completed_commits()]

    def verify(self, *extra: str) -> tuple[int, str]:
        result = CliRunner().invoke(
            app,
            [
                "verify",
                str(self.path),
                "-c",
                "hoodie.meta.sync.client.tool.class=duckdb",
                "-c",
                f"hoodie.duckdb.sync.database={self.database}",
                *extra,
            ],
        )
        return result.exit_code, result.output

    def report(self, *extra: str) -> tuple[int, dict[str, Any]]:
        code, output = self.verify("--json", *extra)
        return code, json.loads(output)

    def sql(self, statement: str) -> list[tuple[Any, ...]]:
        with duckdb.connect(str(self.database)) as con:
            return con.execute(statement).fetchall()

    def comment(self, view: str) -> str:
        return str(self.sql(f"SELECT comment FROM duckdb_views() WHERE view_name = '{view}'")[0][0])

    def assert_views_are_hudi_rs(self) -> None:
        views = {"trips_ro": True, "trips_rt": False} if self.table_type != "COPY_ON_WRITE" else {}
        for view, read_optimized in (views or {"trips": False}).items():
            with duckdb.connect(str(self.database)) as con:
                rows = con.sql(f"SELECT * FROM {view}").to_arrow_table()
            ours, theirs = same_columns(
                rows, hudi_rs_rows(str(self.path), read_optimized=read_optimized)
            )
            assert theirs.num_rows > 0
            assert canonical(ours) == canonical(theirs), view


def _differences(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(d["kind"], d["object"]) for t in report["targets"] for d in t["differences"]]


def _files(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and modification time."""
    return {
        str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()
    }


def _repaired(setup: Setup, found: list[tuple[str, str]]) -> None:
    """``--repair`` says what it found, fixes it, and a second verify is clean."""
    code, report = setup.report("--repair")
    assert code == 0, report
    assert _differences({"targets": report["repair"]["found"]}) == found
    assert report["repair"]["errors"] == {}
    code, output = setup.verify()
    assert code == 0, output
    assert output.strip() == f"duckdb:{setup.database}: in sync at {setup.commits()[-1]}"
    setup.assert_views_are_hudi_rs()


def test_a_fresh_sync_verifies_clean_and_verify_writes_nothing(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    before = _files(tmp_path)
    code, report = setup.report()
    assert code == 0
    assert report["ok"] is True
    (check,) = report["targets"]
    assert check["shown"] == check["latest"] == setup.commits()[-1]
    assert check["differences"] == []
    setup.write([4], "sfo")  # behind now: verify still writes nothing
    before = _files(tmp_path)
    assert setup.verify()[0] == 1
    assert _files(tmp_path) == before


def test_a_commit_after_the_sync_is_behind(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    synced = setup.commits()[-1]
    setup.write([4], "sfo")
    setup.write([5], "nyc")
    code, output = setup.verify()
    assert code == 1
    latest = setup.commits()[-1]
    assert output.splitlines() == [
        f"duckdb:{setup.database}: behind: trips: shows {synced}, the table is at {latest}: "
        "2 commit(s) not synced"
    ]
    _repaired(setup, [("behind", "trips")])


def test_a_restore_after_the_sync_is_ahead(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    kept = setup.commits()[-1]
    setup.write([4], "sfo")
    sync_table(str(setup.path), [setup.target])
    undone = setup.commits()[-1]
    restore = restore_to(HudiTable.open(str(setup.path)), kept)
    code, report = setup.report()
    assert code == 1
    (difference,) = report["targets"][0]["differences"]
    assert (difference["kind"], difference["object"]) == ("ahead", "trips")
    assert difference["detail"] == (
        f"shows {undone}, which restore {restore} undid; the table is at {kept}"
    )
    _repaired(setup, [("ahead", "trips")])
    assert f"instant={kept} " in setup.comment("trips")


def test_a_dropped_view_is_missing(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    setup.sql("DROP VIEW trips")
    code, output = setup.verify()
    assert code == 1
    assert output.splitlines() == [
        f"duckdb:{setup.database}: missing-object: trips: does not exist"
    ]
    _repaired(setup, [("missing-object", "trips")])


def test_a_column_altered_in_the_warehouse_is_reported_by_name(tmp_path: Path) -> None:
    """The history re-created with ``fare`` as text and a new column, its comment (the
    marker) kept: a sync alone would see nothing to do; verify compares the columns."""
    setup = Setup(tmp_path)
    comment = setup.comment("trips_history").replace("'", "''")
    setup.sql("CREATE VIEW old_history AS SELECT * FROM trips_history")
    setup.sql(
        "CREATE OR REPLACE VIEW trips_history AS SELECT * REPLACE (CAST(fare AS VARCHAR) AS "
        "fare), 1 AS added FROM old_history"
    )
    setup.sql(f"COMMENT ON VIEW trips_history IS '{comment}'")
    code, output = setup.verify()
    assert code == 1
    where = f"duckdb:{setup.database}: columns: trips_history"
    assert output.splitlines() == [
        f"{where}: column added is not the table's (INTEGER)",
        f"{where}: column fare is VARCHAR, the table's schema gives DOUBLE",
    ]
    _repaired(setup, [("columns", "trips_history")] * 2)


def test_a_history_without_the_partition_column_is_reported(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    comment = setup.comment("trips_history").replace("'", "''")
    setup.sql("CREATE VIEW old_history AS SELECT * FROM trips_history")
    setup.sql("CREATE OR REPLACE VIEW trips_history AS SELECT * EXCLUDE (city) FROM old_history")
    setup.sql(f"COMMENT ON VIEW trips_history IS '{comment}'")
    code, output = setup.verify()
    assert code == 1
    assert output.splitlines() == [
        f"duckdb:{setup.database}: columns: trips_history: column city is missing (VARCHAR)",
        f"duckdb:{setup.database}: partitions: trips_history: partition field city is not a column",
    ]
    _repaired(setup, [("columns", "trips_history"), ("partitions", "trips_history")])


def test_an_instant_gone_from_the_timeline_with_no_restore_is_not_repaired(
    tmp_path: Path,
) -> None:
    """The commit the objects show removed by hand (no restore or rollback lists it):
    reported, and left for ``sync --force`` after a look at the table."""
    setup = Setup(tmp_path)
    gone = setup.commits()[-1]
    for instant_file in (setup.path / ".hoodie").glob(f"{gone}*"):
        instant_file.unlink()
    before = setup.comment("trips")
    code, report = setup.report("--repair")
    assert code == 1
    (difference,) = report["targets"][0]["differences"]
    assert (difference["kind"], difference["object"]) == ("ahead-unexplained", "trips")
    assert difference["detail"].startswith(f"shows {gone}, not a completed write of the table")
    assert report["repair"]["errors"] == {
        f"duckdb:{setup.database}": "not re-synced: ahead-unexplained"
    }
    assert setup.comment("trips") == before


def test_a_removed_manifest_file_is_reported(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    instant = setup.commits()[-1]
    listed = setup.path / ".hoodie" / "manifest" / "snapshots" / instant / "files.csv"
    listed.unlink()
    code, report = setup.report()
    assert code == 1
    (difference,) = report["targets"][0]["differences"]
    assert (difference["kind"], difference["object"]) == ("manifest", "trips_manifest")
    assert difference["detail"].startswith("cannot be read: ")
    assert "files.csv" in difference["detail"]
    _repaired(setup, [("manifest", "trips_manifest")])
    assert listed.exists()


def test_a_manifest_listing_other_files_than_the_snapshot_is_reported(tmp_path: Path) -> None:
    """The manifest object lists one base file less and one that is no file of the
    snapshot: verify names both against a listing of the table."""
    setup = Setup(tmp_path)
    files = sorted(str(r[0]) for r in setup.sql("SELECT filename FROM trips_manifest"))
    comment = setup.comment("trips_manifest").replace("'", "''")
    setup.sql(
        "CREATE OR REPLACE VIEW trips_manifest AS SELECT 'stray.parquet' AS filename "
        f"UNION ALL SELECT '{files[1]}'"
    )
    setup.sql(f"COMMENT ON VIEW trips_manifest IS '{comment}'")
    code, output = setup.verify()
    assert code == 1
    where = f"duckdb:{setup.database}: manifest: trips_manifest"
    instant = setup.commits()[-1]
    assert output.splitlines() == [
        f"{where}: 1 base file(s) of {instant} missing: {files[0]}",
        f"{where}: 1 file(s) not in the snapshot at {instant}: stray.parquet",
    ]
    _repaired(setup, [("manifest", "trips_manifest")] * 2)


def test_a_dropped_snapshot_view_of_a_merge_on_read_table_is_missing(tmp_path: Path) -> None:
    setup = Setup(tmp_path, "MERGE_ON_READ")
    setup.write([1], "sfo", ts=2)  # a log record: the snapshot view merges it
    sync_table(str(setup.path), [setup.target])
    assert setup.verify()[0] == 0
    setup.sql("DROP VIEW trips_rt")
    code, output = setup.verify()
    assert code == 1
    assert output.splitlines() == [
        f"duckdb:{setup.database}: missing-object: trips_rt: does not exist"
    ]
    _repaired(setup, [("missing-object", "trips_rt")])


def test_another_tables_objects_are_reported_and_not_repaired(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    other = Setup(tmp_path / "other")
    other_target = DuckDBTarget(str(setup.database), "trips")
    sync_table(str(other.path), [other_target], force=True)  # the name given to another table
    before = setup.sql("SELECT comment FROM duckdb_views() ORDER BY view_name")
    code, report = setup.report("--repair")
    assert code == 1
    kinds = {d["kind"] for t in report["targets"] for d in t["differences"]}
    assert kinds == {"other-table"}
    assert report["repair"]["errors"] == {f"duckdb:{setup.database}": "not re-synced: other-table"}
    assert setup.sql("SELECT comment FROM duckdb_views() ORDER BY view_name") == before


def test_never_synced_and_no_target(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    os.remove(setup.database)
    code, output = setup.verify()
    assert code == 1
    assert output.splitlines() == [
        f"duckdb:{setup.database}: not-synced: trips: no objects: never synced"
    ]
    assert not setup.database.exists()  # verify created no database file
    result = CliRunner().invoke(app, ["verify", str(setup.path)])
    assert result.exit_code == 2
    assert result.output.strip() == (
        "error: no sync target: set hoodie.meta.sync.client.tool.class to bigquery, "
        "snowflake, duckdb or iceberg (comma-separated)"
    )
    _repaired(setup, [("not-synced", "trips")])


def test_a_target_verify_cannot_read_is_refused_in_one_line(tmp_path: Path) -> None:
    """Never a silent "in sync" for objects it did not read: exit 2, one line."""
    setup = Setup(tmp_path)
    result = CliRunner().invoke(
        app, ["verify", str(setup.path), "-c", "hoodie.meta.sync.client.tool.class=iceberg"]
    )
    assert result.exit_code == 2
    assert result.output == (
        f"error: iceberg:{setup.path}: verify does not read this target's objects yet "
        "(it reads duckdb, bigquery and snowflake targets)\n"
    )
