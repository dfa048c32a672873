"""Writes into tables partitioned by Hudi's TIMESTAMP and CUSTOM key generators, on both
engines (Spark's ``write`` and the driver's ``write_arrow``), read back by hudi-rs.

The expected partition paths are derived here with ``datetime`` (not the writer's
formatter), and for the Hudi-written fixture from the paths Hudi itself wrote.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from hudi_sync.errors import BadInputError
from hudi_sync.spark import read, write, write_arrow
from hudi_sync.table import HudiTable
from hudi_sync.table.keys.timestamp_keygen import TimestampPartition
from hudi_sync.table.read.snapshot import read_snapshot
from tests.frames import rows_frame
from tests.warehouse_rows import hudi_rs_rows

P = "hoodie.keygen.timebased."
FIXTURE = "cow/v6_timebasedkeygen_nonhivestyle"
NY = ZoneInfo("America/New_York")


def _day(millis: int, zone: dt.tzinfo) -> str:
    instant = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=millis)
    return instant.astimezone(zone).strftime("%Y/%m/%d")


def _snapshot(path: Path) -> dict[Any, tuple[str, Any]]:
    """hudi-rs's rows: key -> (partition path, value)."""
    rows = hudi_rs_rows(str(path)).to_pylist()
    assert len(rows) == len({r["_hoodie_record_key"] for r in rows})  # no key twice
    return {r["id"]: (r["_hoodie_partition_path"], r["v"]) for r in rows}


def _stored_paths(path: Path) -> dict[str, str]:
    """The fixture's rows as Hudi wrote them: ts_str -> _hoodie_partition_path."""
    paths = {}
    for file in path.rglob("*.parquet"):
        for row in pq.read_table(file, columns=["ts_str", "_hoodie_partition_path"]).to_pylist():
            paths[row["ts_str"]] = row["_hoodie_partition_path"]
    return paths


def test_a_write_into_hudis_timestamp_fixture_lands_where_hudi_puts_its_rows(  # type: ignore[no-untyped-def]
    spark, fixture_copy
) -> None:
    path: Path = fixture_copy(FIXTURE)
    written_by_hudi = _stored_paths(path)
    # The fixture keeps the formats but not the type: Hudi's key generator requires it.
    stored = HudiTable.open(str(path)).config.raw
    assert P + "timestamp.type" not in stored
    loaded = read(spark, str(path))
    rows = loaded.drop(*[c for c in loaded.columns if c.startswith("_hoodie")])
    new = {
        5: "2023-04-05T23:59:59.999Z",
        6: "2024-02-29T01:00:00.000+05:00",
        1: "2023-04-01T12:01:00.123Z",
    }
    frame = rows.filter(F.col("id") == 1)
    batch = frame.withColumn("name", F.lit("updated"))
    for key in (5, 6):
        batch = batch.unionByName(
            frame.withColumn("id", F.lit(key)).withColumn("ts_str", F.lit(new[key]))
        )
    before = len(HudiTable.open(str(path)).timeline.completed_writes)
    with pytest.raises(BadInputError, match=P + "timestamp.type is required"):
        write(batch, str(path), {"hoodie.datasource.write.operation": "upsert"})
    assert len(HudiTable.open(str(path)).timeline.completed_writes) == before  # nothing written
    write(
        batch,
        str(path),
        {"hoodie.datasource.write.operation": "upsert", P + "timestamp.type": "DATE_STRING"},
    )
    # The stored rows' ts_str give Hudi's own paths: the formatter agrees with each.
    keygen = TimestampPartition.from_options({**stored, P + "timestamp.type": "DATE_STRING"})
    for text, hudi_path in written_by_hudi.items():
        assert keygen.value(text, "t") == hudi_path
    rows_rs = hudi_rs_rows(str(path)).to_pylist()
    got = {r["id"]: (r["_hoodie_partition_path"], r["name"]) for r in rows_rs}
    assert len(rows_rs) == 6 and got[1][1] == "updated"
    # new rows: printed in their own zone (no output zone), as Hudi prints them
    for key, text in new.items():
        parsed = dt.datetime.fromisoformat(text)
        assert got[key][0] == parsed.strftime("%Y/%m/%d/%H")
    assert got[1][0] == written_by_hudi["2023-04-01T12:01:00.123Z"] == "2023/04/01/12"
    for key in (2, 3, 4):
        assert got[key][0] in written_by_hudi.values()


def _options(version: int, table_type: str, **more: object) -> dict[str, object]:
    return {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "seq",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.write.table.version": version,
        "hoodie.datasource.write.operation": "upsert",
        **more,
    }


TIMESTAMP_MS_NY = {
    "hoodie.datasource.write.partitionpath.field": "ts",
    "hoodie.datasource.write.keygenerator.type": "TIMESTAMP",
    P + "timestamp.type": "EPOCHMILLISECONDS",
    P + "output.dateformat": "yyyy/MM/dd",
    P + "output.timezone": "America/New_York",
}
# 2024-03-10 06:59:59.999Z (01:59 EST, before the spring change), epoch 0, a leap day
# late in New York (already March 1st in UTC), a negative epoch
MILLIS = [1_710_053_999_999, 0, 1_709_251_199_000, -86_400_001]


