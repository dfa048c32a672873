"""The Snowflake target end to end: fixture tables in moto S3, fakesnow behind the real
connector, external tables emulated from their own DDL (``tests/snowflake_emulation.py``
says what fakesnow cannot do and how the emulation stands in). The view's rows must equal
hudi-rs's snapshot of each table, after every sync."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import snowflake.connector
import sqlglot
from sqlglot import exp

from hudi_sync.errors import BadInputError, HudiSyncError
from hudi_sync.sync.job import publish_manifest, sync_table
from hudi_sync.table import HudiTable
from hudi_sync.table.read.snapshot import read_snapshot
from hudi_sync.warehouse.snowflake import (
    BASE_FILE_PATTERN,
    PREFIX,
    SnowflakeSyncConfig,
    SnowflakeTarget,
)
from hudi_sync.warehouse.snowflake.schema import (
    object_name,
    quote_literal,
    sql_name,
    table_history_columns,
)
from tests import test_mor_read as mor_read
from tests.fixture_tables import fixture_tables
from tests.growing_timeline import growing_timeline
from tests.objectstores import S3Store
from tests.snowflake_emulation import EmulatedSnowflake
from tests.warehouse_rows import hudi_rs_rows

COW = [t for t in fixture_tables() if "/cow/" in t.name and "empty" not in t.name]
# Compared as text after the casts; nested types are semi-structured on both sides.
SCALAR_PREFIXES = ("VARCHAR", "NUMBER", "BOOLEAN", "FLOAT", "DATE")
DATABASE, SCHEMA = "hudi", "lake"


@pytest.fixture
def emulation(s3_server: S3Store) -> Iterator[EmulatedSnowflake]:
    """fakesnow with database HUDI and schema LAKE (as terraform would create them), and
    every ``snowflake.connector.connect`` going through the external-table emulation."""
    emulation = EmulatedSnowflake(s3_server.storage_options)
    with emulation.patched():
        snowflake.connector.connect(database=DATABASE, schema=SCHEMA).close()
        yield emulation


def _options(**extra: str) -> dict[str, str]:
    options = {"database": DATABASE, "schema": SCHEMA, "storage_integration": "hudi_s3", **extra}
    return {PREFIX + k: v for k, v in options.items()}


def _target(**extra: str) -> SnowflakeTarget:
    return SnowflakeTarget.from_options(_options(**extra), "trips", environ={})


def _upload(s3_server: S3Store, local: Path) -> HudiTable:
    uri = s3_server.upload_dir(local, s3_server.make_bucket(), f"tables/{local.name}")
    return HudiTable.open(uri, s3_server.storage_options)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, float):
        return repr(float(value))
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    return str(value)


def _compared(table: HudiTable) -> list[Any]:
    """Scalar columns hudi-rs also has (without meta fields, the file name is ours)."""
    with_meta = table.config.populate_meta_fields
    return [
        c
        for c in table_history_columns(table)
        if c.type.startswith(SCALAR_PREFIXES) and (with_meta or c.name != "_hoodie_file_name")
    ]


def _view_columns(view: str = "trips") -> list[str]:
    """The view's columns, from INFORMATION_SCHEMA.COLUMNS."""
    connection = snowflake.connector.connect(database=DATABASE, schema=SCHEMA)
    cursor = connection.cursor()
    cursor.execute(
        "SELECT column_name FROM HUDI.INFORMATION_SCHEMA.COLUMNS "
        f"WHERE table_schema = 'LAKE' AND table_name = {quote_literal(object_name(view))} "
        "ORDER BY ordinal_position"
    )
    names = [str(r[0]) for r in cursor.fetchall()]
    connection.close()
    return names


