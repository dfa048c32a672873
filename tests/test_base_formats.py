"""Tables whose base files are not parquet: Lance (real tables written by Hudi, from
hudi-rs's test corpus, ``tests/data/hudi-rs-tables``), ORC and HFile (derived here from
parquet fixture tables, see :func:`derive`).

Listing, time travel and the ``show`` commands do not depend on the base file format and
must answer as hudi-rs does. A sync to a warehouse that cannot read the format is refused
with one line naming the format and the target, before a manifest or any warehouse object
is written; BigQuery and Snowflake external tables read ORC.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from hudi_sync.cli.app import app
from hudi_sync.errors import UnsupportedTableError
from hudi_sync.manifest.snapshot import PublishedManifest
from hudi_sync.sync.hook import DUCKDB_DATABASE, DUCKDB_TABLE, SYNC_TOOLS, run_post_commit_hook
from hudi_sync.sync.job import publish_manifest, sync_table
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.bigquery import BigQuerySyncConfig, BigQueryTarget
from hudi_sync.warehouse.common import SyncPlan, SyncResult
from hudi_sync.warehouse.duckdb import DuckDBTarget
from hudi_sync.warehouse.snowflake import (
    PREFIX as SNOWFLAKE_PREFIX,
)
from hudi_sync.warehouse.snowflake import (
    SnowflakeSyncConfig,
    SnowflakeTarget,
    base_file_pattern,
)
from tests import hudi_oracle
from tests.fixture_tables import FixtureTable, fixture_tables, unpack

runner = CliRunner()
REAL = Path(__file__).resolve().parent / "data" / "hudi-rs-tables"
LANCE_TABLES = [
    "quickstart_trips_table/cow/v9_trips_lance",
    "quickstart_trips_table/mor/avro/v9_trips_lance",
    "sample_table/cow/v9_lance_nonpartitioned",
    "sample_table/mor/avro/v9_lance_nonhivestyle",
]
COW_LANCE = "quickstart_trips_table/cow/v9_trips_lance"
# Parquet fixtures the ORC and HFile tables are derived from: v6 tables, whose timeline
# files are JSON (so the base file names in their write stats can be renamed too).
HIVE_STYLE = "sample_table/cow/v6_complexkeygen_hivestyle"
OVERWRITTEN = "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable"


# -- tables ------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def real_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hudi-rs-tables")


@pytest.fixture
def lance_copy(real_root: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A writable copy of one real Lance table, by its name under ``hudi-rs-tables``."""

    def _copy(name: str) -> Path:
        source = unpack(FixtureTable(name, REAL / f"{name}.zip"), real_root)
        target = tmp_path / source.name
        shutil.copytree(source, target)
        return target

    return _copy


def _parquet_fixture(name: str, unpack_table: Any) -> Path:
    (match,) = [t for t in fixture_tables() if t.name == name]
    path: Path = unpack_table(match)
    return path


def derive(source: Path, target: Path, base_format: str) -> Path:
    """A copy of the parquet table ``source`` whose base files are ``base_format``.

    Derived, not written by Hudi: for ORC each parquet base file is rewritten as an ORC
    file of the same rows (with ``_hoodie_file_name`` naming the new ``.orc`` file, as
    Hudi's ORC writer would); for HFILE the files are only renamed to ``.hfile`` (their
    content stays parquet: only listing and refusals are tested on them); PARQUET gives
    an unchanged copy. Base file
    names in the JSON timeline files are renamed alike, and
    ``hoodie.table.base.file.format`` is set.
    """
    shutil.copytree(source, target)
    extension = "." + base_format.lower()
    for path in sorted(target.rglob("*.parquet")):
        if ".hoodie" in path.relative_to(target).parts:
            continue
        renamed = path.with_suffix(extension)
        if base_format == "ORC":
            rows = pq.read_table(path)
            if "_hoodie_file_name" in rows.column_names:
                index = rows.column_names.index("_hoodie_file_name")
                names = pa.array([renamed.name] * rows.num_rows, pa.string())
                rows = rows.set_column(index, rows.schema.field(index), names)
            orc.write_table(rows, renamed)
            path.unlink()
        else:
            path.rename(renamed)
    for path in (target / ".hoodie").iterdir():
        if path.is_file() and path.name != "hoodie.properties":
            path.write_bytes(path.read_bytes().replace(b".parquet", extension.encode()))
    _set_property(target, "hoodie.table.base.file.format", base_format)
    return target


