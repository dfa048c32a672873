"""DuckDB target: the history views are bound from the table's schema, not its files.

Creating a view over ``read_parquet(..., union_by_name = true)`` reads every file's
footer (20 GB of memory at a million files); bound from the schema it opens none, and
shows the same columns, types and rows as the files read by name.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import LongType, StringType, StructField, StructType

from hudi_sync.spark import write
from hudi_sync.sync.job import sync_table
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.duckdb import SOURCE_FILE_COLUMN, DuckDBTarget
from tests.fixture_tables import fixture_tables
from tests.frames import rows_frame
from tests.warehouse_rows import canonical, hudi_rs_rows, same_columns

TABLES = [t for t in fixture_tables() if "empty" not in t.name]


def _files(folder: Path) -> list[str]:
    return sorted(str(p) for p in folder.glob("*.parquet"))


def _base_files(path: Path) -> list[str]:
    """Every parquet base file outside ``.hoodie`` (every version: the history)."""
    found = []
    for root, dirs, names in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found += [os.path.join(root, n) for n in names if n.endswith(".parquet")]
    return sorted(found)


def _same_as_union_by_name(con: duckdb.DuckDBPyConnection, view: str, files: list[str]) -> None:
    """``view`` has the columns, types and rows of ``files`` read by name (the
    ``union_by_name`` binding the history had)."""
    listed = "[" + ", ".join(f"'{f}'" for f in files) + "]"
    reference = (
        f"SELECT * FROM read_parquet({listed}, filename = '{SOURCE_FILE_COLUMN}', "
        "union_by_name = true, hive_partitioning = false)"
    )
    if view.endswith("_log_history"):  # its files carry no source column
        reference = f"SELECT * FROM read_parquet({listed}, union_by_name = true)"
    ours = con.execute(f'DESCRIBE "{view}"').fetchall()
    theirs = con.execute(f"DESCRIBE {reference}").fetchall()
    assert ours == theirs, view
    count = con.execute(f'SELECT count(*) FROM "{view}"').fetchone()
    assert count is not None and count[0] > 0
    for a, b in ((f'"{view}"', f"({reference})"), (f"({reference})", f'"{view}"')):
        names = ", ".join(f'"{c[0]}"' for c in ours)
        extra = con.execute(
            f"SELECT count(*) FROM (SELECT {names} FROM {a} EXCEPT ALL SELECT {names} FROM {b})"
        ).fetchone()
        assert extra == (0,), view


@pytest.mark.parametrize("fixture", TABLES, ids=[t.id for t in TABLES])
def test_bound_history_equals_the_files_read_by_name(fixture, fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy(fixture.name.split("/", 1)[1])
    database = tmp_path / "w.duckdb"
    report = sync_table(str(path), [DuckDBTarget(str(database), "t")])
    steps = " ".join(report.plans[0].steps)
    assert "union_by_name" not in steps
    with duckdb.connect(str(database)) as con:
        con.execute("SET TimeZone = 'UTC'")
        _same_as_union_by_name(con, "t_history", _base_files(path))
        logs = path / ".hoodie" / "manifest" / "logs" / "parquet"
        if HudiTable.open(str(path)).config.is_mor and _files(logs):
            _same_as_union_by_name(con, "t_log_history", _files(logs))


def test_creating_the_views_opens_no_base_file(fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A sync while a base file is unreadable succeeds (binding read every footer and
    failed); the query that reads the file names it."""
    path = fixture_copy("cow/v9_txns_simple_meta")
    broken = _base_files(path)[0]
    Path(broken).write_bytes(b"not a parquet file")
    database = tmp_path / "w.duckdb"
    report = sync_table(str(path), [DuckDBTarget(str(database), "t")])
    assert [r.action for r in report.results] == ["create"]
    with duckdb.connect(str(database)) as con, pytest.raises(duckdb.Error, match=broken):
        con.execute('SELECT count(*) FROM "t"').fetchall()


SCHEMA = StructType(
    [
        StructField("id", LongType()),
        StructField("p", StringType()),
        StructField("ts", LongType()),
    ]
)
WIDER = StructType([*SCHEMA.fields, StructField("extra", StringType())])


def test_a_column_added_later_reads_null_in_older_files(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = tmp_path / "evolving"
    options = {
        "hoodie.table.name": "evolving",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.operation": "upsert",
    }
    first = [(1, "a", 1), (2, "a", 1), (3, "b", 1)]
    write(rows_frame(spark, first, SCHEMA), str(path), options)
    database = tmp_path / "w.duckdb"
    sync_table(str(path), [DuckDBTarget(str(database), "t")])
    # A later commit adds a column, writing partition b only: a's file keeps the old schema.
    write(rows_frame(spark, [(3, "b", 2, "x"), (4, "b", 2, None)], WIDER), str(path), options)
    report = sync_table(str(path), [DuckDBTarget(str(database), "t")])
    history = [
        s for s in report.plans[0].steps if s.startswith('CREATE OR REPLACE VIEW "t_history"')
    ]
    assert len(history) == 1 and "'extra'" in history[0]  # re-bound with the new column
    with duckdb.connect(str(database)) as con:
        rows = con.execute('SELECT id, p, ts, extra FROM "t" ORDER BY id').fetchall()
        assert rows == [(1, "a", 1, None), (2, "a", 1, None), (3, "b", 2, "x"), (4, "b", 2, None)]
        _same_as_union_by_name(con, "t_history", _base_files(path))
    ours, theirs = same_columns(
        duckdb.connect(str(database)).sql('SELECT * FROM "t"').to_arrow_table(),
        hudi_rs_rows(str(path)),
    )
    assert canonical(ours) == canonical(theirs)


def test_a_table_declaring_no_schema_is_read_by_name(fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """No schema in its commits nor ``hoodie.table.create.schema``: only the files tell
    the columns, and the history reads them by name (never a guessed schema)."""
    path = fixture_copy("cow/v6_nonpartitioned")
    hoodie = path / ".hoodie"
    for commit in hoodie.glob("*.commit"):
        metadata = json.loads(commit.read_text())
        metadata.setdefault("extraMetadata", {}).pop("schema", None)
        commit.write_text(json.dumps(metadata))
    properties = hoodie / "hoodie.properties"
    lines = properties.read_text().splitlines()
    properties.write_text(
        "\n".join(x for x in lines if not x.startswith("hoodie.table.create.schema")) + "\n"
    )
    table = HudiTable.open(str(path))
    assert table.declared_avro_schema is None
    database = tmp_path / "w.duckdb"
    report = sync_table(str(path), [DuckDBTarget(str(database), "t")])
    assert "union_by_name = true" in " ".join(report.plans[0].steps)
    with duckdb.connect(str(database)) as con:
        _same_as_union_by_name(con, "t_history", _base_files(path))
    ours, theirs = same_columns(
        duckdb.connect(str(database)).sql('SELECT * FROM "t"').to_arrow_table(),
        hudi_rs_rows(str(path)),
    )
    assert canonical(ours) == canonical(theirs)
