"""BigQuery sync options that cannot take effect are refused in one line, not ignored.

Options no object of the configuration reads are refused when the options are parsed
(``iceberg=only``: the manifest objects' options; manifest-file mode: ``source_uri``);
the hive partitioning options on a table without ``key=value`` partition folders are
refused when the sync plans, before any BigQuery call creates anything (a dry run
shows the same line). The live combinations still sync, to the emulator.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hudi_sync.cli.app import app
from hudi_sync.errors import BadInputError
from hudi_sync.sync.job import sync_table
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.bigquery import BigQuerySyncConfig, BigQueryTarget

BQ = "hoodie.gcp.bigquery.sync."
HIVE_STYLE = "hoodie.datasource.write.hive_style_partitioning"
BUCKET = "gs://my-bucket/lake/t"
ONLY = {"iceberg": "only", "iceberg.connection": "my-project.eu.lake"}
ONLY_WHY = f"{BQ}iceberg is only, so the one object is t_iceberg (through {BQ}iceberg.connection)"


def _options(**options: Any) -> dict[str, Any]:
    return {"project_id": "my-project", "dataset_name": "lake", "table_name": "t", **options}


@pytest.mark.parametrize(
    ("options", "line"),
    [
        (
            {"use_bq_manifest_file": "true", "source_uri": f"{BUCKET}/*.parquet"},
            f"{BQ}source_uri has no effect: {BQ}use_bq_manifest_file is true, so the table "
            "reads the files its snapshot's manifest lists; remove it",
        ),
        (
            {**ONLY, "use_bq_manifest_file": "true"},
            f"{BQ}use_bq_manifest_file=true has no effect: {ONLY_WHY}; remove it",
        ),
        (
            {**ONLY, "source_uri": f"{BUCKET}/*.parquet"},
            f"{BQ}source_uri has no effect: {ONLY_WHY}; remove it",
        ),
        (
            {**ONLY, "partition_fields": "region"},
            f"{BQ}partition_fields has no effect: {ONLY_WHY}; remove it",
        ),
        (
            {**ONLY, "require_partition_filter": "true"},
            f"{BQ}require_partition_filter=true has no effect: {ONLY_WHY}; remove it",
        ),
        (
            {**ONLY, "big_lake_connection_id": "my-project.eu.other"},
            f"{BQ}big_lake_connection_id has no effect: {ONLY_WHY}; remove it",
        ),
    ],
    ids=["manifest-source_uri", *(f"only-{k}" for k in ("manifest", "uri", "pf", "rpf", "bl"))],
)
def test_options_no_object_reads_are_refused_when_parsed(
    options: dict[str, Any], line: str
) -> None:
    with pytest.raises(BadInputError) as refused:
        BigQuerySyncConfig.from_options(_options(**options))
    assert str(refused.value) == line


@pytest.mark.parametrize(
    "options",
    [
        {"use_bq_manifest_file": "false", "source_uri": f"{BUCKET}/*.parquet"},
        {"use_bq_manifest_file": "true", "big_lake_connection_id": "my-project.eu.lake"},
        {**ONLY, "use_bq_manifest_file": "false", "require_partition_filter": "false"},
        {**ONLY, "source_uri_prefix": BUCKET, "dataset_location": "EU"},
        # Hudi's keys the migration page documents as accepted and ignored.
        {"base_path": BUCKET, "use_file_listing_from_metadata": "true"},
        {**ONLY, "assume_date_partitioning": "false", "base_path": BUCKET},
    ],
)
def test_live_combinations_and_hudis_ignored_keys_are_accepted(options: dict[str, Any]) -> None:
    BigQuerySyncConfig.from_options(_options(**options))


def _target(client: Any, dataset: str, **options: Any) -> BigQueryTarget:
    config = BigQuerySyncConfig.from_options(
        {"project_id": client.project, "dataset_name": dataset, "table_name": "t", **options}
    )
    return BigQueryTarget(config, client)


@pytest.mark.parametrize(
    ("fixture", "option", "given", "why"),
    [
        ("cow/v6_nonpartitioned", "partition_fields", "region", "is not partitioned"),
        ("cow/v6_nonpartitioned", "require_partition_filter", "true", "is not partitioned"),
        (
            "cow/v6_simplekeygen_nonhivestyle",
            "partition_fields",
            "byteField",
            f"has no key=value partition folders ({HIVE_STYLE}=false)",
        ),
        (
            "mor/parquet/v6_simplekeygen_nonhivestyle",
            "require_partition_filter",
            "true",
            f"has no key=value partition folders ({HIVE_STYLE}=false)",
        ),
    ],
)
@pytest.mark.parametrize("iceberg", ["off", "beside"])
def test_hive_partitioning_options_are_refused_at_plan_time_and_nothing_is_created(  # type: ignore[no-untyped-def]
    fixture_copy, client, dataset, fixture: str, option: str, given: str, why: str, iceberg: str
) -> None:
    """Refused by the sync and its dry run alike, before the first BigQuery call that
    creates anything: no dataset, no table."""
    path = fixture_copy(fixture)
    extra = {"iceberg": iceberg, "iceberg.connection": "my-project.eu.lake"}
    target = _target(
        client,
        dataset,
        source_uri_prefix=BUCKET,
        **{option: given},
        **(extra if iceberg != "off" else {}),
    )
    shown = f"{BQ}{option}=true" if given == "true" else f"{BQ}{option}"
    line = (
        f"{shown} has no effect: {path} {why}, so BigQuery reads no partition columns "
        "from its paths; remove it"
    )
    for dry_run in (True, False):
        with pytest.raises(BadInputError) as refused:
            sync_table(HudiTable.open(str(path)), [target], dry_run=dry_run)
        assert str(refused.value) == line
    assert dataset not in {d.dataset_id for d in client.list_datasets()}


def test_hive_partitioning_options_on_a_hive_table_still_sync(  # type: ignore[no-untyped-def]
    fixture_copy, client, dataset
) -> None:
    """The live combination: the history table's hive partitioning names the given key
    and requires a partition filter."""
    path = fixture_copy("cow/v9_txns_simple_meta")
    options = {"partition_fields": "region", "require_partition_filter": "true"}
    target = _target(client, dataset, source_uri_prefix=BUCKET, **options)
    result = sync_table(HudiTable.open(str(path)), [target]).results[0]
    assert result.action == "create"
    history = client.get_table(f"{client.project}.{dataset}.t_history")
    hive = history.external_data_configuration.to_api_repr()["hivePartitioningOptions"]
    assert hive == {
        "mode": "CUSTOM",
        "sourceUriPrefix": f"{BUCKET}/{{region:STRING}}",
        "requirePartitionFilter": True,
    }


def test_the_cli_prints_the_refusal_in_one_line(  # type: ignore[no-untyped-def]
    fixture_copy, bigquery_emulator, client, dataset, tmp_path: Path
) -> None:
    """Exit 2 and the one line on stderr, for a parse-time refusal and a plan-time one,
    with --dry-run as without, and in an offline dry run."""
    path = fixture_copy("cow/v6_nonpartitioned")
    props = tmp_path / "bq.properties"
    common = [
        f"{BQ}project_id={client.project}",
        f"{BQ}dataset_name={dataset}",
        f"{BQ}source_uri_prefix={BUCKET}",
    ]
    args = ["sync", "bigquery", str(path), "--props", str(props), "--table-name", "t"]
    args += ["--api-endpoint", bigquery_emulator.endpoint_url]
    cases = {
        f"{BQ}use_bq_manifest_file=true\n{BQ}source_uri={BUCKET}/*.parquet": (
            f"{BQ}source_uri has no effect: {BQ}use_bq_manifest_file is true"
        ),
        f"{BQ}require_partition_filter=true": (
            f"{BQ}require_partition_filter=true has no effect: {path} is not partitioned"
        ),
    }
    runner = CliRunner()
    for given, start in cases.items():
        props.write_text("\n".join([*common, given]) + "\n")
        for dry_run in ([], ["--dry-run"]):
            result = runner.invoke(app, [*args, *dry_run])
            assert result.exit_code == 2, result.output
            assert result.stderr.count("\n") == 1 and start in result.stderr
        # Offline (nothing answers at the endpoint): the dry run refuses it the same way.
        offline = [*args[:-1], "http://127.0.0.1:9", "--dry-run"]
        result = runner.invoke(app, offline)
        assert result.exit_code == 2 and start in result.stderr, result.output
    assert dataset not in {d.dataset_id for d in client.list_datasets()}
