"""Spark reads of tables on object stores (moto S3, fake-gcs-server) without Hadoop
connector jars: this Spark has no s3a or gs file system, so ``read`` reads the planned
files through fsspec, on the driver (a small read) or in Python workers, and
``format("hudi")`` in Python workers. Each read must equal the same read of the local
copy (which Spark's own parquet reader reads) and hudi-rs's read of the store."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_sync.cli.common import parse_storage_options
from hudi_sync.errors import TableNotFoundError
from hudi_sync.spark import hadoop, read, write
from hudi_sync.spark.compat import collect_arrow
from hudi_sync.spark.reading import reader
from hudi_sync.storage import Location
from hudi_sync.table import HudiTable
from tests.fixture_tables import fixture_tables
from tests.objectstores import ObjectStore
from tests.test_spark_writer import frame, options
from tests.warehouse_rows import canonical, hudi_rs_rows, same_columns

QUERY_TYPE = "hoodie.datasource.query.type"
BEGIN = "hoodie.datasource.read.begin.instanttime"
CDC_READ = {QUERY_TYPE: "incremental", "hoodie.datasource.query.incremental.format": "cdc"}
# A partitioned COW table of many column types, a v9 table, a MOR table (read-optimized).
TABLES = [
    "sample_table/cow/v8_complexkeygen_hivestyle",
    "sample_table/cow/v9_txns_simple_meta",
    "quickstart_trips_table/mor/avro/v8_trips_8i3u1d",
]
STORES = ["s3_server", "gcs_server"]


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest) -> ObjectStore:
    found: ObjectStore = request.getfixturevalue(request.param)
    return found


def _flat(tree: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in tree.items():
        if isinstance(value, dict):
            yield from _flat(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def storage_read_options(store: ObjectStore) -> dict[str, str]:
    """The store's fsspec options as ``storage.<dotted key>`` read options."""
    return {f"storage.{key}": str(value) for key, value in _flat(store.storage_options)}


def hudi_format(spark: SparkSession, path: str, opts: dict[str, str]) -> DataFrame:
    return spark.read.format("hudi").options(**opts).load(path)


def _rows(df: DataFrame) -> tuple[pa.Table, Counter[str]]:
    table = collect_arrow(df)
    return table, canonical(table)


@pytest.fixture(scope="module")
def local_rows(spark: SparkSession):  # type: ignore[no-untyped-def]
    """Each read of a local copy, once per table and query for the module (both stores
    and both APIs compare with the same reads): Spark's own parquet reader reads those
    files."""
    cache: dict[tuple[str, str], Counter[str]] = {}

    def rows(local: str, opts: dict[str, str]) -> Counter[str]:
        key = (local, json.dumps(opts, sort_keys=True))
        if key not in cache:
            cache[key] = canonical(collect_arrow(read(spark, local, opts)))
        return cache[key]

    return rows