def _view_rows(table: HudiTable, view: str = "trips") -> list[tuple[str | None, ...]]:
    connection = snowflake.connector.connect(database=DATABASE, schema=SCHEMA)
    cursor = connection.cursor()
    listed = ", ".join(sql_name(c.name) for c in _compared(table))
    cursor.execute(f"SELECT {listed} FROM {sql_name(DATABASE)}.{sql_name(SCHEMA)}.{sql_name(view)}")
    rows = sorted(tuple(_text(v) for v in row) for row in cursor.fetchall())
    connection.close()
    return rows


def _hudi_rs(
    table: HudiTable, local: Path, as_of: str | None = None
) -> list[tuple[str | None, ...]]:
    expected = hudi_rs_rows(str(local), as_of=as_of).to_pylist()

    def value(row: dict[str, Any], name: str) -> str | None:
        if name in row:
            return _text(row[name])
        assert name.endswith("_partition"), name  # a formatted partition: the path
        return str(row["_hoodie_partition_path"])

    return sorted(tuple(value(r, c.name) for c in _compared(table)) for r in expected)


def _view_comment(view: str = "trips") -> str:
    connection = snowflake.connector.connect(database=DATABASE, schema=SCHEMA)
    cursor = connection.cursor()
    cursor.execute(f"SHOW VIEWS LIKE '{object_name(view)}' IN SCHEMA HUDI.LAKE")
    columns = [d[0].lower() for d in cursor.description]
    comments = [dict(zip(columns, r, strict=True))["comment"] for r in cursor.fetchall()]
    connection.close()
    assert len(comments) == 1
    return str(comments[0])


@pytest.mark.parametrize("fixture", COW, ids=[t.id for t in COW])
def test_view_equals_hudi_rs_on_fixture_tables_in_s3(  # type: ignore[no-untyped-def]
    fixture, unpack_table, s3_server, emulation
) -> None:
    local = unpack_table(fixture)
    table = _upload(s3_server, local)
    report = sync_table(table, [_target()])
    assert report.ok and report.results[0].action == "create"
    expected = _hudi_rs(table, local)
    assert len(expected) > 0
    assert _view_rows(table) == expected
    assert f"instant={report.instant} base={table.uri}/ mode=view" in _view_comment()
    # no VALUE column
    assert _view_columns() == [object_name(c.name) for c in table_history_columns(table)]
    for statement in emulation.statements:
        sqlglot.parse_one(statement, read="snowflake")  # every statement is Snowflake SQL


MOR = [t for t in fixture_tables() if "/mor/" in t.name and "empty" not in t.name]
MOR = [t for t in MOR if "no_metafields" not in t.name]


@pytest.mark.parametrize("fixture", MOR, ids=[t.id for t in MOR])
def test_merge_on_read_views_equal_hudi_rs_in_s3(  # type: ignore[no-untyped-def]
    fixture, unpack_table, s3_server, emulation
) -> None:
    """``TRIPS_RO`` shows hudi-rs's read-optimized rows, ``TRIPS_RT`` its snapshot: the
    folded log files read through their own external table and merged by the view."""
    local = unpack_table(fixture)
    table = _upload(s3_server, local)
    report = sync_table(table, [_target()])
    assert report.ok and report.results[0].action == "create", report.errors
    assert _view_rows(table, "trips_rt") == _hudi_rs(table, local)
    read_optimized = hudi_rs_rows(str(local), read_optimized=True).to_pylist()
    compared = [c.name for c in _compared(table)]
    assert _view_rows(table, "trips_ro") == sorted(
        tuple(_text(r.get(c, r["_hoodie_partition_path"])) for c in compared)
        for r in read_optimized
    )
    assert f"instant={report.instant} base={table.uri}/ mode=view" in _view_comment("trips_rt")
    assert _view_columns("trips_rt") == _view_columns("trips_ro")
    again = sync_table(table, [_target()])
    assert [r.action for r in again.results] == ["noop"]
    for statement in emulation.statements:
        sqlglot.parse_one(statement, read="snowflake")


