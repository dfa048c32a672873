"""A small frame's rows read without a Spark job (``collect``): a plain parquet scan read
by pyarrow gives exactly Spark's collect (rows, order, Arrow schema) for every column
type the project writes, runs no Spark job, and every frame the rules cannot prove
(a filter, a computed or renamed column, partition discovery, INT96, types Spark reads
otherwise, legacy calendars, files Spark orders by its listing) falls back to Spark."""

from __future__ import annotations

import datetime
import decimal
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_sync.spark.compat import collect_arrow
from hudi_sync.spark.writing.collect import (
    driver_collected,
    local_relation_rows,
    plain_parquet_rows,
)
from hudi_sync.spark.writing.writer import write
from hudi_sync.table import HudiTable
from hudi_sync.table.read.snapshot import read_snapshot
from tests.frames import rows_frame

UTC = datetime.UTC
# Every column type the project's tests write (tests/frames.py users, Hudi's sample
# tables): nulls in each, nested ones at every level.
SCHEMA = (
    "id string, n int, big bigint, small smallint, tiny tinyint, flag boolean, "
    "f float, d double, price decimal(10,2), wide decimal(30,5), day date, "
    "ts timestamp, raw binary, tags array<string>, "
    "nums array<int>, attrs map<string,int>, "
    "address struct<city:string,zip:int,seen:timestamp>, "
    "items array<struct<sku:string,qty:int>>, nested map<string,array<int>>"
)
ROWS: list[tuple[Any, ...]] = [
    (
        "a",
        1,
        2**40,
        7,
        -3,
        True,
        1.5,
        2.25,
        decimal.Decimal("12.34"),
        decimal.Decimal("123456789012345678901234.56789"),
        datetime.date(2024, 1, 31),
        datetime.datetime(2024, 1, 31, 12, 30, 1, 123456, tzinfo=UTC),
        b"\x00\xff",
        ["x", None],
        [1, 2],
        {"k": 1, "z": None},
        {"city": "Oslo", "zip": 150, "seen": datetime.datetime(2020, 5, 1, tzinfo=UTC)},
        [{"sku": "s1", "qty": 2}, None],
        {"m": [1, None]},
    ),
    (None,) * 19,
    (
        "c",
        -1,
        None,
        None,
        None,
        False,
        float("nan"),
        -0.0,
        decimal.Decimal("-0.01"),
        None,
        datetime.date(1970, 1, 1),
        datetime.datetime(1999, 12, 31, 23, 59, 59, tzinfo=UTC),
        b"",
        [],
        None,
        {},
        {"city": None, "zip": None, "seen": None},
        [],
        {"e": []},
    ),
]


MICROS = "TIMESTAMP_MICROS"


def jobs(spark: SparkSession, run: object) -> tuple[object, int]:
    """``run()``'s result and how many Spark jobs it started."""
    group = f"collect-{uuid.uuid4()}"
    spark.sparkContext.setJobGroup(group, "counted")
    try:
        result = run()  # type: ignore[operator]
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    return result, len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def spark_file(
    spark: SparkSession, folder: Path, rows: Sequence[tuple[Any, ...]] = ROWS, stamps: str = MICROS
) -> Path:
    """``rows`` written by Spark into one parquet file, timestamps as ``stamps``."""
    key = "spark.sql.parquet.outputTimestampType"
    before = spark.conf.get(key)
    spark.conf.set(key, stamps)
    try:
        rows_frame(spark, rows, SCHEMA).coalesce(1).write.parquet(str(folder))
    finally:
        spark.conf.set(key, str(before))
    (file,) = folder.glob("*.parquet")
    return file


def assert_same_as_spark(df: DataFrame) -> pa.Table:
    """The shortcut is taken and gives Spark's collect exactly: rows, order, schema."""
    shortcut = plain_parquet_rows(df)
    assert shortcut is not None
    spark_rows = collect_arrow(df)
    assert shortcut.schema == spark_rows.schema
    # Row by row; repr tells NaN equal to NaN and -0.0 from 0.0 (``equals`` calls NaNs unequal).
    assert repr(shortcut.to_pylist()) == repr(spark_rows.to_pylist())
    return shortcut


