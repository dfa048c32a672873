"""The pages for users of Hudi's BigQuerySyncTool checked against the code they describe.

``docs/how-to/migrate-from-bigquerysynctool.md`` maps every key of Hudi's
``BigQuerySyncConfig`` to hudi_sync's handling of it, and shows the Snowflake statements a
DBA reviews; ``docs/how-to/bigquery.md`` shows a properties file meant to serve Hudi's
writer and hudi_sync alike. Each claim is checked here against what the code does: the
properties files are read by hudi_sync's own parser and target, the key table against the
declared options, the switch-over steps against Hudi's objects in the BigQuery emulator
(``tests/bigquery_emulator.py`` says what it cannot read and how tables are materialised),
and the SQL against the statements the Snowflake target sends, through fakesnow with
external tables emulated over moto S3 (``tests/snowflake_emulation.py``). The table is the
demo's trips table, written without Spark by the Arrow engine from ``scripts/sample/``:
the same columns, partitions and SQL the demo's PySpark write gives.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
import snowflake.connector

from hudi_sync import config as cfg
from hudi_sync.spark import write_arrow
from hudi_sync.sync.hook import run_post_commit_hook, target_names
from hudi_sync.sync.job import sync_table
from hudi_sync.table import HudiTable
from hudi_sync.table.config.properties import parse_java_properties
from hudi_sync.warehouse.bigquery import BigQueryTarget
from hudi_sync.warehouse.bigquery.config import BigQuerySyncConfig
from hudi_sync.warehouse.snowflake import PREFIX as SNOWFLAKE_PREFIX
from hudi_sync.warehouse.snowflake import SnowflakeTarget
from tests.bigquery_emulator import BigQueryEmulator, materialise
from tests.objectstores import GcsStore, S3Store
from tests.snowflake_emulation import EmulatedSnowflake
from tests.warehouse_rows import hudi_rs_rows

ROOT = Path(__file__).resolve().parent.parent
MIGRATION = ROOT / "docs" / "how-to" / "migrate-from-bigquerysynctool.md"
BIGQUERY = ROOT / "docs" / "how-to" / "bigquery.md"
SAMPLE = ROOT / "scripts" / "sample"

# The one value of hoodie.meta.sync.client.tool.class both read: Hudi's writer loads each
# name as a Java class (SyncUtilHelpers), hudi_sync reads this one as its bigquery target.
HUDI_CLASS = "org.apache.hudi.gcp.bigquery.BigQuerySyncTool"

# Every key of Hudi's BigQuerySyncConfig (apache/hudi, hudi-gcp, 1.x).
HUDI_KEYS = {
    cfg.BIGQUERY_PREFIX + name
    for name in (
        "project_id",
        "billing.project.id",
        "dataset_name",
        "dataset_location",
        "table_name",
        "use_bq_manifest_file",
        "source_uri",
        "source_uri_prefix",
        "base_path",
        "partition_fields",
        "use_file_listing_from_metadata",
        "assume_date_partitioning",
        "require_partition_filter",
        "big_lake_connection_id",
    )
}

# The page's names for the demo table's Snowflake objects (its dry-run command's options).
DATABASE, SCHEMA, INTEGRATION = "LAKE", "HUDI", "HUDI_TABLES"
BUCKET = "my-company-hudi-tables"


def fenced(page: Path, language: str) -> list[str]:
    """The bodies of the page's fenced blocks of ``language`` (in a list item too)."""
    found = re.findall(rf"^( *)```{language}\n(.*?)^\1```", page.read_text(), re.M | re.S)
    return [textwrap.dedent(body) for _, body in found]


def properties_files(page: Path) -> list[str]:
    """The page's properties files: ``properties`` blocks, and files a shell block writes
    (``cat > F.properties <<'EOF'``), naming BigQuery keys."""
    written = [
        body
        for block in fenced(page, "bash")
        for body in re.findall(r"<<'EOF'\n(.*?)^EOF$", block, re.M | re.S)
    ]
    return [text for text in fenced(page, "properties") + written if cfg.BIGQUERY_PREFIX in text]


def table_keys(page: Path, heading: str) -> set[str]:
    """The first-column keys of the table under ``heading`` (up to the next heading)."""
    section = page.read_text().split(f"\n{heading}\n", 1)[1].split("\n#", 1)[0]
    return set(re.findall(r"^\| `(hoodie\.gcp\.bigquery\.sync\.[\w.]+)`", section, re.M))


def test_the_properties_files_name_hudis_class_and_hudi_sync_reads_them() -> None:
    """bigquery.md's file (and the migration page's) serves Hudi's writer, which loads
    each tool name as a Java class, and hudi_sync, whose target reads every key given."""
    files = properties_files(BIGQUERY) + properties_files(MIGRATION)
    assert len(files) >= 3
    for text in files:
        options = parse_java_properties(text)
        assert options[cfg.SYNC_TOOLS.key] == HUDI_CLASS
        assert target_names(options) == ["bigquery"]
        target = BigQueryTarget.from_options(options, default_table_name="trips")
        assert target.config.project_id == options[cfg.BIGQUERY_PROJECT_ID.key]
        assert target.config.dataset_name == options[cfg.BIGQUERY_DATASET_NAME.key]


