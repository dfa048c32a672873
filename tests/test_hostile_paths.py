"""Paths are never patterns: a table whose base path or partition folders hold glob
characters is read exactly, never with a sibling a glob would match; where a target has
no way to say such a path literally, the sync is refused in one line before anything is
created.

Each hostile base has a sibling the unescaped pattern matches (``t*`` and ``t_backup``,
``glob[ab]`` and ``globa``): the sibling is a copy of the same table, so a view that read
it shows every row twice.
"""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest

from hudi_sync.errors import BadInputError
from hudi_sync.sync.job import sync_table
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.bigquery import BigQuerySyncConfig, BigQueryTarget
from hudi_sync.warehouse.duckdb import SOURCE_FILE_COLUMN, DuckDBTarget, glob_literal
from tests.fixture_tables import fixture_tables
from tests.frames import rows_frame
from tests.objectstores import GcsStore
from tests.test_bigquery_target import _maps_as_dicts
from tests.warehouse_rows import canonical, hudi_rs_rows, same_columns

# Hostile base folder -> a sibling folder its unescaped glob matches (or, for braces and
# spaces, which DuckDB's glob does not expand, a name that differs only there).
HOSTILE = {
    "t*": "t_backup",
    "t?": "tx",
    "glob[ab]": "globa",
    "set{x,y}": "setx",
    "with space": "with_space",
}
COW = "sample_table/cow/v8_complexkeygen_hivestyle"  # hive partitions
MOR = "quickstart_trips_table/mor/avro/v6_trips_8i1u"  # log files: the _rt objects
MODES = pytest.mark.parametrize("delta_commits", [0, 3], ids=["full", "delta"])


def _fixture(name: str) -> Any:
    (found,) = [t for t in fixture_tables() if t.name == name]
    return found


def _view_rows(database: Path, view: str) -> Any:
    with duckdb.connect(str(database)) as con:
        con.execute("SET TimeZone = 'UTC'")
        return con.sql(f'SELECT * FROM "{view}"').to_arrow_table()


def _assert_same_rows(ours: Any, theirs: Any) -> None:
    ours, theirs = same_columns(ours, theirs)
    assert theirs.num_rows > 0
    assert canonical(ours) == canonical(theirs)


@pytest.mark.parametrize("hostile", list(HOSTILE), ids=list(HOSTILE))
def test_glob_literal_matches_the_path_alone_in_duckdb(hostile: str, tmp_path: Path) -> None:
    """DuckDB's glob reads ``[c]`` as the character ``c``: the escaped path matches its
    own folder and never the sibling the raw path would."""
    for i, folder in enumerate((hostile, HOSTILE[hostile])):
        (tmp_path / folder).mkdir()
        duckdb.sql(f"COPY (SELECT {i} AS v) TO '{tmp_path / folder / 'f.parquet'}'")
    pattern = glob_literal(str(tmp_path / hostile)) + "/*.parquet"
    rows = duckdb.execute("SELECT v FROM read_parquet(?)", [pattern]).fetchall()
    assert rows == [(0,)]


# Delta mode reads the base snapshot's ``uris.csv`` as CSV: a comma in the base path
# is the manifest encoding's concern (CSV-breaking characters), not a pattern's.
BASE_CASES = [
    pytest.param(hostile, fixture, delta, id=f"{hostile}-{kind}-{'delta' if delta else 'full'}")
    for hostile in HOSTILE
    for fixture, kind in ((COW, "cow"), (MOR, "mor"))
    for delta in (0, 3)
    if not (delta and "," in hostile)
]


@pytest.mark.parametrize(("hostile", "fixture", "delta_commits"), BASE_CASES)
def test_duckdb_views_read_a_hostile_base_path_and_never_its_sibling(
    hostile: str, fixture: str, delta_commits: int, unpack_table: Any, tmp_path: Path
) -> None:
    source = unpack_table(_fixture(fixture))
    path = tmp_path / hostile
    shutil.copytree(source, path)
    shutil.copytree(source, tmp_path / HOSTILE[hostile])
    database = tmp_path / "warehouse.duckdb"
    report = sync_table(str(path), [DuckDBTarget(str(database), "t")], delta_commits=delta_commits)
    assert [r.action for r in report.results] == ["create"]
    mor = HudiTable.open(str(path)).config.is_mor
    views = {"t_ro": True, "t_rt": False} if mor else {"t": False}
    for view, read_optimized in views.items():
        expected = hudi_rs_rows(str(source), read_optimized=read_optimized)
        _assert_same_rows(_view_rows(database, view), expected)
    # Every file the history reads is the table's own (a sibling copy has the same rows).
    with duckdb.connect(str(database)) as con:
        read = con.execute(f'SELECT DISTINCT "{SOURCE_FILE_COLUMN}" FROM t_history').fetchall()
    assert read and all(f.startswith(f"{path}/") for (f,) in read)