def test_every_type_spark_wrote_reads_as_spark_collects_it(
    spark: SparkSession, tmp_path: Path
) -> None:
    file = spark_file(spark, tmp_path / "spark")
    rows = assert_same_as_spark(spark.read.parquet(str(file)))
    assert rows.num_rows == 3 and rows.column("wide")[0].as_py() == ROWS[0][9]
    pruned = spark.read.parquet(str(file)).select("nested", "id", "ts")
    assert assert_same_as_spark(pruned).column_names == ["nested", "id", "ts"]


def test_every_type_pyarrow_wrote_reads_as_spark_collects_it(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A file pyarrow wrote (no Spark metadata; list children named ``element`` or
    ``item``, map entries ``key_value``; a zone-less timestamp, which Spark reads as
    TIMESTAMP_NTZ), read in CORRECTED rebase mode (4.0's default; in 3.5's, EXCEPTION,
    a nested timestamp of a file without Spark's version is not taken)."""
    table = collect_arrow(rows_frame(spark, ROWS, SCHEMA))
    local = [datetime.datetime(2024, 2, 1, 0, 0, 0, 1), None, datetime.datetime(1950, 1, 1)]
    table = table.append_column("ntz", pa.array(local, pa.timestamp("us")))
    key = "spark.sql.parquet.datetimeRebaseModeInRead"
    mode = spark.conf.get(key)
    try:
        for compliant in (True, False):
            file = tmp_path / f"arrow-{compliant}.parquet"
            pq.write_table(table, file, use_compliant_nested_type=compliant)
            spark.conf.set(key, "CORRECTED")
            assert_same_as_spark(spark.read.parquet(str(file)))
            spark.conf.set(key, "EXCEPTION")
            assert plain_parquet_rows(spark.read.parquet(str(file))) is None
    finally:
        spark.conf.set(key, str(mode))


def test_no_spark_job_runs_for_the_rows(spark: SparkSession, tmp_path: Path) -> None:
    file = spark_file(spark, tmp_path / "spark")
    df = spark.read.parquet(str(file))
    rows, started = jobs(spark, lambda: driver_collected(df, "t"))
    assert started == 0 and isinstance(rows, pa.Table) and rows.num_rows == 3
    filtered = df.filter(F.col("n") > 0)  # the tracker sees the fallback's job
    rows, started = jobs(spark, lambda: driver_collected(filtered, "t"))
    assert started >= 1 and isinstance(rows, pa.Table) and rows.num_rows == 1


def test_files_of_distinct_sizes_come_largest_first(spark: SparkSession, tmp_path: Path) -> None:
    folder = tmp_path / "files"
    folder.mkdir()
    for count in (1, 3, 2):
        ids = pa.table({"id": pa.array([f"{count}-{i}" for i in range(count)])})
        pq.write_table(ids, folder / f"part-{count}.parquet")
    rows = assert_same_as_spark(spark.read.parquet(str(folder)))
    assert rows.column("id").to_pylist()[:3] == ["3-0", "3-1", "3-2"]


def refused(df: DataFrame) -> None:
    """The shortcut refuses ``df`` (and Spark's collect still answers)."""
    assert plain_parquet_rows(df) is None
    collect_arrow(df)


def test_frames_the_rules_cannot_prove_fall_back(spark: SparkSession, tmp_path: Path) -> None:
    file = str(spark_file(spark, tmp_path / "spark"))
    df = spark.read.parquet(file)
    refused(df.filter(F.col("n") > 0))
    refused(df.withColumnRenamed("id", "key"))
    refused(df.select(F.upper("id").alias("id")))
    refused(df.select("id", "_metadata"))
    refused(df.limit(1))
    # Spark 4 widens the stored int (3.5 refuses the file): not the file's type
    assert plain_parquet_rows(spark.read.schema("id string, n bigint").parquet(file)) is None
    refused(spark.read.schema("ID string").parquet(file))  # matched ignoring case
    int96 = str(spark_file(spark, tmp_path / "int96", stamps="INT96"))  # Spark's default
    refused(spark.read.parquet(int96))
    assert plain_parquet_rows(spark.read.schema("id string").parquet(file)) is not None


def test_files_spark_reads_otherwise_fall_back(spark: SparkSession, tmp_path: Path) -> None:
    instant = datetime.datetime(2024, 1, 1, 10, tzinfo=UTC)
    cases = {
        # partition discovery: a column from the path
        "day=1/a.parquet": (pa.table({"id": ["a"]}), {}),
        "int96.parquet": (
            pa.table({"ts": pa.array([instant], pa.timestamp("us", "UTC"))}),
            {"use_deprecated_int96_timestamps": True},
        ),
        "millis.parquet": (pa.table({"ts": pa.array([instant], pa.timestamp("ms", "UTC"))}), {}),
        "unsigned.parquet": (pa.table({"n": pa.array([2**31], pa.uint32())}), {}),
        "zone.parquet": (
            pa.table({"ts": pa.array([instant], pa.timestamp("us", "Europe/Oslo"))}),
            {},
        ),
        "large.parquet": (pa.table({"s": pa.array(["x"], pa.large_string())}), {}),
    }
    for name, (table, write_options) in cases.items():
        path = tmp_path / name.replace("/", "_") / name
        path.parent.mkdir(parents=True)
        pq.write_table(table, path, **write_options)
        refused(spark.read.parquet(str(tmp_path / name.replace("/", "_"))))
    legacy = tmp_path / "legacy.parquet"
    table = pa.table({"id": ["a"]})
    marked = {b"org.apache.spark.version": b"3.5.0", b"org.apache.spark.legacyDateTime": b""}
    pq.write_table(table.replace_schema_metadata(marked), legacy)
    refused(spark.read.parquet(str(legacy)))
    old = tmp_path / "old.parquet"
    pq.write_table(table.replace_schema_metadata({b"org.apache.spark.version": b"2.4.8"}), old)
    refused(spark.read.parquet(str(old)))


def test_equal_sizes_fall_back(spark: SparkSession, tmp_path: Path) -> None:
    """Spark orders files of one size as its listing does: not proven, not taken."""
    folder = tmp_path / "same"
    folder.mkdir()
    for name in ("a", "b"):
        pq.write_table(pa.table({"id": [name]}), folder / f"{name}.parquet")
    refused(spark.read.parquet(str(folder)))


def test_old_dates_fall_back_unless_the_session_reads_them_as_written(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A file without Spark's version: in the LEGACY or EXCEPTION rebase mode (3.5's
    default) Spark rebases or refuses dates before the Gregorian switch, so the shortcut
    does not answer; in CORRECTED (4.0's default) it reads them as written, as Spark."""
    file = tmp_path / "old.parquet"
    days = [datetime.date(1500, 3, 1), datetime.date(2000, 1, 1)]
    pq.write_table(pa.table({"day": pa.array(days)}), file)
    recent = tmp_path / "recent.parquet"
    pq.write_table(pa.table({"day": pa.array(days[1:])}), recent)
    key = "spark.sql.parquet.datetimeRebaseModeInRead"
    mode = spark.conf.get(key)
    try:
        for rebasing in ("LEGACY", "EXCEPTION"):
            spark.conf.set(key, rebasing)
            assert plain_parquet_rows(spark.read.parquet(str(file))) is None
            assert_same_as_spark(spark.read.parquet(str(recent)))
        spark.conf.set(key, "CORRECTED")
        assert_same_as_spark(spark.read.parquet(str(file)))
    finally:
        spark.conf.set(key, str(mode))


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_write_of_a_parquet_frame_stores_its_rows(
    spark: SparkSession, tmp_path: Path, table_type: str
) -> None:
    """``write(spark.read.parquet(file))`` through the shortcut stores the file's rows."""
    file = spark_file(spark, tmp_path / "spark", [ROWS[0], ROWS[2]])
    options = {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "n",
        "hoodie.datasource.write.partitionpath.field": "",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.operation": "insert",
    }
    df = spark.read.parquet(str(file))
    table = tmp_path / "table"
    _, started = jobs(spark, lambda: write(df, str(table), options))
    assert started == 0  # the driver's engine, its rows read without Spark
    stored = read_snapshot(HudiTable.open(str(table))).sort_by("id")
    assert stored.column("id").to_pylist() == ["a", "c"]
    assert stored.column("wide").to_pylist() == [ROWS[0][9], None]
    assert stored.column("ts").to_pylist()[0] == ROWS[0][11]


# The columns of SCHEMA a local relation's row collect keeps exactly (no struct, no map),
# and a timestamp column of instants the row collect's Python datetimes could not hold
# in local time: before the Gregorian switch, and one a daylight-saving fold repeats.
LOCAL_SCHEMA = (
    "id string, n int, big bigint, small smallint, tiny tinyint, flag boolean, "
    "f float, d double, price decimal(10,2), wide decimal(30,5), day date, "
    "ts timestamp, raw binary, tags array<string>, nums array<int>, old timestamp"
)
OLD = [
    datetime.datetime(1500, 3, 1, 0, 0, 0, 1, tzinfo=UTC),
    None,
    datetime.datetime(2024, 11, 3, 5, 30, tzinfo=UTC),  # 01:30 twice in New York
]


def local_frame(spark: SparkSession) -> DataFrame:
    return rows_frame(
        spark, [(*row[:15], old) for row, old in zip(ROWS, OLD, strict=True)], LOCAL_SCHEMA
    )


def test_a_local_relation_collects_as_spark_collects_it_without_a_job(
    spark: SparkSession,
) -> None:
    """A frame made on the driver (a local relation) is collected by rows, its
    timestamps by their microseconds: rows, order and Arrow schema are Spark's Arrow
    collect's, and no Spark job runs (filters and projections Spark folds into the
    relation are taken too)."""
    df = local_frame(spark)
    for frame in (df, df.where(F.col("n") < 0), df.select("old", "id", "nums")):
        rows, started = jobs(spark, lambda frame=frame: local_relation_rows(frame))
        assert started == 0 and isinstance(rows, pa.Table)
        spark_rows = collect_arrow(frame)
        assert rows.schema == spark_rows.schema
        assert repr(rows.to_pylist()) == repr(spark_rows.to_pylist())
    assert isinstance(rows, pa.Table) and rows.column("old").to_pylist() == OLD


def test_local_relations_the_row_collect_would_change_fall_back(spark: SparkSession) -> None:
    """Structs (rows), maps (entries reordered by the row collect) and timestamps inside
    a list are left to Spark's collect, as are a frame that is not a local relation and
    one of more rows than the row collect is cheaper for."""
    full = rows_frame(spark, ROWS, SCHEMA)
    for kept in ("address", "attrs", "nested", "items"):
        assert local_relation_rows(full.select("id", kept)) is None, kept
    stamps = rows_frame(spark, [([OLD[0]],)], "stamps array<timestamp>")
    assert local_relation_rows(stamps) is None
    assert local_relation_rows(spark.range(3)) is None
    for count, taken in ((256, True), (257, False)):  # beyond: Arrow's collect is cheaper
        rows = local_relation_rows(rows_frame(spark, [(i,) for i in range(count)], "id int"))
        assert (rows is not None) is taken, count
    rows, started = jobs(spark, lambda: driver_collected(full.select("id", "attrs"), "t"))
    assert started >= 1 and isinstance(rows, pa.Table) and rows.num_rows == 3
