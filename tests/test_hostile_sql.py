"""Hostile names and values against every target's SQL (DuckDB, the BigQuery emulator,
the Snowflake emulation): table names, column names, ordering fields and base URIs
holding quotes, backticks, backslashes, newlines, ``$$``, comments and `` COPY GRANTS AS ``.

Each either reaches the engine as the one name or value it is (the quoting functions
round-trip through the real engine; synced objects hold exactly the expected rows and a
victim object created beforehand stays untouched and unread) or is refused in one line
before anything is created. No secret shows in any output, in any form."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
import snowflake.connector
import sqlglot
from sqlglot import exp
from typer.testing import CliRunner

from hudi_sync.cli.app import app
from hudi_sync.errors import BadInputError, CorruptTableError, HudiSyncError
from hudi_sync.manifest.log_parquet import FILE_ID_COLUMN, SOURCE_COLUMN
from hudi_sync.manifest.snapshot import PublishedLogs
from hudi_sync.secrets import scrub, secret_forms
from hudi_sync.sync.job import publish_manifest, sync_table
from hudi_sync.table import HudiTable
from hudi_sync.table.records.merge import BASE_ROW_COLUMN, DELETED_COLUMN, LOG_WINS_COLUMN
from hudi_sync.warehouse.bigquery import BigQuerySyncConfig
from hudi_sync.warehouse.bigquery import snapshot_select as bigquery_select
from hudi_sync.warehouse.common import ObjectNames
from hudi_sync.warehouse.common.quoting import (
    bigquery_identifier,
    bigquery_literal,
    duckdb_identifier,
    duckdb_literal,
    snowflake_identifier,
    snowflake_literal,
)
from hudi_sync.warehouse.duckdb import DuckDBTarget
from hudi_sync.warehouse.duckdb import snapshot_select as duckdb_select
from hudi_sync.warehouse.snowflake import (
    PREFIX,
    SnowflakeSyncConfig,
    SnowflakeTarget,
)
from hudi_sync.warehouse.snowflake import snapshot_select as snowflake_select
from hudi_sync.warehouse.snowflake.schema import Column, object_name, sql_name
from tests.bigquery_emulator import BigQueryEmulator
from tests.fixture_tables import fixture_tables
from tests.snowflake_emulation import EmulatedSnowflake
from tests.warehouse_rows import hudi_rs_rows

HOSTILE = [
    'we"ird',
    "it's",
    "back`tick",
    "back\\slash",
    "\\'",
    "x$$ SELECT 1 $$y",
    "a -- comment",
    "b /* comment */ c",
    "line\nbreak",
    "v COPY GRANTS AS w",
    "'; DROP TABLE victim; --",
    '") AS SELECT * FROM victim --',
    "x` FROM `other-proj.secret.salaries` --",
    "tab\there",
    "ünïcødé ✓",
]
CONTROL = ("\n", "\r", "\t")
FIXTURE = next(t for t in fixture_tables() if t.name.endswith("cow/v8_complexkeygen_hivestyle"))
DATABASE, SCHEMA = "hudi", "lake"


# -- the quoting functions, round-tripped through each engine ------------------------------


@pytest.mark.parametrize("text", HOSTILE)
def test_duckdb_quoting_round_trips(text: str) -> None:
    with duckdb.connect() as con:
        row = con.execute(f"SELECT {duckdb_literal(text)} AS {duckdb_identifier(text)}")
        assert row.description[0][0] == text
        assert row.fetchall() == [(text,)]


def _snowflake_cursor() -> Any:
    return snowflake.connector.connect(database=DATABASE, schema=SCHEMA).cursor()


def test_snowflake_quoting_round_trips(emulation: EmulatedSnowflake) -> None:
    cursor = _snowflake_cursor()
    for text in HOSTILE:
        cursor.execute(f"SELECT {snowflake_literal(text)} AS {snowflake_identifier(text)}")
        assert cursor.description[0][0] == text
        assert cursor.fetchall() == [(text,)]


def test_bigquery_quoting_round_trips(bigquery_emulator: BigQueryEmulator) -> None:
    client = bigquery_emulator.client()
    for text in HOSTILE:
        literal = client.query_and_wait(f"SELECT {bigquery_literal(text)} AS v")
        assert [r["v"] for r in literal] == [text]
        if any(c in text for c in CONTROL):
            continue
        named = client.query_and_wait(f"SELECT 1 AS {bigquery_identifier(text)}")
        assert [f.name for f in named.schema] == [text]


@pytest.mark.parametrize("quote", [bigquery_identifier, bigquery_literal])
def test_what_no_quoting_can_carry_is_refused_in_one_line(quote: Any) -> None:
    hostile = ["a\x00b"] + (list(CONTROL) if quote is bigquery_identifier else ["\x07"])
    for text in hostile:
        with pytest.raises(BadInputError) as refused:
            quote(text)
        assert "\n" not in str(refused.value)
    for quote_nul in (duckdb_identifier, duckdb_literal, snowflake_identifier, snowflake_literal):
        with pytest.raises(BadInputError, match="NUL"):
            quote_nul("a\x00b")


# -- Snowflake: the view statement is built whole ------------------------------------------

VICTIM = '"VICTIM_DB"."PUBLIC"."SECRET"'
HOSTILE_KEY = f't" AS SELECT * FROM {VICTIM} --'


def _victim(cursor: Any) -> list[Any]:
    cursor.execute(f"SELECT * FROM {VICTIM} ORDER BY 1")
    return list(cursor.fetchall())


def _tables_read(statements: list[str]) -> set[str]:
    """Every object name any statement refers to."""
    names: set[str] = set()
    for statement in statements:
        for parsed in sqlglot.parse(statement, read="snowflake"):
            names |= {t.name.upper() for t in parsed.find_all(exp.Table)} if parsed else set()
    return names


@pytest.mark.parametrize(
    "name", ["v COPY GRANTS AS w", 'we"ird -- x', "x$$y /* z */", "line\nbreak"]
)
def test_snowflake_hostile_names_and_uri_create_only_their_objects(  # type: ignore[no-untyped-def]
    name, unpack_table, s3_server, emulation
) -> None:
    """The issue's attack: a name holding `` COPY GRANTS AS `` and a table URI holding
    ``"`` made the marker comment close the quoted name and the view read a victim
    table. The view must show the table's rows, and nothing else be read or changed."""
    from tests.test_snowflake_target import _hudi_rs, _view_rows

    cursor = _snowflake_cursor()
    cursor.execute("CREATE DATABASE IF NOT EXISTS VICTIM_DB")
    cursor.execute("CREATE SCHEMA IF NOT EXISTS VICTIM_DB.PUBLIC")
    cursor.execute(f"CREATE OR REPLACE TABLE {VICTIM} (salary INT)")
    cursor.execute(f"INSERT INTO {VICTIM} VALUES (100), (200)")
    local = unpack_table(FIXTURE)
    bucket = s3_server.make_bucket()
    table = HudiTable.open(s3_server.upload_dir(local, bucket, "t"), s3_server.storage_options)
    published = publish_manifest(table)
    # Snowflake reads the table (and its published manifest) at the hostile stage URL;
    # object stores take the name as it is (the manifest's server-side copy does not).
    fs = s3_server.fs()
    for found in fs.find(table.uri):
        fs.pipe_file(found.replace("/t/", f"/{HOSTILE_KEY}/", 1), fs.cat_file(found))
    options = {PREFIX + k: v for k, v in (("database", DATABASE), ("schema", SCHEMA))}
    options |= {PREFIX + "storage_integration": "hudi_s3", PREFIX + "table_name": name}
    options |= {PREFIX + "stage_url": f"s3://{bucket}/{HOSTILE_KEY}"}
    target = SnowflakeTarget.from_options(options, environ={})
    setup = len(emulation.statements)
    _plan, result = target.sync(table, published)
    assert result.action == "create"
    assert "SECRET" not in _tables_read(emulation.statements[setup:])
    assert _view_rows(table, name) == _hudi_rs(table, local)
    assert _victim(cursor) == [(100,), (200,)]
    cursor.execute("SHOW VIEWS IN SCHEMA HUDI.LAKE")
    columns = [d[0].lower() for d in cursor.description]
    views = {dict(zip(columns, r, strict=True))["name"] for r in cursor.fetchall()}
    assert object_name(name) in views


