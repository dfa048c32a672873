"""``hudi-sync verify`` on BigQuery (the local-bigquery emulator over fake GCS) and
Snowflake (fakesnow): a fresh sync verifies clean; drift made in the warehouse or on the
table is reported by name with exit 1; ``--repair`` fixes it and a second verify is
clean. The objects are read through each target's read-only ``inspect``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from hudi_sync.cli.app import app
from hudi_sync.spark.writing.writer import write_arrow
from hudi_sync.table import HudiTable
from tests.test_verify import _options, _rows


def _differences(report: dict[str, Any], key: str = "targets") -> list[tuple[str, str]]:
    checks = report[key] if key == "targets" else report["repair"]["found"]
    return [(d["kind"], d["object"]) for t in checks for d in t["differences"]]


class BigQuerySetup:
    """A table written locally, uploaded to fake GCS and synced to a fresh dataset."""

    def __init__(self, tmp_path: Path, gcs: Any, emulator: Any, client: Any, dataset: str) -> None:
        local = tmp_path / "trips"
        write_arrow(_rows([1, 2], "sfo"), str(local), _options())
        write_arrow(_rows([3], "nyc"), str(local), _options())
        self.gcs = gcs
        self.uri = gcs.upload_dir(local, gcs.make_bucket(), "lake/trips")
        self.client = client
        self.dataset = dataset
        prefix = "hoodie.gcp.bigquery.sync."
        self.options = [
            "hoodie.meta.sync.client.tool.class=bigquery",
            f"{prefix}project_id={client.project}",
            f"{prefix}dataset_name={dataset}",
            f"{prefix}table_name=trips",
            f"{prefix}api_endpoint={emulator.endpoint_url}",
        ]
        self.storage = [f"endpoint_url={gcs.endpoint_url}", "token=anon"]
        result = self.run("sync", "bigquery", self.uri, "--api-endpoint", emulator.endpoint_url)
        assert result.exit_code == 0, result.output

    def run(self, *args: str) -> Any:
        confs = [a for option in self.options for a in ("-c", option)]
        if args[0] == "sync":  # sync bigquery takes its own flags
            confs = [
                a for option in self.options if "api_endpoint" not in option for a in ("-c", option)
            ]
        storage = [a for option in self.storage for a in ("-o", option)]
        return CliRunner().invoke(app, [*args, *confs, *storage])

    def verify(self, *extra: str) -> tuple[int, dict[str, Any]]:
        result = self.run("verify", self.uri, "--json", *extra)
        assert result.exit_code in (0, 1), result.output
        return result.exit_code, json.loads(result.stdout)

    def table_id(self, name: str) -> str:
        return f"{self.client.project}.{self.dataset}.{name}"

    def commits(self) -> list[str]:
        table = HudiTable.open(self.uri, self.gcs.storage_options)
        return [i.requested_time for i in table.completed_commits()]


def _alter_column(client: Any, table_id: str, column: str, kind: str) -> None:
    from google.cloud import bigquery

    found = client.get_table(table_id)
    altered = bigquery.Table(
        table_id,
        schema=[
            bigquery.SchemaField(f.name, kind if f.name == column else f.field_type, f.mode)
            for f in found.schema
        ],
    )
    altered.external_data_configuration = found.external_data_configuration
    altered.description = found.description
    altered.labels = found.labels
    client.delete_table(table_id)
    client.create_table(altered)


def _repaired(setup: Any, found: list[tuple[str, str]]) -> None:
    code, report = setup.verify("--repair")
    assert code == 0, report
    assert _differences(report, "found") == found
    assert report["repair"]["errors"] == {}
    code, report = setup.verify()
    assert code == 0, report
    assert report["targets"][0]["shown"] == setup.commits()[-1]


def _clean_then_behind(setup: Any, storage_options: dict[str, Any]) -> None:
    """A fresh sync verifies clean; a commit after it is found behind and repaired."""
    code, report = setup.verify()
    assert code == 0, report
    assert report["targets"][0]["shown"] == setup.commits()[-1]
    write_arrow(_rows([4], "sfo"), setup.uri, _options(), storage_options)
    code, report = setup.verify()
    assert code == 1
    assert _differences(report) == [("behind", "trips")]
    _repaired(setup, [("behind", "trips")])


def test_bigquery_drift_is_found_and_repaired(  # type: ignore[no-untyped-def]
    tmp_path: Path, gcs_server, bigquery_emulator, client, dataset
) -> None:
    setup = BigQuerySetup(tmp_path, gcs_server, bigquery_emulator, client, dataset)
    _clean_then_behind(setup, gcs_server.storage_options)

    # A dropped view, and the history re-created with a column of another type (BigQuery
    # changes no column's type in place), its description (the marker) kept.
    client.delete_table(setup.table_id("trips"))
    _alter_column(client, setup.table_id("trips_history"), "fare", "STRING")
    code, report = setup.verify()
    assert code == 1
    assert _differences(report) == [
        ("missing-object", "trips"),
        ("columns", "trips_history"),
    ]
    (_, columns) = report["targets"][0]["differences"]
    assert columns["detail"] == "column fare is STRING, the table's schema gives FLOAT"
    _repaired(setup, [("missing-object", "trips"), ("columns", "trips_history")])

    # The manifest file the manifest table reads removed.
    manifest = client.get_table(setup.table_id("trips_manifest"))
    (listed,) = manifest.external_data_configuration.source_uris
    gcs_server.fs().rm(listed)
    code, report = setup.verify()
    assert code == 1
    assert _differences(report) == [("manifest", "trips_manifest")]
    assert "FileNotFoundError" in report["targets"][0]["differences"][0]["detail"]
    _repaired(setup, [("manifest", "trips_manifest")])


class SnowflakeSetup:
    """A table written locally, uploaded to moto S3 and synced into fakesnow (external
    tables emulated from their own DDL, ``tests/snowflake_emulation.py``)."""

    def __init__(self, tmp_path: Path, s3: Any) -> None:
        local = tmp_path / "trips"
        write_arrow(_rows([1, 2], "sfo"), str(local), _options())
        write_arrow(_rows([3], "nyc"), str(local), _options())
        self.s3 = s3
        self.uri = s3.upload_dir(local, s3.make_bucket(), "tables/trips")
        prefix = "hoodie.snowflake.sync."
        self.options = [
            "hoodie.meta.sync.client.tool.class=snowflake",
            f"{prefix}database=hudi",
            f"{prefix}schema=lake",
            f"{prefix}storage_integration=hudi_s3",
        ]
        self.storage = [f"{k}={v}" for k, v in _flat(s3.storage_options).items()]
        result = self.run("sync", "snowflake", self.uri)
        assert result.exit_code == 0, result.output

    def run(self, *args: str) -> Any:
        confs = [a for option in self.options for a in ("-c", option)]
        storage = [a for option in self.storage for a in ("-o", option)]
        return CliRunner().invoke(app, [*args, *confs, *storage])

    def verify(self, *extra: str) -> tuple[int, dict[str, Any]]:
        result = self.run("verify", self.uri, "--json", *extra)
        assert result.exit_code in (0, 1), result.output
        return result.exit_code, json.loads(result.stdout)

    def sql(self, statement: str) -> None:
        import snowflake.connector

        con = snowflake.connector.connect(database="hudi", schema="lake")
        try:
            con.cursor().execute(statement)
        finally:
            con.close()

    def commits(self) -> list[str]:
        table = HudiTable.open(self.uri, self.s3.storage_options)
        return [i.requested_time for i in table.completed_commits()]


def _flat(options: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Storage options as the CLI's dotted ``-o key=value`` pairs."""
    flat: dict[str, str] = {}
    for key, value in options.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = str(value)
    return flat


