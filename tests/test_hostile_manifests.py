"""Hostile partition folders and file names against the manifests (issue 38, items 2, 3,
6 and 7), and the writer's partition-path rule.

Each table is real (parquet and timeline files written by the Spark writer; where the
writer now refuses the value, a folder or file renamed on disk as an attacker with
write access to the storage would). After each sync the manifests must hold exactly the
snapshot's files (the table core's listing and hudi-rs agree on them) and the views show
each key once with its latest value; or the input is refused in one line and nothing
is written (no manifest file, no warehouse object).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession

from hudi_sync.errors import BadInputError, CorruptTableError, UnsupportedTableError
from hudi_sync.manifest.snapshot import build_manifest
from hudi_sync.spark import read, write
from hudi_sync.sync.job import sync_table
from hudi_sync.table import HudiTable
from hudi_sync.table.keys.partition_encoding import escape_value
from hudi_sync.warehouse.duckdb import DuckDBTarget
from tests.frames import rows_frame
from tests.hudi_oracle import slices
from tests.warehouse_rows import canonical, hudi_rs_rows, same_columns

SCHEMA = "id int, p string, name string, ts long"
MODES = pytest.mark.parametrize("delta_commits", [0, 2], ids=["full", "delta"])
URL_ENCODE = "hoodie.datasource.write.partitionpath.urlencode"


def _options(**extra: object) -> dict[str, object]:
    return {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.operation": "upsert",
        **extra,
    }


def _frame(spark: SparkSession, rows: list[tuple[Any, ...]]) -> DataFrame:
    return rows_frame(spark, rows, SCHEMA)


def _write(spark: SparkSession, path: Path, rows: list[tuple[Any, ...]], **extra: object) -> None:
    write(_frame(spark, rows), str(path), _options(**extra))


def _snapshot_names(path: Path) -> list[str]:
    """The snapshot's base file names by the table core, checked against hudi-rs."""
    ours = build_manifest(HudiTable.open(str(path))).names()
    theirs = sorted(s["base_file"] for s in slices(str(path)) if s["base_file"])
    assert ours == theirs
    return ours


def _duckdb_state(database: Path, view: str = "t") -> tuple[list[str], pa.Table]:
    """The file names the manifest view lists and the view's rows."""
    with duckdb.connect(str(database)) as con:
        con.execute("SET TimeZone = 'UTC'")
        listed = [r[0] for r in con.execute("SELECT filename FROM t_manifest").fetchall()]
        rows = con.sql(f'SELECT * FROM "{view}"').to_arrow_table()
    return sorted(listed), rows


def _assert_view_is_the_snapshot(path: Path, database: Path) -> None:
    listed, rows = _duckdb_state(database)
    assert listed == _snapshot_names(path)
    keys = rows.column("_hoodie_record_key").to_pylist()
    assert len(keys) == len(set(keys))
    ours, theirs = same_columns(rows, hudi_rs_rows(str(path)))
    assert canonical(ours) == canonical(theirs)


def _views(database: Path) -> list[str]:
    if not database.exists():
        return []
    with duckdb.connect(str(database)) as con:
        return [
            r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal")
        ]


def _assert_refused_and_nothing_written(
    path: Path, database: Path, delta_commits: int, error: type[Exception], named: str
) -> None:
    target = DuckDBTarget(str(database), "t")
    with pytest.raises(error) as caught:
        sync_table(str(path), [target], delta_commits=delta_commits)
    message = str(caught.value)
    assert "\n" not in message and repr(named) in message, message
    assert not (path / ".hoodie" / "manifest").exists()
    assert _views(database) == []


# -- CSV-special characters a manifest line can carry ----------------------------------


