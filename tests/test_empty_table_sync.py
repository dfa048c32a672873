"""Syncing a table before its first commit (issue 15 item 10): every target creates its
objects empty, with the columns of ``hoodie.table.create.schema``, and the sync after
the first commit fills them in place. Without a create schema nothing is created.
The empty manifest is published like any other, with every companion file of its mode
(full or delta), so its readers tell "empty" from "never synced".

The empty tables are the real fixtures ``cow/v6_empty``, ``cow/v8_empty`` and
``mor/parquet/v6_empty`` (created by Hudi, no commit), and real non-empty fixtures
reduced to their ``.hoodie/hoodie.properties`` (the state Hudi leaves after creating
a table) whose files are then put back (the first commit)."""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
import snowflake.connector
from typer.testing import CliRunner

from hudi_sync.cli.app import app
from hudi_sync.errors import BadInputError
from hudi_sync.sync.hook import run_post_commit_hook
from hudi_sync.sync.job import sync_table
from hudi_sync.table import HudiTable
from hudi_sync.table.config.schema import META_FIELDS
from hudi_sync.warehouse.bigquery import BigQuerySyncConfig, BigQueryTarget
from hudi_sync.warehouse.duckdb import SOURCE_FILE_COLUMN, DuckDBTarget
from hudi_sync.warehouse.snowflake.schema import object_name, table_history_columns
from tests import hudi_oracle
from tests.bigquery_emulator import BigQueryEmulator, materialise
from tests.fixture_tables import fixture_tables
from tests.objectstores import GcsStore, S3Store
from tests.test_bigquery_target import _maps_as_dicts
from tests.test_snowflake_target import (  # the emulation fixture and its helpers
    DATABASE,
    SCHEMA,
    _hudi_rs,
    _target,
    _view_columns,
    _view_comment,
    _view_rows,
    emulation,  # noqa: F401  (fixture)
)
from tests.warehouse_rows import canonical, hudi_rs_rows, same_columns

runner = CliRunner()
EMPTY_FIXTURES = [t for t in fixture_tables() if t.name.endswith("_empty")]
# The fixtures' create schema: three nullable fields.
EMPTY_FIXTURE_COLUMNS = [("id", "INTEGER"), ("name", "VARCHAR"), ("isActive", "BOOLEAN")]


def _fixture(suffix: str) -> Any:
    matches = [t for t in fixture_tables() if t.name.endswith(suffix)]
    assert len(matches) == 1, suffix
    return matches[0]


def _create_schema_names(path: Path) -> list[str]:
    """The field names of ``hoodie.table.create.schema`` (parsed here, not by the sync)."""
    text = (path / ".hoodie" / "hoodie.properties").read_text()
    line = next(x for x in text.splitlines() if x.startswith("hoodie.table.create.schema="))
    schema = json.loads(line.split("=", 1)[1].replace("\\:", ":"))
    return [str(f["name"]) for f in schema["fields"]]


class Emptied:
    """A copy of a non-empty table reduced to ``.hoodie/hoodie.properties`` (a table as
    Hudi creates it, before any commit); ``restore`` puts every other file back."""

    PROPERTIES = Path(".hoodie", "hoodie.properties")

    def __init__(self, source: Path, root: Path) -> None:
        self.path = root / source.name
        shutil.copytree(source, self.path)
        self.stash = root / f"{source.name}.stash"
        self.empty()

    def empty(self) -> None:
        _move_files(self.path, self.stash, keep=self.PROPERTIES)
        assert [p for p in self.path.rglob("*") if p.is_file()] == [self.path / self.PROPERTIES]
        assert HudiTable.open(str(self.path)).latest_instant() is None

    def restore(self) -> None:
        _move_files(self.stash, self.path)
        assert HudiTable.open(str(self.path)).latest_instant() is not None


def _move_files(source: Path, target: Path, keep: Path | None = None) -> None:
    for file in sorted(p for p in source.rglob("*") if p.is_file()):
        relative = file.relative_to(source)
        if relative != keep:
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            file.rename(target / relative)


