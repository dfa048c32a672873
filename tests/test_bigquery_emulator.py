"""What the BigQuery emulator (local-bigquery 0.3.2, ``tests/bigquery_emulator.py``) does.

Our BigQuery target can only be tested against this emulator, so these tests pin down what it
supports, through the official Python client, over a real Hudi fixture table uploaded to
fake-gcs-server (``sample_table/cow/v9_txns_simple_meta``: COW, hive-style ``region=…``, 17 base
files in 12 file groups).

The emulator stores external tables with their full ``externalDataConfiguration`` (source
URIs, CSV options, hive partitioning options, ``fileSetSpecType``) but reads no files through
them: such a table is a plain ``TABLE`` with 0 rows (or, without a schema, none at all). So a
test of an external-table sync can assert the stored configuration exactly, and check the
behaviour by materialising the same files with the emulator's load jobs (which do read
``gs://`` objects) and querying the real view over them. Tests of that kind say so.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from tests.fixture_tables import fixture_tables

if TYPE_CHECKING:
    from google.cloud import bigquery

    from tests.bigquery_emulator import BigQueryEmulator
    from tests.objectstores import GcsStore

TABLE = "sample_table/cow/v9_txns_simple_meta"
MANIFEST_FILE_SET = "FILE_SET_SPEC_TYPE_NEW_LINE_DELIMITED_MANIFEST"  # REST enum value


@dataclass(frozen=True)
class UploadedTable:
    """A fixture table uploaded to fake GCS, with facts about its parquet files."""

    local: Path
    uri: str  # gs://bucket/prefix, no trailing slash
    files: tuple[str, ...]  # parquet files, relative posix paths

    def file_uris(self, files: tuple[str, ...] | None = None) -> list[str]:
        return [f"{self.uri}/{rel}" for rel in (self.files if files is None else files)]

    def rows(self, files: tuple[str, ...] | None = None) -> int:
        chosen = self.files if files is None else files
        return sum(pq.ParquetFile(self.local / rel).metadata.num_rows for rel in chosen)

    def rows_by_region(self, files: tuple[str, ...] | None = None) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for rel in self.files if files is None else files:
            region = rel.split("/")[0].removeprefix("region=")
            counts[region] += pq.ParquetFile(self.local / rel).metadata.num_rows
        return dict(sorted(counts.items()))

    def latest_base_files(self) -> tuple[str, ...]:
        """The newest base file of each file group (``<fileId>_<token>_<instant>.parquet``)."""
        latest: dict[str, tuple[str, str]] = {}
        for rel in self.files:
            name = rel.rsplit("/", 1)[-1]
            file_id, instant = name.split("_")[0], name.rsplit("_", 1)[1].removesuffix(".parquet")
            if file_id not in latest or latest[file_id][0] < instant:
                latest[file_id] = (instant, rel)
        return tuple(sorted(rel for _, rel in latest.values()))

    def rows_with_file_name_in(self, names: set[str]) -> int:
        """Rows of all files whose ``_hoodie_file_name`` is in ``names`` (the view's filter)."""
        value_set = pa.array(sorted(names))
        total = 0
        for rel in self.files:
            column = pq.read_table(self.local / rel, columns=["_hoodie_file_name"]).column(0)
            total += pc.sum(pc.is_in(column, value_set=value_set)).as_py() or 0
        return total


def _fixture(name: str) -> Any:
    matches = [t for t in fixture_tables() if t.name == name]
    assert len(matches) == 1, name
    return matches[0]


def _upload_text(gcs: GcsStore, tmp: Path, uri: str, text: str) -> str:
    """Upload ``text`` as the object ``uri`` (gs://bucket/key) and return ``uri``."""
    bucket, key = uri.removeprefix("gs://").split("/", 1)
    folder = tmp / uuid.uuid4().hex
    (folder / key).parent.mkdir(parents=True)
    (folder / key).write_text(text)
    gcs.upload_dir(folder, bucket)
    return uri


@pytest.fixture(scope="module")
def txns(gcs_server: GcsStore, unpack_table: Any) -> UploadedTable:
    local = unpack_table(_fixture(TABLE))
    bucket = gcs_server.make_bucket()
    uri = gcs_server.upload_dir(local, bucket, "warehouse/txns")
    files = tuple(sorted(p.relative_to(local).as_posix() for p in local.rglob("*.parquet")))
    assert len(files) == 17 and {f.split("/")[0] for f in files} == {
        "region=apac",
        "region=eu",
        "region=us",
    }
    return UploadedTable(local, uri, files)


@pytest.fixture(scope="module")
def client(bigquery_emulator: BigQueryEmulator) -> bigquery.Client:
    return bigquery_emulator.client()


@pytest.fixture
def dataset(client: bigquery.Client) -> Iterator[str]:
    """A fresh dataset id, deleted with its contents afterwards."""
    dataset_id = f"ds_{uuid.uuid4().hex[:12]}"
    client.create_dataset(dataset_id)
    yield dataset_id
    client.delete_dataset(dataset_id, delete_contents=True, not_found_ok=True)


def _schema(table: bigquery.Table) -> list[tuple[str, str]]:
    return [(field.name, field.field_type) for field in table.schema]


def _rows(client: bigquery.Client, sql: str) -> list[tuple[Any, ...]]:
    return [tuple(row.values()) for row in client.query_and_wait(sql)]


def _hive(mode: str, prefix: str, require_filter: bool | None = None) -> Any:
    from google.cloud import bigquery

    options = bigquery.HivePartitioningOptions()
    options.mode = mode
    options.source_uri_prefix = prefix
    if require_filter is not None:
        options.require_partition_filter = require_filter
    return options


def _load_parquet(
    client: bigquery.Client, uris: list[str], table_id: str, hive: Any = None, **config: Any
) -> bigquery.LoadJob:
    from google.cloud import bigquery

    job_config = bigquery.LoadJobConfig(source_format="PARQUET", **config)
    if hive is not None:
        job_config.hive_partitioning = hive
    job = client.load_table_from_uri(uris, table_id, job_config=job_config)
    job.result()
    return job


def test_dataset_location_labels_description_round_trip(client: bigquery.Client) -> None:
    from google.api_core.exceptions import Conflict
    from google.cloud import bigquery

    dataset_id = f"{client.project}.ds_{uuid.uuid4().hex[:12]}"
    dataset = bigquery.Dataset(dataset_id)
    dataset.location = "EU"
    dataset.description = "synced from Hudi"
    dataset.labels = {"owner": "hudi_sync"}
    client.create_dataset(dataset)
    try:
        got = client.get_dataset(dataset_id)
        assert (got.location, got.description, got.labels) == (
            "EU",
            "synced from Hudi",
            {"owner": "hudi_sync"},
        )
        # Quirk: a table reports location US whatever its dataset's location.
        table = client.create_table(
            bigquery.Table(f"{dataset_id}.t", schema=[bigquery.SchemaField("x", "STRING")])
        )
        assert table.location == "US"
        with pytest.raises(Conflict, match="Already Exists"):
            client.create_dataset(dataset)
    finally:
        client.delete_dataset(dataset_id, delete_contents=True)


def test_csv_external_table_config_round_trip(
    client: bigquery.Client, dataset: str, txns: UploadedTable
) -> None:
    """Legacy mode's ``<t>_manifest``: CSV over ``.hoodie/manifest/*``, one STRING column."""
    from google.cloud import bigquery

    config = bigquery.ExternalConfig("CSV")
    config.source_uris = [f"{txns.uri}/.hoodie/manifest/*"]
    config.autodetect = False
    config.csv_options.skip_leading_rows = 0
    config.csv_options.field_delimiter = ","
    config.csv_options.quote_character = '"'
    table = bigquery.Table(
        f"{client.project}.{dataset}.txns_manifest",
        schema=[bigquery.SchemaField("filename", "STRING")],
    )
    table.external_data_configuration = config
    client.create_table(table)

    got = client.get_table(f"{dataset}.txns_manifest")
    assert got.external_data_configuration.to_api_repr() == {
        "sourceFormat": "CSV",
        "sourceUris": [f"{txns.uri}/.hoodie/manifest/*"],
        "autodetect": False,
        "csvOptions": {"skipLeadingRows": "0", "fieldDelimiter": ",", "quote": '"'},
    }
    assert got.external_data_configuration.source_uris == config.source_uris
    assert got.external_data_configuration.csv_options.skip_leading_rows == 0
    assert _schema(got) == [("filename", "STRING")]
    # Not a real external table: type TABLE, and it reads no files.
    assert got.table_type == "TABLE"
    assert _rows(client, f"SELECT count(*) FROM {dataset}.txns_manifest") == [(0,)]


def test_parquet_external_table_hive_options_round_trip(
    client: bigquery.Client, dataset: str, txns: UploadedTable
) -> None:
    """Legacy mode's ``<t>_versions``: PARQUET, autodetect, hive partitioning AUTO."""
    from google.api_core.exceptions import NotFound
    from google.cloud import bigquery

    config = bigquery.ExternalConfig("PARQUET")
    config.source_uris = [f"{txns.uri}/region=*"]
    config.autodetect = True
    config.hive_partitioning = _hive("AUTO", f"{txns.uri}/", require_filter=True)
    table = bigquery.Table(f"{client.project}.{dataset}.txns_versions")
    table.external_data_configuration = config
    client.create_table(table)

    got = client.get_table(f"{dataset}.txns_versions")
    stored = got.external_data_configuration
    assert stored.to_api_repr() == {
        "sourceFormat": "PARQUET",
        "sourceUris": [f"{txns.uri}/region=*"],
        "autodetect": True,
        "hivePartitioningOptions": {
            "mode": "AUTO",
            "sourceUriPrefix": f"{txns.uri}/",
            "requirePartitionFilter": True,
        },
    }
    assert stored.hive_partitioning.mode == "AUTO"
    assert stored.hive_partitioning.source_uri_prefix == f"{txns.uri}/"
    assert stored.hive_partitioning.require_partition_filter is True
    # autodetect infers nothing, so there is no schema and no queryable table at all.
    assert got.schema == []
    with pytest.raises(NotFound):
        client.query_and_wait(f"SELECT count(*) FROM {dataset}.txns_versions")

    # The configuration can be patched in place (e.g. new source URIs after a sync).
    stored.source_uris = [f"{txns.uri}/region=eu/*.parquet"]
    got.external_data_configuration = stored  # the getter returns a copy: set it back
    got.description = "versions"
    client.update_table(got, ["external_data_configuration", "description"])
    patched = client.get_table(f"{dataset}.txns_versions")
    assert patched.external_data_configuration.source_uris == [f"{txns.uri}/region=eu/*.parquet"]
    assert patched.external_data_configuration.hive_partitioning.require_partition_filter
    assert patched.description == "versions"


def test_manifest_file_set_external_table_round_trip(
    client: bigquery.Client, dataset: str, txns: UploadedTable
) -> None:
    """Manifest mode: PARQUET over an absolute-path manifest, ``fileSetSpecType`` set.

    The Python client has no attribute for ``fileSetSpecType``: set it in ``_properties``.
    """
    from google.cloud import bigquery

    config = bigquery.ExternalConfig("PARQUET")
    config.source_uris = [f"{txns.uri}/.hoodie/absolute-path-manifest/*"]
    config._properties["fileSetSpecType"] = MANIFEST_FILE_SET
    config.hive_partitioning = _hive("AUTO", f"{txns.uri}/", require_filter=False)
    parquet_options = bigquery.ParquetOptions()
    parquet_options.enable_list_inference = True
    config.parquet_options = parquet_options
    schema = [
        bigquery.SchemaField("_hoodie_file_name", "STRING"),
        bigquery.SchemaField("txn_id", "STRING"),
        bigquery.SchemaField("amount", "NUMERIC", precision=15, scale=2),
        bigquery.SchemaField("region", "STRING"),
    ]
    table = bigquery.Table(f"{client.project}.{dataset}.txns", schema=schema)
    table.external_data_configuration = config
    client.create_table(table)

    got = client.get_table(f"{dataset}.txns")
    assert got.external_data_configuration.to_api_repr() == {
        "sourceFormat": "PARQUET",
        "sourceUris": [f"{txns.uri}/.hoodie/absolute-path-manifest/*"],
        "fileSetSpecType": MANIFEST_FILE_SET,
        "hivePartitioningOptions": {
            "mode": "AUTO",
            "sourceUriPrefix": f"{txns.uri}/",
            "requirePartitionFilter": False,
        },
        "parquetOptions": {"enableListInference": True},
    }
    assert _schema(got) == [
        ("_hoodie_file_name", "STRING"),
        ("txn_id", "STRING"),
        ("amount", "NUMERIC"),
        ("region", "STRING"),
    ]
    assert (got.schema[2].precision, got.schema[2].scale) == (15, 2)
    assert got.table_type == "TABLE"
    assert _rows(client, f"SELECT count(*) FROM {dataset}.txns") == [(0,)]  # reads no files


def test_external_table_ddl_is_not_supported(
    client: bigquery.Client, dataset: str, txns: UploadedTable
) -> None:
    from google.api_core.exceptions import BadRequest, NotFound

    options = f'OPTIONS(format="PARQUET", uris=["{txns.uri}/region=*"])'
    with pytest.raises(BadRequest, match="syntax error"):
        client.query_and_wait(f"CREATE OR REPLACE EXTERNAL TABLE {dataset}.ddl {options}")
    with pytest.raises(BadRequest, match="Syntax error: Unexpected EXTERNAL"):
        client.query_and_wait(
            f"CREATE OR REPLACE EXTERNAL TABLE {dataset}.ddl WITH PARTITION COLUMNS {options}"
        )
    with pytest.raises(NotFound):
        client.get_table(f"{dataset}.ddl")


def test_parquet_load_with_hive_partitioning(
    client: bigquery.Client, dataset: str, txns: UploadedTable
) -> None:
    """A load job from explicit gs:// URIs reads the uploaded files: rows equal pyarrow's."""
    table_id = f"{client.project}.{dataset}.txns_versions"
    job = _load_parquet(client, txns.file_uris(), table_id, _hive("AUTO", f"{txns.uri}/"))

    assert job.output_rows == txns.rows() == 40
    assert job.input_files == 17
    assert job.source_uris == txns.file_uris()
    hive = job.configuration.hive_partitioning  # as stored by the emulator
    assert (hive.mode, hive.source_uri_prefix) == ("AUTO", f"{txns.uri}/")
    table = client.get_table(table_id)
    assert table.num_rows == 40
    schema = dict(_schema(table))
    assert list(schema).count("region") == 1  # in the files and in the path: one column
    assert schema["region"] == "STRING"
    assert schema["_hoodie_file_name"] == "STRING"
    assert schema["amount"] == "NUMERIC" and schema["txn_datetime"] == "TIMESTAMP"
    assert (
        dict(_rows(client, f"SELECT region, count(*) FROM {dataset}.txns_versions GROUP BY 1"))
        == txns.rows_by_region()
        == {"apac": 10, "eu": 15, "us": 15}
    )
    # WRITE_TRUNCATE replaces, the default (WRITE_APPEND) appends.
    eu = tuple(f for f in txns.files if f.startswith("region=eu/"))
    _load_parquet(
        client, txns.file_uris(eu), table_id, _hive("AUTO", f"{txns.uri}/"),
        write_disposition="WRITE_TRUNCATE",
    )  # fmt: skip
    assert _rows(client, f"SELECT count(*) FROM {dataset}.txns_versions") == [(15,)]
    _load_parquet(client, txns.file_uris(eu), table_id, _hive("AUTO", f"{txns.uri}/"))
    assert _rows(client, f"SELECT count(*) FROM {dataset}.txns_versions") == [(30,)]


def test_load_adds_hive_partition_columns_with_types(
    client: bigquery.Client,
    dataset: str,
    gcs_server: GcsStore,
    unpack_table: Any,
    tmp_path: Path,
) -> None:
    """Partition values come from the path, typed by mode; the source columns are dropped
    from the files here (pyarrow) so that only the path can supply them."""
    local = unpack_table(_fixture("sample_table/cow/v6_complexkeygen_hivestyle"))
    derived = tmp_path / "v6"
    for path in local.rglob("*.parquet"):
        target = derived / path.relative_to(local)
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pq.read_table(path).drop_columns(["byteField", "shortField"]), target)
    uri = gcs_server.upload_dir(derived, gcs_server.make_bucket(), "v6")
    expected = {(10, 300): 4, (20, 100): 1, (30, 100): 1}
    assert sum(expected.values()) == sum(
        pq.ParquetFile(p).metadata.num_rows for p in derived.rglob("*.parquet")
    )

    cases = {
        "auto": (_hive("AUTO", f"{uri}/"), ("INTEGER", "INTEGER"), int, int),
        "strings": (_hive("STRINGS", f"{uri}/"), ("STRING", "STRING"), str, str),
        "custom": (
            _hive("CUSTOM", f"{uri}/{{byteField:INTEGER}}/{{shortField:STRING}}"),
            ("INTEGER", "STRING"),
            int,
            str,
        ),
        # Quirk: without hive options at all, k=v path segments still become columns.
        "none": (None, ("INTEGER", "INTEGER"), int, int),
    }
    for name, (hive, types, byte_type, short_type) in cases.items():
        table_id = f"{client.project}.{dataset}.v6_{name}"
        _load_parquet(client, [f"{uri}/*.parquet"], table_id, hive)
        schema = dict(_schema(client.get_table(table_id)))
        assert (schema["byteField"], schema["shortField"]) == types, name
        rows = _rows(
            client,
            f"SELECT byteField, shortField, count(*) FROM {dataset}.v6_{name} GROUP BY ALL",
        )
        assert {(b, s): n for b, s, n in rows} == {
            (byte_type(b), short_type(s)): n for (b, s), n in expected.items()
        }, name