def test_every_key_of_hudis_bigquery_sync_is_on_the_page_and_accepted() -> None:
    """The page maps each of Hudi's keys, and lists hudi_sync's own apart; a file giving
    all of Hudi's keys is accepted as it is (none is an unknown option)."""
    declared = {spec.key for spec in cfg.group("sync/bigquery")}
    assert table_keys(MIGRATION, "## Options: Hudi's keys and what hudi_sync does with them") == (
        HUDI_KEYS
    )
    assert table_keys(MIGRATION, "### hudi_sync's own keys") == declared - HUDI_KEYS
    assert declared >= HUDI_KEYS
    every = {
        **{key: "x" for key in HUDI_KEYS},
        cfg.BIGQUERY_PROJECT_ID.key: "my-project",
        cfg.BIGQUERY_BILLING_PROJECT_ID.key: "my-billing-project",
        cfg.BIGQUERY_DATASET_NAME.key: "lake",
        cfg.BIGQUERY_DATASET_LOCATION.key: "EU",
        cfg.BIGQUERY_TABLE_NAME.key: "trips",
        cfg.BIGQUERY_USE_MANIFEST_FILE.key: "false",  # source_uri is dead with true
        cfg.BIGQUERY_SOURCE_URI.key: "gs://my-bucket/lake/trips/city=*",
        cfg.BIGQUERY_SOURCE_URI_PREFIX.key: "gs://my-bucket/lake/trips/",
        cfg.BIGQUERY_BASE_PATH.key: "gs://my-bucket/lake/trips",
        cfg.BIGQUERY_PARTITION_FIELDS.key: "city",
        cfg.BIGQUERY_FILE_LISTING.key: "true",
        cfg.BIGQUERY_DATE_PARTITIONING.key: "false",
        cfg.BIGQUERY_REQUIRE_PARTITION_FILTER.key: "true",
        cfg.BIGQUERY_BIG_LAKE_CONNECTION_ID.key: "my-project.eu.lake",
    }
    config = BigQuerySyncConfig.from_options(every)
    assert (config.project_id, config.billing_project_id) == ("my-project", "my-billing-project")
    assert not config.use_bq_manifest_file and config.require_partition_filter
    assert config.source_uri == ("gs://my-bucket/lake/trips/city=*",)
    assert config.partition_fields == ("city",)
    assert config.big_lake_connection_id == "my-project.eu.lake"


def write_demo_table(local: Path) -> None:
    """The demo's trips table, day 1 inserted and day 2 upserted, by the Arrow engine."""
    options = parse_java_properties((SAMPLE / "trips.properties").read_text())
    for number, operation in ((1, "insert"), (2, "upsert")):
        write_arrow(day(number), str(local), {**options, cfg.OPERATION.key: operation})


