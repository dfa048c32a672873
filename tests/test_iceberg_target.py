"""The ``iceberg`` sync target end to end (``IcebergTarget`` over ``IcebergStore``):
``sync iceberg`` publishes the table's snapshot and commits it to the SQL catalog, and
pyiceberg's own ``SqlCatalog`` on that file loads each new metadata location and reads
the rows hudi-rs reads; a rerun is a no-op, a dry run writes nothing, the hook and the
CLI publish it, and a Merge-on-Read table synced to Iceberg alone folds no ``_rt`` logs."""

from __future__ import annotations

import json
from pathlib import Path

import hudi
import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog
from pyiceberg.table import StaticTable
from typer.testing import CliRunner

from hudi_sync import config as cfg
from hudi_sync.cli.app import app
from hudi_sync.sync.hook import run_post_commit_hook
from hudi_sync.sync.job import sync_table
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.iceberg import IcebergTarget, SqlCatalog
from tests import hudi_oracle
from tests.fixture_tables import FIXTURES, FixtureTable, unpack

runner = CliRunner()
COW_TABLE = "sample_table/cow/v6_nonpartitioned"
MOR_TABLE = "sample_table/mor/parquet/v6_simplekeygen_nonhivestyle"


def _table(name: str, tmp_path: Path) -> Path:
    return unpack(FixtureTable(name, FIXTURES / f"{name}.zip"), tmp_path)


def _hudi_keys(base: Path, as_of: str | None = None) -> list[str]:
    """hudi-rs's merged snapshot: its record keys."""
    options = hudi.HudiReadOptions()
    if as_of is not None:
        options = options.with_as_of_timestamp(as_of)
    rows = pa.Table.from_batches(hudi.HudiTable(str(base)).read(options))
    return sorted(rows.column("_hoodie_record_key").to_pylist())


def _loaded(catalog: Path, name: str) -> tuple[str, list[str]]:
    """pyiceberg's view of the catalog's table: its metadata location and record keys."""
    reader = PyIcebergSqlCatalog("hudi_sync", uri=f"sqlite:///{catalog}")
    table = reader.load_table(("default", name))
    keys = table.scan(selected_fields=("_hoodie_record_key",)).to_arrow()
    return table.metadata_location, sorted(keys.column(0).to_pylist())


def test_sync_registers_and_pyiceberg_reads_the_merged_snapshot(tmp_path: Path) -> None:
    for fixture in (COW_TABLE, MOR_TABLE):
        base = _table(fixture, tmp_path)
        catalog = tmp_path / "catalog.db"
        name = fixture.rsplit("/", 1)[-1]
        table = HudiTable.open(str(base))
        target = IcebergTarget(table.uri, f"sqlite:///{catalog}", table_name=name)
        report = sync_table(table, [target])
        assert report.ok and report.plans[0].action == "create"
        published = report.to_json()["iceberg"]["metadata_location"]
        location, keys = _loaded(catalog, name)
        assert location == published and keys == _hudi_keys(base)
        # Iceberg alone needs no folded logs: the _rt view's files are not made.
        assert not (base / ".hoodie" / "manifest" / "logs").exists()
        again = sync_table(HudiTable.open(str(base)), [target])
        assert again.plans[0].action == "noop"
        assert again.to_json()["iceberg"]["metadata_location"] == published


def test_without_a_catalog_the_metadata_is_published_in_the_table(tmp_path: Path) -> None:
    base = _table(MOR_TABLE, tmp_path)
    table = HudiTable.open(str(base))
    report = sync_table(table, [IcebergTarget(table.uri)])
    assert report.ok and report.results[0].target == f"iceberg:{table.uri}"
    location = report.to_json()["iceberg"]["metadata_location"]
    assert report.to_json()["results"][0]["metadata_location"] == location
    assert (base / ".hoodie" / "manifest" / "iceberg" / "metadata" / "version-hint.text").exists()
    keys = StaticTable.from_metadata(location).scan(selected_fields=("_hoodie_record_key",))
    assert sorted(keys.to_arrow().column(0).to_pylist()) == _hudi_keys(base)