def test_load_source_uri_wildcards(
    client: bigquery.Client, dataset: str, txns: UploadedTable
) -> None:
    from google.api_core.exceptions import BadRequest

    # One `*` matches across "/" (as in GCS): every parquet file of the table.
    job = _load_parquet(
        client, [f"{txns.uri}/*.parquet"], f"{dataset}.all", _hive("AUTO", f"{txns.uri}/")
    )
    assert job.output_rows == txns.rows() and job.input_files == 17
    _load_parquet(client, [f"{txns.uri}/region=us/*.parquet"], f"{dataset}.us", None)
    # ...but `region=*` also matches `.hoodie_partition_metadata`, which is not parquet.
    with pytest.raises(BadRequest, match=r"No magic bytes.*\.hoodie_partition_metadata"):
        _load_parquet(
            client, [f"{txns.uri}/region=*"], f"{dataset}.bad", _hive("AUTO", f"{txns.uri}/")
        )
    assert _rows(client, f"SELECT count(*) FROM {dataset}.us") == [(txns.rows_by_region()["us"],)]


def test_csv_load_job(
    client: bigquery.Client,
    dataset: str,
    gcs_server: GcsStore,
    txns: UploadedTable,
    tmp_path: Path,
) -> None:
    """A headerless one-column CSV (a legacy manifest) loads every line, the first included."""
    from google.cloud import bigquery

    names = [rel.rsplit("/", 1)[-1] for rel in txns.latest_base_files()]
    manifest = _upload_text(
        gcs_server, tmp_path, f"{txns.uri}/.hoodie/manifest/latest-snapshot.csv",
        "\n".join(names) + "\n",
    )  # fmt: skip
    config = bigquery.LoadJobConfig(
        source_format="CSV",
        schema=[bigquery.SchemaField("filename", "STRING")],
        skip_leading_rows=0,
    )
    job = client.load_table_from_uri([manifest], f"{dataset}.manifest", job_config=config)
    job.result()
    assert job.output_rows == len(names) == 12
    rows = _rows(client, f"SELECT filename FROM {dataset}.manifest ORDER BY filename")
    assert rows == [(name,) for name in sorted(names)]