# -- the snapshot view's query over hostile column names and ordering fields ---------------

ORDERING = "x` FROM `victim` -- \"y\" 'z' \\"
VALUE = "v COPY GRANTS AS w /* $$ */"
FILE_NAME = "f1_1-0-1_001.parquet"
# (key, ordering, value) of the base rows and of the folded log rows (one file, f1).
BASE = [("k1", 5, "base1"), ("k2", 5, "base2")]
LOG = [("k1", 9, "log1"), ("k2", 1, "stale")]
EXPECTED = [("k1", 9, "log1"), ("k2", 5, "base2")]


def _rows(rows: list[tuple[str, int, str]], log: bool) -> list[dict[str, Any]]:
    extra = {FILE_ID_COLUMN: "f1", DELETED_COLUMN: False, LOG_WINS_COLUMN: False}
    extra |= {SOURCE_COLUMN: "l.parquet", BASE_ROW_COLUMN: None}  # no key twice in a base
    return [
        {"_hoodie_record_key": k, "_hoodie_partition_path": "", "_hoodie_file_name": FILE_NAME}
        | {"_hoodie_commit_seqno": f"001_{k}", ORDERING: o, VALUE: v}
        | (extra if log else {})
        for k, o, v in rows
    ]


def _bigquery_value(value: object) -> str:
    if value is None:
        return "CAST(NULL AS STRING)"
    return bigquery_literal(value) if isinstance(value, str) else str(value).upper()


