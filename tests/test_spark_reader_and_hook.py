"""The Spark reader on Apache Hudi's own tables, and the writer's post-commit sync."""

from __future__ import annotations

import uuid
from pathlib import Path

import duckdb
import pytest

from hudi_sync.errors import MetaSyncError
from hudi_sync.spark import read, write
from hudi_sync.spark.compat import collect_arrow
from hudi_sync.sync.hook import DUCKDB_DATABASE, DUCKDB_TABLE, SYNC_TOOLS
from hudi_sync.table import HudiTable
from hudi_sync.table.read.snapshot import read_snapshot
from tests import test_mor_read as mor_read
from tests.bigquery_emulator import materialise
from tests.fixture_tables import fixture_tables
from tests.test_spark_writer import frame, options
from tests.warehouse_rows import canonical, hudi_rs_rows, same_columns

# Tables hudi-rs reads (the DuckDB tests' list), with meta fields.
READABLE = [t for t in fixture_tables() if "empty" not in t.name and "no_metafields" not in t.name]
# The compat tier (docs/testing.md) reads a Copy-on-Write and a Merge-on-Read table of
# Hudi's sample schema (every column type: timestamps, decimals, arrays, maps, structs).
COMPAT_TIER = {"sample_table-cow-v8_nonpartitioned", "sample_table-mor-parquet-v6_nonpartitioned"}


@pytest.mark.parametrize(
    "fixture",
    [
        pytest.param(t, id=t.id, marks=[pytest.mark.spark_compat] if t.id in COMPAT_TIER else [])
        for t in READABLE
    ],
)
def test_reader_equals_hudi_rs_on_fixture_tables(spark, unpack_table, fixture) -> None:  # type: ignore[no-untyped-def]
    path = str(unpack_table(fixture))
    table = HudiTable.open(path)
    query = "read_optimized" if table.config.is_mor else "snapshot"
    ours = collect_arrow(read(spark, path, {"hoodie.datasource.query.type": query}))
    theirs = hudi_rs_rows(path, read_optimized=table.config.is_mor)
    ours, theirs = same_columns(ours, theirs)
    assert canonical(ours) == canonical(theirs)
    commits = [i.requested_time for i in table.completed_commits()]
    if table.config.is_mor:  # snapshots merge log files, at the latest and the first commit
        for as_of in (None, commits[0]):
            merged = collect_arrow(read(spark, path, {"as.of.instant": as_of} if as_of else {}))
            theirs = hudi_rs_rows(path, as_of=as_of)
            assert canonical(same_columns(merged, theirs)[0]) == canonical(theirs), as_of
        return
    first = collect_arrow(read(spark, path, {"as.of.instant": commits[0]}))
    assert canonical(same_columns(first, hudi_rs_rows(path, as_of=commits[0]))[0]) == canonical(
        hudi_rs_rows(path, as_of=commits[0])
    )
    # Incremental after the first commit: exactly the rows later commits wrote (the
    # range is by completion time on layout-2 tables, as in Hudi 1.x).
    first_commit = table.timeline.completed_writes[0]
    begin = first_commit.completion_time or first_commit.requested_time
    later = collect_arrow(
        read(
            spark,
            path,
            {
                "hoodie.datasource.query.type": "incremental",
                "hoodie.datasource.read.begin.instanttime": begin,
            },
        )
    )
    snapshot_rows = ours.to_pylist()
    expected = [r for r in snapshot_rows if r["_hoodie_commit_time"] > commits[0]]
    assert sorted(r["_hoodie_record_key"] for r in later.to_pylist()) == sorted(
        r["_hoodie_record_key"] for r in expected
    )