def test_view_filters_versions_by_manifest(
    client: bigquery.Client,
    dataset: str,
    gcs_server: GcsStore,
    txns: UploadedTable,
    tmp_path: Path,
) -> None:
    """The legacy view over load-job copies of ``<t>_versions`` and ``<t>_manifest`` (the
    emulator's external tables read nothing) returns the rows of the manifest's files."""
    from google.cloud import bigquery

    latest = txns.latest_base_files()
    names = {rel.rsplit("/", 1)[-1] for rel in latest}
    manifest = _upload_text(
        gcs_server, tmp_path, f"{txns.uri}/.hoodie/manifest/latest-snapshot.csv",
        "\n".join(sorted(names)) + "\n",
    )  # fmt: skip
    project = client.project
    _load_parquet(
        client, txns.file_uris(), f"{dataset}.txns_versions", _hive("AUTO", f"{txns.uri}/")
    )
    client.load_table_from_uri(
        [manifest],
        f"{dataset}.txns_manifest",
        job_config=bigquery.LoadJobConfig(
            source_format="CSV", schema=[bigquery.SchemaField("filename", "STRING")]
        ),
    ).result()

    view = bigquery.Table(f"{project}.{dataset}.txns")
    view.view_query = (
        f"SELECT * FROM `{project}.{dataset}.txns_versions` WHERE _hoodie_file_name IN "
        f"(SELECT filename FROM `{project}.{dataset}.txns_manifest`)"
    )
    created = client.create_table(view)
    assert created.table_type == "VIEW"
    assert client.get_table(f"{dataset}.txns").view_query == view.view_query
    expected = txns.rows_with_file_name_in(names)
    assert expected == txns.rows(latest) == 26  # each row names the file it is in
    assert _rows(client, f"SELECT count(*) FROM {dataset}.txns") == [(expected,)]
    by_region = dict(_rows(client, f"SELECT region, count(*) FROM {dataset}.txns GROUP BY 1"))
    assert by_region == txns.rows_by_region(latest)

    # CREATE OR REPLACE VIEW through a query job works, and replaces.
    ddl = (
        f"CREATE OR REPLACE VIEW `{project}.{dataset}.txns` AS SELECT txn_id, region "
        f"FROM `{project}.{dataset}.txns_versions` WHERE _hoodie_file_name IN "
        f"(SELECT filename FROM `{project}.{dataset}.txns_manifest`) AND region = 'eu'"
    )
    assert _rows(client, ddl) == []
    replaced = client.get_table(f"{dataset}.txns")
    assert replaced.table_type == "VIEW"
    assert _schema(replaced) == [("txn_id", "STRING"), ("region", "STRING")]
    assert replaced.view_query == ddl.split(" AS ", 1)[1]
    eu = txns.rows_by_region(latest)["eu"]
    assert _rows(client, f"SELECT count(*) FROM {dataset}.txns") == [(eu,)]
    # ...also inside a multi-statement transaction.
    _rows(
        client,
        f"BEGIN TRANSACTION; CREATE OR REPLACE VIEW {dataset}.txns AS "
        f"SELECT 1 AS one; COMMIT TRANSACTION;",
    )
    assert _rows(client, f"SELECT * FROM {dataset}.txns") == [(1,)]


