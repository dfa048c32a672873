"""The Spark-line shims (``hudi_sync.spark.compat``) keep one contract on every line:
Arrow tables in and out of Spark with every type, grouped Arrow functions over whole
groups, and ``format("hudi")`` where the line has the Python Data Source API (4.0+),
refused in one line where it has not (3.5)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import LongType, StringType, StructField, StructType

import hudi_sync.spark
from hudi_sync.spark import read, register, write
from hudi_sync.spark.compat import (
    SparkLineError,
    apply_in_arrow,
    arrow_dataframe,
    collect_arrow,
    has_data_source_api,
    spark_line,
)
from tests.test_spark_writer import frame, options

pytestmark = pytest.mark.spark_compat

UTC = dt.UTC


def _typed_table() -> pa.Table:
    """One column of each type the writer and reader hand between Arrow and Spark, with
    nulls, at the top level and nested."""
    instant = dt.datetime(2024, 3, 1, 12, 30, 45, 123456, tzinfo=UTC)
    point = pa.struct([("x", pa.int32()), ("at", pa.timestamp("us", "UTC"))])
    return pa.table(
        {
            "id": pa.array([1, 2, None], pa.int64()),
            "name": pa.array(["a", None, "ccc"], pa.string()),
            "at": pa.array([instant, None, instant], pa.timestamp("us", "UTC")),
            "at_ns": pa.array([instant, instant, None], pa.timestamp("ns", "UTC")),
            "price": pa.array([Decimal("12.345"), None, Decimal("-0.001")], pa.decimal128(10, 3)),
            "blob": pa.array([b"\x00\xff", None, b""], pa.binary()),
            "fixed": pa.array([b"abcd", b"\x00\x01\x02\x03", None], pa.binary(4)),
            "day": pa.array([dt.date(2024, 1, 2), None, dt.date(1970, 1, 1)], pa.date32()),
            "point": pa.array([{"x": 1, "at": instant}, None, {"x": None, "at": None}], point),
            "tags": pa.array([["a", None], [], None], pa.list_(pa.string())),
            "big_list": pa.array([[1, 2], None, [3]], pa.large_list(pa.int64())),
            "props": pa.array([[("k", 1)], None, []], pa.map_(pa.string(), pa.int64())),
        }
    )


def test_arrow_tables_cross_into_spark_and_back_with_every_type(spark: SparkSession) -> None:
    table = _typed_table()
    df = arrow_dataframe(spark, table)
    assert df.count() == 3
    back = collect_arrow(df)
    # Spark's types: timestamps in microseconds, UTC; fixed-size binary as binary, large
    # lists as lists (Spark has one binary and one array type).
    spark_types = {
        "at_ns": pa.timestamp("us", "UTC"),
        "fixed": pa.binary(),
        "big_list": pa.list_(pa.int64()),
    }
    expected = table.cast(
        pa.schema([f.with_type(spark_types.get(f.name, f.type)) for f in table.schema])
    )
    assert back.schema.names == expected.schema.names
    assert back.to_pylist() == expected.to_pylist()
    assert back.schema.field("price").type == pa.decimal128(10, 3)
    assert back.schema.field("at").type == pa.timestamp("us", "UTC")


def test_an_empty_batch_inside_an_arrow_table_loses_no_later_row(spark: SparkSession) -> None:
    """Spark's Arrow stream reader ends at an empty batch: rows after one were dropped."""
    part = pa.table({"id": pa.array([1, 2], pa.int64())})
    table = pa.concat_tables([part, part.slice(0, 0), part, part.slice(0, 0)])
    assert [len(c) for c in table.column("id").chunks] == [2, 0, 2, 0]
    df = arrow_dataframe(spark, table)
    assert df.count() == 4
    assert sorted(collect_arrow(df).column("id").to_pylist()) == [1, 1, 2, 2]


def test_zoneless_timestamps_are_wall_clock_times_of_the_session_zone(
    spark: SparkSession,
) -> None:
    """As ``createDataFrame`` of an Arrow table does on 4.0: a zone-less timestamp bound
    for a Spark timestamp is a time in the session's zone (nested ones too)."""
    wall = dt.datetime(2024, 6, 1, 8, 0, 0)
    table = pa.table(
        {
            "t": pa.array([wall], pa.timestamp("us")),
            "s": pa.array([{"t": wall}], pa.struct([("t", pa.timestamp("us"))])),
            "l": pa.array([[wall]], pa.list_(pa.timestamp("us"))),
        }
    )
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        back = collect_arrow(arrow_dataframe(spark, table)).to_pylist()
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone or "UTC")
    instant = dt.datetime(2024, 6, 1, 12, 0, 0, tzinfo=UTC)  # 08:00 EDT
    assert back == [{"t": instant, "s": {"t": instant}, "l": [instant]}]