@MODES
def test_comma_and_quote_in_a_partition_sync_and_show_the_latest_values(  # type: ignore[no-untyped-def]
    spark, tmp_path, delta_commits
) -> None:
    """A partition ``p,"q`` (written by the writer: no control character) broke DuckDB's
    CSV reader in delta mode ("unterminated quote") and the next derivation's read of
    ``uris.csv`` in full mode."""
    path, database = tmp_path / "t", tmp_path / "w.duckdb"
    hostile = 'p,"q'
    commits = [
        [(1, hostile, "one", 1), (2, hostile, "two", 1), (3, "a", "three", 1)],
        [(1, hostile, "one-v2", 2), (3, "a", "three-v2", 2)],
        [(2, hostile, "two-v2", 3), (4, hostile, "four", 3)],
    ]
    for rows in commits:
        _write(spark, path, rows)
        report = sync_table(
            str(path), [DuckDBTarget(str(database), "t")], delta_commits=delta_commits
        )
        assert report.ok
        _assert_view_is_the_snapshot(path, database)
    assert (path / hostile).is_dir()
    latest = {r["id"]: r["name"] for r in hudi_rs_rows(str(path)).to_pylist()}
    assert latest == {1: "one-v2", 2: "two-v2", 3: "three-v2", 4: "four"}


# -- Control characters in partition folders: refused, nothing written ------------------


def _table_with_a_superseded_file(spark: SparkSession, path: Path) -> str:
    """Partition ``10`` with two versions of its file group; the older one's name."""
    _write(spark, path, [(1, "10", "old", 1), (2, "10", "old", 1)])
    first = {p.name for p in (path / "10").glob("*.parquet")}
    _write(spark, path, [(1, "10", "new", 2), (2, "10", "new", 2)])
    (old,) = first - set(_snapshot_names(path))
    return old


def _rename_partition(path: Path, source: str, hostile: str) -> None:
    (path / hostile).parent.mkdir(parents=True, exist_ok=True)
    os.rename(path / source, path / hostile)


@MODES
@pytest.mark.parametrize("kind", ["newline", "carriage-return", "tab"])
def test_control_character_in_a_partition_folder_is_refused(  # type: ignore[no-untyped-def]
    spark, tmp_path, delta_commits, kind
) -> None:
    """A folder ``10/<a superseded file's name>\\n10`` made ``uris.csv`` list the stale
    file (the delta-mode view showed its keys twice, with old values); ``\\r`` broke
    DuckDB's CSV reader; a tab cut BigQuery's delta rows. Refused in one line naming the
    partition, before any manifest file is written."""
    path, database = tmp_path / "t", tmp_path / "w.duckdb"
    old = _table_with_a_superseded_file(spark, path)
    _write(spark, path, [(3, "PH", "x", 3)])
    hostile = {"newline": f"10/{old}\n10", "carriage-return": "p\rq", "tab": "p\tq"}[kind]
    _rename_partition(path, "PH", hostile)
    _assert_refused_and_nothing_written(
        path, database, delta_commits, UnsupportedTableError, hostile
    )


@MODES
def test_newline_in_a_base_file_id_is_refused(spark, tmp_path, delta_commits) -> None:  # type: ignore[no-untyped-def]
    """A file ``10/zzz\\n<a superseded file's name>`` (a file id holding a newline) made
    ``files.csv`` list the superseded file: no Hudi file has such a name; refused naming it."""
    path, database = tmp_path / "t", tmp_path / "w.duckdb"
    old = _table_with_a_superseded_file(spark, path)
    (current,) = _snapshot_names(path)
    hostile = f"zzz\n{old}"
    shutil.copyfile(path / "10" / current, path / "10" / hostile)
    _assert_refused_and_nothing_written(
        path, database, delta_commits, CorruptTableError, f"10/{hostile}"
    )


# -- The writer: Hudi's urlencode, or refusal --------------------------------------------

HOSTILE_VALUES = ["x\ny", 'p,"q', "a/b", "t\tab", "c\rr", "50%", "k=v:w"]