def _manifest_files(table: HudiTable) -> dict[str, str]:
    """Every file under ``.hoodie/manifest`` with its text, freshly listed (any store)."""
    location = table.location
    folder = location.join(".hoodie/manifest")
    return {
        name: location.read_file(f"{folder}/{name}").decode()
        for name in location.files_under(folder)
        if not name.startswith("logs/")  # MOR folded logs: tests/test_mor_sync.py
    }


def _assert_empty_manifest(table: HudiTable, delta: bool) -> None:
    """The empty snapshot with what any publication of the mode writes, and nothing else
    (no temporary left by a repeated publication)."""
    files = _manifest_files(table)
    lists = {"latest_snapshot_files.csv", "snapshots/empty/files.csv", "snapshots/empty/uris.csv"}
    pointers = {"latest.json", "snapshots/empty/snapshot.json"}
    if delta:
        lists.add("deltas/empty_empty.csv")
        pointers.add("delta.json")
    assert set(files) == lists | pointers
    assert all(files[name] == "" for name in lists)
    meta = {"instant": None, "pending": [], "files": 0}
    assert json.loads(files["latest.json"]) == json.loads(files["snapshots/empty/snapshot.json"])
    assert json.loads(files["latest.json"]) == meta
    if delta:
        assert json.loads(files["delta.json"]) == {
            **meta,
            "base": None,
            "depths": [],
            "commits": 0,
        }


def _assert_manifest_at(table: HudiTable, local: Path, instant: str, delta: bool) -> None:
    """After the first commit's sync the pointers name it and the list is its base
    files, as hudi-rs lists them (``local``: the table's local copy)."""
    files = _manifest_files(table)
    assert json.loads(files["latest.json"])["instant"] == instant
    listed = sorted(files["latest_snapshot_files.csv"].split())
    expected = sorted(s["base_file"] for s in hudi_oracle.slices(str(local)) if s["base_file"])
    assert listed == expected and expected
    assert files[f"snapshots/{instant}/files.csv"] == files["latest_snapshot_files.csv"]
    if delta:
        pointer = json.loads(files["delta.json"])
        assert (pointer["instant"], pointer["base"], pointer["files"]) == (
            instant,
            instant,
            len(expected),
        )


@pytest.fixture
def emptied(unpack_table: Any, tmp_path: Path) -> Any:
    def _emptied(suffix: str) -> Emptied:
        return Emptied(unpack_table(_fixture(suffix)), tmp_path)

    return _emptied


# -- DuckDB ------------------------------------------------------------------------------


def _duckdb_columns(database: Path, view: str) -> list[tuple[str, str]]:
    with duckdb.connect(str(database)) as con:
        rows = con.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = ? ORDER BY ordinal_position",
            [view],
        ).fetchall()
    return [(str(name), str(kind)) for name, kind in rows]


def _duckdb_count(database: Path, view: str) -> int:
    with duckdb.connect(str(database)) as con:
        row = con.execute(f'SELECT count(*) FROM "{view}"').fetchone()
    assert row is not None
    return int(row[0])


def _duckdb_comment(database: Path, view: str) -> str:
    with duckdb.connect(str(database)) as con:
        row = con.execute(
            "SELECT comment FROM duckdb_views() WHERE view_name = ? AND NOT internal", [view]
        ).fetchone()
    assert row is not None
    return str(row[0])


