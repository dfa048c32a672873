"""What differs between PySpark lines (``hudi_sync/spark/compat.py``), end to end.

The types PySpark derives between Spark and Arrow changed from 4.0 to 4.3: 4.2 wants a
``timezone`` for TIMESTAMP columns where 4.1 took ``timestamp_utc`` (every write that
creates a table, and every read of a timestamp, failed), 4.1 takes an array's or map's
element nullability from the Arrow type (an upsert whose arrays may hold nulls, into a
table whose arrays hold none, failed to cast), and 4.3 checks that a data source's
batches have exactly the declared schema. Such a table, with a TIMESTAMP column,
upserted with rows read back from it, reads the same instants and values through
``read``, ``format("hudi")`` and hudi-rs on every line (the compat tier runs this on
each: docs/testing.md)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from hudi_sync.spark import read, write
from hudi_sync.spark.compat import collect_arrow, has_data_source_api
from tests.warehouse_rows import hudi_rs_rows

# The table's arrays and maps hold no nulls (as Spark's own array() and map() say)...
STORED = StructType(
    [
        StructField("id", IntegerType()),
        StructField("p", StringType()),
        StructField("at", TimestampType()),
        StructField("tags", ArrayType(StringType(), containsNull=False)),
        StructField("attrs", MapType(StringType(), IntegerType(), valueContainsNull=False)),
        StructField("ts", LongType()),
    ]
)
ROWS = [
    (1, "a", datetime(2024, 1, 2, 3, 4, 5, 123456, UTC), ["x"], {"k": 1}, 1),
    (2, "b", None, None, None, 1),
    (3, "a", datetime(1969, 12, 31, 23, 59, 59, 999999, UTC), [], {}, 1),
]
DATA = ["id", "p", "at", "tags", "attrs", "ts"]
# After the upsert of keys 1 and 3 with their instants one second later, ordering value 2.
EXPECTED = [
    (1, "a", datetime(2024, 1, 2, 3, 4, 6, 123456, UTC), ["x", "y"], [("k", 1), ("n", 2)], 2),
    (2, "b", None, None, None, 1),
    (3, "a", datetime(1970, 1, 1, 0, 0, 0, 999999, UTC), [], [], 2),
]


def options(table_type: str, operation: str) -> dict[str, object]:
    return {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.write.table.version": 8,
        "hoodie.datasource.write.operation": operation,
    }


def rows_of(frame: DataFrame | pa.Table) -> list[tuple[Any, ...]]:
    """The data columns by key; a map as its sorted pairs, instants in UTC."""
    table = collect_arrow(frame) if isinstance(frame, DataFrame) else frame
    result = []
    for r in table.select(DATA).to_pylist():
        at = r["at"].astimezone(UTC) if r["at"] is not None else None
        attrs = sorted(r["attrs"]) if r["attrs"] is not None else None
        result.append((r["id"], r["p"], at, r["tags"], attrs, r["ts"]))
    return sorted(result)


@pytest.mark.spark_compat
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_timestamps_arrays_and_maps_round_trip_on_every_spark_line(
    spark: SparkSession, tmp_path: Path, table_type: str
) -> None:
    path = str(tmp_path / "t")
    write(spark.createDataFrame(ROWS, STORED), path, options(table_type, "insert"))
    # Keys 1 and 3 as read back from the table, with new arrays and maps of a type that
    # may hold nulls (a DDL type's default), upserted (Merge-on-Read: into a log file).
    changed = spark.createDataFrame(
        [(1, ["x", "y"], {"k": 1, "n": 2}), (3, [], {})],
        "id int, tags array<string>, attrs map<string,int>",
    )
    again = read(spark, path).where("id in (1, 3)").select("id", "p", "at", "ts")
    again = again.join(changed, "id").select(*DATA).withColumn("ts", F.lit(2).cast("long"))
    again = again.withColumn("at", F.col("at") + F.expr("INTERVAL 1 SECOND"))
    tags, attrs = again.schema["tags"].dataType, again.schema["attrs"].dataType
    assert isinstance(tags, ArrayType) and isinstance(attrs, MapType)
    assert tags.containsNull and attrs.valueContainsNull  # the table's hold no nulls
    write(again, path, options(table_type, "upsert"))

    frames = [read(spark, path)]
    if has_data_source_api():  # format("hudi"): PySpark 4.0+
        frames.append(spark.read.format("hudi").load(path))
    for frame in frames:
        assert frame.schema["at"].dataType == TimestampType()
        assert rows_of(frame) == EXPECTED
    assert rows_of(hudi_rs_rows(path)) == EXPECTED