def test_skip_ro_suffix_turned_on_at_the_instant_shown_creates_the_view(  # type: ignore[no-untyped-def]
    unpack_table, s3_server, emulation
) -> None:
    """The marker is on ``TRIPS_RT``, which still shows the instant: the sync that renames
    the read-optimized view to ``TRIPS`` with no new commit creates it (its digests
    differ), with the read-optimized rows; the next is a no-op."""
    (fixture,) = [t for t in fixture_tables() if t.name.endswith("mor/parquet/v6_nonpartitioned")]
    local = unpack_table(fixture)
    table = _upload(s3_server, local)

    def sync(skip: bool) -> str:
        target = SnowflakeTarget(_target().config, skip_ro_suffix=skip)
        report = sync_table(table, [target], change_feed="off")
        assert report.ok, report.errors
        return report.results[0].action

    assert sync(False) == "create"
    assert sync(True) == "update"
    assert _view_rows(table, "trips") == _view_rows(table, "trips_ro")
    assert sync(True) == "noop"


def test_merge_on_read_view_meets_the_first_of_two_base_rows_of_a_key(  # type: ignore[no-untyped-def]
    fixture_copy, s3_server, emulation
) -> None:
    """A base file with two rows of a key, a log version of it: ``TRIPS_RT`` replaces
    the first row and keeps the second, as the table core (and Hudi's reader) do."""
    local = fixture_copy(mor_read.V8.fixture)
    group = mor_read.V8
    (base,) = (local / mor_read.SF_PARTITION).glob(f"{group.file_id}_*{group.base_instant}.parquet")
    rows = pq.read_table(base)
    first = rows.slice(0, 1)
    twin = first.set_column(1, "_hoodie_commit_seqno", pa.array([f"{group.base_instant}_9_9"]))
    twin = twin.set_column(rows.schema.get_field_index("fare"), "fare", pa.array([1.5]))
    pq.write_table(pa.concat_tables([first, twin, rows.slice(1)]), base)
    key = first.column("_hoodie_record_key")[0].as_py()
    mor_read._add_log(local, mor_read._trip_block([mor_read._trip(key, 10**15, 7.0)]))
    table = _upload(s3_server, local)
    report = sync_table(table, [_target()])
    assert report.ok, report.errors
    core = read_snapshot(HudiTable.open(str(local))).to_pylist()
    expected = sorted(tuple(_text(r[c.name]) for c in _compared(table)) for r in core)
    fares = [r["fare"] for r in core if r["_hoodie_record_key"] == key]
    assert sorted(fares) == [1.5, 7.0]
    assert _view_rows(table, "trips_rt") == expected


