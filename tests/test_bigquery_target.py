"""BigQuery target against the local-bigquery emulator and fake-gcs-server.

What the emulator cannot do, and how these tests get around it:

- External tables store their configuration exactly but read no files. So each test
  asserts the stored external configuration exactly, then *materialises* it: the external
  table is replaced by a native table of the same name, loaded by the emulator's own
  load job from the same source URIs, schema and hive options. The view we created is
  then queried through the emulator, unchanged, and must show hudi-rs's snapshot.
- Manifest-file tables (``NEW_LINE_DELIMITED_MANIFEST``) are loaded from the URIs the
  published manifest lists (a load job ignores the file-set type).
- The ``_FILE_NAME`` pseudo column does not exist, so tables without meta fields are
  checked by their stored configuration and view text only.
- The emulator accepts several wildcards per URI and any hive layout; BigQuery does not,
  so the URIs are also checked against BigQuery's rules here (one ``*``, never ``.hoodie``).
"""

from __future__ import annotations

import fnmatch
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from hudi_sync.sync import sync_table
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.bigquery_target import (
    MANIFEST_FILE_SET,
    BigQuerySyncConfig,
    BigQueryTarget,
)
from tests.bigquery_emulator import BigQueryEmulator
from tests.fixture_tables import fixture_tables
from tests.objectstores import GcsStore
from tests.warehouse_rows import canonical, hudi_rs_rows, same_columns

NON_EMPTY = [t for t in fixture_tables() if "empty" not in t.name]
WITH_META = [t for t in NON_EMPTY if "no_metafields" not in t.name]


class Uploaded:
    """A fixture table copied to fake GCS: its local copy, gs:// URI and opened table."""

    def __init__(self, local: Path, uri: str, gcs: GcsStore) -> None:
        self.local = local
        self.uri = uri
        self.gcs = gcs

    def open(self) -> HudiTable:
        return HudiTable.open(self.uri, self.gcs.storage_options)

    def objects(self) -> list[str]:
        """Every object under the table, as gs:// URIs."""
        return sorted(f"gs://{p}" for p in self.gcs.fs().find(self.uri))


@pytest.fixture
def upload(gcs_server: GcsStore, unpack_table: Any):  # type: ignore[no-untyped-def]
    def _upload(fixture: Any) -> Uploaded:
        local = unpack_table(fixture)
        uri = gcs_server.upload_dir(local, gcs_server.make_bucket(), "lake/t")
        return Uploaded(local, uri, gcs_server)

    return _upload


@pytest.fixture
def client(bigquery_emulator: BigQueryEmulator):  # type: ignore[no-untyped-def]
    return bigquery_emulator.client()


@pytest.fixture
def dataset(client: Any) -> Any:
    name = f"ds_{uuid.uuid4().hex[:10]}"
    yield name
    client.delete_dataset(name, delete_contents=True, not_found_ok=True)


def _target(client: Any, dataset: str, **options: Any) -> BigQueryTarget:
    config = BigQuerySyncConfig.from_options(
        {"project_id": client.project, "dataset_name": dataset, "table_name": "t", **options}
    )
    return BigQueryTarget(config, client)


def _external(client: Any, table_id: str) -> dict[str, Any]:
    return dict(client.get_table(table_id).external_data_configuration.to_api_repr())


def _materialise(client: Any, table_id: str, uris: list[str] | None = None) -> None:
    """Replace an external table by a native one loaded from the same files and options."""
    from google.cloud import bigquery

    table = client.get_table(table_id)
    external = _external(client, table_id)
    # The emulator's parquet load fails on an explicit BYTES column ("from_base64(BLOB)");
    # such tables are loaded with the schema read from the files instead.
    has_bytes = any(f.field_type == "BYTES" for f in table.schema)
    schema = None if has_bytes else table.schema
    config = bigquery.LoadJobConfig(source_format=external["sourceFormat"], schema=schema)
    if external["sourceFormat"] == "CSV":
        config.skip_leading_rows = 0
    if "hivePartitioningOptions" in external:
        config.hive_partitioning = bigquery.HivePartitioningOptions.from_api_repr(
            external["hivePartitioningOptions"]
        )
    client.delete_table(table_id)
    client.load_table_from_uri(uris or external["sourceUris"], table_id, job_config=config).result()


def _query(client: Any, sql: str) -> pa.Table:
    return client.query_and_wait(sql).to_arrow()


def _maps_as_dicts(table: pa.Table) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """BigQuery has no map type: a parquet map reads as ``key_value`` records (our schema)
    or, in the emulator's schema-less load, a JSON string. hudi-rs gives (key, value)
    pairs. All three become a dict so the rows compare by value."""
    maps = {f.name for f in table.schema if pa.types.is_map(f.type)}

    def normalise(row: dict[str, Any]) -> dict[str, Any]:
        for name in maps & set(row):
            value = row[name]
            if isinstance(value, str):
                value = json.loads(value)
            elif isinstance(value, dict) and "key_value" in value:
                value = {kv["key"]: kv["value"] for kv in value["key_value"]}
            elif isinstance(value, list):
                value = dict(value)
            row[name] = value
        return row

    return normalise


