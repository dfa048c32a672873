"""The Iceberg target's SQL catalog (``hudi_sync.warehouse.iceberg.sql_catalog``),
proven against pyiceberg's own ``SqlCatalog`` on the same SQLite file: real metadata
files (a table pyiceberg creates and appends to), our catalog registering and moving
the table, pyiceberg loading and reading each location; a concurrent commit by
pyiceberg detected; hostile names bound as parameters; bad catalog URIs refused."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog
from typer.testing import CliRunner

from hudi_sync import config as cfg
from hudi_sync.cli.app import app
from hudi_sync.errors import BadInputError
from hudi_sync.manifest.snapshot import PublishedManifest
from hudi_sync.sync.hook import checked_target_names
from hudi_sync.sync.job import publish_manifest
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.common import OtherTableError
from hudi_sync.warehouse.iceberg import (
    CatalogConflictError,
    IcebergTarget,
    SqlCatalog,
    TableId,
    catalog_path,
)
from tests.fixture_tables import FIXTURES, FixtureTable, unpack

runner = CliRunner()
COW_TABLE = "sample_table/cow/v6_nonpartitioned"


@pytest.fixture
def source_metadata(tmp_path: Path) -> list[tuple[str, int]]:
    """Three metadata files of one real table, written by pyiceberg (create, then two
    appends of 2 and 3 rows), with the row count each shows."""
    source = PyIcebergSqlCatalog(
        "source", uri=f"sqlite:///{tmp_path / 'source.db'}", warehouse=f"file://{tmp_path}/wh"
    )
    source.create_namespace("src")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])
    table = source.create_table(("src", "t"), schema)
    locations = [(table.metadata_location, 0)]
    table.append(pa.table({"id": [1, 2], "name": ["a", "b"]}, schema=schema))
    locations.append((table.metadata_location, 2))
    table.append(pa.table({"id": [3, 4, 5], "name": ["c", "d", "e"]}, schema=schema))
    locations.append((table.metadata_location, 5))
    assert len({location for location, _ in locations}) == 3
    return locations


def _pyiceberg(path: Path, name: str = "hudi_sync") -> PyIcebergSqlCatalog:
    """pyiceberg's catalog on our catalog's SQLite file (it creates nothing there)."""
    return PyIcebergSqlCatalog(name, uri=f"sqlite:///{path}", init_catalog_tables="false")


def test_register_then_each_move_is_what_pyiceberg_loads(
    tmp_path: Path, source_metadata: list[tuple[str, int]]
) -> None:
    path = tmp_path / "catalog.db"
    catalog = SqlCatalog(f"sqlite:///{path}")
    table = TableId("hudi_sync", "default", "trips")
    assert catalog.current(table) is None
    assert not path.exists()  # reading a catalog that does not exist creates nothing
    first, rows = source_metadata[0]
    catalog.commit(table, None, first, lambda other: False)
    reader = _pyiceberg(path)
    assert reader.list_namespaces() == [("default",)]
    loaded = reader.load_table(("default", "trips"))
    assert (loaded.metadata_location, loaded.scan().to_arrow().num_rows) == (first, rows)
    previous = first
    for location, rows in source_metadata[1:]:
        catalog.commit(table, previous, location, lambda other: False)
        loaded = reader.load_table(("default", "trips"))
        assert loaded.metadata_location == location
        assert loaded.scan().to_arrow().num_rows == rows
        assert catalog.current(table) == location
        previous = location
    with sqlite3.connect(path) as con:
        row = con.execute(
            "SELECT metadata_location, previous_metadata_location, iceberg_type FROM iceberg_tables"
        ).fetchall()
    assert row == [(source_metadata[2][0], source_metadata[1][0], "TABLE")]


def test_catalog_made_by_pyiceberg_is_used_as_it_is(
    tmp_path: Path, source_metadata: list[tuple[str, int]]
) -> None:
    """pyiceberg creates the catalog and the namespace; our register and move work in
    it, and pyiceberg's own listing sees the table."""
    path = tmp_path / "catalog.db"
    reader = PyIcebergSqlCatalog("lake", uri=f"sqlite:///{path}")
    reader.create_namespace("sales")
    catalog = SqlCatalog(f"sqlite:///{path}")
    table = TableId("lake", "sales", "orders")
    catalog.commit(table, None, source_metadata[1][0], lambda other: False)
    assert reader.list_tables("sales") == [("sales", "orders")]
    catalog.commit(table, source_metadata[1][0], source_metadata[2][0], lambda other: False)
    assert reader.load_table("sales.orders").scan().to_arrow().num_rows == 5
    # Another catalog name in the same file is another catalog: nothing of "lake" shows.
    assert SqlCatalog(f"sqlite:///{path}").current(TableId("other", "sales", "orders")) is None


