"""Column stats of index version 1 (table version 8) on INT64 times and timestamps.

Hudi 1.0 reads a Parquet footer's statistics as Java values, converting only decimals,
dates and strings: a timestamp's or a microsecond time's bounds stay the raw long of its
unit, stored in a ``LongWrapper``. A write into a v8 table indexing such a column keeps
its stats as Hudi does (the write was refused, after its data files were written).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from hudi_sync.spark import read, write
from hudi_sync.table import HudiTable
from hudi_sync.table.metadata_table import column_stats
from hudi_sync.table.metadata_table.reader import MetadataTableReader
from hudi_sync.table.metadata_table.records import WrappedValue
from hudi_sync.table.read.snapshot import read_snapshot
from tests.metadata_checks import rows_by_key, write_options

UTC = dt.UTC
FIRST = dt.datetime(2024, 5, 1, 12, 0, 0, 250_000, tzinfo=UTC)
LAST = dt.datetime(2024, 5, 2, 8, 30, 0, 1, tzinfo=UTC)


def _micros(moment: dt.datetime) -> int:
    return (moment - dt.datetime(1970, 1, 1, tzinfo=UTC)) // dt.timedelta(microseconds=1)


def test_a_parquet_timestamp_and_time_are_long_wrappers_in_index_version_1(
    tmp_path: Path,
) -> None:
    path = tmp_path / "times.parquet"
    table = pa.table(
        {
            "at": pa.array([LAST, None, FIRST], pa.timestamp("us", tz="UTC")),
            "local_at": pa.array([FIRST, LAST, None], pa.timestamp("ms")),
            "clock": pa.array([5_000_000, 7, None], pa.time64("us")),
        }
    )
    pq.write_table(table, path)
    ranges = column_stats.parquet_column_ranges(
        path.name, pq.ParquetFile(path).metadata, ["at", "local_at", "clock"]
    )
    stored = {r.column: column_stats.column_stats_of(r, version=1) for r in ranges}
    assert stored["at"].min_value == WrappedValue("LongWrapper", _micros(FIRST))
    assert stored["at"].max_value == WrappedValue("LongWrapper", _micros(LAST))
    assert stored["local_at"].min_value == WrappedValue("LongWrapper", _micros(FIRST) // 1000)
    assert stored["local_at"].max_value == WrappedValue("LongWrapper", _micros(LAST) // 1000)
    assert stored["clock"].min_value == WrappedValue("LongWrapper", 7)
    assert stored["clock"].max_value == WrappedValue("LongWrapper", 5_000_000)
    assert all(s.value_type is None for s in stored.values())  # version 1 has none


def _index_column(path: Path, column: str) -> None:
    """Index ``column`` too, as a Hudi writer configured with it would have."""
    where = path / ".hoodie" / ".index_defs" / "index.json"
    definitions = json.loads(where.read_text())
    definitions["indexDefinitions"]["column_stats"]["sourceFields"].append(column)
    where.write_text(json.dumps(definitions, indent=2))


def test_a_v8_write_of_a_timestamp_column_keeps_its_stats(  # type: ignore[no-untyped-def]
    spark, fixture_copy
) -> None:
    """Two inserts into the v8 fixture with a new timestamp column (and a date column) its
    column stats index: both complete, each file's stats and the partition's hold the raw
    microseconds (the dates' days, in the ``DateWrapper``, combine into partition stats)."""
    from pyspark.sql.types import DateType, StructField, TimestampType

    path = fixture_copy("mor/avro/v8_trips_8i3u1d")
    table = HudiTable.open(str(path))
    model = rows_by_key(read_snapshot(table), "uuid")
    columns = list(next(iter(model.values())))
    base = read(spark, str(path)).select(*columns).schema
    schema = base.add(StructField("seen_at", TimestampType(), True))
    schema = schema.add(StructField("seen_on", DateType(), True))
    template = model[min(model)]
    options = write_options(
        table,
        "insert",
        **{"hoodie.metadata.record.index.enable": "false"},
        **{"hoodie.metadata.index.secondary.enable": "false"},
    )

    def insert(key: str, city: str, moment: dt.datetime) -> Any:
        row: dict[str, Any] = dict(template, uuid=key, city=city)
        values = [*(row[c] for c in columns), moment, moment.date()]
        frame = spark.createDataFrame([values], schema)
        return write(frame, str(path), options)

    insert("widening", "early", FIRST)  # the table's schema gains the column
    _index_column(path, "seen_at")
    _index_column(path, "seen_on")
    for key, moment in (("first", FIRST), ("last", LAST)):
        insert(key, "timely", moment)
    reader = MetadataTableReader.of(HudiTable.open(str(path)))
    files = [
        r.column_stats
        for r in reader.read_partition("column_stats").values()
        if r.column_stats is not None and r.column_stats.column_name == "seen_at"
    ]
    bounds = sorted(
        (s.min_value.wrapper, s.min_value.value, s.max_value.value)
        for s in files
        if not s.is_deleted and s.min_value is not None and s.max_value is not None
    )
    assert bounds == [
        ("LongWrapper", _micros(FIRST), _micros(FIRST)),
        ("LongWrapper", _micros(LAST), _micros(LAST)),
    ]
    (partition,) = [
        r.column_stats
        for r in reader.read_partition("partition_stats").values()
        if r.column_stats is not None
        and r.column_stats.column_name == "seen_at"
        and r.column_stats.file_name == "city=timely"
    ]
    assert (partition.min_value, partition.max_value) == (
        WrappedValue("LongWrapper", _micros(FIRST)),
        WrappedValue("LongWrapper", _micros(LAST)),
    )
    assert partition.value_count == 2
    (dates,) = [
        r.column_stats
        for r in reader.read_partition("partition_stats").values()
        if r.column_stats is not None
        and r.column_stats.column_name == "seen_on"
        and r.column_stats.file_name == "city=timely"
    ]
    epoch = dt.date(1970, 1, 1)
    assert (dates.min_value, dates.max_value) == (
        WrappedValue("DateWrapper", (FIRST.date() - epoch).days),
        WrappedValue("DateWrapper", (LAST.date() - epoch).days),
    )
    assert {"first", "last"} <= set(rows_by_key(read_snapshot(HudiTable.open(str(path))), "uuid"))