def test_switching_over_from_hudis_objects_as_the_page_says(
    gcs_server: GcsStore, bigquery_emulator: BigQueryEmulator, dataset: str, tmp_path: Path
) -> None:
    """Hudi's view-mode objects and manifest files in place (as HoodieBigQuerySyncClient
    and ManifestFileWriter make them), the page's properties file through the hook: the
    sync refuses Hudi's objects in one line; once they are dropped it creates its own,
    whose view shows the snapshot, and Hudi's manifest files are left as they were."""
    from google.cloud import bigquery

    client = bigquery_emulator.client()
    local = tmp_path / "trips"
    write_demo_table(local)
    slices = HudiTable.open(str(local)).file_slices()
    names = sorted(s.base_file.name for s in slices if s.base_file is not None)
    bucket = gcs_server.make_bucket()
    uri = f"gs://{bucket}/lake/trips"
    hudi_files = {  # Hudi's ManifestFileWriter: file names, and absolute URIs
        ".hoodie/manifest/latest-snapshot.csv": "".join(f"{n}\n" for n in names),
        ".hoodie/absolute-path-manifest/latest-snapshot.csv": "".join(
            f"{uri}/{s.relative_path(s.base_file.name)}\n" for s in slices if s.base_file
        ),
    }
    for relative, text in hudi_files.items():
        (local / relative).parent.mkdir(parents=True, exist_ok=True)
        (local / relative).write_text(text)
    assert gcs_server.upload_dir(local, bucket, "lake/trips") == uri
    project = client.project
    existing = bigquery.Dataset(f"{project}.{dataset}")
    existing.location = "EU"  # Hudi's tool needs the dataset made first; the file says EU
    client.create_dataset(existing)

    def qualified(name: str) -> str:
        return f"{project}.{dataset}.{name}"

    manifest = bigquery.ExternalConfig("CSV")
    manifest.source_uris = [f"{uri}/.hoodie/manifest/*"]
    hudi_manifest = bigquery.Table(
        qualified("trips_manifest"), [bigquery.SchemaField("filename", "STRING")]
    )
    hudi_manifest.external_data_configuration = manifest
    versions = bigquery.ExternalConfig("PARQUET")
    versions.source_uris = [f"{uri}/city=*"]
    versions.autodetect = True
    # Hudi's is autodetected; the emulator keeps no schema-less external table, so the
    # two columns its view names are declared.
    hudi_versions = bigquery.Table(
        qualified("trips_versions"),
        [bigquery.SchemaField(n, "STRING") for n in ("_hoodie_file_name", "trip_id")],
    )
    hudi_versions.external_data_configuration = versions
    view = bigquery.Table(qualified("trips"))
    view.view_query = (
        f"SELECT * FROM `{qualified('trips_versions')}` WHERE _hoodie_file_name IN "
        f"(SELECT filename FROM `{qualified('trips_manifest')}`)"
    )
    for hudis in (hudi_manifest, hudi_versions, view):
        client.create_table(hudis)

    (step_two,) = [text for text in properties_files(MIGRATION) if "base_path" in text]
    options = {
        **parse_java_properties(step_two),
        cfg.BIGQUERY_PROJECT_ID.key: project,
        cfg.BIGQUERY_DATASET_NAME.key: dataset,
        cfg.BIGQUERY_SOURCE_URI_PREFIX.key: uri,
        cfg.BIGQUERY_API_ENDPOINT.key: bigquery_emulator.endpoint_url,
    }
    refused = run_post_commit_hook(uri, options, gcs_server.storage_options)
    assert not refused.ok
    assert (
        f"{qualified('trips')} exists and was not created by hudi_sync; drop it or use --force"
        in (refused.error_summary())
    )
    for name in ("trips", "trips_manifest", "trips_versions"):  # the page's `bq rm`
        client.delete_table(qualified(name))
    synced = run_post_commit_hook(uri, options, gcs_server.storage_options)
    assert synced.ok, synced.error_summary()
    assert {t.table_id for t in client.list_tables(dataset)} == {
        "trips",
        "trips_history",
        "trips_manifest",
    }
    materialise(client, qualified("trips_history"))
    materialise(client, qualified("trips_manifest"))
    columns = "trip_id, rider, fare, city"
    shown = client.query_and_wait(f"SELECT {columns} FROM `{qualified('trips')}`").to_arrow()
    expected = hudi_rs_rows(str(local)).select(columns.split(", "))
    assert sorted(shown.to_pylist(), key=str) == sorted(expected.to_pylist(), key=str)
    for relative, text in hudi_files.items():
        assert gcs_server.fs().cat_file(f"{uri}/{relative}").decode() == text


# -- the Snowflake statements --------------------------------------------------------------


def statements(text: str) -> list[str]:
    """SQL text as a list of statements: comments dropped, whitespace runs made one space
    (none inside parentheses' ends), instants (which differ from one write to the next)
    named."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("--")]
    flat = " ".join(" ".join(lines).split())
    flat = flat.replace("( ", "(").replace(" )", ")")  # lines broken after "(", before ")"
    flat = re.sub(r"\b\d{17}\b", "INSTANT", flat)
    return [s.strip() for s in flat.split(";") if s.strip()]


def day(number: int) -> pa.Table:
    """A day of the demo's trips, columns in the order Spark's JSON reader gives them."""
    rows = [json.loads(line) for line in (SAMPLE / f"trips_day{number}.jsonl").open()]
    return pa.table({name: [row[name] for row in rows] for name in sorted(rows[0])})


@pytest.fixture
def emulation(s3_server: S3Store) -> Iterator[EmulatedSnowflake]:
    emulation = EmulatedSnowflake(s3_server.storage_options)
    with emulation.patched():
        snowflake.connector.connect(database=DATABASE, schema=SCHEMA).close()
        yield emulation


def test_the_snowflake_statements_on_the_page_are_what_the_target_sends(
    s3_server: S3Store, emulation: EmulatedSnowflake, tmp_path: Path
) -> None:
    """The page's first-sync and later-commit SQL, statement by statement, against the
    statements the target sent for the demo's table at its first and second commit."""
    options = parse_java_properties((SAMPLE / "trips.properties").read_text())
    local = tmp_path / "trips"
    target_options = {
        SNOWFLAKE_PREFIX + "database": DATABASE,
        SNOWFLAKE_PREFIX + "schema": SCHEMA,
        SNOWFLAKE_PREFIX + "storage_integration": INTEGRATION,
    }
    s3_server.make_bucket(BUCKET)
    sent = []
    for number, operation in ((1, "insert"), (2, "upsert")):
        write_arrow(day(number), str(local), {**options, cfg.OPERATION.key: operation})
        uri = s3_server.upload_dir(local, BUCKET, "trips")
        table = HudiTable.open(uri, s3_server.storage_options)
        target = SnowflakeTarget.from_options(target_options, "trips", environ={})
        count = len(emulation.statements)
        report = sync_table(table, [target])
        assert report.ok, report.error_summary()
        sent.append(statements(";\n".join(emulation.statements[count:])))
    shown = [statements(b) for b in fenced(MIGRATION, "sql") if "TRIPS_HISTORY" in b]
    assert shown == sent