def test_snowflake_drift_is_found_and_repaired(  # type: ignore[no-untyped-def]
    tmp_path: Path, s3_server, emulation
) -> None:
    setup = SnowflakeSetup(tmp_path, s3_server)
    _clean_then_behind(setup, s3_server.storage_options)

    # The history dropped under a view that still says it is current: only re-creating
    # every object repairs it.
    setup.sql("DROP EXTERNAL TABLE IF EXISTS HUDI.LAKE.TRIPS_HISTORY")
    code, report = setup.verify()
    assert code == 1
    assert _differences(report) == [
        ("missing-object", "trips_history"),
    ]
    _repaired(setup, [("missing-object", "trips_history")])

    setup.sql("DROP VIEW HUDI.LAKE.TRIPS")
    code, report = setup.verify()
    assert code == 1
    assert _differences(report) == [("missing-object", "trips")]
    _repaired(setup, [("missing-object", "trips")])

    # The history re-created by hand with a column of another type (the view's marker
    # and digests untouched, so a sync alone would do nothing).
    (created,) = [
        s
        for s in emulation.statements
        if s.startswith("CREATE OR REPLACE EXTERNAL TABLE") and "TRIPS_HISTORY" in s
    ][-1:]
    fare = "\"FARE\" FLOAT AS (VALUE['fare']::FLOAT)"
    assert fare in created
    setup.sql(created.replace(fare, "\"FARE\" VARCHAR AS (VALUE['fare']::VARCHAR)"))
    code, report = setup.verify()
    assert code == 1
    assert _differences(report) == [("columns", "trips_history")]
    detail = report["targets"][0]["differences"][0]["detail"]
    assert detail == "column FARE is TEXT, the table's schema gives FLOAT"
    _repaired(setup, [("columns", "trips_history")])


def test_bigquery_hive_partitions_are_compared(  # type: ignore[no-untyped-def]
    tmp_path: Path, gcs_server, bigquery_emulator, client, dataset, monkeypatch
) -> None:
    """A ``city=sfo`` table: its history's hive partitioning (``{city:STRING}``) is what
    a sync declares; the history re-created without it (its description kept) is a
    partition difference, which ``--repair`` fixes by re-creating it."""
    hive = {**_options(), "hoodie.datasource.write.hive_style_partitioning": "true"}
    monkeypatch.setattr(sys.modules[__name__], "_options", lambda: hive)
    setup = BigQuerySetup(tmp_path, gcs_server, bigquery_emulator, client, dataset)
    code, report = setup.verify()
    assert code == 0, report
    history_id = setup.table_id("trips_history")
    found = client.get_table(history_id)
    assert found.external_data_configuration.hive_partitioning.source_uri_prefix.endswith(
        "/lake/trips/{city:STRING}"
    )
    from google.cloud import bigquery

    flat = bigquery.Table(history_id, schema=found.schema)
    external = bigquery.ExternalConfig.from_api_repr(
        {
            k: v
            for k, v in found.external_data_configuration.to_api_repr().items()
            if k != "hivePartitioningOptions"
        }
    )
    flat.external_data_configuration = external
    flat.description = found.description
    client.delete_table(history_id)
    client.create_table(flat)
    code, report = setup.verify()
    assert code == 1
    assert report["targets"][0]["differences"] == [
        {
            "kind": "partitions",
            "object": "trips_history",
            "detail": "partition columns none, a sync declares city:STRING",
        }
    ]
    _repaired(setup, [("partitions", "trips_history")])