def _snowflake_value(value: object) -> str:
    if value is None:
        return "CAST(NULL AS VARCHAR)"
    return snowflake_literal(value) if isinstance(value, str) else str(value).upper()


def test_duckdb_snapshot_query_over_hostile_names() -> None:
    names = ObjectNames.for_table("t", merge_on_read=True)
    log_rows = pa.Table.from_pylist(_rows(LOG, True))
    logs = PublishedLogs(None, ("l.parquet",), "", "", "", log_rows.schema, ORDERING)
    with duckdb.connect() as con:
        con.execute("CREATE TABLE victim (salary INT)")
        con.execute("INSERT INTO victim VALUES (100)")
        ro, history = pa.Table.from_pylist(_rows(BASE, False)), log_rows  # noqa: F841
        files = pa.table({"filename": ["l.parquet"]})  # noqa: F841
        for name, source in ((names.view, "ro"), (names.log_history, "history")):
            con.execute(f"CREATE TABLE {duckdb_identifier(name)} AS SELECT * FROM {source}")
        con.execute(f"CREATE TABLE {duckdb_identifier(str(names.log_manifest))} AS FROM files")
        shown = con.sql(duckdb_select(names, logs)).fetch_arrow_table().to_pylist()
        picked = sorted((r["_hoodie_record_key"], r[ORDERING], r[VALUE]) for r in shown)
        assert picked == EXPECTED
        assert con.execute("SELECT * FROM victim").fetchall() == [(100,)]


