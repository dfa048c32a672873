"""How many Spark tasks to spread work over, on a classic session or Spark Connect."""

from __future__ import annotations

import os

from pyspark.sql import SparkSession

from hudi_sync.spark.compat import spark_context


def default_parallelism(spark: SparkSession) -> int:
    """How many tasks to spread a list of files over: the session's default parallelism.
    Spark Connect clients have no SparkContext: there, the configured value, else the
    local CPU count."""
    context = spark_context(spark)
    if context is not None:
        return int(context.defaultParallelism)
    configured = spark.conf.get("spark.default.parallelism", None)
    return int(configured) if configured else os.cpu_count() or 2