def test_a_commit_another_writer_made_first_is_detected(
    tmp_path: Path, source_metadata: list[tuple[str, int]]
) -> None:
    """pyiceberg commits an append to the table our catalog registered: our move from
    the location we read changes no row, and the commit is refused in one line unless
    the other writer's metadata is older than ours, when it is retried once from it."""
    path = tmp_path / "catalog.db"
    catalog = SqlCatalog(f"sqlite:///{path}")
    table = TableId("hudi_sync", "default", "trips")
    read, _ = source_metadata[1]
    catalog.commit(table, None, read, lambda other: False)
    other_writer = _pyiceberg(path).load_table(("default", "trips"))
    schema = other_writer.schema().as_arrow()
    other_writer.append(pa.table({"id": [9], "name": ["z"]}, schema=schema))
    theirs = other_writer.metadata_location
    assert catalog.current(table) == theirs != read
    ours = source_metadata[2][0]
    assert not catalog.move(table, read, ours)  # the asserted old location is gone
    asked: list[str] = []

    def not_older(other: str) -> bool:
        asked.append(other)
        return False

    with pytest.raises(CatalogConflictError) as refused:
        catalog.commit(table, read, ours, not_older)
    message = str(refused.value)
    assert "\n" not in message and "default.trips" in message and theirs in message
    assert asked == [theirs]
    assert catalog.current(table) == theirs  # left as the other writer made it
    catalog.commit(table, read, ours, lambda other: other == theirs)
    assert catalog.current(table) == ours
    loaded = _pyiceberg(path).load_table(("default", "trips"))
    assert loaded.metadata_location == ours
    with sqlite3.connect(path) as con:
        previous = con.execute("SELECT previous_metadata_location FROM iceberg_tables").fetchone()
    assert previous == (theirs,)


def test_a_lost_registration_race_is_detected(
    tmp_path: Path, source_metadata: list[tuple[str, int]]
) -> None:
    path = tmp_path / "catalog.db"
    table = TableId("hudi_sync", "default", "trips")
    SqlCatalog(f"sqlite:///{path}").commit(table, None, source_metadata[2][0], lambda o: False)
    late = SqlCatalog(f"sqlite:///{path}")
    assert not late.register(table, source_metadata[1][0])
    with pytest.raises(CatalogConflictError):
        late.commit(table, None, source_metadata[1][0], lambda other: False)
    late.commit(table, None, source_metadata[2][0], lambda other: False)  # the same: done
    assert late.current(table) == source_metadata[2][0]