def test_bigquery_snapshot_query_over_hostile_names(bigquery_emulator: BigQueryEmulator) -> None:
    client = bigquery_emulator.client()
    dataset = f"ds_{uuid.uuid4().hex[:10]}"
    client.create_dataset(dataset)
    try:
        path = f"{client.project}.{dataset}"
        q = bigquery_identifier
        client.query_and_wait(f"CREATE TABLE {q(path + '.victim')} AS SELECT 100 AS salary")

        def create(name: str, rows: list[dict[str, Any]]) -> str:
            selects = " UNION ALL ".join(
                "SELECT " + ", ".join(f"{_bigquery_value(v)} AS {q(c)}" for c, v in row.items())
                for row in rows
            )
            client.query_and_wait(f"CREATE TABLE {q(f'{path}.{name}')} AS {selects}")
            return q(f"{path}.{name}")

        ro, history = create("t_ro", _rows(BASE, False)), create("t_log", _rows(LOG, True))
        manifest = create("t_files", [{"filename": "l.parquet"}])
        columns = list(_rows(BASE, False)[0])
        query = bigquery_select(
            ro, history, manifest, columns, set(_rows(LOG, True)[0]), ORDERING, "int"
        )
        shown = client.query_and_wait(query)
        picked = sorted((r["_hoodie_record_key"], r[ORDERING], r[VALUE]) for r in shown)
        assert picked == EXPECTED
        victim = client.query_and_wait(f"SELECT salary FROM {q(path + '.victim')}")
        assert [r["salary"] for r in victim] == [100]
    finally:
        client.delete_dataset(dataset, delete_contents=True, not_found_ok=True)


def test_snowflake_snapshot_query_over_hostile_names(emulation: EmulatedSnowflake) -> None:
    cursor = _snowflake_cursor()
    cursor.execute("CREATE OR REPLACE TABLE VICTIM (salary INT)")
    cursor.execute("INSERT INTO VICTIM VALUES (100)")

    def create(name: str, rows: list[dict[str, Any]]) -> str:
        selects = " UNION ALL ".join(
            "SELECT " + ", ".join(f"{_snowflake_value(v)} AS {sql_name(c)}" for c, v in row.items())
            for row in rows
        )
        cursor.execute(f"CREATE OR REPLACE TABLE {sql_name(name)} AS {selects}")
        return sql_name(name)

    ro, history = create("t_ro", _rows(BASE, False)), create("t_log", _rows(LOG, True))
    manifest = create("t_files", [{"filename": "l.parquet"}])
    types = {ORDERING: "NUMBER(10,0)"}
    columns = [Column(c, types.get(c, "VARCHAR"), "") for c in _rows(BASE, False)[0]]
    query = snowflake_select(
        ro, history, manifest, columns, set(_rows(LOG, True)[0]), ORDERING, "int"
    )
    cursor.execute(query)
    described = [d[0] for d in cursor.description]
    picked = sorted(
        (r[described.index("_HOODIE_RECORD_KEY")], r[described.index(ORDERING)],
         r[described.index(VALUE)])
        for r in cursor.fetchall()
    )  # fmt: skip
    assert picked == EXPECTED
    assert _victim_rows(cursor) == [(100,)]


def _victim_rows(cursor: Any) -> list[Any]:
    cursor.execute("SELECT * FROM VICTIM")
    return list(cursor.fetchall())


# -- secrets and validators ----------------------------------------------------------------

SECRET = "pa'ss\\word\"ü/+&="


def test_secret_forms_cover_every_escaping() -> None:
    message = " ".join(
        [
            snowflake_literal(SECRET),
            bigquery_literal(SECRET),
            duckdb_literal(SECRET),
            json.dumps({"password": SECRET}),
            repr({"password": SECRET}),
            __import__("urllib.parse").parse.quote(SECRET, safe=""),
        ]
    )
    scrubbed = scrub(message, [SECRET])
    assert not any(form in scrubbed for form in secret_forms(SECRET)), scrubbed
    assert scrubbed.count("***") >= 6


def test_snowflake_errors_never_show_a_secret_in_its_sql_form(  # type: ignore[no-untyped-def]
    unpack_table, s3_server, emulation
) -> None:
    """The connector's message quotes the failed statement: the secret is there as a
    Snowflake literal's body (quote doubled, backslash escaped), not as given."""
    table = HudiTable.open(
        s3_server.upload_dir(unpack_table(FIXTURE), s3_server.make_bucket(), "t"),
        s3_server.storage_options,
    )
    options = {PREFIX + k: v for k, v in (("database", DATABASE), ("schema", SCHEMA))}
    options |= {PREFIX + "aws_key_id": "AKIAEXAMPLE", PREFIX + "aws_secret_key": SECRET}
    target = SnowflakeTarget.from_options(options, "trips", environ={"SNOWFLAKE_PASSWORD": SECRET})
    emulation.fail_on = "CREATE OR REPLACE STAGE"
    with pytest.raises(HudiSyncError) as failure:
        sync_table(table, [target])
    shown = str(failure.value)
    assert "***" in shown and "\n" not in shown
    assert not any(form in shown for form in secret_forms(SECRET) | {"pa''ss", "ss\\\\word"})
    assert any(snowflake_literal(SECRET) in s for s in emulation.statements)  # it was sent
    assert SECRET not in repr(target.config) and SECRET not in repr(target)