def _set_property(table: Path, key: str, value: str | None) -> None:
    props = table / ".hoodie" / "hoodie.properties"
    lines = [line for line in props.read_text().splitlines() if not line.startswith(f"{key}=")]
    if value is not None:
        lines.append(f"{key}={value}")
    props.write_text("\n".join(lines) + "\n")


def _ours(table: HudiTable, as_of: str | None = None) -> list[dict[str, Any]]:
    """Our file slices in hudi_oracle's shape."""
    return [s.to_json() for s in table.file_slices(as_of=as_of)]


def _renamed(rows: list[dict[str, Any]], old: str, new: str) -> list[dict[str, Any]]:
    return [
        r | {"base_file": r["base_file"].replace(old, new) if r["base_file"] else None}
        for r in rows
    ]


def _assert_nothing_written(table: Path) -> None:
    assert not (table / ".hoodie" / "manifest").exists()


# -- listing and time travel -------------------------------------------------------------
@pytest.mark.parametrize("name", LANCE_TABLES)
def test_lance_file_slices_equal_hudi_rs_latest_and_as_of_every_commit(  # type: ignore[no-untyped-def]
    name: str, lance_copy
) -> None:
    path = lance_copy(name)
    table = HudiTable.open(str(path))
    assert table.config.base_file_format == "LANCE"
    latest = _ours(table)
    assert latest == hudi_oracle.slices(str(path))
    base_files = [r["base_file"] for r in latest]
    assert base_files and all(b.endswith(".lance") for b in base_files)
    commits = hudi_oracle.completed_instants(str(path))
    assert len(commits) > 1
    assert [(i.requested_time, i.action) for i in table.completed_commits()] == commits
    snapshots = []
    for instant, _ in commits:
        at = _ours(table, as_of=instant)
        assert at == hudi_oracle.slices(str(path), as_of=instant), instant
        snapshots.append(at)
    # Time travel is exercised: the snapshots differ from one commit to another.
    assert len({json.dumps(s) for s in snapshots}) > 1


def test_mor_lance_slices_carry_their_log_files(lance_copy) -> None:  # type: ignore[no-untyped-def]
    path = lance_copy("quickstart_trips_table/mor/avro/v9_trips_lance")
    table = HudiTable.open(str(path))
    with_logs = [s for s in table.file_slices() if s.log_files]
    assert [s.file_id for s in with_logs] == ["8d159e29-8789-4cf9-8fc4-73717c7258c7-0"]
    read_optimized = table.file_slices(read_optimized=True)
    assert read_optimized and all(not s.log_files for s in read_optimized)
    assert {s.base_file.name for s in read_optimized if s.base_file} == {
        r["base_file"] for r in hudi_oracle.slices(str(path))
    }


@pytest.mark.parametrize("base_format", ["ORC", "HFILE"])
def test_derived_orc_and_hfile_tables_list_like_their_parquet_source(  # type: ignore[no-untyped-def]
    base_format: str, unpack_table, tmp_path: Path
) -> None:
    source = _parquet_fixture(OVERWRITTEN, unpack_table)
    path = derive(source, tmp_path / "t", base_format)
    table = HudiTable.open(str(path))
    extension = "." + base_format.lower()
    commits = hudi_oracle.completed_instants(str(source))
    assert len(commits) == 3
    for as_of in [None, *(instant for instant, _ in commits)]:
        expected = _renamed(hudi_oracle.slices(str(source), as_of=as_of), ".parquet", extension)
        assert _ours(table, as_of=as_of) == expected, as_of
        if base_format == "HFILE":  # hudi-rs lists HFile tables; it refuses ORC ones
            assert _ours(table, as_of=as_of) == hudi_oracle.slices(str(path), as_of=as_of)
    assert table.file_slices()[0].base_file.name.endswith(extension)  # type: ignore[union-attr]


def test_unknown_base_format_is_refused_by_name(lance_copy) -> None:  # type: ignore[no-untyped-def]
    path = lance_copy("sample_table/cow/v9_lance_nonpartitioned")
    _set_property(path, "hoodie.table.base.file.format", "HOODIE_LOG")
    with pytest.raises(UnsupportedTableError, match="unknown base file format HOODIE_LOG"):
        HudiTable.open(str(path))