@MODES
def test_url_encoded_partitions_round_trip(spark, tmp_path, delta_commits) -> None:  # type: ignore[no-untyped-def]
    """With urlencode=true each value is escaped as Hudi's PartitionPathEncodeUtils does,
    the option is stored in hoodie.properties and kept by later writes; hudi-rs reads the
    rows back, and every target mode lists exactly the snapshot."""
    path, database = tmp_path / "t", tmp_path / "w.duckdb"
    first = [(i, v, f"n{i}", 1) for i, v in enumerate(HOSTILE_VALUES)] + [(99, None, "null", 1)]
    _write(spark, path, first, **{URL_ENCODE: "true"})
    sync_table(str(path), [DuckDBTarget(str(database), "t")], delta_commits=delta_commits)
    properties = (path / ".hoodie" / "hoodie.properties").read_text()
    assert f"{URL_ENCODE}=true" in properties.splitlines()
    folders = {p.name for p in path.iterdir() if not p.name.startswith(".")}
    expected_folders = {escape_value(v) for v in HOSTILE_VALUES} | {"__HIVE_DEFAULT_PARTITION__"}
    assert folders == expected_folders
    assert "x%0Ay" in folders and "a%2Fb" in folders and "50%25" in folders
    assert "p,%22q" in folders and "k%3Dv%3Aw" in folders
    # A later write without the option keeps the table's encoding.
    write(_frame(spark, [(0, "x\ny", "n0-v2", 2), (2, "a/b", "n2-v2", 2)]), str(path), _options())
    assert {p.name for p in path.iterdir() if not p.name.startswith(".")} == expected_folders
    report = sync_table(str(path), [DuckDBTarget(str(database), "t")], delta_commits=delta_commits)
    assert report.ok
    _assert_view_is_the_snapshot(path, database)
    theirs = sorted(
        (r["id"], r["p"], r["name"], r["ts"]) for r in hudi_rs_rows(str(path)).to_pylist()
    )
    ours = sorted((r["id"], r["p"], r["name"], r["ts"]) for r in read(spark, str(path)).collect())
    assert ours == theirs
    assert (0, "x\ny", "n0-v2", 2) in theirs and (2, "a/b", "n2-v2", 2) in theirs
    stored = {r["_hoodie_partition_path"] for r in hudi_rs_rows(str(path)).to_pylist()}
    assert stored == expected_folders
    # Saying otherwise than the table is refused.
    with pytest.raises(BadInputError, match=rf"{URL_ENCODE}=false \(table: true\)"):
        _write(spark, path, [(0, "x", "n", 3)], **{URL_ENCODE: "false"})


def test_control_characters_in_partition_values_are_refused_without_url_encoding(  # type: ignore[no-untyped-def]
    spark, tmp_path
) -> None:
    """Without urlencode a value holding a control character would make a folder no
    manifest can list: refused in one line naming the partition path, before the
    timeline is touched (a new table, and an existing one)."""
    path = tmp_path / "t"
    for value in ("x\ny", "c\rr", "t\tab"):
        with pytest.raises(BadInputError) as caught:
            _write(spark, path, [(1, value, "n", 1)])
        message = str(caught.value)
        assert "\n" not in message and repr(value) in message and URL_ENCODE in message
    table = HudiTable.open(str(path))
    assert not table.timeline.instants
    _write(spark, path, [(1, "fine", "n", 1)])
    with pytest.raises(BadInputError, match="holds a control character"):
        _write(spark, path, [(2, "a\nb", "n", 2), (3, "fine", "n", 2)])
    assert len(HudiTable.open(str(path)).timeline.instants) == 1
    assert sorted(p.name for p in path.iterdir() if not p.name.startswith(".")) == ["fine"]


def test_a_partition_value_that_would_leave_the_table_is_refused(  # type: ignore[no-untyped-def]
    spark, tmp_path
) -> None:
    """A partition path is built from the rows' values: ``..`` (url-encoding keeps dots)
    or a slash-separated ``a/../..`` would put data files outside the table. Refused in
    one line before anything is written, inside the table or beside it."""
    cases = (("..", {}), ("a/../..", {}), ("..", {URL_ENCODE: "true"}))
    tables = [tmp_path / "lake" / f"t{number}" for number in range(len(cases))]
    for path, (value, extra) in zip(tables, cases, strict=True):
        with pytest.raises(BadInputError, match="would leave the table") as caught:
            _write(spark, path, [(1, value, "n", 1)], **extra)
        assert "\n" not in str(caught.value) and repr(value) in str(caught.value)
        assert not path.exists() or not HudiTable.open(str(path)).timeline.instants
    outside = [p for p in tmp_path.rglob("*") if p.is_file() and not set(tables) & set(p.parents)]
    assert outside == []