@pytest.mark.parametrize("fixture", EMPTY_FIXTURES, ids=[t.id for t in EMPTY_FIXTURES])
def test_duckdb_empty_fixture_gets_typed_empty_objects(  # type: ignore[no-untyped-def]
    fixture, fixture_copy, tmp_path: Path
) -> None:
    path = fixture_copy(fixture.name.split("/", 1)[1])
    database = tmp_path / "w.duckdb"
    report = sync_table(str(path), [DuckDBTarget(str(database), "t")])
    assert report.ok and report.instant is None and report.manifest_files == 0
    assert [r.action for r in report.results] == ["create"]
    # A MOR table: the read-optimized view and the snapshot view (no log objects: no logs).
    mor = HudiTable.open(str(path)).config.is_mor
    views = ("t_ro", "t_rt") if mor else ("t",)
    assert report.results[0].objects == (*views, "t_manifest", "t_history")
    meta = [(m, "VARCHAR") for m in META_FIELDS]
    assert [n for n, _ in EMPTY_FIXTURE_COLUMNS] == _create_schema_names(path)
    for view in views:
        assert _duckdb_columns(database, view) == meta + EMPTY_FIXTURE_COLUMNS
    assert _duckdb_columns(database, "t_history") == [
        *meta,
        *EMPTY_FIXTURE_COLUMNS,
        (SOURCE_FILE_COLUMN, "VARCHAR"),
    ]
    assert _duckdb_columns(database, "t_manifest") == [("filename", "VARCHAR")]
    for view in (*views, "t_manifest", "t_history"):
        assert _duckdb_count(database, view) == 0
        assert _duckdb_comment(database, view).startswith(
            f"hudi_sync instant=0 base={path} mode=view sql="
        )
    _assert_empty_manifest(HudiTable.open(str(path)), delta=False)
    again = sync_table(str(path), [DuckDBTarget(str(database), "t")])
    assert [r.action for r in again.results] == ["noop"]
    assert "the empty table" in again.results[0].reason
    _assert_empty_manifest(HudiTable.open(str(path)), delta=False)


@pytest.mark.parametrize("delta_commits", [0, 3], ids=["full", "delta"])
@pytest.mark.parametrize(
    "suffix",
    ["cow/v6_complexkeygen_hivestyle", "cow/v9_txns_simple_meta", "mor/parquet/v6_nonpartitioned"],
)
def test_duckdb_first_commit_fills_the_empty_objects(  # type: ignore[no-untyped-def]
    suffix: str, delta_commits: int, emptied, tmp_path: Path
) -> None:
    table = emptied(suffix)
    database = tmp_path / "w.duckdb"
    # MOR: the read-optimized view keeps the bare name (Hive sync's skip_ro_suffix).
    target = DuckDBTarget(str(database), "t", skip_ro_suffix=True)
    first = sync_table(str(table.path), [target], delta_commits=delta_commits)
    assert [r.action for r in first.results] == ["create"] and first.instant is None
    _assert_empty_manifest(HudiTable.open(str(table.path)), delta=bool(delta_commits))
    empty_columns = _duckdb_columns(database, "t")
    assert [n for n, _ in empty_columns] == [*META_FIELDS, *_create_schema_names(table.path)]
    assert all(_duckdb_count(database, v) == 0 for v in ("t", "t_manifest", "t_history"))

    table.restore()  # the first commit (and, here, the later ones) complete
    second = sync_table(str(table.path), [target], delta_commits=delta_commits)
    latest = HudiTable.open(str(table.path)).latest_instant()
    assert second.instant == latest is not None
    assert [r.action for r in second.results] == ["update"]  # the empty marker never blocks
    _assert_manifest_at(HudiTable.open(str(table.path)), table.path, latest, bool(delta_commits))
    # The same columns and types as the files give, now with the snapshot's rows.
    assert _duckdb_columns(database, "t") == empty_columns
    with duckdb.connect(str(database)) as con:
        con.execute("SET TimeZone = 'UTC'")
        rows = con.sql('SELECT * FROM "t"').to_arrow_table()
    is_mor = HudiTable.open(str(table.path)).config.is_mor
    ours, theirs = same_columns(rows, hudi_rs_rows(str(table.path), read_optimized=is_mor))
    assert theirs.num_rows > 0
    assert canonical(ours) == canonical(theirs)
    assert _duckdb_comment(database, "t").startswith(f"hudi_sync instant={latest} ")
    if is_mor:
        with duckdb.connect(str(database)) as con:
            con.execute("SET TimeZone = 'UTC'")
            rows = con.sql('SELECT * FROM "t_rt"').to_arrow_table()
        ours, theirs = same_columns(rows, hudi_rs_rows(str(table.path)))
        assert canonical(ours) == canonical(theirs)