def test_an_empty_arrow_table_keeps_its_schema(spark: SparkSession) -> None:
    table = _typed_table().slice(0, 0)
    back = collect_arrow(arrow_dataframe(spark, table))
    assert back.num_rows == 0
    assert back.schema.names == table.schema.names
    assert back.schema.field("point").type == table.schema.field("point").type


def _group_summary(rows: pa.Table) -> pa.Table:
    """One row per call: the group's keys as seen, how many rows, their values in order."""
    keys = {(p, b) for p, b in zip(rows["p"].to_pylist(), rows["b"].to_pylist(), strict=True)}
    values = sorted(rows["v"].to_pylist())
    return pa.table(
        {
            "keys": [repr(sorted(keys, key=repr))],
            "count": pa.array([rows.num_rows], pa.int64()),
            "values": [repr(values)],
        }
    )


def test_grouped_arrow_functions_see_each_whole_group_once(spark: SparkSession) -> None:
    """Groups larger than an Arrow batch, null keys, and keys equal in one column only:
    each group reaches the function once, whole, alone."""
    rows = [("x" if i % 3 else None, i % 2, i) for i in range(40)]
    df = spark.createDataFrame(rows, "p string, b long, v long").repartition(3)
    schema = StructType(
        [
            StructField("keys", StringType()),
            StructField("count", LongType()),
            StructField("values", StringType()),
        ]
    )
    batch = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "4")
    try:
        got = collect_arrow(apply_in_arrow(df, ("p", "b"), _group_summary, schema))
    finally:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", batch or "10000")
    expected: dict[tuple[str | None, int], list[int]] = {}
    for p, b, v in rows:
        expected.setdefault((p, b), []).append(v)
    assert sorted(got.to_pylist(), key=lambda r: str(r["keys"])) == sorted(
        (
            {"keys": repr([key]), "count": len(values), "values": repr(sorted(values))}
            for key, values in expected.items()
        ),
        key=lambda r: str(r["keys"]),
    )


def _written(spark: SparkSession, tmp_path: Path) -> str:
    path = str(tmp_path / "t")
    rows = [{"id": i, "p": "ab"[i % 2], "name": f"n{i}", "ts": 1} for i in range(6)]
    write(frame(spark, rows, False), path, options("t", 8, "insert"))
    return path


def test_format_hudi_reads_on_4_and_is_refused_in_one_line_on_3_5(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Each line's contract: 4.0+ registers ``format("hudi")`` (``local_session`` did)
    and it reads what ``read`` reads; 3.5 refuses ``register`` and ``HudiDataSource`` in
    one line naming the line needed, and leaves the format name to Spark."""
    path = _written(spark, tmp_path)
    star: dict[str, object] = {}
    exec("from hudi_sync.spark import *", star)  # every line: what the line has
    assert ("HudiDataSource" in star) == has_data_source_api()
    ours = sorted(r["id"] for r in collect_arrow(read(spark, path)).to_pylist())
    assert ours == list(range(6))
    if has_data_source_api():
        assert spark_line() >= (4, 0)
        register(spark)  # again: a no-op replacement
        loaded = spark.read.format("hudi").load(path)
        assert sorted(r["id"] for r in collect_arrow(loaded).to_pylist()) == ours
        assert hudi_sync.spark.HudiDataSource.name() == "hudi"
        return
    assert spark_line() < (4, 0)
    for refused in (lambda: register(spark), lambda: hudi_sync.spark.HudiDataSource):
        with pytest.raises(SparkLineError) as caught:
            refused()
        message = str(caught.value)
        assert "\n" not in message
        assert 'format("hudi") and readStream need PySpark 4.0+' in message
        assert "hudi_sync.spark.read" in message
    # Left to Spark, never patched: on a cluster with Apache Hudi's Spark bundle (EMR,
    # Glue, Dataproc) format("hudi") is Hudi's own reader; here there is none.
    with pytest.raises(Exception, match="DATA_SOURCE_NOT_FOUND"):
        spark.read.format("hudi").load(path).collect()


def test_local_sessions_record_no_python_call_site_per_dataframe_call(
    spark: SparkSession,
) -> None:
    """PySpark 4 records each DataFrame and column call's Python call site through
    several py4j round trips (about half of a small executors' write's);
    ``local_session`` turns that off (3.5 records none, and ignores the setting)."""
    assert spark.conf.get("spark.python.sql.dataFrameDebugging.enabled") == "false"
    if spark_line() >= (4, 0):
        from pyspark.errors.utils import is_debugging_enabled

        assert not is_debugging_enabled()