@pytest.mark.parametrize("name", TABLES)
@pytest.mark.spark4  # format("hudi"): the Python Data Source API
def test_store_reads_equal_local_reads_and_hudi_rs(  # type: ignore[no-untyped-def]
    spark, unpack_table, local_rows, store: ObjectStore, name: str, monkeypatch
) -> None:
    (fixture,) = [t for t in fixture_tables() if t.name == name]
    local = str(unpack_table(fixture))
    uri = store.upload_dir(local, store.make_bucket(), "tables/x")
    table = HudiTable.open(uri, store.storage_options)
    mor = table.config.is_mor
    query = {QUERY_TYPE: "read_optimized" if mor else "snapshot"}
    commits = [i.requested_time for i in table.completed_commits()]
    first = table.timeline.completed_writes[0]
    begin = first.completion_time or first.requested_time

    # Snapshot: Spark reads the local files, the driver the store's (a small read), and
    # Python workers the store's when the read is not small.
    local_df = read(spark, local, query)
    store_df = read(spark, uri, query, store.storage_options)
    assert local_df.inputFiles() and all(f.startswith("file:") for f in local_df.inputFiles())
    assert store_df.inputFiles() == []  # no Spark file scan: the driver read
    snapshot, snapshot_rows = _rows(store_df)
    assert snapshot.num_rows > 0
    assert snapshot_rows == local_rows(local, query)
    with monkeypatch.context() as patch:
        patch.setattr(reader, "DRIVER_READ_MAX_BYTES", 0)
        assert _rows(read(spark, uri, query, store.storage_options))[1] == snapshot_rows
    assert sorted(snapshot.column_names) == sorted(local_df.columns)
    theirs = hudi_rs_rows(uri, read_optimized=mor, storage=store.object_store_options)
    assert canonical(same_columns(snapshot, theirs)[0]) == canonical(theirs)

    # Time travel to the first commit (storage options as storage.* read options).
    as_of = {**query, "as.of.instant": commits[0], **storage_read_options(store)}
    old, old_rows = _rows(read(spark, uri, as_of))
    assert old_rows == local_rows(local, {**query, "as.of.instant": commits[0]})
    assert set(old.column("_hoodie_commit_time").to_pylist()) == {commits[0]}
    if not mor:
        theirs = hudi_rs_rows(uri, as_of=commits[0], storage=store.object_store_options)
        assert canonical(same_columns(old, theirs)[0]) == canonical(theirs)

    # MOR: the snapshot merges log files, read by the workers from the store.
    merged = snapshot
    if mor:
        merged = _rows(read(spark, uri, {QUERY_TYPE: "snapshot"}, store.storage_options))[0]
        theirs = hudi_rs_rows(uri, storage=store.object_store_options)
        assert canonical(same_columns(merged, theirs)[0]) == canonical(theirs)

    # Incremental after the first commit: the rows later commits wrote (log files too).
    incremental = {QUERY_TYPE: "incremental", BEGIN: begin}
    later, later_rows = _rows(read(spark, uri, incremental, store.storage_options))
    assert later_rows == local_rows(local, incremental)
    expected = [r for r in merged.to_pylist() if r["_hoodie_commit_time"] > commits[0]]
    assert expected and sorted(later.column("_hoodie_record_key").to_pylist()) == sorted(
        r["_hoodie_record_key"] for r in expected
    )

    # format("hudi") with storage.* options: the same three reads, equal to the local
    # copy's reads by Spark's parquet reader (collected in one job: a union of the three
    # reads, each row tagged with its read).
    storage = storage_read_options(store)
    reads = ((query, snapshot), ({**query, "as.of.instant": commits[0]}, old), (incremental, later))
    tag = "__read__"
    union = None
    for number, (opts, _) in enumerate(reads):
        each = hudi_format(spark, uri, {**opts, **storage}).withColumn(tag, F.lit(number))
        union = each if union is None else union.unionByName(each)
    assert union is not None
    collected = collect_arrow(union)
    for number, (opts, ours) in enumerate(reads):
        got = collected.filter(pc.equal(collected.column(tag), number)).drop_columns([tag])
        assert canonical(got) == local_rows(local, opts)
        assert sorted(got.column("_hoodie_record_key").to_pylist()) == sorted(
            ours.column("_hoodie_record_key").to_pylist()
        )