def test_duckdb_objects_showing_a_commit_are_not_emptied_without_force(  # type: ignore[no-untyped-def]
    emptied, tmp_path: Path
) -> None:
    """The table at the same path lost its commits (re-created): the view keeps showing
    the newer snapshot unless forced, as for any older snapshot."""
    table = emptied("cow/v6_nonpartitioned")
    table.restore()
    database = tmp_path / "w.duckdb"
    target = DuckDBTarget(str(database), "t")
    latest = sync_table(str(table.path), [target]).instant
    rows = _duckdb_count(database, "t")
    assert latest is not None and rows > 0
    table.empty()
    skipped = sync_table(str(table.path), [target])
    assert [r.action for r in skipped.results] == ["skip-older"]
    assert f"shows newer {latest}; use --force" in skipped.results[0].reason
    assert _duckdb_comment(database, "t").startswith(f"hudi_sync instant={latest} ")
    forced = sync_table(str(table.path), [target], force=True)
    assert [r.action for r in forced.results] == ["update"]
    assert _duckdb_count(database, "t") == 0
    assert _duckdb_comment(database, "t").startswith("hudi_sync instant=0 ")
    table.restore()
    assert [r.action for r in sync_table(str(table.path), [target]).results] == ["update"]
    assert _duckdb_count(database, "t") == rows


@pytest.mark.parametrize("delta_commits", [0, 3], ids=["full", "delta"])
def test_empty_manifest_from_the_cli_then_retention_drops_it(  # type: ignore[no-untyped-def]
    delta_commits: int, emptied, tmp_path: Path
) -> None:
    """``hudi-sync manifest`` publishes the empty manifest too; it is the oldest snapshot,
    so a sync after the first commit keeping one snapshot removes it (and its delta)."""
    table = emptied("cow/v6_nonpartitioned")
    result = runner.invoke(app, ["manifest", str(table.path), "--json"])
    assert result.exit_code == 0, result.output
    (summary,) = json.loads(result.stdout)
    assert (summary["instant"], summary["files"]) == (None, 0)
    assert summary["files_uri"] == f"{table.path}/.hoodie/manifest/snapshots/empty/files.csv"
    _assert_empty_manifest(HudiTable.open(str(table.path)), delta=False)
    target = DuckDBTarget(str(tmp_path / "w.duckdb"), "t")
    sync_table(str(table.path), [target], delta_commits=delta_commits)
    _assert_empty_manifest(HudiTable.open(str(table.path)), delta=bool(delta_commits))

    table.restore()
    report = sync_table(str(table.path), [target], keep=1, delta_commits=delta_commits)
    assert report.instant is not None and _duckdb_count(tmp_path / "w.duckdb", "t") > 0
    opened = HudiTable.open(str(table.path))
    _assert_manifest_at(opened, table.path, report.instant, bool(delta_commits))
    left = set(_manifest_files(opened))
    assert not {n for n in left if "empty" in n}, left


def test_cli_dry_run_on_an_empty_table_prints_the_plan_and_changes_nothing(  # type: ignore[no-untyped-def]
    fixture_copy, tmp_path: Path
) -> None:
    path = fixture_copy("cow/v8_empty")
    database = tmp_path / "w.duckdb"
    args = ["sync", "duckdb", str(path), "--database", str(database), "--table", "t", "--dry-run"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"-- duckdb:{database}: create\n")
    assert (
        'CREATE OR REPLACE VIEW "t_history" AS SELECT CAST(NULL AS VARCHAR) AS '
        '"_hoodie_commit_time"' in result.stdout
    )
    assert 'CAST(NULL AS INTEGER) AS "id", CAST(NULL AS VARCHAR) AS "name", ' in result.stdout
    assert 'COMMENT ON VIEW "t" IS \'hudi_sync instant=0 ' in result.stdout
    if database.exists():  # reading the current state may create the (empty) file
        with duckdb.connect(str(database)) as con:
            views = con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal")
            assert views.fetchall() == []
    assert not (path / ".hoodie" / "manifest").exists()


def _without_create_schema(path: Path) -> None:
    properties = path / ".hoodie" / "hoodie.properties"
    lines = properties.read_text().splitlines()
    kept = [x for x in lines if not x.startswith("hoodie.table.create.schema=")]
    assert len(kept) == len(lines) - 1
    properties.write_text("\n".join(kept) + "\n")