def test_schema_of_a_non_parquet_table_never_reads_a_base_file(  # type: ignore[no-untyped-def]
    unpack_table, tmp_path: Path
) -> None:
    """The derived HFile table's files hold parquet bytes: reading a "footer" would
    succeed, so only refusing to read one gives the error."""
    source = _parquet_fixture(OVERWRITTEN, unpack_table)
    path = derive(source, tmp_path / "t", "HFILE")
    for commit in (path / ".hoodie").glob("*commit"):
        metadata = json.loads(commit.read_text())
        metadata.get("extraMetadata", {}).pop("schema", None)
        commit.write_text(json.dumps(metadata))
    _set_property(path, "hoodie.table.create.schema", None)
    table = HudiTable.open(str(path))
    with pytest.raises(UnsupportedTableError) as error:
        _ = table.avro_schema
    message = str(error.value)
    assert "\n" not in message and "HFILE" in message and str(path) in message
    # Listing does not need a schema.
    assert len(table.file_slices()) == 1
    # The parquet table with the same commits falls back to its footers.
    plain = derive(source, tmp_path / "p", "PARQUET")
    for commit in (plain / ".hoodie").glob("*commit"):
        metadata = json.loads(commit.read_text())
        metadata.get("extraMetadata", {}).pop("schema", None)
        commit.write_text(json.dumps(metadata))
    _set_property(plain, "hoodie.table.create.schema", None)
    assert HudiTable.open(str(plain)).avro_schema["fields"]


