"""The Spark writer on object stores (moto S3, fake-gcs-server): every file goes through
fsspec, from the driver and from the Python workers (Spark has no connector jars here);
hudi-rs, reading the stores natively, sees the same rows as for a local table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from hudi_sync.errors import BadInputError, WriteConflictError
from hudi_sync.spark import write
from hudi_sync.storage import open_location
from hudi_sync.table import HudiTable
from hudi_sync.table.write import timeline as timeline_writer
from hudi_sync.table.write.create import TableSettings, create_table
from tests.objectstores import ObjectStore
from tests.spark_model import TableModel, table_rows
from tests.test_spark_writer import ENGINES, frame, options
from tests.warehouse_rows import hudi_rs_rows

STORES = ["s3_server", "gcs_server"]


def remote_rows(uri: str, store: ObjectStore) -> list[Any]:
    table = (
        hudi.HudiTableBuilder.from_base_uri(uri)
        .with_storage_options(store.object_store_options)
        .build()
    )
    batches = table.read(hudi.HudiReadOptions())
    data = (
        pa.Table.from_batches(batches)
        if batches
        else pa.Table.from_batches([], schema=table.get_schema_with_meta_fields())
    )
    return table_rows(data, False)


def local_rows(path: Path) -> list[Any]:
    return table_rows(hudi_rs_rows(str(path)), False)


def without_commit_times(rows: list[Any]) -> list[Any]:
    return sorted(tuple(r[:-1]) for r in rows)


def rows(keys: range, partition_of: str = "abc", name: str = "n", ts: int = 1) -> list[Any]:
    return [
        {"id": k, "p": partition_of[k % len(partition_of)], "name": f"{name}{k}", "ts": ts}
        for k in keys
    ]


SEQUENCE: list[tuple[str, list[dict[str, Any]]]] = [
    ("insert", rows(range(40))),
    ("upsert", rows(range(30, 50), name="u", ts=2)),
    ("delete", [r for r in rows(range(0, 40, 3))]),
    ("insert_overwrite", rows(range(100, 106), partition_of="b", name="o")),
]


@pytest.fixture(scope="module")
def local_sequence(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The same write sequence on a local table, once per table version for the module
    (both stores compare with it): hudi-rs's rows after each step, without commit times."""
    cache: dict[int, list[list[Any]]] = {}

    def rows_after_each_step(version: int) -> list[list[Any]]:
        if version not in cache:
            local = tmp_path_factory.mktemp(f"local-v{version}") / "t"
            seen = []
            for operation, batch in SEQUENCE:
                opts = options(f"t{version}", version, operation)
                write(frame(spark, batch, False), str(local), opts)
                seen.append(without_commit_times(local_rows(local)))
            cache[version] = seen
        return cache[version]

    return rows_after_each_step


@pytest.mark.parametrize("store_name", STORES)
@pytest.mark.parametrize("version", [6, 8])
def test_a_write_sequence_on_an_object_store_matches_a_local_table(  # type: ignore[no-untyped-def]
    spark: SparkSession, store_name: str, version: int, request, local_sequence
) -> None:
    store: ObjectStore = request.getfixturevalue(store_name)
    uri = f"{store.scheme}://{store.make_bucket()}/tables/t"
    model = TableModel()
    steps = SEQUENCE
    for (operation, batch), seen_locally in zip(steps, local_sequence(version), strict=True):
        df = frame(spark, batch, False)
        # Version 6 on the driver's engine, 8 on the executors' (fsspec in Python workers).
        engine = ENGINES["executors" if version == 8 else "driver"]
        opts = options(f"t{version}", version, operation, **engine)
        result = write(df, uri, opts, storage_options=store.storage_options)
        if operation == "insert":
            model.insert(batch, result.instant)
        elif operation == "upsert":
            model.upsert(batch, result.instant)
        elif operation == "delete":
            model.delete(r["id"] for r in batch)
        else:
            model.overwrite_partitions(batch, result.instant)
        remote = remote_rows(uri, store)
        assert remote == model.snapshot(), operation
        assert without_commit_times(remote) == seen_locally
    # Our own table core reads it too, and nothing was left pending or half-written.
    table = HudiTable.open(uri, store.storage_options)
    assert not table.timeline.pending
    assert len(table.completed_commits()) == len(steps)
    fs = store.fs()
    leftovers = [p for p in fs.find(uri) if "/.temp/" in p or p.endswith("/lock")]
    assert not leftovers


@pytest.mark.parametrize("store_name", STORES)
def test_an_instant_completed_by_another_writer_is_a_conflict(  # type: ignore[no-untyped-def]
    spark: SparkSession, store_name: str, request, monkeypatch: pytest.MonkeyPatch
) -> None:
    store: ObjectStore = request.getfixturevalue(store_name)
    uri = f"{store.scheme}://{store.make_bucket()}/t"
    first = rows(range(10))
    write(frame(spark, first, False), uri, options("t", 8, "insert"), store.storage_options)
    before = remote_rows(uri, store)
    real_complete = timeline_writer.TimelineWriter.complete

    def rival_completes_first(
        self: timeline_writer.TimelineWriter,
        instant: str,
        action: str,
        commit: timeline_writer.CommitRecord,
    ) -> str:
        # Another writer publishes this instant (with no files) just before us.
        rival = timeline_writer.CommitRecord(commit.operation, commit.schema, ())
        real_complete(self, instant, action, rival)
        return real_complete(self, instant, action, commit)

    monkeypatch.setattr(timeline_writer.TimelineWriter, "complete", rival_completes_first)
    with pytest.raises(WriteConflictError, match="completed by another writer") as caught:
        write(
            frame(spark, rows(range(5, 15), name="late", ts=3), False),
            uri,
            options("t", 8, "upsert"),
            store.storage_options,
        )
    assert "\n" not in str(caught.value)
    monkeypatch.undo()
    # Readable, showing the rival's (empty) commit: none of the loser's files.
    assert remote_rows(uri, store) == before
    table = HudiTable.open(uri, store.storage_options)
    assert len(table.completed_commits()) == 2 and not table.timeline.pending
    # A completed instant cannot be published twice, at the table level either.
    latest = table.completed_commits()[-1].requested_time
    writer = timeline_writer.TimelineWriter(
        table.location, table.location.join(".hoodie", "timeline"), 8
    )
    with pytest.raises(FileExistsError):
        writer.complete(latest, "commit", timeline_writer.CommitRecord("UPSERT", "", ()))
    # The next write goes through.
    write(
        frame(spark, rows(range(5, 15), name="late", ts=3), False),
        uri,
        options("t", 8, "upsert"),
        store.storage_options,
    )
    assert len(remote_rows(uri, store)) == 15