def test_delta_manifests_are_kept_for_an_iceberg_sync(tmp_path: Path) -> None:
    """The Iceberg target reads only the published instant, so a sync with delta
    manifests (``delta_commits``) keeps them (``delta.json``) and publishes the same
    snapshot, read by pyiceberg as hudi-rs reads the table."""
    base = _table(COW_TABLE, tmp_path)
    table = HudiTable.open(str(base))
    report = sync_table(table, [IcebergTarget(table.uri)], delta_commits=3)
    assert report.ok
    pointer = json.loads((base / ".hoodie" / "manifest" / "delta.json").read_text())
    latest = table.timeline.completed_writes[-1].requested_time
    assert pointer["instant"] == latest == report.to_json()["iceberg"]["instant"]
    location = report.to_json()["iceberg"]["metadata_location"]
    keys = StaticTable.from_metadata(location).scan(selected_fields=("_hoodie_record_key",))
    assert sorted(keys.to_arrow().column(0).to_pylist()) == _hudi_keys(base)


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    base = _table(COW_TABLE, tmp_path)
    catalog = tmp_path / "catalog.db"
    table = HudiTable.open(str(base))
    target = IcebergTarget(table.uri, f"sqlite:///{catalog}", table_name="trips")
    report = sync_table(table, [target], dry_run=True)
    plan = report.plans[0]
    assert plan.action == "create" and report.results[0].action == "dry-run"
    assert any("INSERT INTO iceberg_tables" in step for step in plan.steps)
    assert not catalog.exists()
    assert not (base / ".hoodie" / "manifest" / "iceberg").exists()


def test_time_travel_registers_its_own_table(tmp_path: Path) -> None:
    base = _table(MOR_TABLE, tmp_path)
    catalog = tmp_path / "catalog.db"
    first = hudi_oracle.completed_instants(str(base))[0][0]
    target = IcebergTarget(str(base), f"sqlite:///{catalog}", table_name="t")
    sync_table(HudiTable.open(str(base)), [target])
    live = SqlCatalog(f"sqlite:///{catalog}").current(target.table_id(None))
    sync_table(HudiTable.open(str(base)), [target], as_of=first)
    assert SqlCatalog(f"sqlite:///{catalog}").current(target.table_id(None)) == live
    _, keys = _loaded(catalog, f"t_as_of_{first}")
    assert keys == _hudi_keys(base, as_of=first)


def test_cli_json_names_the_metadata_location(tmp_path: Path) -> None:
    base = _table(COW_TABLE, tmp_path)
    catalog = tmp_path / "catalog.db"
    args = ["sync", "iceberg", str(base), "--catalog-uri", f"sqlite:///{catalog}", "--json"]
    result = runner.invoke(app, [*args, "--table", "cli_trips"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    location, keys = _loaded(catalog, "cli_trips")
    assert report["iceberg"]["metadata_location"] == location
    assert keys == _hudi_keys(base)


def test_hook_publishes_iceberg_when_asked(tmp_path: Path) -> None:
    base = _table(COW_TABLE, tmp_path)
    catalog = tmp_path / "catalog.db"
    options = {
        cfg.SYNC_TOOLS.key: "iceberg",
        cfg.ICEBERG_CATALOG_URI.key: f"sqlite:///{catalog}",
    }
    report = run_post_commit_hook(str(base), options)
    assert report.ok, report.errors
    name = HudiTable.open(str(base)).config.name
    location, keys = _loaded(catalog, name)
    assert report.to_json()["iceberg"]["metadata_location"] == location
    assert keys == _hudi_keys(base)


def test_newer_metadata_in_the_catalog_is_not_moved_back(tmp_path: Path) -> None:
    """The catalog shows newer metadata of this table (a later sync committed first):
    the sync leaves it (``skip-older``) unless ``force``; a location of this table whose
    file is gone (expired) is older than anything published now, and is moved on."""
    base = _table(COW_TABLE, tmp_path)
    catalog = tmp_path / "catalog.db"
    table = HudiTable.open(str(base))
    target = IcebergTarget(table.uri, f"sqlite:///{catalog}", table_name="trips")
    published = sync_table(table, [target]).to_json()["iceberg"]["metadata_location"]
    folder = base / ".hoodie" / "manifest" / "iceberg" / "metadata"
    own = json.loads((folder / published.rsplit("/", 1)[-1]).read_text())
    newer = {**own, "last-sequence-number": own["last-sequence-number"] + 1}
    (folder / "v999-newer.metadata.json").write_text(json.dumps(newer))
    newer_uri = table.location.uri_of(".hoodie/manifest/iceberg/metadata/v999-newer.metadata.json")
    sql = SqlCatalog(f"sqlite:///{catalog}")
    sql.commit(target.table_id(None), published, newer_uri, lambda other: False)
    report = sync_table(HudiTable.open(str(base)), [target])
    assert report.plans[0].action == "skip-older"
    assert sql.current(target.table_id(None)) == newer_uri
    forced = sync_table(HudiTable.open(str(base)), [target], force=True)
    assert forced.plans[0].action == "update"
    assert sql.current(target.table_id(None)) == published
    gone = table.location.uri_of(".hoodie/manifest/iceberg/metadata/v0-expired.metadata.json")
    sql.commit(target.table_id(None), published, gone, lambda other: False)
    assert sync_table(HudiTable.open(str(base)), [target]).plans[0].action == "update"
    assert _loaded(catalog, "trips")[0] == published