# -- show commands -----------------------------------------------------------------------
def test_show_commands_on_a_lance_table(lance_copy) -> None:  # type: ignore[no-untyped-def]
    path = lance_copy(COW_LANCE)
    result = runner.invoke(app, ["show", "files", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == hudi_oracle.slices(str(path))
    first = hudi_oracle.completed_instants(str(path))[0][0]
    result = runner.invoke(app, ["show", "files", str(path), "--as-of", first, "--json"])
    assert result.exit_code == 0, result.output
    at_first = json.loads(result.stdout)
    assert at_first == hudi_oracle.slices(str(path), as_of=first)
    assert at_first != hudi_oracle.slices(str(path))
    result = runner.invoke(app, ["show", "instants", str(path), "--json"])
    assert result.exit_code == 0, result.output
    completed = sorted(
        (r["instant"], r["action"]) for r in json.loads(result.stdout) if r["state"] == "COMPLETED"
    )
    assert completed == hudi_oracle.completed_instants(str(path))
    result = runner.invoke(app, ["show", "table", str(path), "--json"])
    assert result.exit_code == 0, result.output
    settings = {r["setting"]: r["value"] for r in json.loads(result.stdout)}
    assert settings["base_file_format"] == "LANCE"
    assert settings["latest_instant"] == completed[-1][0]
    result = runner.invoke(app, ["show", "files", str(path)])  # not JSON, too
    assert result.exit_code == 0, result.output
    assert all(r["base_file"] in result.stdout for r in hudi_oracle.slices(str(path)))


def test_manifest_of_a_lance_table_lists_its_lance_files(lance_copy) -> None:  # type: ignore[no-untyped-def]
    """The manifest is names only: publishing one does not depend on the format."""
    path = lance_copy(COW_LANCE)
    published = publish_manifest(HudiTable.open(str(path)))
    names = (path / ".hoodie" / "manifest" / "latest_snapshot_files.csv").read_text().split()
    assert names == sorted(r["base_file"] for r in hudi_oracle.slices(str(path)))
    assert published.manifest.instant == hudi_oracle.completed_instants(str(path))[-1][0]


# -- refused syncs -----------------------------------------------------------------------
def _one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


def test_sync_duckdb_refuses_lance_and_writes_nothing(lance_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = lance_copy(COW_LANCE)
    database = tmp_path / "w.duckdb"
    for extra in ([], ["--dry-run"]):
        args = ["sync", "duckdb", str(path), "--database", str(database), "--table", "t", *extra]
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        line = _one_line(result.stderr)
        assert "LANCE" in line and f"duckdb:{database}" in line, line
        assert not database.exists()
        _assert_nothing_written(path)


def test_sync_bigquery_and_snowflake_refuse_lance_before_connecting(lance_copy) -> None:  # type: ignore[no-untyped-def]
    """Neither target is reachable (no endpoint answers, no account): a refusal that came
    after planning would name the connection, not the format."""
    path = lance_copy(COW_LANCE)
    commands = {
        "bigquery": [
            "sync", "bigquery", str(path), "--project-id", "my-project",
            "--dataset-name", "lake", "--table-name", "t",
            "--api-endpoint", "http://127.0.0.1:9",
        ],
        "snowflake": [
            "sync", "snowflake", str(path), "--account", "nowhere", "--database", "hudi",
            "--schema", "lake", "--table-name", "t",
        ],
    }  # fmt: skip
    for kind, args in commands.items():
        for extra in ([], ["--dry-run"]):
            result = runner.invoke(app, [*args, *extra])
            assert result.exit_code == 2, result.output
            line = _one_line(result.stderr)
            assert "LANCE" in line and f"{kind}:" in line, line
            _assert_nothing_written(path)


def test_hook_records_each_refusal_and_publishes_nothing(lance_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = lance_copy(COW_LANCE)
    database = tmp_path / "w.duckdb"
    options = {
        SYNC_TOOLS: "duckdb,bigquery",
        DUCKDB_DATABASE: str(database),
        DUCKDB_TABLE: "t",
        "hoodie.gcp.bigquery.sync.project_id": "my-project",
        "hoodie.gcp.bigquery.sync.dataset_name": "lake",
    }
    report = run_post_commit_hook(str(path), options)
    assert not report.ok and report.instant is None and not report.results
    assert set(report.errors) == {f"duckdb:{database}", "bigquery:my-project.lake"}
    assert all("LANCE" in m and "\n" not in m for m in report.errors.values())
    assert not database.exists()
    _assert_nothing_written(path)


class _OrcReader:
    """A target that reads ORC and records what it was given (for the orchestration)."""

    name = "recorder:orc"
    base_file_formats = frozenset({"ORC"})

    def __init__(self) -> None:
        self.calls: list[PublishedManifest] = []

    def sync(
        self,
        table: HudiTable,
        published: PublishedManifest,
        as_of: bool = False,
        force: bool = False,
        dry_run: bool = False,
        replace_other_table: bool = False,
    ) -> tuple[SyncPlan, SyncResult]:
        self.calls.append(published)
        plan = SyncPlan(self.name, "create", [])
        return plan, plan.result(published.manifest.instant, ("t",))


def test_a_refused_target_does_not_stop_one_that_reads_the_format(  # type: ignore[no-untyped-def]
    unpack_table, tmp_path: Path
) -> None:
    source = _parquet_fixture(OVERWRITTEN, unpack_table)
    path = derive(source, tmp_path / "t", "ORC")
    table = HudiTable.open(str(path))
    database = tmp_path / "w.duckdb"
    duck, reader = DuckDBTarget(str(database), "t"), _OrcReader()
    with pytest.raises(UnsupportedTableError, match=r"duckdb:.* cannot read ORC base files"):
        sync_table(table, [reader, duck])
    assert not reader.calls  # refused up front, before the first target ran
    _assert_nothing_written(path)

    report = sync_table(table, [duck, reader], continue_on_error=True)
    assert list(report.errors) == [duck.name] and "ORC" in report.errors[duck.name]
    assert [r.target for r in report.results] == [reader.name]
    (published,) = reader.calls
    expected = _renamed(hudi_oracle.slices(str(source)), ".parquet", ".orc")
    assert published.manifest.names() == sorted(r["base_file"] for r in expected)
    assert (path / ".hoodie" / "manifest" / "latest.json").exists()
    assert not database.exists()


# -- ORC in BigQuery and Snowflake -------------------------------------------------------
def test_bigquery_declares_orc_external_tables(  # type: ignore[no-untyped-def]
    unpack_table, tmp_path: Path, gcs_server, bigquery_emulator
) -> None:
    """The emulator stores external tables without reading them; their files are then
    loaded with the stored configuration (an ORC load job) and the real view queried,
    and its rows must be hudi-rs's snapshot of the parquet table the ORC one came from."""
    from tests.bigquery_emulator import materialise
    from tests.test_bigquery_target import _maps_as_dicts
    from tests.warehouse_rows import canonical, hudi_rs_rows, same_columns

    source = _parquet_fixture(HIVE_STYLE, unpack_table)
    local = derive(source, tmp_path / "t", "ORC")
    uri = gcs_server.upload_dir(local, gcs_server.make_bucket(), "lake/t")
    table = HudiTable.open(uri, gcs_server.storage_options)
    client = bigquery_emulator.client()
    dataset = f"ds_orc_{uuid.uuid4().hex[:10]}"
    config = BigQuerySyncConfig.from_options(
        {"project_id": client.project, "dataset_name": dataset, "table_name": "t"}
    )
    try:
        report = sync_table(table, [BigQueryTarget(config, client)])
        assert [r.action for r in report.results] == ["create"]
        history_id = f"{client.project}.{dataset}.t_history"
        history = dict(client.get_table(history_id).external_data_configuration.to_api_repr())
        assert history["sourceFormat"] == "ORC" and "parquetOptions" not in history
        assert history["hivePartitioningOptions"]["mode"] == "CUSTOM"
        objects = sorted(f"gs://{p}" for p in gcs_server.fs().find(uri))
        base_files = [o for o in objects if "/." not in o[len(uri) :] and o.endswith(".orc")]
        assert base_files and all(u.endswith("*.orc") for u in history["sourceUris"])
        matched = {
            o for o in objects if any(fnmatch.fnmatchcase(o, u) for u in history["sourceUris"])
        }
        assert matched == set(base_files)

        materialise(client, history_id)
        materialise(client, f"{client.project}.{dataset}.t_manifest")
        rows = client.query_and_wait(f"SELECT * FROM `{client.project}.{dataset}.t`").to_arrow()
        theirs = hudi_rs_rows(str(source))
        ours, theirs = same_columns(rows, theirs)  # type: ignore[arg-type]
        assert theirs.num_rows > 0

        def parquet_names(row: dict[str, Any]) -> dict[str, Any]:
            row["_hoodie_file_name"] = row["_hoodie_file_name"].replace(".orc", ".parquet")
            return row

        # Maps read back as JSON text from the emulator's load, as (key, value) pairs from
        # hudi-rs: both become dicts (as in tests/test_bigquery_target.py).
        maps = _maps_as_dicts(theirs)
        assert canonical(ours, lambda row: maps(parquet_names(row))) == canonical(theirs, maps)
    finally:
        client.delete_dataset(dataset, delete_contents=True, not_found_ok=True)


@pytest.fixture
def snowflake_emulation(s3_server):  # type: ignore[no-untyped-def]
    import snowflake.connector

    from tests.snowflake_emulation import EmulatedSnowflake

    emulation = EmulatedSnowflake(s3_server.storage_options)
    with emulation.patched():
        snowflake.connector.connect(database="hudi", schema="lake").close()
        yield emulation


def test_snowflake_declares_orc_external_tables(  # type: ignore[no-untyped-def]
    unpack_table, tmp_path: Path, s3_server, snowflake_emulation
) -> None:
    """The emulation loads parquet files only, so the ORC plan is checked as a dry run:
    the history table reads ORC files, and its pattern matches exactly the base files."""
    local = derive(_parquet_fixture(HIVE_STYLE, unpack_table), tmp_path / "t", "ORC")
    uri = s3_server.upload_dir(local, s3_server.make_bucket(), "tables/t")
    table = HudiTable.open(uri, s3_server.storage_options)
    options = {"database": "hudi", "schema": "lake", "storage_integration": "hudi_s3"}
    config = SnowflakeSyncConfig.from_options(
        {SNOWFLAKE_PREFIX + k: v for k, v in options.items()}, {}, "trips"
    )
    report = sync_table(table, [SnowflakeTarget(config)], dry_run=True)
    (history,) = [
        s for s in report.plans[0].steps if "EXTERNAL TABLE" in s and "_HISTORY" in s.upper()
    ]
    assert "FILE_FORMAT = (TYPE = ORC)" in history and "PARQUET" not in history
    pattern = base_file_pattern("ORC")
    assert f"PATTERN = '{pattern}'" in history
    relative = [p.relative_to(local).as_posix() for p in local.rglob("*") if p.is_file()]
    matched = {r for r in relative if re.search(pattern, r)}
    expected = {r for r in relative if r.endswith(".orc") and not r.startswith(".")}
    assert expected and matched == expected
    assert not any(s.startswith(("CREATE", "ALTER")) for s in snowflake_emulation.statements)