def test_write_with_meta_sync_updates_the_duckdb_view(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path, database = str(tmp_path / "t"), str(tmp_path / "w.duckdb")
    sync = {
        "hoodie.datasource.meta.sync.enable": "true",
        SYNC_TOOLS: "duckdb",
        DUCKDB_DATABASE: database,
        DUCKDB_TABLE: "trips",
    }
    for ts, names in enumerate((["a", "b", "c"], ["a2", "b", "c"])):
        rows = [{"id": i, "p": "x" if i else "y", "name": n, "ts": ts} for i, n in enumerate(names)]
        result = write(frame(spark, rows, False), path, options("t", 6, "upsert", **sync))
        assert result.sync is not None and result.sync.ok, result.sync
        with duckdb.connect(database) as con:
            view = con.sql('SELECT * FROM "trips"').to_arrow_table()
        ours = collect_arrow(read(spark, path))
        assert canonical(same_columns(view, ours)[0]) == canonical(ours)
        assert sorted(view.column("name").to_pylist()) == sorted(names)


def test_write_with_meta_sync_updates_the_bigquery_emulator_view(  # type: ignore[no-untyped-def]
    spark, tmp_path: Path, gcs_server, bigquery_emulator
) -> None:
    """Spark writes ``file://`` only and BigQuery reads ``gs://`` only: the table sits in a
    folder that stands for a mounted bucket (``source_uri_prefix``, Hudi's option, tells
    BigQuery where it is). The test copies the folder to fake-gcs-server after each write,
    which is what the mount would do. The emulator reads no files through external tables,
    so each check loads the history and manifest files into native tables and runs the
    stored view query over them."""
    path = tmp_path / "trips"
    bucket = gcs_server.make_bucket()
    prefix = f"gs://{bucket}/lake/trips"
    client = bigquery_emulator.client()
    dataset = f"ds_{uuid.uuid4().hex[:10]}"
    sync = {
        "hoodie.datasource.meta.sync.enable": "true",
        SYNC_TOOLS: "bigquery",
        "hoodie.gcp.bigquery.sync.project_id": client.project,
        "hoodie.gcp.bigquery.sync.dataset_name": dataset,
        "hoodie.gcp.bigquery.sync.table_name": "trips",
        "hoodie.gcp.bigquery.sync.dataset_location": "US",
        "hoodie.gcp.bigquery.sync.source_uri_prefix": prefix,
        "hoodie.gcp.bigquery.sync.api_endpoint": bigquery_emulator.endpoint_url,
    }
    table_id = f"{client.project}.{dataset}.trips"
    inserted = [{"id": i, "p": "xy"[i % 2], "name": f"n{i}", "ts": 1} for i in range(6)]
    upserted = [dict(inserted[0], name="n0-new", ts=2), {"id": 9, "p": "y", "name": "n9", "ts": 2}]
    batches = (("insert", inserted), ("upsert", upserted), ("delete", [inserted[1]]))
    try:
        for operation, rows in batches:
            result = write(frame(spark, rows, False), str(path), options("t", 8, operation, **sync))
            assert result.sync is not None and result.sync.ok, result.sync
            gcs_server.upload_dir(path, bucket, "lake/trips")
            view = client.get_table(table_id)
            assert f"instant={result.instant}" in (view.description or "")
            materialise(client, f"{table_id}_history", destination=f"{table_id}_h")
            materialise(client, f"{table_id}_manifest", destination=f"{table_id}_m")
            query = view.view_query.replace(f"{table_id}_history", f"{table_id}_h").replace(
                f"{table_id}_manifest", f"{table_id}_m"
            )
            shown = client.query_and_wait(query).to_arrow()
            expected = hudi_rs_rows(str(path))
            ours, theirs = same_columns(shown, expected)  # type: ignore[arg-type]
            assert canonical(ours) == canonical(theirs), operation
            assert theirs.num_rows > 0
    finally:
        client.delete_dataset(dataset, delete_contents=True, not_found_ok=True)


def test_a_failed_sync_does_not_undo_the_commit(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "t")
    broken = {
        "hoodie.datasource.meta.sync.enable": "true",
        SYNC_TOOLS: "duckdb",
        DUCKDB_DATABASE: str(tmp_path / "missing-folder" / "w.duckdb"),
    }
    rows = [{"id": 1, "p": "x", "name": "kept", "ts": 1}]
    with pytest.raises(MetaSyncError) as raised:  # as Hudi's writer fails the job
        write(frame(spark, rows, False), path, options("t", 6, "upsert", **broken))
    message = str(raised.value)
    assert raised.value.instant in message and "duckdb" in message
    assert "missing-folder" in message  # the cause
    assert [r["name"] for r in collect_arrow(read(spark, path)).to_pylist()] == ["kept"]
    assert [i.requested_time for i in HudiTable.open(path).instants()] == [raised.value.instant]

    # Opted out: the failure is in the result, the commit stands the same.
    rows = [{"id": 2, "p": "x", "name": "also", "ts": 1}]
    ignoring = {**broken, "hoodie.meta.sync.ignore_exceptions": "true"}
    result = write(frame(spark, rows, False), path, options("t", 6, "upsert", **ignoring))
    assert result.sync is not None and "duckdb" in result.sync.error_summary()
    assert sorted(r["name"] for r in collect_arrow(read(spark, path)).to_pylist()) == [
        "also",
        "kept",
    ]


def test_reader_merges_logs_of_a_table_without_meta_fields(spark, fixture_copy) -> None:  # type: ignore[no-untyped-def]
    """The Spark reader merges such a table's logs by the keys the key generator builds,
    as the table core does (``tests/test_mor_read.py`` checks it against a model)."""
    path: Path = fixture_copy(mor_read.NO_META)
    mor_read.add_no_meta_log(path, mor_read.no_meta_blocks())
    ours = collect_arrow(read(spark, str(path)))
    core = read_snapshot(HudiTable.open(str(path)))
    assert mor_read._no_meta_rows(ours) == mor_read._no_meta_rows(core)
    ours, core = same_columns(ours, core)
    assert canonical(ours) == canonical(core)
