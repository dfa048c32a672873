"""Small DataFrames for tests, made from Arrow.

``spark.createDataFrame(list_of_rows)`` makes an RDD-backed frame: Spark cannot size it,
and collecting it (what the writer's driver engine does with a small write) runs a
Python worker job, about 0.4 s a write. A frame made from Arrow is a local relation
Spark sizes and collects without one. Tests whose subject is not the frame's origin
make their rows with ``rows_frame``; the list-made path stays proven where it is the
subject (``tests/test_driver_write.py``: the writer's probe of rows it cannot size).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType, _parse_datatype_string

from hudi_sync.spark.compat import arrow_dataframe, to_arrow_schema


def rows_frame(
    spark: SparkSession,
    rows: Sequence[Mapping[str, Any] | Sequence[Any]],
    schema: str | StructType,
) -> DataFrame:
    """``rows`` (mappings by column name, or tuples in the schema's order) as a DataFrame
    of ``schema`` (a DDL string or a ``StructType``), in this order."""
    struct = _parse_datatype_string(schema) if isinstance(schema, str) else schema
    assert isinstance(struct, StructType), schema
    names = struct.fieldNames()
    columns: list[list[Any]] = [[] for _ in names]
    for row in rows:
        values = [row.get(n) for n in names] if isinstance(row, Mapping) else list(row)
        assert len(values) == len(names), (row, names)
        for column, value in zip(columns, values, strict=True):
            column.append(value)
    arrow_schema = to_arrow_schema(struct)
    table = pa.Table.from_arrays(
        [pa.array(c, type=f.type) for c, f in zip(columns, arrow_schema, strict=True)],
        schema=arrow_schema,
    )
    return arrow_dataframe(spark, table)