def _assert_history_uris_follow_bigquerys_rules(uris: list[str], uploaded: Uploaded) -> None:
    """One wildcard each; they match every base file and nothing under ``.hoodie``."""
    objects = uploaded.objects()
    base_files = [
        o for o in objects if o.endswith(".parquet") and "/.hoodie" not in o[len(uploaded.uri) :]
    ]
    assert all(u.count("*") == 1 for u in uris)
    assert {o for o in base_files if any(fnmatch.fnmatchcase(o, u) for u in uris)} == set(
        base_files
    )
    hidden = [o for o in objects if "/." in o[len(uploaded.uri) :]]
    assert not [o for o in hidden if any(fnmatch.fnmatchcase(o, u) for u in uris)]


@pytest.mark.parametrize("fixture", WITH_META, ids=[t.id for t in WITH_META])
def test_view_mode_shows_hudi_rs_snapshot(fixture, upload, client, dataset) -> None:  # type: ignore[no-untyped-def]
    uploaded = upload(fixture)
    table = uploaded.open()
    target = _target(client, dataset, dataset_location="EU")
    report = sync_table(table, [target])
    assert [r.action for r in report.results] == ["create"]
    project = client.project
    instant = report.instant
    marker = f"hudi_sync instant={instant} base={uploaded.uri} mode=view"
    history_id, manifest_id, view_id = (
        f"{project}.{dataset}.t_history",
        f"{project}.{dataset}.t_manifest",
        f"{project}.{dataset}.t",
    )
    assert client.get_dataset(dataset).location == "EU"

    # Stored configuration, exactly.
    manifest = _external(client, manifest_id)
    assert manifest["sourceUris"] == [
        f"{uploaded.uri}/.hoodie/manifest/snapshots/{instant}/files.csv"
    ]
    assert (manifest["sourceFormat"], manifest["csvOptions"]["skipLeadingRows"]) == ("CSV", "0")
    history = _external(client, history_id)
    assert history["sourceFormat"] == "PARQUET" and history["autodetect"] is False
    assert history["parquetOptions"] == {"enableListInference": True}
    _assert_history_uris_follow_bigquerys_rules(history["sourceUris"], uploaded)
    partitions = list(table.config.partition_fields)
    if table.config.hive_style_partitioning and partitions:
        hive = history["hivePartitioningOptions"]
        assert hive["mode"] == "CUSTOM"
        assert hive["sourceUriPrefix"].startswith(uploaded.uri + "/{" + partitions[0] + ":")
        assert hive["sourceUriPrefix"].count("{") == len(partitions)
        schema_names = [f.name for f in client.get_table(history_id).schema]
        assert not set(partitions) & set(schema_names[: -len(partitions)])
    else:
        assert "hivePartitioningOptions" not in history
    view = client.get_table(view_id)
    assert view.view_query == (
        f"SELECT * FROM `{history_id}` WHERE _hoodie_file_name IN "
        f"(SELECT filename FROM `{manifest_id}`)"
    )
    for table_id in (history_id, manifest_id, view_id):
        stored = client.get_table(table_id)
        assert stored.description == marker
        assert stored.labels == {"hudi_sync_instant": instant, "hudi_sync_mode": "view"}

    # Behaviour: the same configuration materialised by the emulator's load jobs, and the
    # real view queried through the emulator.
    _materialise(client, history_id)
    _materialise(client, manifest_id)
    rows = _query(client, f"SELECT * FROM `{view_id}`")
    expected = hudi_rs_rows(str(uploaded.local), read_optimized=table.config.is_mor)
    ours, theirs = same_columns(rows, expected)  # type: ignore[arg-type]
    assert theirs.num_rows > 0
    normalise = _maps_as_dicts(theirs)
    assert canonical(ours, normalise) == canonical(theirs, normalise)
    versions = _query(client, f"SELECT count(*) AS n FROM `{history_id}`").column(0)[0].as_py()
    assert versions >= theirs.num_rows


MANIFEST_MODE = [
    t
    for t in WITH_META
    if t.name.endswith(("cow/v9_txns_simple_meta", "cow/v6_complexkeygen_hivestyle"))
    or "overwritetable" in t.name
]


@pytest.mark.parametrize("fixture", MANIFEST_MODE, ids=[t.id for t in MANIFEST_MODE])
def test_manifest_mode_shows_hudi_rs_snapshot(fixture, upload, client, dataset) -> None:  # type: ignore[no-untyped-def]
    uploaded = upload(fixture)
    table = uploaded.open()
    report = sync_table(table, [_target(client, dataset, use_bq_manifest_file="true")])
    table_id = f"{client.project}.{dataset}.t"
    external = _external(client, table_id)
    uris_uri = f"{uploaded.uri}/.hoodie/manifest/snapshots/{report.instant}/uris.csv"
    assert external["sourceUris"] == [uris_uri]
    assert external["fileSetSpecType"] == MANIFEST_FILE_SET
    assert client.get_table(table_id).labels["hudi_sync_mode"] == "manifest"
    assert [r.objects for r in report.results] == [("t",)]
    listed = uploaded.gcs.fs().cat_file(uris_uri.removeprefix("gs://")).decode().split()
    assert all(u.startswith(uploaded.uri + "/") and u.endswith(".parquet") for u in listed)
    _materialise(client, table_id, uris=listed)
    expected = hudi_rs_rows(str(uploaded.local), read_optimized=table.config.is_mor)
    ours, theirs = same_columns(_query(client, f"SELECT * FROM `{table_id}`"), expected)  # type: ignore[arg-type]
    normalise = _maps_as_dicts(theirs)
    assert canonical(ours, normalise) == canonical(theirs, normalise)