def test_cli_without_a_create_schema_exits_2_and_creates_nothing(  # type: ignore[no-untyped-def]
    fixture_copy, tmp_path: Path
) -> None:
    path = fixture_copy("cow/v6_empty")
    _without_create_schema(path)
    before = sorted(p.relative_to(path).as_posix() for p in path.rglob("*"))
    database = tmp_path / "w.duckdb"
    for extra in ([], ["--dry-run"]):
        args = ["sync", "duckdb", str(path), "--database", str(database), "--table", "t", *extra]
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        message = result.stderr.strip()
        assert "\n" not in message and message.startswith(f"error: {path}: ")
        assert "no completed commit yet" in message and "hoodie.table.create.schema" in message
        assert result.stdout == ""
    assert not database.exists()
    assert sorted(p.relative_to(path).as_posix() for p in path.rglob("*")) == before
    assert ".hoodie/manifest" not in before


def test_hook_reports_a_missing_create_schema_and_backfill_fails_that_table(  # type: ignore[no-untyped-def]
    fixture_copy, tmp_path: Path
) -> None:
    path = fixture_copy("cow/v8_empty")
    _without_create_schema(path)
    database = tmp_path / "w.duckdb"
    options = {
        "hoodie.meta.sync.client.tool.class": "duckdb",
        "hoodie.duckdb.sync.database": str(database),
        "hoodie.duckdb.sync.table_name": "t",
    }
    report = run_post_commit_hook(str(path), options)
    assert not report.ok and "hoodie.table.create.schema" in report.errors["hook"]
    assert not database.exists()


def test_time_travel_to_before_the_first_commit_is_refused(  # type: ignore[no-untyped-def]
    fixture_copy, tmp_path: Path
) -> None:
    """No snapshot existed then: an error, not empty ``_as_of`` objects nor the live ones."""
    path = fixture_copy("cow/v6_nonpartitioned")
    database = tmp_path / "w.duckdb"
    target = DuckDBTarget(str(database), "t")
    sync_table(str(path), [target])
    with pytest.raises(BadInputError, match="no completed commit at or before 2001-01-01"):
        sync_table(str(path), [target], as_of="2001-01-01", force=True)
    assert _duckdb_count(database, "t") > 0


# -- BigQuery (local-bigquery emulator over fake-gcs-server) -----------------------------


@pytest.fixture
def bq_client(bigquery_emulator: BigQueryEmulator) -> Any:
    return bigquery_emulator.client()


@pytest.fixture
def dataset(bq_client: Any) -> Iterator[str]:
    name = f"ds_{uuid.uuid4().hex[:10]}"
    yield name
    bq_client.delete_dataset(name, delete_contents=True, not_found_ok=True)


def _bigquery_target(client: Any, dataset: str, **options: Any) -> BigQueryTarget:
    config = BigQuerySyncConfig.from_options(
        {"project_id": client.project, "dataset_name": dataset, "table_name": "t", **options}
    )
    return BigQueryTarget(config, client)


def _query_columns(client: Any, table_id: str) -> tuple[list[str], int]:
    result = client.query_and_wait(f"SELECT * FROM `{table_id}`").to_arrow()
    return result.column_names, result.num_rows


