"""``sync bigquery --dry-run`` and ``sync snowflake --dry-run`` when the warehouse cannot
be reached (no credentials, nothing answering): the plan of a first sync, printed with
one line saying existing objects were not compared and what a real run needs; exit 0.
Each offline plan is checked against the plan the same command prints when it reaches a
warehouse where none of the objects exist (the BigQuery emulator, the Snowflake
emulation), and a reachable warehouse is still compared with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hudi_sync.cli.app import app
from tests.objectstores import _free_port

NOT_COMPARED = "existing objects were NOT compared"
SECRET = "s3cr3t-Pa55word"


def _invoke(args: list[str]) -> Any:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return result


def _steps(output: str) -> list[str]:
    """The plan's statements or API calls (one a line, ending in ``;``)."""
    return [line for line in output.splitlines() if line.endswith(";")]


def _notes(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("-- ")]


@pytest.fixture
def no_google_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No Application Default Credentials: no key file, an empty gcloud configuration."""
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))


def _bigquery_args(path: Path, dataset: str) -> list[str]:
    return [
        "sync", "bigquery", str(path), "--project-id", "test-project", "--dataset-name", dataset,
        "--table-name", "trips", "--source-uri-prefix", "gs://lake/trips", "--dry-run",
    ]  # fmt: skip


def test_bigquery_without_credentials_prints_a_first_syncs_plan(  # type: ignore[no-untyped-def]
    fixture_copy, bigquery_emulator, no_google_credentials
) -> None:
    path = fixture_copy("cow/v8_complexkeygen_hivestyle")
    offline = _invoke(_bigquery_args(path, "offline_plan"))
    [note] = _notes(offline.stdout)
    assert note.startswith("-- bigquery:test-project.offline_plan: create (offline: ")
    assert "credentials" in note and NOT_COMPARED in note
    assert "--project-id test-project and --dataset-name offline_plan" in note
    assert "GOOGLE_APPLICATION_CREDENTIALS" in note
    # The same command against a BigQuery where the dataset does not exist yet.
    online = _invoke(
        [*_bigquery_args(path, "offline_plan"), "--api-endpoint", bigquery_emulator.endpoint_url]
    )
    assert NOT_COMPARED not in online.stdout
    assert _steps(offline.stdout) == _steps(online.stdout)
    assert [s.split()[0] for s in _steps(offline.stdout)] == ["create-dataset"] + ["create"] * 3
    assert not (path / ".hoodie" / "manifest").exists()  # a dry run writes nothing


def test_bigquery_endpoint_not_answering_prints_the_plan_at_once(  # type: ignore[no-untyped-def]
    fixture_copy,
) -> None:
    """No retries for minutes: one refused connection and the plan is printed."""
    path = fixture_copy("cow/v8_complexkeygen_hivestyle")
    endpoint = f"http://127.0.0.1:{_free_port()}"  # nothing listens there
    result = _invoke([*_bigquery_args(path, "lake"), "--api-endpoint", endpoint])
    [note] = _notes(result.stdout)
    assert "(offline: BigQuery read dataset test-project.lake failed: " in note
    assert NOT_COMPARED in note and f"at --api-endpoint {endpoint}, answering" in note
    assert len(_steps(result.stdout)) == 4


def test_bigquery_reachable_still_compares(fixture_copy, bigquery_emulator) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("cow/v8_complexkeygen_hivestyle")
    args = [*_bigquery_args(path, "compared"), "--api-endpoint", bigquery_emulator.endpoint_url]
    _invoke([a for a in args if a != "--dry-run"])  # a real sync: the objects exist now
    result = _invoke(args)
    assert NOT_COMPARED not in result.stdout
    assert _notes(result.stdout)[0].startswith("-- bigquery:test-project.compared: noop ")
    assert _steps(result.stdout) == []


def _snowflake_args(path: Path) -> list[str]:
    return [
        "sync", "snowflake", str(path), "--database", "hudi", "--schema", "lake",
        "--table-name", "trips", "--stage-url", "s3://lake/trips", "--dry-run",
    ]  # fmt: skip


def test_snowflake_without_connection_options_prints_a_first_syncs_plan(  # type: ignore[no-untyped-def]
    fixture_copy, s3_server, monkeypatch
) -> None:
    from tests.snowflake_emulation import EmulatedSnowflake

    for name in ("ACCOUNT", "USER", "PASSWORD", "AUTHENTICATOR", "PRIVATE_KEY_FILE", "TOKEN"):
        monkeypatch.delenv(f"SNOWFLAKE_{name}", raising=False)
    path = fixture_copy("mor/parquet/v6_simplekeygen_nonhivestyle")
    offline = _invoke(_snowflake_args(path))
    [note] = _notes(offline.stdout)
    assert note.startswith("-- snowflake:HUDI.LAKE: create (offline: Snowflake connect failed")
    assert NOT_COMPARED in note
    assert "--account (or SNOWFLAKE_ACCOUNT), --user (or SNOWFLAKE_USER), " in note
    assert "SNOWFLAKE_PASSWORD, --authenticator or --private-key-file" in note
    # The same command against a Snowflake where none of the objects exist.
    emulation = EmulatedSnowflake(s3_server.storage_options)
    with emulation.patched():
        import snowflake.connector

        snowflake.connector.connect(database="hudi", schema="lake").close()
        online = _invoke(_snowflake_args(path))
    assert NOT_COMPARED not in online.stdout
    assert _steps(offline.stdout) == _steps(online.stdout)
    assert _steps(offline.stdout)[0].startswith('CREATE OR REPLACE STAGE "HUDI"."LAKE"')
    assert any('"TRIPS_RT"' in s for s in _steps(offline.stdout))  # MOR: the snapshot view too
    assert not (path / ".hoodie" / "manifest").exists()


def test_snowflake_account_not_answering_prints_the_plan_without_secrets(  # type: ignore[no-untyped-def]
    fixture_copy, monkeypatch
) -> None:
    monkeypatch.setenv("SNOWFLAKE_PASSWORD", SECRET)
    path = fixture_copy("cow/v8_complexkeygen_hivestyle")
    host = "hoodie.snowflake.sync.host=127.0.0.1"  # port 443 of this machine: nothing answers
    args = [*_snowflake_args(path), "--account", "xy12345", "--user", "sync", "--conf", host]
    result = _invoke(args)
    [note] = _notes(result.stdout)
    assert "(offline: Snowflake connect failed: " in note and NOT_COMPARED in note
    assert note.endswith("a real run needs account xy12345 answering to these credentials")
    assert len(_steps(result.stdout)) == 4
    assert SECRET not in result.output