@pytest.mark.parametrize(
    ("namespace", "name"),
    [
        ("o'hare", 'x"; DROP TABLE iceberg_tables; --'),
        ("ns; DELETE FROM iceberg_namespace_properties", "tä'ble ✓ 表"),
        ("%_!", "a?b"),
    ],
)
def test_hostile_names_are_bound_parameters(
    tmp_path: Path, source_metadata: list[tuple[str, int]], namespace: str, name: str
) -> None:
    path = tmp_path / "catalog.db"
    catalog = SqlCatalog(f"sqlite:///{path}")
    table = TableId("hudi_sync", namespace, name)
    bystander = TableId("hudi_sync", "default", "bystander")
    catalog.commit(bystander, None, source_metadata[0][0], lambda other: False)
    catalog.commit(table, None, source_metadata[1][0], lambda other: False)
    catalog.commit(table, source_metadata[1][0], source_metadata[2][0], lambda other: False)
    with sqlite3.connect(path) as con:
        rows = sorted(con.execute("SELECT table_namespace, table_name FROM iceberg_tables"))
        namespaces = sorted(con.execute("SELECT namespace FROM iceberg_namespace_properties"))
    assert rows == sorted([("default", "bystander"), (namespace, name)])
    assert namespaces == sorted([("default",), (namespace,)])
    loaded = _pyiceberg(path).load_table((namespace, name))
    assert loaded.scan().to_arrow().num_rows == 5
    assert catalog.current(bystander) == source_metadata[0][0]
    # The statements a dry run prints quote the names as SQL literals.
    steps = catalog.move_steps(table, "old'loc", "new")
    assert namespace.replace("'", "''") in steps[0] and "'old''loc'" in steps[0]


@pytest.mark.parametrize(
    "uri",
    [
        "postgresql://user@host/db",
        "sqlite://",
        "sqlite:///:memory:",
        "sqlite:///x.db?mode=ro",
        "/tmp/catalog.db",
        "ftp://catalog.example/api",  # http(s) is a REST catalog (test_iceberg_rest_catalog)
    ],
)
def test_a_catalog_uri_other_than_a_sqlite_file_is_refused(uri: str) -> None:
    key = cfg.ICEBERG_CATALOG_URI.key
    with pytest.raises(BadInputError) as refused:
        catalog_path(uri, key)
    assert str(refused.value).startswith(f"{key}=") and "\n" not in str(refused.value)
    options = {cfg.SYNC_TOOLS.key: "iceberg", key: uri}
    with pytest.raises(BadInputError, match=key):
        checked_target_names(options)  # watch and backfill refuse it before a sync


def test_catalog_uri_is_read_as_sqlalchemy_reads_it() -> None:
    key = cfg.ICEBERG_CATALOG_URI.key
    assert catalog_path("sqlite:///relative/c.db", key) == "relative/c.db"
    assert catalog_path("sqlite:////abs/c.db", key) == "/abs/c.db"


def test_cli_refuses_a_bad_catalog_uri_in_one_line(tmp_path: Path) -> None:
    base = unpack(FixtureTable(COW_TABLE, FIXTURES / f"{COW_TABLE}.zip"), tmp_path)
    result = runner.invoke(
        app, ["sync", "iceberg", str(base), "--catalog-uri", "postgresql://h/db"]
    )
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and cfg.ICEBERG_CATALOG_URI.key in lines[0]
    assert not (base / ".hoodie" / "manifest").exists()  # nothing published


def test_a_name_registered_for_another_table_is_refused(
    tmp_path: Path, source_metadata: list[tuple[str, int]]
) -> None:
    """The catalog's ``trips`` shows metadata outside this Hudi table's metadata folder
    (another table's): the sync is refused in one line before anything is written."""
    base = unpack(FixtureTable(COW_TABLE, FIXTURES / f"{COW_TABLE}.zip"), tmp_path)
    path = tmp_path / "catalog.db"
    SqlCatalog(f"sqlite:///{path}").commit(
        TableId("hudi_sync", "default", "trips"), None, source_metadata[2][0], lambda o: False
    )
    table = HudiTable.open(str(base))
    published: PublishedManifest = publish_manifest(table, dry_run=True)
    target = IcebergTarget(table.uri, f"sqlite:///{path}", table_name="trips")
    for dry_run in (True, False):
        with pytest.raises(OtherTableError) as refused:
            target.sync(table, published, dry_run=dry_run)
        assert "\n" not in str(refused.value) and source_metadata[2][0] in str(refused.value)
    assert not (base / ".hoodie" / "manifest" / "iceberg").exists()
    assert SqlCatalog(f"sqlite:///{path}").current(target.table_id(None)) == source_metadata[2][0]