def _frame(spark: Any, rows: pa.Table) -> Any:
    """``rows`` as a Spark DataFrame of the same column types."""
    columns = {"id": "long", "ts": "long", "v": "string", "seq": "long", "region": "string"}
    schema = ", ".join(f"{name} {columns[name]}" for name in rows.column_names)
    return rows_frame(spark, rows.to_pylist(), schema)


def _rows(values: Sequence[int | None], tag: str, **more: list[Any]) -> pa.Table:
    return pa.table(
        {
            "id": list(range(1, len(values) + 1)),
            "ts": pa.array(values, pa.int64()),
            "v": [f"{tag}{i}" for i in range(len(values))],
            "seq": [1] * len(values),
            **more,
        }
    )


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_the_spark_engine_writes_a_timestamp_table(spark, tmp_path: Path, table_type: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    options = _options(
        9,
        table_type,
        **TIMESTAMP_MS_NY,
        **{"hoodie.datasource.write.hive_style_partitioning": "true"},
    )
    write(_frame(spark, _rows([*MILLIS, None], "a")), str(path), options)
    expected = {i + 1: (f"ts={_day(m, NY)}", f"a{i}") for i, m in enumerate(MILLIS)}
    expected[5] = (f"ts={_day(1, NY)}", "a4")  # a null is epoch + 1 ms
    assert _snapshot(path) == expected
    props = HudiTable.open(str(path)).config.raw
    assert props["hoodie.table.keygenerator.type"] == "TIMESTAMP"
    assert props[P + "output.timezone"] == "America/New_York"
    # A later write saying nothing of the key generator takes the table's settings.
    bare = _options(9, table_type)
    write(_frame(spark, _rows([MILLIS[0]], "b")), str(path), bare)
    assert _snapshot(path)[1] == (f"ts={_day(MILLIS[0], NY)}", "b0")


def test_the_arrow_engine_writes_a_timestamp_bucket_table(tmp_path: Path) -> None:
    path = tmp_path / "t"
    bucket = {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": 2}
    write_arrow(
        _rows(MILLIS, "a"), str(path), _options(8, "MERGE_ON_READ", **TIMESTAMP_MS_NY, **bucket)
    )
    assert _snapshot(path) == {i + 1: (_day(m, NY), f"a{i}") for i, m in enumerate(MILLIS)}
    # stating the table's key generator alone: its fields and settings are the table's
    restated = {"hoodie.datasource.write.keygenerator.type": "TIMESTAMP"}
    write_arrow(_rows(MILLIS[:1], "b"), str(path), _options(8, "MERGE_ON_READ", **restated))
    assert _snapshot(path)[1] == (_day(MILLIS[0], NY), "b0")
    # A stated setting the table keeps must agree with it.
    with pytest.raises(
        BadInputError, match=P + "output.timezone=UTC \\(table: America/New_York\\)"
    ):
        write_arrow(
            _rows(MILLIS[:1], "c"),
            str(path),
            _options(8, "MERGE_ON_READ", **{P + "output.timezone": "UTC"}),
        )


CUSTOM = {
    "hoodie.datasource.write.partitionpath.field": "region:SIMPLE,ts:TIMESTAMP",
    "hoodie.datasource.write.keygenerator.type": "CUSTOM",
    P + "timestamp.type": "UNIX_TIMESTAMP",
    P + "output.dateformat": "yyyy-MM-dd",
}
SECONDS = [1_709_164_800, 0, -1]


def _own_snapshot(path: Path) -> dict[Any, tuple[str, Any]]:
    """hudi_sync's reader's rows (hudi-rs 0.5 cannot read a version 8+ CUSTOM table: it
    takes the kinds Hudi keeps in hoodie.table.partition.fields for column names)."""
    rows = read_snapshot(HudiTable.open(str(path))).to_pylist()
    assert len(rows) == len({r["_hoodie_record_key"] for r in rows})
    return {r["id"]: (r["_hoodie_partition_path"], r["v"]) for r in rows}


def test_a_custom_table_by_both_engines(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    regions = ["eu", None, "us"]
    expected = {
        i + 1: (
            f"{r or '__HIVE_DEFAULT_PARTITION__'}/{_day(s * 1000, dt.UTC).replace('/', '-')}",
            f"a{i}",
        )
        for i, (r, s) in enumerate(zip(regions, SECONDS, strict=True))
    }
    spark_path, arrow_path, v6_path = tmp_path / "spark", tmp_path / "arrow", tmp_path / "v6"
    rows = _rows(SECONDS, "a", region=regions)
    write(_frame(spark, rows), str(spark_path), _options(9, "COPY_ON_WRITE", **CUSTOM))
    bucket = {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": 2}
    write_arrow(rows, str(arrow_path), _options(9, "MERGE_ON_READ", **CUSTOM, **bucket))
    assert _own_snapshot(spark_path) == _own_snapshot(arrow_path) == expected
    config = HudiTable.open(str(spark_path)).config
    # Hudi 1.x keeps each field's kind from version 8 on (SparkKeyGenUtils)
    assert config.raw["hoodie.table.partition.fields"] == "region:simple,ts:timestamp"
    assert config.raw["hoodie.table.keygenerator.type"] == "CUSTOM"
    assert config.partition_fields == ("region", "ts")
    # so a later write needs no partition options, and may not change a field's kind
    changed = {"hoodie.datasource.write.partitionpath.field": "region:SIMPLE,ts:SIMPLE"}
    with pytest.raises(BadInputError, match="ts:SIMPLE \\(table: region:simple,ts:timestamp\\)"):
        write_arrow(rows, str(arrow_path), _options(9, "MERGE_ON_READ", **{**CUSTOM, **changed}))
    write_arrow(
        _rows(SECONDS[:1], "b", region=["eu"]), str(arrow_path), _options(9, "MERGE_ON_READ")
    )
    assert _own_snapshot(arrow_path)[1] == (expected[1][0], "b0")
    # Version 6 keeps the names alone: hudi-rs reads it, and each write restates the kinds.
    write_arrow(rows, str(v6_path), _options(6, "MERGE_ON_READ", **CUSTOM, **bucket))
    assert _snapshot(v6_path) == expected
    config = HudiTable.open(str(v6_path)).config
    assert config.raw["hoodie.table.partition.fields"] == "region,ts"
    assert config.key_generator == "org.apache.hudi.keygen.CustomKeyGenerator"
    with pytest.raises(BadInputError, match="field:SIMPLE or field:TIMESTAMP"):
        write_arrow(
            _rows(SECONDS[:1], "b", region=["eu"]), str(v6_path), _options(6, "MERGE_ON_READ")
        )


def test_a_bad_value_is_refused_by_the_spark_engine_in_one_line(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    options = _options(
        9,
        "COPY_ON_WRITE",
        **{
            "hoodie.datasource.write.partitionpath.field": "ts",
            "hoodie.datasource.write.keygenerator.type": "TIMESTAMP",
            P + "timestamp.type": "DATE_STRING",
            P + "input.dateformat": "yyyy-MM-dd",
            P + "output.dateformat": "yyyy/MM/dd",
        },
    )
    frame = rows_frame(spark, [(1, "2024-02-30", "a", 1)], "id long, ts string, v string, seq int")
    with pytest.raises(BadInputError, match="'2024-02-30' is not a date") as caught:
        write(frame, str(tmp_path / "t"), options)
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "t" / ".hoodie" / "timeline").exists() or not list(
        (tmp_path / "t" / ".hoodie" / "timeline").glob("*.commit")
    )


def test_the_spark_engine_formats_date_and_timestamp_columns(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A date is its epoch day in the unit; a timestamp its instant (with Hudi's consistent
    logical timestamps), whatever the session's zone: Spark hands pandas local times."""
    path = tmp_path / "t"
    options = _options(
        6,
        "COPY_ON_WRITE",
        **{
            "hoodie.datasource.write.partitionpath.field": "d:TIMESTAMP,t:TIMESTAMP",
            "hoodie.datasource.write.keygenerator.type": "CUSTOM",
            "hoodie.datasource.write.keygenerator.consistent.logical.timestamp.enabled": "true",
            P + "timestamp.type": "SCALAR",
            P + "timestamp.scalar.time.unit": "DAYS",
            P + "output.dateformat": "yyyy-MM-dd",
            P + "output.timezone": "America/New_York",
        },
    )
    instant = dt.datetime(2024, 3, 10, 6, 59, 59, tzinfo=dt.UTC)  # 01:59:59 in New York
    rows = [(1, dt.date(2024, 2, 29), instant, "a", 1), (2, None, None, "b", 1)]
    frame = spark.createDataFrame(rows, "id long, d date, t timestamp, v string, seq long")
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "Asia/Tokyo")
    try:
        write(frame, str(path), options)
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
    # a null date is day 1 (1970-01-02 UTC: 01-01 in New York); a null timestamp 1 day too
    assert _snapshot(path) == {
        1: ("2024-02-28/2024-03-10", "a"),
        2: ("1970-01-01/1970-01-01", "b"),
    }


def test_a_custom_tables_timestamp_fields_are_read_as_formatted_strings(tmp_path: Path) -> None:
    """Warehouse targets type partition columns from these: a CUSTOM table's TIMESTAMP
    fields hold printed dates, its SIMPLE fields their values (version 6 keeps no kinds:
    every field is taken as printed)."""
    bucket = {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": 1}
    rows = _rows(SECONDS, "a", region=[1, 2, 3])
    for version, region_formatted in ((9, False), (6, True)):
        path = tmp_path / f"v{version}"
        write_arrow(rows, str(path), _options(version, "MERGE_ON_READ", **CUSTOM, **bucket))
        fields = {f.name: f for f in HudiTable.open(str(path)).partition_fields}
        assert fields["ts"].formatted and fields["ts"].avro_type == "string"
        assert fields["region"].formatted is region_formatted
        assert (fields["region"].avro_type == "string") is region_formatted