@pytest.mark.parametrize(
    ("manifest_mode", "delta_commits"),
    [(False, 0), (False, 3), (True, 0)],
    ids=["view", "view-delta", "manifest-file"],
)
def test_bigquery_empty_objects_then_first_commit(  # type: ignore[no-untyped-def]
    manifest_mode: bool, delta_commits: int, emptied, gcs_server: GcsStore, bq_client, dataset
) -> None:
    table = emptied("cow/v6_complexkeygen_hivestyle")
    bucket = gcs_server.make_bucket()
    uri = gcs_server.upload_dir(table.path, bucket, "lake/t")
    options = {"use_bq_manifest_file": "true"} if manifest_mode else {}
    target = _bigquery_target(bq_client, dataset, **options)
    opened = HudiTable.open(uri, gcs_server.storage_options)
    report = sync_table(opened, [target], delta_commits=delta_commits)
    assert report.ok and report.instant is None
    assert [r.action for r in report.results] == ["create"]
    _assert_empty_manifest(opened, delta=bool(delta_commits))
    project = bq_client.project
    view_id = f"{project}.{dataset}.t"
    tables = {t.table_id for t in bq_client.list_tables(dataset)}
    assert tables == ({"t"} if manifest_mode else {"t", "t_manifest", "t_history"})
    marker = f"hudi_sync instant=0 base={uri} mode={'manifest' if manifest_mode else 'view'}"
    data_id = view_id if manifest_mode else f"{project}.{dataset}.t_history"
    for table_id in {view_id, data_id}:
        stored = bq_client.get_table(table_id)
        assert stored.description == marker and stored.labels["hudi_sync_instant"] == "0"
    # Native tables: an external table over no file would fail every query.
    assert bq_client.get_table(data_id).external_data_configuration is None
    if not manifest_mode:
        manifest = bq_client.get_table(f"{project}.{dataset}.t_manifest")
        assert manifest.external_data_configuration is None
        assert [f.name for f in manifest.schema] == ["filename"]
    # Meta fields, the data fields, then the hive partition keys (as BigQuery adds them).
    names = _create_schema_names(table.path)
    partitions = ["byteField", "shortField"]
    expected = [*META_FIELDS, *[n for n in names if n not in partitions], *partitions]
    assert [f.name for f in bq_client.get_table(data_id).schema] == expected
    types = {f.name: f.field_type for f in bq_client.get_table(data_id).schema}
    assert (types["byteField"], types["decimalField"], types["timestampField"]) == (
        "INTEGER",
        "NUMERIC",
        "TIMESTAMP",
    )
    empty_columns, empty_rows = _query_columns(bq_client, view_id)
    assert empty_columns == expected and empty_rows == 0

    table.restore()
    gcs_server.upload_dir(table.path, bucket, "lake/t")
    opened = HudiTable.open(uri, gcs_server.storage_options)
    second = sync_table(opened, [target], delta_commits=delta_commits)
    assert second.instant == opened.latest_instant() is not None
    assert [r.action for r in second.results] == ["update"]
    _assert_manifest_at(opened, table.path, second.instant, bool(delta_commits))
    # Each native table was deleted and created again as an external table.
    steps = [s.split(" ", 2)[:2] for s in second.plans[0].steps]
    assert ["delete", data_id] in steps and ["create", data_id] in steps
    external = bq_client.get_table(data_id).external_data_configuration
    assert external is not None and external.source_format == "PARQUET"
    assert external.hive_partitioning.source_uri_prefix == (
        f"{uri}/{{byteField:INTEGER}}/{{shortField:INTEGER}}"
    )
    if manifest_mode:
        uris_csv = f"{uri}/.hoodie/manifest/snapshots/{second.instant}/uris.csv"
        assert external.source_uris == [uris_csv]
    else:
        assert external.source_uris and all(u.endswith("*.parquet") for u in external.source_uris)
    assert bq_client.get_table(view_id).labels["hudi_sync_instant"] == second.instant
    if manifest_mode:
        listed = gcs_server.fs().cat_file(uris_csv.removeprefix("gs://")).decode().split()
        materialise(bq_client, view_id, uris=listed)
    else:
        materialise(bq_client, data_id)
        materialise(bq_client, f"{project}.{dataset}.t_manifest")
    # The view's stored query: the emulator answers the delta view's own query, but not
    # a SELECT from the view once the tables under it were materialised.
    query = bq_client.get_table(view_id).view_query
    source = f"({query})" if query else f"`{view_id}`"
    rows = bq_client.query_and_wait(f"SELECT * FROM {source}").to_arrow()
    assert rows.column_names == empty_columns  # the columns the empty view had
    expected_rows = hudi_rs_rows(str(table.path))
    ours, theirs = same_columns(rows, expected_rows)
    assert theirs.num_rows > 0
    normalise = _maps_as_dicts(theirs)
    assert canonical(ours, normalise) == canonical(theirs, normalise)