def test_information_schema_tables(
    client: bigquery.Client, dataset: str, txns: UploadedTable
) -> None:
    from google.api_core.exceptions import BadRequest
    from google.cloud import bigquery

    _load_parquet(client, txns.file_uris()[:1], f"{dataset}.native", None)
    external = bigquery.Table(
        f"{client.project}.{dataset}.external", schema=[bigquery.SchemaField("x", "STRING")]
    )
    config = bigquery.ExternalConfig("PARQUET")
    config.source_uris = [f"{txns.uri}/*.parquet"]
    external.external_data_configuration = config
    client.create_table(external)
    _rows(client, f"CREATE VIEW {dataset}.view AS SELECT 1 AS x")

    sql = f"SELECT table_name, table_type FROM {dataset}.INFORMATION_SCHEMA.TABLES ORDER BY 1"
    # Quirk: an external table is a BASE TABLE here (BigQuery says EXTERNAL).
    expected = [("external", "BASE TABLE"), ("native", "BASE TABLE"), ("view", "VIEW")]
    assert _rows(client, sql) == expected
    qualified = sql.replace(f"{dataset}.", f"`{client.project}`.{dataset}.")
    assert _rows(client, qualified) == expected
    assert sorted((t.table_id, t.table_type) for t in client.list_tables(dataset)) == [
        ("external", "TABLE"),
        ("native", "TABLE"),
        ("view", "VIEW"),
    ]
    columns = _rows(
        client,
        f"SELECT column_name, data_type FROM {dataset}.INFORMATION_SCHEMA.COLUMNS "
        "WHERE table_name = 'view'",
    )
    assert columns == [("x", "INT64")]
    with pytest.raises(BadRequest, match="Unrecognized name: ddl"):
        client.query_and_wait(f"SELECT ddl FROM {dataset}.INFORMATION_SCHEMA.TABLES")