def test_history_lists_only_base_files(  # type: ignore[no-untyped-def]
    unpack_table, s3_server, emulation, tmp_path
) -> None:
    """The PATTERN keeps parquet base files in visible folders: never .hoodie's parquet
    (metadata table, LSM history) nor hidden partition metadata."""
    fixture = next(t for t in COW if t.name.endswith("v8_simplekeygen_nonhivestyle"))
    local = tmp_path / "table"
    shutil.copytree(unpack_table(fixture), local)
    base_file = next(local.rglob("*.parquet"))
    for hidden_name in (
        ".hoodie/metadata/files/files-0000-0_0-1-1_20240101000000000.parquet",
        f"{base_file.parent.relative_to(local)}/.hoodie_partition_metadata.parquet",
        ".hoodie/timeline/history/20240101000000000_20240101000000001_0.parquet",
    ):
        (local / hidden_name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(base_file, local / hidden_name)
    table = _upload(s3_server, local)
    sync_table(table, [_target()])
    cursor = snowflake.connector.connect(database=DATABASE, schema=SCHEMA).cursor()
    cursor.execute('SELECT DISTINCT "METADATA$FILENAME" FROM HUDI.LAKE."TRIPS_HISTORY__files"')
    listed = sorted(r[0] for r in cursor.fetchall())
    on_disk = sorted(
        p.relative_to(local).as_posix()
        for p in local.rglob("*.parquet")
        if not any(part.startswith(".") for part in p.relative_to(local).parts)
    )
    hidden = [p for p in local.rglob("*.parquet") if p.name.startswith(".") or ".hoodie" in p.parts]
    assert listed == on_disk and len(hidden) >= 2
    assert all(
        re.search(BASE_FILE_PATTERN, p.relative_to(local).as_posix()) is None for p in hidden
    )


def _withhold_latest_commit(local: Path, tmp_path: Path) -> tuple[Path, list[Path], str, str]:
    """A copy of the table without its newest completed commit's instant files (the table
    as it was before that commit; the commit's parquet files are there, uncommitted)."""
    copy = tmp_path / "table"
    shutil.copytree(local, copy)
    table = HudiTable.open(str(copy))
    latest = table.latest_instant()
    assert latest is not None
    instants = [i.requested_time for i in table.instants() if i.is_completed and i.is_write]
    previous = instants[-2]
    withheld = [p for p in (copy / ".hoodie").rglob(f"{latest}*") if p.is_file()]
    assert withheld
    stash = tmp_path / "stash"
    stash.mkdir()
    moved = []
    for path in withheld:
        target = stash / path.relative_to(copy)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(path, target)
        moved.append(target)
    return copy, moved, previous, latest


def _complete(s3_server: S3Store, uri: str, stashed: list[Path], tmp_path: Path) -> None:
    """The withheld commit completes: its instant files arrive in the bucket."""
    fs = s3_server.fs()
    for path in stashed:
        fs.put(str(path), f"{uri}/{path.relative_to(tmp_path / 'stash').as_posix()}")


def test_new_commit_refreshes_history_and_switches_the_manifest(  # type: ignore[no-untyped-def]
    unpack_table, s3_server, emulation, tmp_path
) -> None:
    fixture = next(t for t in COW if t.name.endswith("v6_simplekeygen_nonhivestyle"))
    local = unpack_table(fixture)
    copy, stashed, previous, latest = _withhold_latest_commit(local, tmp_path)
    uri = s3_server.upload_dir(copy, s3_server.make_bucket(), "trips")
    table = HudiTable.open(uri, s3_server.storage_options)
    first = sync_table(table, [_target()])
    assert first.instant == previous
    assert _view_rows(table) == _hudi_rs(table, local, as_of=previous)

    again = sync_table(table, [_target()])
    assert again.results[0].action == "noop"

    _complete(s3_server, uri, stashed, tmp_path)
    count = len(emulation.statements)
    table = HudiTable.open(uri, s3_server.storage_options)
    second = sync_table(table, [_target()])
    assert second.instant == latest and second.results[0].action == "update"
    applied = [s.split(" (")[0] for s in emulation.statements[count:] if not s.startswith("SHOW")]
    assert applied == [
        'ALTER EXTERNAL TABLE "HUDI"."LAKE"."TRIPS_HISTORY" REFRESH',
        'CREATE OR REPLACE EXTERNAL TABLE "HUDI"."LAKE"."TRIPS_MANIFEST"',
        f'ALTER VIEW "HUDI"."LAKE"."TRIPS" SET COMMENT = \'hudi_sync instant={latest}'
        + emulation.statements[-1].split(f"instant={latest}", 1)[1],
    ]
    assert _view_rows(table) == _hudi_rs(table, local)

    # Never backwards: the older snapshot is refused without --force.
    target = _target()
    older = publish_manifest(table, as_of=previous)
    _, result = target.sync(table, older)
    assert result.action == "skip-older" and f"shows newer {latest}" in result.reason
    assert f"instant={latest}" in _view_comment()
    target.sync(table, older, force=True)
    assert _view_rows(table) == _hudi_rs(table, local, as_of=previous)


def test_failure_midway_leaves_the_previous_snapshot_and_rerun_converges(  # type: ignore[no-untyped-def]
    unpack_table, s3_server, emulation, tmp_path
) -> None:
    fixture = next(t for t in COW if t.name.endswith("v6_simplekeygen_nonhivestyle"))
    local = unpack_table(fixture)
    copy, stashed, previous, _ = _withhold_latest_commit(local, tmp_path)
    uri = s3_server.upload_dir(copy, s3_server.make_bucket(), "trips")
    sync_table(HudiTable.open(uri, s3_server.storage_options), [_target()])
    _complete(s3_server, uri, stashed, tmp_path)
    table = HudiTable.open(uri, s3_server.storage_options)

    emulation.fail_on = r"EXTERNAL TABLE \S+TRIPS_MANIFEST"
    with pytest.raises(HudiSyncError, match=r"^Snowflake create .*TRIPS_MANIFEST.* failed"):
        sync_table(table, [_target()])
    assert f"instant={previous}" in _view_comment()
    assert _view_rows(table) == _hudi_rs(table, local, as_of=previous)

    assert sync_table(table, [_target()]).results[0].action == "update"
    assert _view_rows(table) == _hudi_rs(table, local)


def test_schema_change_replaces_history_and_view(  # type: ignore[no-untyped-def]
    unpack_table, s3_server, emulation
) -> None:
    """Another table with another schema synced under the same stage URL: the history
    and view definitions differ, so both are replaced rather than refreshed."""
    pair = [
        unpack_table(next(t for t in COW if t.name.endswith(suffix)))
        for suffix in ("v6_nonpartitioned", "v6_simplekeygen_nonhivestyle")
    ]
    first, second = sorted(pair, key=lambda p: str(HudiTable.open(str(p)).latest_instant()))
    bucket = s3_server.make_bucket()
    uri = s3_server.upload_dir(first, bucket, "trips")
    first_table = HudiTable.open(uri, s3_server.storage_options)
    sync_table(first_table, [_target()])
    first_table.location.fs.rm(uri, recursive=True)  # the cached instance forgets it too
    uri = s3_server.upload_dir(second, bucket, "trips")
    table = HudiTable.open(uri, s3_server.storage_options)
    count = len(emulation.statements)
    sync_table(table, [_target()])
    applied = [s for s in emulation.statements[count:] if not s.startswith("SHOW")]
    assert applied[0].startswith('CREATE OR REPLACE EXTERNAL TABLE "HUDI"."LAKE"."TRIPS_HISTORY"')
    assert applied[-1].startswith('CREATE OR REPLACE VIEW "HUDI"."LAKE"."TRIPS" COPY GRANTS')
    assert _view_rows(table) == _hudi_rs(table, second)


def test_foreign_view_and_stage_are_refused_unless_forced(  # type: ignore[no-untyped-def]
    unpack_table, s3_server, emulation
) -> None:
    fixture = next(t for t in COW if t.name.endswith("v8_nonpartitioned"))
    table = _upload(s3_server, unpack_table(fixture))
    cursor = snowflake.connector.connect(database=DATABASE, schema=SCHEMA).cursor()
    cursor.execute("CREATE STAGE HUDI.LAKE.TRIPS_STAGE URL = 's3://elsewhere/data/'")
    with pytest.raises(BadInputError, match=r'stage "HUDI"."LAKE"."TRIPS_STAGE" exists over'):
        sync_table(table, [_target()])
    cursor.execute("CREATE VIEW HUDI.LAKE.TRIPS AS SELECT 1 AS x")
    with pytest.raises(BadInputError, match=r"not created by hudi_sync; drop it or use --force"):
        sync_table(table, [_target()])
    assert sync_table(table, [_target()], force=True).ok
    assert _view_rows(table) == _hudi_rs(table, unpack_table(fixture))


def test_existing_stage_by_name_is_used_as_is(  # type: ignore[no-untyped-def]
    unpack_table, s3_server, emulation
) -> None:
    fixture = next(t for t in COW if t.name.endswith("v8_nonpartitioned"))
    table = _upload(s3_server, unpack_table(fixture))
    target = SnowflakeTarget.from_options(
        {PREFIX + k: v for k, v in {"database": DATABASE, "schema": SCHEMA}.items()}
        | {PREFIX + "stage_name": "shared stage.v1"},
        "trips",
        environ={},
    )
    with pytest.raises(BadInputError, match=r'stage "HUDI"."LAKE"."shared stage.v1" .*not exist'):
        sync_table(table, [target])
    cursor = snowflake.connector.connect(database=DATABASE, schema=SCHEMA).cursor()
    cursor.execute(f"CREATE STAGE HUDI.LAKE.\"shared stage.v1\" URL = '{table.uri}/'")
    sync_table(table, [target])
    assert not any(s.startswith("CREATE OR REPLACE STAGE") for s in emulation.statements)
    assert _view_rows(table) == _hudi_rs(table, unpack_table(fixture))


@pytest.mark.parametrize("name", ["my trips", "trips$2", "Trips"])
def test_names_with_dots_and_spaces_run(  # type: ignore[no-untyped-def]
    name, unpack_table, s3_server, emulation
) -> None:
    fixture = next(t for t in COW if t.name.endswith("v6_complexkeygen_hivestyle"))
    local = unpack_table(fixture)
    table = _upload(s3_server, local)
    target = SnowflakeTarget.from_options(_options(table_name=name), environ={})
    sync_table(table, [target])
    assert _view_rows(table, name) == _hudi_rs(table, local)


@pytest.mark.parametrize(
    "name", ['we"ird', "it's", "a.b c", 'x" AS SELECT 1; DROP TABLE t; --', "x'; DROP STAGE s; --"]
)
def test_hostile_names_stay_one_identifier_in_every_statement(  # type: ignore[no-untyped-def]
    name, unpack_table, s3_server, emulation
) -> None:
    """fakesnow cannot run names with a single quote (see the emulation), so the plan's
    statements are parsed: each is one statement, and the names in it round-trip."""
    fixture = next(t for t in COW if t.name.endswith("v6_complexkeygen_hivestyle"))
    table = _upload(s3_server, unpack_table(fixture))
    target = SnowflakeTarget.from_options(
        _options(table_name=name, storage_integration=name), environ={}
    )
    published = publish_manifest(table)
    plan, result = target.sync(table, published, dry_run=True)
    assert result.action == "dry-run" and len(plan.steps) == 4  # stage, history, manifest, view
    wanted = {name, f"{name}_stage", f"{name}_history", f"{name}_manifest"}
    seen: set[str] = set()
    for step in plan.steps:
        statements = sqlglot.parse(step, read="snowflake")
        assert len(statements) == 1, step
        tables = {t.name for t in statements[0].find_all(exp.Table)}
        seen |= tables
        assert tables <= wanted | {object_name(n) for n in wanted}, (step, tables)
    assert {name, f"{name}_history", f"{name}_manifest"} <= seen


def test_dry_run_masks_secrets_and_changes_nothing(  # type: ignore[no-untyped-def]
    unpack_table, s3_server, emulation
) -> None:
    fixture = next(t for t in COW if t.name.endswith("v8_nonpartitioned"))
    table = _upload(s3_server, unpack_table(fixture))
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    options = _options() | {
        PREFIX + "storage_integration": "",
        PREFIX + "aws_key_id": "AKIAEXAMPLE",
        PREFIX + "aws_secret_key": secret,
    }
    target = SnowflakeTarget.from_options(options, "trips", environ={"SNOWFLAKE_PASSWORD": secret})
    assert secret not in repr(target.config)
    report = sync_table(table, [target], dry_run=True)
    text = "\n".join(report.plans[0].steps)
    assert "AWS_KEY_ID = 'AKIAEXAMPLE' AWS_SECRET_KEY = '***'" in text and secret not in text
    assert not any(s.startswith(("CREATE", "ALTER")) for s in emulation.statements)

    emulation.fail_on = "CREATE OR REPLACE STAGE"  # the injected message quotes the SQL
    with pytest.raises(HudiSyncError) as failure:
        sync_table(table, [target])
    assert secret not in str(failure.value) and "***" in str(failure.value)
    assert any(secret in s for s in emulation.statements)  # it did reach Snowflake


def test_options_from_flags_env_and_their_errors() -> None:
    env = {"SNOWFLAKE_DATABASE": "env_db", "SNOWFLAKE_SCHEMA": "env_schema", "SNOWFLAKE_USER": "u"}
    config = SnowflakeSyncConfig.from_options(
        {PREFIX + "database": "flag_db", PREFIX + "table_name": "t"}, env
    )
    assert (config.database, config.schema, config.connection["user"]) == (
        "flag_db",
        "env_schema",
        "u",
    )
    for options, message in (
        ({PREFIX + "databse": "x"}, "unknown Snowflake sync option hoodie.snowflake.sync.databse"),
        (
            {PREFIX + "table_name": "t"},
            "missing Snowflake sync option hoodie.snowflake.sync.database",
        ),
        (
            {**_options(table_name="t"), PREFIX + "aws_key_id": "k"},
            "exclude each other",
        ),
        (
            {**_options(table_name="t"), PREFIX + "stage_url": "https://bucket/t"},
            "is not an s3://, gcs:// or azure:// URL",
        ),
    ):
        with pytest.raises(BadInputError, match=message.replace(".", r"\.")):
            SnowflakeSyncConfig.from_options(options, {})


def test_stage_url_from_the_table_uri(tmp_path: Path) -> None:
    target = _target()
    for uri, url in (
        ("s3a://bucket/t", "s3://bucket/t/"),
        ("gs://bucket/a/t/", "gcs://bucket/a/t/"),
        ("abfss://data@acct.dfs.core.windows.net/t", "azure://acct.blob.core.windows.net/data/t/"),
    ):
        table = type("T", (), {"uri": uri})()
        assert target.stage_url(table) == url  # type: ignore[arg-type]
    local = type("T", (), {"uri": str(tmp_path)})()
    with pytest.raises(BadInputError, match=r"set hoodie\.snowflake\.sync\.stage_url"):
        target.stage_url(local)  # type: ignore[arg-type]


DELTA_TABLES = [
    t
    for t in COW
    if t.name.endswith(
        (
            "v6_complexkeygen_hivestyle",
            "v6_simplekeygen_nonhivestyle_overwritetable",
            "v8_simplekeygen_hivestyle_no_metafields",
            "v9_txns_simple_meta",
        )
    )
]


def _shown_files(with_meta: bool) -> tuple[list[str], list[str]]:
    """The view's distinct file names, and its record keys (tables with meta fields)."""
    cursor = snowflake.connector.connect(database=DATABASE, schema=SCHEMA).cursor()
    key = sql_name("_hoodie_record_key") if with_meta else "NULL"
    cursor.execute(f"SELECT {sql_name('_hoodie_file_name')}, {key} FROM HUDI.LAKE.TRIPS")
    rows = cursor.fetchall()
    return sorted({str(r[0]) for r in rows}), [str(r[1]) for r in rows if r[1] is not None]


@pytest.mark.parametrize("delta_commits", [0, 2], ids=["full", "delta"])
@pytest.mark.parametrize("fixture", DELTA_TABLES, ids=[t.id for t in DELTA_TABLES])
def test_view_follows_every_commit_in_full_and_delta_mode(  # type: ignore[no-untyped-def]
    fixture, delta_commits, unpack_table, s3_server, emulation
) -> None:
    """The table grows one commit at a time (later timeline files moved aside in S3);
    after each sync the view shows exactly the files of a full listing at that commit,
    each record once, and at the end hudi-rs's rows. With ``delta_commits=2`` the manifest
    table reads the base's URI list and a changes file, the syncs cross compactions
    (every third commit re-bases) and the overwrite fixture's replacecommit removes file
    groups inside a delta."""
    from hudi_sync.manifest.snapshot import build_manifest

    local = unpack_table(fixture)
    table = _upload(s3_server, local)
    fs = s3_server.fs()
    instants = [i.requested_time for i in table.completed_commits()]
    with_meta = table.config.populate_meta_fields
    bases = set()
    with growing_timeline(fs, table.uri) as advance:
        for instant in instants:
            advance(instant)
            report = sync_table(
                HudiTable.open(table.uri, s3_server.storage_options),
                [_target()],
                delta_commits=delta_commits,
            )
            assert report.ok and report.instant == instant, report
            manifest = emulation.external[
                (object_name(DATABASE), object_name(SCHEMA), "TRIPS_MANIFEST")
            ]
            if delta_commits:
                assert manifest.path == ".hoodie/manifest/"
                snapshot, changes = (
                    manifest.pattern.removeprefix("^(.*/)?(").removesuffix(")$").split("|")
                )
                assert snapshot.endswith("/uris[.]csv") and changes.startswith("deltas/"), manifest
                bases.add(snapshot)
            else:
                assert manifest.path == f".hoodie/manifest/snapshots/{instant}/"
            names, keys = _shown_files(with_meta)
            assert names == build_manifest(HudiTable.open(str(local)), instant).names(), instant
            assert len(keys) == len(set(keys)), instant
    if delta_commits and len(instants) > 3:
        assert len(bases) >= 2  # a compaction re-based the manifest
    assert _view_rows(table) == _hudi_rs(table, local)


def test_switching_between_full_and_delta_manifests_replaces_the_view(  # type: ignore[no-untyped-def]
    unpack_table, s3_server, emulation
) -> None:
    """The view's definition differs between the modes, so a switch replaces it (the
    manifest table is replaced at every sync anyway); the rows stay hudi-rs's."""
    local = unpack_table(next(t for t in COW if t.name.endswith("v6_complexkeygen_hivestyle")))
    table = _upload(s3_server, local)
    for delta_commits in (0, 3, 0):
        count = len(emulation.statements)
        report = sync_table(table, [_target()], delta_commits=delta_commits)
        assert report.ok, report
        view = [s for s in emulation.statements[count:] if 'VIEW "HUDI"."LAKE"."TRIPS"' in s]
        assert view and view[-1].startswith("CREATE OR REPLACE VIEW"), view
        assert ("WITH lines AS" in view[-1]) == bool(delta_commits)
        assert _view_rows(table) == _hudi_rs(table, local)


def test_a_table_without_meta_fields_gets_no_rt_view_in_one_line(  # type: ignore[no-untyped-def]
    fixture_copy, s3_server, emulation
) -> None:
    """Snowflake's view cannot build record keys from the key fields (DuckDB's does):
    with log records to merge, ``TRIPS_RT`` is refused in one line, ``TRIPS_RO`` syncs."""
    local: Path = fixture_copy(mor_read.NO_META)
    mor_read.add_no_meta_log(local, mor_read.no_meta_blocks())
    table = _upload(s3_server, local)
    report = sync_table(table, [_target()], continue_on_error=True)
    assert [r.action for r in report.results] == ["create"]
    assert list(report.errors) == ["_rt"]
    message = report.errors["_rt"]
    assert "\n" not in message and "hoodie.populate.meta.fields=false" in message
    assert "snowflake" in message and "no _rt view" in message
    assert "trips_rt" not in {o.lower() for o in report.results[0].objects}
    assert len(_view_rows(table, "trips_ro")) == 4