@pytest.fixture(scope="module")
def cdc_table(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A local CDC table (data_before_after): an insert, an upsert, a delete."""
    path = tmp_path_factory.mktemp("cdc") / "t"
    cdc = {
        "hoodie.table.cdc.enabled": "true",
        "hoodie.table.cdc.supplemental.logging.mode": "data_before_after",
    }
    batches: list[tuple[str, list[dict[str, Any]]]] = [
        ("insert", [{"id": i, "p": "ab"[i % 2], "name": f"n{i}", "ts": 1} for i in range(6)]),
        (
            "upsert",
            [
                {"id": 1, "p": "b", "name": "v2", "ts": 2},
                {"id": 9, "p": "a", "name": "n9", "ts": 2},
            ],
        ),
        ("delete", [{"id": 2, "p": "a", "name": None, "ts": 3}]),
    ]
    for operation, rows in batches:
        write(frame(spark, rows, False), str(path), options("t", 8, operation, **cdc))
    return path


def _changes(df: DataFrame) -> Counter[str]:
    return Counter(json.dumps(r.asDict(), sort_keys=True) for r in df.collect())


@pytest.mark.spark4  # format("hudi"): the Python Data Source API
def test_cdc_reads_from_the_store_equal_the_local_ones(  # type: ignore[no-untyped-def]
    spark, cdc_table: Path, store: ObjectStore, monkeypatch
) -> None:
    uri = store.upload_dir(cdc_table, store.make_bucket(), "lake/cdc")
    query = {**CDC_READ, BEGIN: "earliest"}
    local = _changes(read(spark, str(cdc_table), query))
    assert Counter(json.loads(k)["op"] for k in local.elements()) == {"i": 7, "u": 1, "d": 1}
    assert _changes(read(spark, uri, query, store.storage_options)) == local  # on the driver
    assert _changes(hudi_format(spark, uri, {**query, **storage_read_options(store)})) == local
    monkeypatch.setattr(reader, "DRIVER_READ_MAX_BYTES", 0)  # split by split, in workers
    assert _changes(read(spark, uri, query, store.storage_options)) == local
    # A range: the commits after the first.
    first = HudiTable.open(str(cdc_table)).timeline.completed_writes[0].requested_time
    later = {**CDC_READ, BEGIN: first}
    from_store = _changes(read(spark, uri, {**later, **storage_read_options(store)}))
    assert from_store == _changes(read(spark, str(cdc_table), later))
    assert sum(from_store.values()) == 3


@pytest.fixture(scope="module")
def evolved_table(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A local table whose second commit adds a column, in one partition's files only."""
    path = tmp_path_factory.mktemp("evolved") / "t"
    rows = [{"id": i, "p": "ab"[i % 2], "name": f"n{i}", "ts": 1} for i in range(4)]
    write(frame(spark, rows, False), str(path), options("t", 6, "insert"))
    extra = [{"id": 0, "p": "a", "name": "n0-v2", "ts": 2, "extra": "x0"}]
    write(frame(spark, extra, True), str(path), options("t", 6, "upsert"))
    return path


def _python_stage(df: DataFrame) -> bool:
    """Whether the query runs a Python function (the workers' file reader)."""
    return "MapInArrow" in str(df._jdf.queryExecution().optimizedPlan().toString())


def test_files_without_a_later_column_read_it_as_null_from_the_store(  # type: ignore[no-untyped-def]
    spark, evolved_table: Path, store: ObjectStore, monkeypatch
) -> None:
    """A small read is read on the driver (no Python worker job), a larger one by the
    workers: both in the files' merged schema."""
    uri = store.upload_dir(evolved_table, store.make_bucket(), "t")
    local = collect_arrow(read(spark, str(evolved_table)))
    on_driver = read(spark, uri, {}, store.storage_options)
    assert not _python_stage(on_driver)
    ours = collect_arrow(on_driver)
    assert canonical(ours) == canonical(local)
    extra = {r["id"]: r["extra"] for r in ours.to_pylist()}
    assert extra == {0: "x0", 1: None, 2: None, 3: None}
    monkeypatch.setattr(reader, "DRIVER_READ_MAX_BYTES", 0)  # file by file, in workers
    in_workers = read(spark, uri, {}, store.storage_options)
    assert _python_stage(in_workers)
    assert canonical(collect_arrow(in_workers)) == canonical(local)
    # As of the first commit no file has the column: neither read shows it.
    first = HudiTable.open(str(evolved_table)).timeline.completed_writes[0].requested_time
    old = collect_arrow(read(spark, uri, {"as.of.instant": first}, store.storage_options))
    old_local = collect_arrow(read(spark, str(evolved_table), {"as.of.instant": first}))
    assert "extra" not in old.column_names and "extra" not in old_local.column_names
    assert canonical(old) == canonical(old_local) and old.num_rows == 4


@pytest.mark.spark4  # format("hudi"): the Python Data Source API
def test_a_missing_bucket_fails_in_one_line_without_credentials(  # type: ignore[no-untyped-def]
    spark, store: ObjectStore
) -> None:
    bucket = f"no-such-bucket-{uuid.uuid4().hex[:12]}"
    uri = f"{store.scheme}://{bucket}/tables/x"
    secret = f"SECRET{uuid.uuid4().hex}"
    storage = store.storage_options
    if store.scheme == "s3":
        storage["secret"] = secret
    else:
        storage["project"] = secret  # GCS needs no secret here: any option stands in
    with pytest.raises(TableNotFoundError) as error:
        read(spark, uri, {}, storage)
    message = str(error.value)
    assert message == f"{uri} is not a Hudi table: bucket {bucket} does not exist"
    assert secret not in message
    # A bucket that exists but holds no table: the properties file is what is missing.
    empty = f"{store.scheme}://{store.make_bucket()}/tables/x"
    with pytest.raises(TableNotFoundError) as error:
        read(spark, empty, {}, store.storage_options)
    assert str(error.value) == f"{empty} is not a Hudi table: .hoodie/hoodie.properties not found"
    with pytest.raises(Exception) as wrapped:
        flat = {f"storage.{k}": str(v) for k, v in _flat(storage)}
        hudi_format(spark, uri, flat).collect()
    assert f"{uri} is not a Hudi table" in str(wrapped.value)
    assert f"bucket {bucket} does not exist" in str(wrapped.value)
    assert secret not in str(wrapped.value)


def _without_options(uri: str) -> Location:
    """``uri`` as a location without storage options, made without opening it: opening
    an object store's URI first checks that its endpoint answers (AWS's or Google's, not
    reachable here), and ``spark_opens`` reads only the URI and the options."""
    return Location(fs=fsspec.filesystem("memory"), path="/t", uri=uri, storage_options={})


def test_spark_cannot_open_the_store_itself_and_options_nest_like_the_cli(  # type: ignore[no-untyped-def]
    spark, s3_server, unpack_table
) -> None:
    """The premise: Spark here has no S3 file system, so its reader fails on the URI;
    ``storage.*`` options nest as the CLI's ``-o`` pairs."""
    (fixture,) = [t for t in fixture_tables() if t.name == TABLES[0]]
    local = str(unpack_table(fixture))
    uri = s3_server.upload_dir(local, s3_server.make_bucket(), "t")
    with pytest.raises(Exception, match=r"(?i)no filesystem for scheme"):
        spark.read.parquet(uri).collect()
    assert not hadoop.spark_opens(spark, HudiTable.open(uri, s3_server.storage_options).location)
    # Without storage options Spark's Hadoop decides: no s3/s3a/gs file system here,
    # one for http (hadoop-common's); local files always.
    for scheme, opens in (("s3", False), ("s3a", False), ("gs", False), ("http", True)):
        assert hadoop.spark_opens(spark, _without_options(f"{scheme}://127.0.0.1/t")) is opens
    assert hadoop.spark_opens(spark, HudiTable.open(local).location)

    pairs = [f"{k}={v}" for k, v in _flat(s3_server.storage_options)]
    read_options, storage = reader.split_options(
        {
            QUERY_TYPE: "snapshot",
            **{f"storage.{p.split('=', 1)[0]}": p.split("=", 1)[1] for p in pairs},
        }
    )
    assert read_options == {QUERY_TYPE: "snapshot"}
    assert storage == parse_storage_options(pairs)
    assert storage["client_kwargs"]["endpoint_url"] == s3_server.endpoint_url