def test_patch_labels_and_description(
    client: bigquery.Client, dataset: str, txns: UploadedTable
) -> None:
    from google.cloud import bigquery

    _rows(client, f"CREATE VIEW {dataset}.v AS SELECT 1 AS x")
    external = bigquery.Table(f"{client.project}.{dataset}.ext")
    config = bigquery.ExternalConfig("PARQUET")
    config.source_uris = [f"{txns.uri}/*.parquet"]
    external.external_data_configuration = config
    client.create_table(external)

    for table_id in (f"{dataset}.v", f"{dataset}.ext"):
        table = client.get_table(table_id)
        table.labels = {"hudi_sync": "v1", "last_commit": "20260307162456179"}
        table.description = "Hudi table txns"
        client.update_table(table, ["labels", "description"])
        got = client.get_table(table_id)
        assert got.labels == {"hudi_sync": "v1", "last_commit": "20260307162456179"}
        assert got.description == "Hudi table txns"
        got.labels = {"hudi_sync": None, "last_commit": "20260307162458263"}  # None deletes
        client.update_table(got, ["labels"])
        again = client.get_table(table_id)
        assert again.labels == {"last_commit": "20260307162458263"}
        assert again.description == "Hudi table txns"
    assert client.get_table(f"{dataset}.ext").external_data_configuration.source_uris == [
        f"{txns.uri}/*.parquet"
    ]
    options = _rows(
        client,
        f"SELECT table_name, option_name, option_value "
        f"FROM {dataset}.INFORMATION_SCHEMA.TABLE_OPTIONS WHERE option_name = 'labels' "
        "ORDER BY 1",
    )
    assert options == [
        ("ext", "labels", '[STRUCT("last_commit", "20260307162458263")]'),
        ("v", "labels", '[STRUCT("last_commit", "20260307162458263")]'),
    ]