def test_ingest_config_repr_hides_snowflake_secrets() -> None:
    from hudi_sync.debezium.ingest import IngestConfig

    options = {"hoodie.deltastreamer.source.kafka.topic": "a"}
    for key in ("private_key_file_pwd", "password", "token", "aws_secret_key"):
        options[PREFIX + key] = SECRET
    config = IngestConfig.from_options("/tmp/t", options)
    assert not any(form in repr(config) for form in secret_forms(SECRET)), repr(config)


def test_cli_refuses_a_secret_on_the_command_line(unpack_table: Any) -> None:
    command = ["sync", "snowflake", str(unpack_table(FIXTURE)), "--database", "d"]
    for key in ("password", "private_key_file_pwd", "aws_secret_key"):
        result = CliRunner().invoke(
            app,
            [*command, "--conf", f"{PREFIX}{key}={SECRET}"],
        )
        assert result.exit_code == 2, result.output
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert len(lines) == 1 and f"{PREFIX}{key}" in lines[0], result.output
        assert not any(form in result.output for form in secret_forms(SECRET))


def test_validators_refuse_a_trailing_newline() -> None:
    from hudi_sync.table.timeline.instant import parse_instant_file_name

    base = {"project_id": "test-project", "dataset_name": "ds", "table_name": "t"}
    for key in base:
        with pytest.raises(BadInputError, match="not a valid BigQuery identifier"):
            BigQuerySyncConfig.from_options(base | {key: base[key] + "\n"})
    options = {PREFIX + "database": "d", PREFIX + "schema": "s", PREFIX + "table_name": "t"}
    with pytest.raises(BadInputError, match="stage_url"):
        SnowflakeSyncConfig.from_options(options | {PREFIX + "stage_url": "s3://b/t\n"}, {})
    assert object_name("trips") == "TRIPS" and object_name("trips\n") == "trips\n"
    assert parse_instant_file_name("20250101000000000.commit") is not None
    with pytest.raises(CorruptTableError, match="not a valid instant file name"):
        parse_instant_file_name("20250101000000000.commit\n")


def test_duckdb_hostile_names_and_base_path_create_only_their_objects(
    unpack_table: Any, tmp_path: Path
) -> None:
    """DuckDB's quoting held: a hostile view name and table folder give the table's
    rows, and a victim table in the same database stays as it was."""
    folder = tmp_path / 't\' -- $$ /* x */ "y"'
    shutil.copytree(unpack_table(FIXTURE), folder)
    database = str(tmp_path / "w.duckdb")
    with duckdb.connect(database) as con:
        con.execute("CREATE TABLE victim AS SELECT 100 AS salary")
    expected = sorted(hudi_rs_rows(str(folder)).column("_hoodie_record_key").to_pylist())
    for name in HOSTILE:
        target = DuckDBTarget(database, name)
        report = sync_table(HudiTable.open(str(folder)), [target])
        assert report.ok, report.errors
        with duckdb.connect(database) as con:
            shown = con.execute(f"SELECT _hoodie_record_key FROM {duckdb_identifier(name)}")
            assert sorted(r[0] for r in shown.fetchall()) == expected
            assert con.execute("SELECT * FROM victim").fetchall() == [(100,)]
    with duckdb.connect(database) as con:
        tables = con.execute("SELECT table_name FROM duckdb_tables()").fetchall()
    assert tables == [("victim",)]
