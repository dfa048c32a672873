"""Which engine takes a write: the driver's (``driver_write``, ``bucket_index``) for a
small batch, the executors' for a large one.

The size is Spark's optimizer estimate when it has one. Rows Spark cannot size (a
DataFrame made from a Python list or an RDD: the estimate is Spark's "unknown",
``Long.MAX_VALUE``; a Spark Connect client, which gives none) are probed instead: at
most as many rows as ``hudi_sync.write.driver.max.bytes`` could hold (at Spark's
default width of a value, 20 bytes) are collected, and when they are all the rows and
fit, the driver writes them. Otherwise the probe is dropped and the executors write.
Rows a frame reads plainly from parquet files are read without Spark (``collect``).
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame

from hudi_sync import config as cfg
from hudi_sync.spark.writing.collect import driver_collected
from hudi_sync.spark.writing.incoming import collected_rows
from hudi_sync.spark.writing.options import WriteOptions

UNKNOWN_SIZE = 2**63 - 1  # what Spark estimates for rows it cannot size
_VALUE_BYTES = 20  # Spark's default size of a string value, the widest common guess
_MOST_ROWS = 2**31 - 2  # Spark's limit takes an int


def size_estimate(df: DataFrame) -> int | None:
    """Spark's optimizer estimate of the DataFrame's size in bytes; None where it has
    none to give (a Spark Connect client)."""
    try:
        stats = df._jdf.queryExecution().optimizedPlan().stats()
        size = stats.sizeInBytes()  # a Scala BigInt: py4j hands it over as an int
        return int(size if isinstance(size, int) else size.toString())
    except Exception:
        return None


def driver_rows(df: DataFrame, options: WriteOptions, where: str) -> pa.Table | None:
    """``df``'s rows, collected, when the driver's engine takes the write; None when the
    executors do (``hudi_sync.write.driver.max.bytes``: see the module's docstring)."""
    limit = cfg.WRITE_DRIVER_MAX_BYTES.read(options.raw)
    if limit <= 0:
        return None
    estimate = size_estimate(df)
    if estimate is not None and estimate < UNKNOWN_SIZE:
        return driver_collected(df, where) if estimate <= limit else None
    most = max(1, min(limit // (_VALUE_BYTES * max(1, len(df.columns))), _MOST_ROWS))
    probe = collected_rows(df.limit(most + 1), where)  # in the rows' order
    return probe if probe.num_rows <= most and probe.nbytes <= limit else None