@pytest.mark.parametrize("store_name", STORES)
def test_a_missing_bucket_is_one_clear_line(  # type: ignore[no-untyped-def]
    spark: SparkSession, store_name: str, request
) -> None:
    store: ObjectStore = request.getfixturevalue(store_name)
    bucket = f"missing-{store.make_bucket()}"  # never created
    uri = f"{store.scheme}://{bucket}/t"
    with pytest.raises(BadInputError, match="does not exist") as caught:
        write(
            frame(spark, rows(range(3)), False),
            uri,
            options("t", 6, "insert"),
            store.storage_options,
        )
    assert "\n" not in str(caught.value)
    assert not store.fs().exists(bucket)


@pytest.mark.parametrize("store_name", ["local", *STORES])
@pytest.mark.parametrize("version", [6, 8])
def test_the_timeline_never_overwrites_a_completed_instant(  # type: ignore[no-untyped-def]
    store_name: str, version: int, request, tmp_path: Path
) -> None:
    if store_name == "local":
        location = open_location(str(tmp_path / "t"))
    else:
        store: ObjectStore = request.getfixturevalue(store_name)
        location = open_location(f"{store.scheme}://{store.make_bucket()}/t", store.storage_options)
    settings = TableSettings("t", version, ("id",), "ts", ("p",), False, '{"type":"record"}')
    create_table(location, settings)
    with pytest.raises(FileExistsError):
        create_table(location, settings)
    folder = location.join(".hoodie") if version == 6 else location.join(".hoodie", "timeline")
    writer = timeline_writer.TimelineWriter(location, folder, version)
    instant = writer.new_instant_time()
    writer.request(instant, "commit", "UPSERT")
    writer.mark_inflight(instant, "commit", "UPSERT")
    first = writer.complete(instant, "commit", timeline_writer.CommitRecord("UPSERT", "a", ()))
    with pytest.raises(FileExistsError):
        writer.complete(instant, "commit", timeline_writer.CommitRecord("UPSERT", "b", ()))
    with pytest.raises(FileExistsError):
        writer.request(instant, "commit", "UPSERT")
    completed = [n for n in location.names(folder) if n.endswith(".commit")]
    assert completed == [first]
    assert b'"a"' in location.read_file(f"{folder}/{first}") or version == 8


@pytest.mark.parametrize("store_name,version", [("s3_server", 8), ("gcs_server", 6)])
def test_clean_and_archival_on_an_object_store(  # type: ignore[no-untyped-def]
    spark: SparkSession, store_name: str, version: int, request
) -> None:
    store: ObjectStore = request.getfixturevalue(store_name)
    uri = f"{store.scheme}://{store.make_bucket()}/t"
    retention = {
        "hoodie.cleaner.commits.retained": 1,
        "hoodie.keep.min.commits": 2,
        "hoodie.keep.max.commits": 3,
    }
    model = TableModel()
    cleaned, archived = [], []
    for round_ in range(5):
        batch = rows(range(6), partition_of="ab", name=f"r{round_}", ts=round_)
        opts = options("t", version, "upsert", **retention)
        result = write(frame(spark, batch, False), uri, opts, store.storage_options)
        model.upsert(batch, result.instant)
        cleaned += [result.clean_instant] if result.clean_instant else []
        archived += result.archived
        assert remote_rows(uri, store) == model.snapshot()
    assert cleaned and archived
    table = HudiTable.open(uri, store.storage_options)
    assert len(table.completed_commits()) < 5
    assert len(table.instants(include_archived=True)) > len(table.instants())


def test_the_cli_writes_to_an_object_store(spark: SparkSession, s3_server) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from hudi_sync.cli.app import app

    sample = Path(__file__).resolve().parents[1] / "scripts" / "sample"
    uri = f"s3://{s3_server.make_bucket()}/trips"
    client = s3_server.storage_options["client_kwargs"]
    storage = [
        f"key={s3_server.storage_options['key']}",
        f"secret={s3_server.storage_options['secret']}",
        f"client_kwargs.endpoint_url={client['endpoint_url']}",
        f"client_kwargs.region_name={client['region_name']}",
    ]
    result = CliRunner().invoke(
        app,
        [
            "write",
            uri,
            str(sample / "trips_day1.jsonl"),
            "--props",
            str(sample / "trips.properties"),
            "--json",
            "--conf",
            "hoodie.datasource.write.operation=insert",
            *[arg for option in storage for arg in ("-o", option)],
        ],
    )
    assert result.exit_code == 0, result.output
    written = (sample / "trips_day1.jsonl").read_text().splitlines()
    table = (
        hudi.HudiTableBuilder.from_base_uri(uri)
        .with_storage_options(s3_server.object_store_options)
        .build()
    )
    assert sum(b.num_rows for b in table.read(hudi.HudiReadOptions())) == len(written)