def test_duckdb_refuses_a_local_base_path_with_a_backslash(
    unpack_table: Any, tmp_path: Path
) -> None:
    """DuckDB's glob matches no local path holding a backslash, escaped or not."""
    path = tmp_path / "back\\slash"
    shutil.copytree(unpack_table(_fixture(COW)), path)
    database = tmp_path / "warehouse.duckdb"
    with pytest.raises(BadInputError) as raised:
        sync_table(str(path), [DuckDBTarget(str(database), "t")])
    message = str(raised.value)
    assert "\n" not in message and str(path) in message and "'\\'" in message
    assert not database.exists()


# -- partition folders -------------------------------------------------------------------
# No comma: CSV-breaking characters in manifests are the manifest encoding's concern.
PARTITION_VALUES = ["a*", "ab", "a?", "[ab]", "a", "{x}", "x", "sp ace"]


def _write_partitions(spark: Any, path: Path, values: list[str]) -> None:
    from hudi_sync.spark import write

    rows = [(i, value, f"n{i}", 1) for i, value in enumerate(values)]
    frame = rows_frame(spark, rows, "id int, p string, name string, ts long")
    options = {
        "hoodie.table.name": "hostile",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.operation": "insert",
    }
    write(frame, str(path), options)


@MODES
def test_duckdb_reads_partition_folders_with_glob_characters_exactly(
    spark: Any, tmp_path: Path, delta_commits: int
) -> None:
    """Hive folders ``p=a*``, ``p=a?``, ``p=[ab]`` beside ``p=ab``, ``p=a``: each row once."""
    path = tmp_path / "parts"
    _write_partitions(spark, path, PARTITION_VALUES)
    database = tmp_path / "warehouse.duckdb"
    sync_table(str(path), [DuckDBTarget(str(database), "t")], delta_commits=delta_commits)
    rows = _view_rows(database, "t")
    assert sorted(zip(rows["id"].to_pylist(), rows["p"].to_pylist(), strict=True)) == list(
        enumerate(PARTITION_VALUES)
    )
    _assert_same_rows(rows, hudi_rs_rows(str(path)))


def test_duckdb_refuses_a_local_partition_folder_with_a_backslash(
    spark: Any, tmp_path: Path
) -> None:
    """A ``p=a\\b`` folder would silently drop out of the history: refused, named."""
    path = tmp_path / "parts"
    _write_partitions(spark, path, ["a", "a\\b"])
    database = tmp_path / "warehouse.duckdb"
    with pytest.raises(BadInputError) as raised:
        sync_table(str(path), [DuckDBTarget(str(database), "t")])
    message = str(raised.value)
    assert "\n" not in message and "p=a\\b" in message
    assert not database.exists()


# -- BigQuery ----------------------------------------------------------------------------
NON_HIVE = "sample_table/cow/v8_simplekeygen_nonhivestyle"


def _bigquery(client: Any, dataset: str) -> BigQueryTarget:
    config = BigQuerySyncConfig.from_options(
        {"project_id": client.project, "dataset_name": dataset, "table_name": "t"}
    )
    return BigQueryTarget(config, client)


def _upload_pair(gcs: GcsStore, local: Path, hostile: str) -> tuple[str, str]:
    bucket = gcs.make_bucket()
    table = gcs.upload_dir(local, bucket, f"lake/{hostile}")
    sibling = gcs.upload_dir(local, bucket, f"lake/{HOSTILE[hostile]}")
    return table, sibling


def _bigquery_matches(uri: str, objects: list[str]) -> list[str]:
    """The objects a source URI names as BigQuery reads it: ``*`` (at most one) is any
    run of characters, ``/`` included; every other character is itself."""
    assert uri.count("*") <= 1
    pattern = re.compile(".*".join(map(re.escape, uri.split("*"))))
    return [o for o in objects if pattern.fullmatch(o)]


def _materialise_as_bigquery(client: Any, table_id: str, objects: list[str], gcs: GcsStore) -> None:
    """Replace an external table by a native one holding the rows of the objects its
    source URIs match by BigQuery's rule. The emulator's own load jobs cannot: they hand
    the matched paths to DuckDB, which globs ``[`` and ``?`` again. Each file is loaded
    from its bytes instead."""
    from google.cloud import bigquery

    table = client.get_table(table_id)
    external = dict(table.external_data_configuration.to_api_repr())
    assert "hivePartitioningOptions" not in external
    matched = sorted({o for u in external["sourceUris"] for o in _bigquery_matches(u, objects)})
    assert matched, external["sourceUris"]
    # As ``materialise``: the emulator's parquet load fails on an explicit BYTES column.
    has_bytes = any(f.field_type == "BYTES" for f in table.schema)
    config = bigquery.LoadJobConfig(
        source_format=external["sourceFormat"],
        schema=None if has_bytes else table.schema,
        write_disposition="WRITE_APPEND",
    )
    if external["sourceFormat"] == "CSV":
        config.skip_leading_rows = 0
        config.field_delimiter = external["csvOptions"].get("fieldDelimiter", ",")
        config.quote_character = external["csvOptions"].get("quote", '"')
    client.delete_table(table_id)
    fs = gcs.fs()
    for uri in matched:
        data = io.BytesIO(fs.cat_file(uri))
        client.load_table_from_file(data, table_id, job_config=config).result()