# -- The sync marker round-trips any base URI (item 7) ----------------------------------

ODD_FOLDER = "lake dir %20 'q"  # a space, a percent escape's look-alike and a quote


def _older_manifest(table: HudiTable) -> Any:
    from hudi_sync.manifest.snapshot import ManifestStore

    first = table.completed_commits()[0].requested_time
    store = ManifestStore(table)
    return store.publish(store.build(as_of=first), make_latest=False)


def _assert_update_then_noop(table: HudiTable, target: Any) -> None:
    """A first sync of an older snapshot, the latest (an update of the same objects),
    then the latest again (nothing to do): the marker read back names the same base."""
    assert target.sync(table, _older_manifest(table))[1].action == "create"
    assert sync_table(table, [target]).results[0].action == "update"
    assert sync_table(table, [target]).results[0].action == "noop"


def test_duckdb_marker_keeps_a_base_with_a_space(fixture_copy, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``base=\\S+`` cut the marker at the space: every sync re-created the views."""
    source = fixture_copy("cow/v9_txns_simple_meta")
    path = tmp_path / ODD_FOLDER / "t"
    path.parent.mkdir()
    shutil.move(source, path)
    table = HudiTable.open(str(path))
    database = tmp_path / "w.duckdb"
    _assert_update_then_noop(table, DuckDBTarget(str(database), "t"))
    ours, theirs = same_columns(_duckdb_state(database)[1], hudi_rs_rows(str(path)))
    assert canonical(ours) == canonical(theirs)


def test_bigquery_marker_keeps_a_base_with_a_space(  # type: ignore[no-untyped-def]
    unpack_table, gcs_server, bigquery_emulator
) -> None:
    """BigQuery refused the second sync: the objects' marker no longer parsed, so they
    counted as not created by hudi_sync."""
    import uuid

    from hudi_sync.warehouse.bigquery import BigQuerySyncConfig, BigQueryTarget
    from tests.fixture_tables import fixture_tables

    (fixture,) = [t for t in fixture_tables() if t.name.endswith("cow/v9_txns_simple_meta")]
    uri = gcs_server.upload_dir(unpack_table(fixture), gcs_server.make_bucket(), f"{ODD_FOLDER}/t")
    assert " " in uri
    table = HudiTable.open(uri, gcs_server.storage_options)
    client = bigquery_emulator.client()
    dataset = f"ds_{uuid.uuid4().hex[:10]}"
    config = BigQuerySyncConfig.from_options(
        {"project_id": client.project, "dataset_name": dataset, "table_name": "t"}
    )
    try:
        _assert_update_then_noop(table, BigQueryTarget(config, client))
        described = client.get_table(f"{client.project}.{dataset}.t").description
        assert "base=gs://" in described and " " not in described.split("base=")[1].split()[0]
    finally:
        client.delete_dataset(dataset, delete_contents=True, not_found_ok=True)


def test_snowflake_marker_keeps_a_base_with_a_space(unpack_table, s3_server) -> None:  # type: ignore[no-untyped-def]
    """Snowflake refused the second sync for the same reason as BigQuery. (A quote in
    the stage URL is a matter of SQL quoting, tested with the Snowflake target.)"""
    import snowflake.connector

    from hudi_sync.warehouse.snowflake import PREFIX, SnowflakeTarget
    from tests.fixture_tables import fixture_tables
    from tests.snowflake_emulation import EmulatedSnowflake

    (fixture,) = [t for t in fixture_tables() if t.name.endswith("cow/v8_nonpartitioned")]
    uri = s3_server.upload_dir(unpack_table(fixture), s3_server.make_bucket(), "lake dir %20/t")
    table = HudiTable.open(uri, s3_server.storage_options)
    emulation = EmulatedSnowflake(s3_server.storage_options)
    options = {"database": "hudi", "schema": "lake", "storage_integration": "hudi_s3"}
    with emulation.patched():
        snowflake.connector.connect(database="hudi", schema="lake").close()
        target = SnowflakeTarget.from_options(
            {PREFIX + k: v for k, v in options.items()}, "trips", environ={}
        )
        _assert_update_then_noop(table, target)


# -- BigQuery's CSV manifest tables (the emulator, as tests/test_bigquery_target.py) ------


@pytest.fixture
def bigquery(gcs_server, bigquery_emulator):  # type: ignore[no-untyped-def]
    """A client and a fresh dataset of the emulator."""
    import uuid

    client = bigquery_emulator.client()
    dataset = f"ds_{uuid.uuid4().hex[:10]}"
    yield client, dataset
    client.delete_dataset(dataset, delete_contents=True, not_found_ok=True)


def _bigquery_target(client: Any, dataset: str, **options: str) -> Any:
    from hudi_sync.warehouse.bigquery import BigQuerySyncConfig, BigQueryTarget

    config = BigQuerySyncConfig.from_options(
        {"project_id": client.project, "dataset_name": dataset, "table_name": "t", **options}
    )
    return BigQueryTarget(config, client)


def _uploaded_with_partition(
    unpack_table: Any, gcs: Any, tmp_path: Path, fixture: str, folder: str, hostile: str
) -> HudiTable:
    """A fixture table with partition folder ``folder`` renamed ``hostile``, in fake GCS."""
    from tests.fixture_tables import fixture_tables

    (table,) = [t for t in fixture_tables() if t.name.endswith(fixture)]
    local = tmp_path / "t"
    shutil.copytree(unpack_table(table), local)
    os.rename(local / folder, local / hostile)
    uri = gcs.upload_dir(local, gcs.make_bucket(), "lake/t")
    return HudiTable.open(uri, gcs.storage_options)


def test_bigquery_uri_manifest_reads_a_comma_in_a_partition_whole(  # type: ignore[no-untyped-def]
    unpack_table, gcs_server, bigquery, tmp_path
) -> None:
    """A table without meta fields filters on ``_FILE_NAME`` by ``uris.csv``, read as a
    one-column CSV: a comma in a partition folder split its line. The manifest table,
    loaded by the emulator with its stored options, holds each URI whole and exactly the
    snapshot's files. (The emulator has no ``_FILE_NAME``: the view step fails there, so
    the sync runs with ``continue_on_error`` and the manifest table is checked.)"""
    from tests.bigquery_emulator import materialise

    client, dataset = bigquery
    hostile = 'byteField=2,"0'
    table = _uploaded_with_partition(
        unpack_table,
        gcs_server,
        tmp_path,
        "cow/v8_simplekeygen_hivestyle_no_metafields",
        "byteField=20",
        hostile,
    )
    sync_table(table, [_bigquery_target(client, dataset)], continue_on_error=True)
    manifest_id = f"{client.project}.{dataset}.t_manifest"
    materialise(client, manifest_id)
    listed = sorted(r[0] for r in client.query_and_wait(f"SELECT * FROM `{manifest_id}`"))
    expected = [f"{table.uri}/{p}" for p in build_manifest(table).relative_paths()]
    assert listed == expected
    assert any(f"/{hostile}/" in uri for uri in listed)


@pytest.mark.parametrize(
    ("hostile", "options", "delta_commits"),
    [("10\t1", {}, 2), ("10\n1", {"use_bq_manifest_file": "true"}, 0)],
    ids=["tab-delta", "newline-manifest-file"],
)
def test_bigquery_control_character_in_a_partition_is_refused(  # type: ignore[no-untyped-def]
    unpack_table, gcs_server, bigquery, tmp_path, hostile, options, delta_commits
) -> None:
    """A tab cut BigQuery's delta rows; a newline forged the manifest-file table's URI
    list. Refused in one line naming the partition: no manifest file, no BigQuery table."""
    client, dataset = bigquery
    table = _uploaded_with_partition(
        unpack_table, gcs_server, tmp_path, "cow/v6_simplekeygen_nonhivestyle", "10", hostile
    )
    target = _bigquery_target(client, dataset, **options)
    with pytest.raises(UnsupportedTableError) as caught:
        sync_table(table, [target], delta_commits=delta_commits)
    message = str(caught.value)
    assert "\n" not in message and repr(hostile) in message
    assert not gcs_server.fs().exists(f"{table.uri}/.hoodie/manifest")
    from google.api_core.exceptions import NotFound

    with pytest.raises(NotFound):  # not even the dataset was created
        client.get_dataset(dataset)


@MODES
def test_control_character_in_a_later_commits_partition_is_refused(  # type: ignore[no-untyped-def]
    spark, tmp_path, delta_commits
) -> None:
    """A manifest derived from the last one and a new commit's metadata (no listing)
    takes the partition from the commit: a hostile one there is refused too, and the
    published manifest and the view stay at the previous snapshot."""
    path, database = tmp_path / "t", tmp_path / "w.duckdb"
    old = _table_with_a_superseded_file(spark, path)
    target = DuckDBTarget(str(database), "t")
    first = sync_table(str(path), [target], delta_commits=delta_commits)
    published = sorted(p.relative_to(path) for p in (path / ".hoodie" / "manifest").rglob("*"))
    placeholder = "PLACEHOLDERX"
    _write(spark, path, [(3, placeholder, "x", 3)])
    hostile = f"10/{old}\n10"
    _rename_partition(path, placeholder, hostile)
    (commit,) = [
        p for p in (path / ".hoodie").glob("*.commit") if p.name.split(".")[0] > first.instant
    ]
    text = commit.read_text()
    assert placeholder in text
    commit.write_text(text.replace(placeholder, hostile.replace("\n", "\\n")))
    from hudi_sync.manifest.snapshot import ManifestStore

    assert ManifestStore(HudiTable.open(str(path))).build().derived_incrementally
    with pytest.raises(UnsupportedTableError) as caught:
        sync_table(str(path), [target], delta_commits=delta_commits)
    assert repr(hostile) in str(caught.value) and "\n" not in str(caught.value)
    now = sorted(p.relative_to(path) for p in (path / ".hoodie" / "manifest").rglob("*"))
    assert now == published
    listed, rows = _duckdb_state(database)
    assert listed == build_manifest(HudiTable.open(str(path)), first.instant).names()
    assert sorted(rows.column("_hoodie_record_key").to_pylist()) == ["1", "2"]


def test_bucket_index_writes_encode_or_refuse_partition_values_alike(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The bucket index keys rows in the driver with Arrow, not Spark: the same escapes,
    and the same refusal without url-encoding."""
    bucket = {
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.index.type": "BUCKET",
        "hoodie.bucket.index.num.buckets": 2,
    }
    refused = tmp_path / "refused"
    with pytest.raises(BadInputError) as caught:
        _write(spark, refused, [(1, "x\ny", "n", 1)], **bucket)
    assert "\n" not in str(caught.value) and repr("x\ny") in str(caught.value)
    assert not HudiTable.open(str(refused)).timeline.instants
    path = tmp_path / "t"
    rows = [(i, v, f"n{i}", 1) for i, v in enumerate(HOSTILE_VALUES)]
    _write(spark, path, rows, **bucket, **{URL_ENCODE: "true"})
    folders = {p.name for p in path.iterdir() if not p.name.startswith(".")}
    assert folders == {escape_value(v) for v in HOSTILE_VALUES}
    theirs = sorted((r["id"], r["p"], r["name"]) for r in hudi_rs_rows(str(path)).to_pylist())
    assert theirs == sorted((i, v, n) for i, v, n, _ in rows)
