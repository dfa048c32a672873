"""``hudi-sync sync snowflake`` and the post-commit hook's ``snowflake`` target, over a
fixture table in moto S3 and fakesnow with emulated external tables (see
``tests/snowflake_emulation.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hudi_sync.cli.app import app
from hudi_sync.sync.hook import SYNC_TOOLS, run_post_commit_hook
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.snowflake import PREFIX
from tests.fixture_tables import fixture_tables
from tests.objectstores import S3Store
from tests.snowflake_emulation import EmulatedSnowflake
from tests.test_snowflake_target import _hudi_rs, _view_comment, _view_rows

FIXTURE = next(t for t in fixture_tables() if t.name.endswith("cow/v8_complexkeygen_hivestyle"))
SECRET = "s3cr3t-Pa55word"


@pytest.fixture
def table_in_s3(unpack_table, s3_server: S3Store) -> tuple[Path, HudiTable]:  # type: ignore[no-untyped-def]
    local = unpack_table(FIXTURE)
    uri = s3_server.upload_dir(local, s3_server.make_bucket(), "lake/trips")
    return local, HudiTable.open(uri, s3_server.storage_options)


def _storage_flags(s3_server: S3Store) -> list[str]:
    return [
        "-o",
        "key=testing",
        "-o",
        "secret=testing",
        "-o",
        f"client_kwargs.endpoint_url={s3_server.endpoint_url}",
    ]


def test_cli_syncs_then_reports_noop(  # type: ignore[no-untyped-def]
    table_in_s3, s3_server, emulation, monkeypatch
) -> None:
    local, table = table_in_s3
    monkeypatch.setenv("SNOWFLAKE_SCHEMA", "lake")  # from the environment
    monkeypatch.setenv("SNOWFLAKE_PASSWORD", SECRET)
    args = ["sync", "snowflake", table.uri, "--database", "hudi", "--table-name", "trips"]
    args += ["--storage-integration", "lake_s3", *_storage_flags(s3_server)]
    dry = CliRunner().invoke(app, [*args, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert dry.output.count(";\n") == 4 and "CREATE OR REPLACE STAGE" in dry.output
    assert not any(s.startswith("CREATE") for s in emulation.statements)

    first = CliRunner().invoke(app, [*args, "--json"])
    assert first.exit_code == 0, first.output
    report = json.loads(first.output)
    assert report["results"][0]["action"] == "create"
    assert report["results"][0]["target"] == "snowflake:HUDI.LAKE"
    assert _view_rows(table) == _hudi_rs(table, local)
    assert SECRET not in first.output + dry.output

    second = CliRunner().invoke(app, [*args, "--json"])
    assert json.loads(second.output)["results"][0]["action"] == "noop"


def test_cli_default_view_name_is_the_hudi_table_name(  # type: ignore[no-untyped-def]
    table_in_s3, s3_server, emulation, tmp_path
) -> None:
    local, table = table_in_s3
    props = tmp_path / "sync.properties"
    props.write_text(
        f"{PREFIX}database=hudi\n{PREFIX}schema=lake\n{PREFIX}storage_integration=lake_s3\n"
    )
    result = CliRunner().invoke(
        app, ["sync", "snowflake", table.uri, "--props", str(props), *_storage_flags(s3_server)]
    )
    assert result.exit_code == 0, result.output
    assert _view_rows(table, table.config.name) == _hudi_rs(table, local)


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--conf", f"{PREFIX}databse=x"], "unknown Snowflake sync option"),
        (["--stage-url", "/mnt/lake/trips"], "is not an s3://, gcs:// or azure:// URL"),
        (["--conf", f"{PREFIX}aws_key_id=AKIA"], "exclude each other"),
    ],
)
def test_cli_bad_options_exit_2_and_create_nothing(  # type: ignore[no-untyped-def]
    extra, message, table_in_s3, s3_server, emulation
) -> None:
    _, table = table_in_s3
    args = ["sync", "snowflake", table.uri, "--database", "hudi", "--schema", "lake"]
    args += ["--storage-integration", "lake_s3", *_storage_flags(s3_server), *extra]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    # a misspelt key of hudi_sync's namespaces is also warned of, on a line of its own
    (line,) = [line for line in result.output.splitlines() if not line.startswith("warning: ")]
    assert message in line
    assert not any(s.startswith(("CREATE", "ALTER")) for s in emulation.statements)


def test_cli_missing_schema_is_a_bad_input(  # type: ignore[no-untyped-def]
    table_in_s3, s3_server, emulation
) -> None:
    _, table = table_in_s3
    args = ["sync", "snowflake", table.uri, "--database", "hudi", *_storage_flags(s3_server)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "missing Snowflake sync option hoodie.snowflake.sync.schema" in result.output


def test_post_commit_hook_target(table_in_s3, s3_server, emulation) -> None:  # type: ignore[no-untyped-def]
    local, table = table_in_s3
    options = {
        SYNC_TOOLS: "snowflake",
        f"{PREFIX}database": "hudi",
        f"{PREFIX}schema": "lake",
        f"{PREFIX}table_name": "trips",
        f"{PREFIX}storage_integration": "lake_s3",
    }
    report = run_post_commit_hook(table.uri, options, s3_server.storage_options)
    assert report.ok, report.errors
    assert f"instant={report.instant}" in _view_comment()
    assert _view_rows(table) == _hudi_rs(table, local)

    # A failing target is reported, not raised: the commit stands. (A failure injected
    # into the statement: fakesnow accepts objects in a missing schema, Snowflake would not.)
    emulation.fail_on = "CREATE OR REPLACE EXTERNAL TABLE"
    failing = run_post_commit_hook(
        table.uri, options | {f"{PREFIX}table_name": "trips_2"}, s3_server.storage_options
    )
    assert not failing.ok
    assert failing.errors["snowflake:HUDI.LAKE"].startswith("Snowflake create ")


def _manifest_pattern(emulation: EmulatedSnowflake, name: str) -> str:
    return emulation.external[("HUDI", "LAKE", name)].pattern


def test_cli_and_hook_publish_delta_manifests_when_asked(  # type: ignore[no-untyped-def]
    table_in_s3, s3_server, emulation
) -> None:
    """``--delta-commits N`` and the hook's ``hoodie.manifest.delta.commits``: the
    manifest table reads the base URI list and the changes file; a bad value is one
    line naming the option, exit 2, nothing created."""
    local, table = table_in_s3
    args = ["sync", "snowflake", table.uri, "--database", "hudi", "--schema", "lake"]
    args += ["--table-name", "trips", "--storage-integration", "lake_s3"]
    args += _storage_flags(s3_server)
    bad = CliRunner().invoke(app, [*args, "-c", "hoodie.manifest.delta.commits=x"])
    assert bad.exit_code == 2 and "hoodie.manifest.delta.commits='x'" in bad.output
    assert not any(s.startswith("CREATE") for s in emulation.statements)

    done = CliRunner().invoke(app, [*args, "--delta-commits", "2"])
    assert done.exit_code == 0, done.output
    instant = table.latest_instant()
    assert _manifest_pattern(emulation, "TRIPS_MANIFEST") == (
        f"^(.*/)?(snapshots/{instant}/uris[.]csv|deltas/{instant}_{instant}[.]csv)$"
    )
    assert _view_rows(table) == _hudi_rs(table, local)

    options = {
        SYNC_TOOLS: "snowflake",
        f"{PREFIX}database": "hudi",
        f"{PREFIX}schema": "lake",
        f"{PREFIX}table_name": "trips_hooked",
        f"{PREFIX}storage_integration": "lake_s3",
        "hoodie.manifest.delta.commits": "2",
    }
    report = run_post_commit_hook(table.uri, options, s3_server.storage_options)
    assert report.ok, report.errors
    assert "deltas/" in _manifest_pattern(emulation, "TRIPS_HOOKED_MANIFEST")
    assert _view_rows(table, "trips_hooked") == _hudi_rs(table, local)