@pytest.mark.parametrize("hostile", [h for h in HOSTILE if "*" not in h], ids=str)
def test_bigquery_source_uris_name_a_hostile_base_literally(
    hostile: str, unpack_table: Any, gcs_server: GcsStore, client: Any, dataset: str
) -> None:
    """BigQuery reads only ``*`` as a wildcard: ``?``, ``[ab]``, braces and spaces stay
    in the URIs as they are, each URI has one ``*``, and the views show the table's rows,
    none of the sibling's."""
    local = unpack_table(_fixture(NON_HIVE))
    uri, sibling = _upload_pair(gcs_server, local, hostile)
    table = HudiTable.open(uri, gcs_server.storage_options)
    report = sync_table(table, [_bigquery(client, dataset)])
    assert [r.action for r in report.results] == ["create"]
    objects = sorted(f"gs://{p}" for p in gcs_server.fs().find(uri.rsplit("/", 2)[0]))
    stem = f"{client.project}.{dataset}.t"
    for table_id in (f"{stem}_history", f"{stem}_manifest"):
        uris = dict(client.get_table(table_id).external_data_configuration.to_api_repr())
        for source in uris["sourceUris"]:
            assert source.startswith(uri + "/") and source.count("*") <= 1
            assert not [o for o in _bigquery_matches(source, objects) if o.startswith(sibling)]
        _materialise_as_bigquery(client, table_id, objects, gcs_server)
    rows = client.query_and_wait(f"SELECT * FROM `{stem}`").to_arrow()
    ours, theirs = same_columns(rows, hudi_rs_rows(str(local)))
    assert theirs.num_rows > 0
    normalise = _maps_as_dicts(theirs)  # BigQuery has no map type
    assert canonical(ours, normalise) == canonical(theirs, normalise)


def test_bigquery_refuses_a_base_with_a_wildcard_before_creating_anything(
    unpack_table: Any, gcs_server: GcsStore, client: Any, dataset: str
) -> None:
    local = unpack_table(_fixture(NON_HIVE))
    uri, _ = _upload_pair(gcs_server, local, "t*")
    table = HudiTable.open(uri, gcs_server.storage_options)
    with pytest.raises(BadInputError) as raised:
        sync_table(table, [_bigquery(client, dataset)])
    message = str(raised.value)
    assert "\n" not in message and uri in message and "'*'" in message
    assert [d.dataset_id for d in client.list_datasets()].count(dataset) == 0


def test_bigquery_refuses_a_top_level_folder_starting_with_a_wildcard(
    unpack_table: Any, gcs_server: GcsStore, client: Any, dataset: str
) -> None:
    """The history's URIs are ``<base>/<first character>*.parquet``: a folder ``*x``
    would need a second wildcard. Refused, naming the folder."""
    local = unpack_table(_fixture(NON_HIVE))
    uri, _ = _upload_pair(gcs_server, local, "glob[ab]")
    gcs_server.fs().pipe(f"{uri}/*x/stray.txt", b"not a base file")
    table = HudiTable.open(uri, gcs_server.storage_options)
    with pytest.raises(BadInputError) as raised:
        sync_table(table, [_bigquery(client, dataset)])
    message = str(raised.value)
    assert "\n" not in message and f"{uri}/*x" in message
    assert [d.dataset_id for d in client.list_datasets()].count(dataset) == 0


def test_bigquery_refuses_braces_in_a_hive_partitioned_base(
    unpack_table: Any, gcs_server: GcsStore, client: Any, dataset: str
) -> None:
    """A hive sourceUriPrefix spells partition keys in braces: a brace in the base
    would be read as one."""
    local = unpack_table(_fixture(COW))
    uri, _ = _upload_pair(gcs_server, local, "set{x,y}")
    table = HudiTable.open(uri, gcs_server.storage_options)
    with pytest.raises(BadInputError) as raised:
        sync_table(table, [_bigquery(client, dataset)])
    message = str(raised.value)
    assert "\n" not in message and uri in message and "'{'" in message
    assert [d.dataset_id for d in client.list_datasets()].count(dataset) == 0
