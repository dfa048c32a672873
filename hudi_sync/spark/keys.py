"""Record keys and partition paths as Spark columns, as Hudi's key generators make them."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F

DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def record_key_column(fields: Sequence[str]) -> Column:
    """One field: its value as a string; several: ``f1:v1,f2:v2`` (ComplexKeyGenerator)."""
    if len(fields) == 1:
        return F.col(fields[0]).cast("string")
    parts = [F.concat(F.lit(f"{f}:"), F.col(f).cast("string")) for f in fields]
    return F.when(
        F.greatest(*[F.col(f).isNull().cast("int") for f in fields]) == 1, F.lit(None)
    ).otherwise(F.concat_ws(",", *parts))


def partition_path_column(fields: Sequence[str], hive_style: bool) -> Column:
    """``v1/v2`` or ``f1=v1/f2=v2``; null or empty values become Hudi's default partition."""
    if not fields:
        return F.lit("")
    parts = []
    for field in fields:
        value = F.col(field).cast("string")
        value = F.when(value.isNull() | (value == ""), F.lit(DEFAULT_PARTITION)).otherwise(value)
        parts.append(F.concat(F.lit(f"{field}="), value) if hive_style else value)
    return F.concat_ws("/", *parts)