def test_bigquery_table_without_meta_fields_gets_a_view_without_the_file_filter(  # type: ignore[no-untyped-def]
    emptied, bq_client, dataset
) -> None:
    """``_FILE_NAME`` exists on external tables only: the empty view selects no row."""
    table = emptied("cow/v8_simplekeygen_hivestyle_no_metafields")
    target = _bigquery_target(bq_client, dataset, source_uri_prefix="gs://lake-bucket/t")
    report = sync_table(str(table.path), [target], dry_run=True)
    resources = {
        r["tableReference"]["tableId"]: r
        for r in (json.loads(s.split(" ", 2)[2]) for s in report.plans[0].steps)
        if "tableReference" in r
    }
    history_id = f"{bq_client.project}.{dataset}.t_history"
    assert resources["t"]["view"]["query"] == f"SELECT * FROM `{history_id}` WHERE FALSE"
    assert "externalDataConfiguration" not in resources["t_history"]
    history = [f["name"] for f in resources["t_history"]["schema"]["fields"]]
    assert "_hoodie_file_name" not in history and history[-1] == "byteField"
    assert dataset not in {d.dataset_id for d in bq_client.list_datasets()}  # dry run


# -- Snowflake (fakesnow, external tables emulated) -------------------------------------


def _snowflake_count(name: str) -> int:
    connection = snowflake.connector.connect(database=DATABASE, schema=SCHEMA)
    cursor = connection.cursor()
    cursor.execute(f'SELECT count(*) FROM "{DATABASE.upper()}"."{SCHEMA.upper()}"."{name}"')
    count = int(cursor.fetchall()[0][0])
    connection.close()
    return count


@pytest.mark.parametrize("delta_commits", [0, 2], ids=["full", "delta"])
def test_snowflake_empty_objects_then_first_commit(  # type: ignore[no-untyped-def]
    delta_commits: int,
    emptied,
    s3_server: S3Store,
    emulation,  # noqa: F811  (the imported fixture)
) -> None:
    table = emptied("cow/v9_txns_simple_meta")
    bucket = s3_server.make_bucket()
    uri = s3_server.upload_dir(table.path, bucket, "tables/txns")
    opened = HudiTable.open(uri, s3_server.storage_options)
    report = sync_table(opened, [_target()], delta_commits=delta_commits)
    assert report.ok and report.instant is None
    assert [r.action for r in report.results] == ["create"]
    _assert_empty_manifest(opened, delta=bool(delta_commits))
    assert f"hudi_sync instant=0 base={uri}/ mode=view" in _view_comment()
    columns = _view_columns()
    assert columns == [object_name(c.name) for c in table_history_columns(opened)]
    assert columns == [object_name(n) for n in [*META_FIELDS, *_create_schema_names(table.path)]]
    assert _view_rows(opened) == []
    assert _snowflake_count("TRIPS_HISTORY") == 0 and _snowflake_count("TRIPS_MANIFEST") == 0
    manifest_sql = next(s for s in emulation.statements if "TRIPS_MANIFEST" in s and "CREATE" in s)
    assert "/.hoodie/manifest/snapshots/empty/ " in manifest_sql
    assert sync_table(opened, [_target()], delta_commits=delta_commits).results[0].action == "noop"
    _assert_empty_manifest(opened, delta=bool(delta_commits))

    table.restore()
    s3_server.upload_dir(table.path, bucket, "tables/txns")
    opened = HudiTable.open(uri, s3_server.storage_options)
    count = len(emulation.statements)
    second = sync_table(opened, [_target()], delta_commits=delta_commits)
    assert second.instant == opened.latest_instant() is not None
    assert [r.action for r in second.results] == ["update"]
    _assert_manifest_at(opened, table.path, second.instant, bool(delta_commits))
    applied = [s.split(" (")[0] for s in emulation.statements[count:] if not s.startswith("SHOW")]
    assert applied[:2] == [
        'ALTER EXTERNAL TABLE "HUDI"."LAKE"."TRIPS_HISTORY" REFRESH',  # the same definition
        'CREATE OR REPLACE EXTERNAL TABLE "HUDI"."LAKE"."TRIPS_MANIFEST"',
    ]
    assert _view_columns() == columns
    rows = _view_rows(opened)
    assert rows == _hudi_rs(opened, table.path) and len(rows) > 0
