"""Runs that cannot succeed say so in one line, in seconds: properties naming no target,
dry runs whose table or key file cannot be read, a wrong AWS profile, a misspelt storage
option or flag; misspelt keys of hudi_sync's own namespaces are warned of."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hudi_sync import config as cfg
from hudi_sync.cli.app import app
from hudi_sync.errors import StorageAccessError
from hudi_sync.sync.hook import run_post_commit_hook
from hudi_sync.table import HudiTable

TABLE = "cow/v9_txns_simple_meta"
NO_TARGET = (
    "error: no sync target: set hoodie.meta.sync.client.tool.class to bigquery, snowflake, "
    "duckdb or iceberg (comma-separated)"
)
runner = CliRunner()


def _closed_port() -> int:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def listening() -> Iterator[int]:
    """A port that accepts TCP connections (the kernel's backlog) and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield int(server.getsockname()[1])


def _props(tmp_path: Path, lines: list[str]) -> str:
    path = tmp_path / "sync.properties"
    path.write_text("".join(f"{line}\n" for line in lines))
    return str(path)


# -- 1. a run with no target ----------------------------------------------------------------
@pytest.mark.parametrize("command", ["backfill", "watch"])
def test_a_run_with_no_target_is_one_line_and_exit_2(  # type: ignore[no-untyped-def]
    fixture_copy, tmp_path: Path, command: str
) -> None:
    """The terraform outputs' properties before the fix: target options but no target
    line. Before: every table synced to nothing, '"results": []', exit 0."""
    path = fixture_copy(TABLE)
    props = _props(tmp_path, ["hoodie.gcp.bigquery.sync.project_id=p"])
    where = [str(path.parent)] if command == "backfill" else [str(path), "--max-syncs", "1"]
    result = runner.invoke(app, [command, *where, "--props", props, "--json"])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines() == [NO_TARGET]
    assert result.stdout == ""
    assert not (path / ".hoodie" / "manifest").exists()


def test_a_misspelt_target_key_is_named(fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy(TABLE)
    props = _props(tmp_path, ["hoodie.meta.sync.client.tool.clas=duckdb"])
    result = runner.invoke(app, ["backfill", str(path.parent), "--props", props])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"{NO_TARGET} (is hoodie.meta.sync.client.tool.clas meant to be it?)"
    ]


def test_the_hook_with_no_target_reports_it_and_logs_it_once(  # type: ignore[no-untyped-def]
    fixture_copy, caplog: pytest.LogCaptureFixture
) -> None:
    path = fixture_copy(TABLE)
    with caplog.at_level(logging.WARNING, logger="hudi_sync"):
        reports = [run_post_commit_hook(str(path), {cfg.META_SYNC.key: "true"}) for _ in range(2)]
    message = NO_TARGET.removeprefix("error: ")
    assert [r.errors for r in reports] == [{"hook": message}] * 2  # never raised
    assert [r.getMessage() for r in caplog.records if message in r.getMessage()] == [
        f"{path}: the post-commit hook syncs nothing: {message}"
    ]
    assert not (path / ".hoodie" / "manifest").exists()


# -- 2. offline dry runs ----------------------------------------------------------------------
def test_gcs_without_credentials_fails_in_one_line_at_once(monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Before: gcsfs went on anonymously and retried each request six times (53 s and a
    53-line traceback offline). The metadata server is pointed at a closed port, as an
    offline machine's is unreachable."""
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.delenv("STORAGE_EMULATOR_HOST", raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))
    monkeypatch.setenv("GCE_METADATA_HOST", f"127.0.0.1:{_closed_port()}")
    monkeypatch.setenv("GCE_METADATA_IP", f"127.0.0.1:{_closed_port()}")
    uri = "gs://my-bucket/lake/trips"
    started = time.monotonic()
    with pytest.raises(StorageAccessError) as caught:
        HudiTable.open(uri)
    assert time.monotonic() - started < 10
    assert str(caught.value).startswith(f"{uri}: no usable credentials for the object store (")
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("uri", "option"),
    [("gs://b/t", "endpoint_url"), ("s3://b/t", "client_kwargs.endpoint_url")],
)
def test_an_unreachable_store_fails_in_one_line_at_once(uri: str, option: str) -> None:
    """A closed port: gcsfs retries a refused connection for some 30 s, botocore's
    retries some 10 s; the probe before the first use answers at once."""
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    args = ["sync", "bigquery", uri, "--table-name", "t", "--dry-run", "-o", f"{option}={endpoint}"]
    if uri.startswith("gs://"):
        args += ["-o", "token=anon"]
    started = time.monotonic()
    result = runner.invoke(app, args)
    assert time.monotonic() - started < 10
    assert result.exit_code == 1, result.output
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {uri}: the object store did not answer (127.0.0.1:")


def test_a_missing_private_key_file_is_named(fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Before: FileNotFoundError from the connector. A dry run plans offline, saying why;
    a run fails in one line naming the file."""
    path = fixture_copy(TABLE)
    props = _props(
        tmp_path,
        [
            "hoodie.snowflake.sync.database=LAKE",
            "hoodie.snowflake.sync.schema=HUDI",
            "hoodie.snowflake.sync.stage_url=s3://my-company-hudi-tables/trips",
        ],
    )
    key = tmp_path / "hudi_sync_key.p8"
    args = ["sync", "snowflake", str(path), "--props", props, "--account", "a", "--user", "u"]
    args += ["--authenticator", "SNOWFLAKE_JWT", "--private-key-file", str(key)]
    named = f"hoodie.snowflake.sync.private_key_file (--private-key-file) {key}: no such file"
    planned = runner.invoke(app, [*args, "--dry-run"])
    assert planned.exit_code == 0, planned.output
    assert planned.stdout.splitlines()[0].startswith(
        f"-- snowflake:LAKE.HUDI: create (offline: {named})"
    )
    failed = runner.invoke(app, args)
    assert failed.exit_code == 2
    assert failed.stderr.strip().splitlines() == [f"error: {named}"]


# -- 3. one-line errors -----------------------------------------------------------------------
def test_a_wrong_aws_profile_is_one_line(listening: int, monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Before: botocore's ProfileNotFound, 258 lines. As -o profile= and as AWS_PROFILE."""
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    endpoint = f"client_kwargs.endpoint_url=http://127.0.0.1:{listening}"
    uri = "s3://lake/trips"
    line = (
        f"error: {uri}: no AWS profile 'nosuch' in the AWS config files (it is named by "
        "-o profile=... or AWS_PROFILE)"
    )
    given = runner.invoke(app, ["show", "files", uri, "-o", endpoint, "-o", "profile=nosuch"])
    assert (given.exit_code, given.stderr.strip().splitlines()) == (2, [line])
    monkeypatch.setenv("AWS_PROFILE", "nosuch")
    from_environment = runner.invoke(app, ["show", "files", uri, "-o", endpoint])
    assert (from_environment.exit_code, from_environment.stderr.strip().splitlines()) == (2, [line])


@pytest.mark.parametrize(
    ("uri", "option", "line"),
    [
        (
            "s3://lake/trips",
            "endpont_url=http://127.0.0.1:9",
            "error: storage option 'endpont_url' is not one s3:// takes; "
            "did you mean 'endpoint_url'?",
        ),
        (
            "s3://lake/trips",
            "client_kwargs.endpont_url=http://127.0.0.1:9",
            "error: storage option 'client_kwargs.endpont_url' is not one s3:// takes; "
            "did you mean 'client_kwargs.endpoint_url'?",
        ),
        (
            "gs://lake/trips",
            "tokn=anon",
            "error: storage option 'tokn' is not one gs:// takes; did you mean 'token'?",
        ),
    ],
)
def test_a_misspelt_storage_option_is_one_line(uri: str, option: str, line: str) -> None:
    """Before: s3fs passed it to botocore's session (a 158-line TypeError at the first
    read); gcsfs ignored it."""
    result = runner.invoke(app, ["show", "files", uri, "-o", option])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [line]


def test_a_usage_error_is_one_line() -> None:
    """The installed command (``main``), not typer's test runner: click's usage, hint and
    error box become one line."""
    result = subprocess.run(
        [sys.executable, "-m", "hudi_sync.cli.app", "sync", "bigquery", "x", "--dry-rum"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
        timeout=120,
    )
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and "No such option: --dry-rum" in line
    assert "--dry-run" in line


# -- misspelt keys warn ---------------------------------------------------------------------
def test_owned_namespaces_come_from_the_declarations() -> None:
    owned = cfg.owned_prefixes()
    assert {
        "hudi_sync.",
        "hoodie.gcp.bigquery.sync.",
        "hoodie.snowflake.sync.",
        "hoodie.duckdb.sync.",
        "hoodie.manifest.",
    } <= set(owned)
    assert not any(p in ("hoodie.", "hoodie.datasource.", "hoodie.meta.sync.") for p in owned)


def test_a_misspelt_owned_key_warns_and_hudis_own_pass(fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy(TABLE)
    database = tmp_path / "w.duckdb"
    args = ["sync", "duckdb", str(path), "--database", str(database), "--dry-run"]
    args += [
        "-c",
        "hoodie.manifest.snapshots.retaind=3",
        "-c",
        "hoodie.datasource.hive_sync.mode=hms",
    ]
    args += ["-c", "hudi_sync.sync.change.fed=on"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert result.stderr.strip().splitlines() == [
        "warning: hoodie.manifest.snapshots.retaind is not an option hudi_sync knows; "
        "did you mean hoodie.manifest.snapshots.retained?",
        "warning: hudi_sync.sync.change.fed is not an option hudi_sync knows; "
        "did you mean hudi_sync.sync.change.feed?",
    ]


def test_the_hook_warns_of_a_misspelt_key_once(  # type: ignore[no-untyped-def]
    fixture_copy, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = fixture_copy(TABLE)
    options = {
        cfg.SYNC_TOOLS.key: "duckdb",
        cfg.DUCKDB_DATABASE.key: str(tmp_path / "w.duckdb"),
        "hoodie.duckdb.sync.tabel_name": "t",
    }
    with caplog.at_level(logging.WARNING, logger="hudi_sync"):
        reports = [run_post_commit_hook(str(path), options) for _ in range(2)]
    assert all(r.ok for r in reports), [r.errors for r in reports]
    assert [r.getMessage() for r in caplog.records] == [
        "hoodie.duckdb.sync.tabel_name is not an option hudi_sync knows; "
        "did you mean hoodie.duckdb.sync.table_name?"
    ]