def test_table_ids_with_quotes_are_rejected(client: bigquery.Client, dataset: str) -> None:
    from google.api_core.exceptions import BadRequest
    from google.cloud import bigquery

    schema = [bigquery.SchemaField("x", "STRING")]
    for bad in ("a`b", "a'b", 'a"b', "a$b"):
        with pytest.raises(BadRequest, match=re.escape(f'Invalid table ID "{bad}"')):
            client.create_table(bigquery.Table(f"{client.project}.{dataset}.{bad}", schema))
    with pytest.raises(BadRequest, match="Invalid table ID"):
        client.query_and_wait(f"CREATE TABLE `{client.project}.{dataset}.a\\`b` (x STRING)")
    # Dashes and spaces are accepted (as by BigQuery's flexible table names), quoted in SQL.
    for ok in ("a-b", "a b"):
        client.create_table(bigquery.Table(f"{client.project}.{dataset}.{ok}", schema))
        _rows(client, f"INSERT INTO `{client.project}.{dataset}.{ok}` (x) VALUES ('1')")
        assert _rows(client, f"SELECT x FROM `{client.project}.{dataset}.{ok}`") == [("1",)]


def test_no_file_name_pseudo_column(
    client: bigquery.Client,
    dataset: str,
    gcs_server: GcsStore,
    txns: UploadedTable,
    tmp_path: Path,
) -> None:
    """No ``_FILE_NAME``: neither in queries nor as a load-job column; and a load job ignores
    ``fileSetSpecType`` (it reads the manifest itself as parquet)."""
    from google.api_core.exceptions import BadRequest
    from google.cloud import bigquery

    _load_parquet(client, txns.file_uris()[:1], f"{dataset}.native", None)
    with pytest.raises(BadRequest, match="Unrecognized name: _FILE_NAME"):
        client.query_and_wait(f"SELECT _FILE_NAME FROM {dataset}.native")
    schema = [
        bigquery.SchemaField("txn_id", "STRING"),
        bigquery.SchemaField("_FILE_NAME", "STRING"),
    ]
    with pytest.raises(BadRequest, match="_FILE_NAME"):
        _load_parquet(client, txns.file_uris(), f"{dataset}.named", None, schema=schema)
    # An explicit schema that is a subset of the file's columns does load.
    subset = [bigquery.SchemaField("txn_id", "STRING"), bigquery.SchemaField("amount", "NUMERIC")]
    job = _load_parquet(client, txns.file_uris(), f"{dataset}.subset", None, schema=subset)
    assert job.output_rows == txns.rows()
    assert _schema(client.get_table(f"{dataset}.subset")) == [
        ("txn_id", "STRING"),
        ("amount", "NUMERIC"),
    ]

    manifest = _upload_text(
        gcs_server, tmp_path, f"{txns.uri}/.hoodie/absolute-path-manifest/latest-snapshot.csv",
        "\n".join(txns.file_uris()) + "\n",
    )  # fmt: skip
    config = bigquery.LoadJobConfig(source_format="PARQUET")
    config._properties["load"]["fileSetSpecType"] = MANIFEST_FILE_SET
    with pytest.raises(BadRequest, match=r"No magic bytes.*latest-snapshot\.csv"):
        client.load_table_from_uri([manifest], f"{dataset}.m", job_config=config).result()


def test_fixture_upload_is_what_load_jobs_read(gcs_server: GcsStore, txns: UploadedTable) -> None:
    """GCS_LOCAL_ROOT is fake-gcs-server's filesystem root: objects are plain files there."""
    bucket, prefix = txns.uri.removeprefix("gs://").split("/", 1)
    stored = gcs_server.root / bucket / prefix
    for rel in txns.files:
        assert (stored / rel).read_bytes() == (txns.local / rel).read_bytes()
