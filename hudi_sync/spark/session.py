"""A local Spark session set up for hudi_sync (UTC, this interpreter for workers)."""

from __future__ import annotations

import os
import sys

import pyspark
from pyspark.errors import PySparkRuntimeError
from pyspark.sql import SparkSession

from hudi_sync.errors import HudiSyncError
from hudi_sync.spark.compat import (
    error_condition,
    has_data_source_api,
    minimum_java,
    require_data_source_api,
)


class SparkStartError(HudiSyncError):
    """The local Spark session could not start (most often: no Java 17+)."""


def local_session(app_name: str = "hudi_sync", cores: int = 2) -> SparkSession:
    """``local[cores]`` with UTC session time and Python workers on this interpreter
    (they import pyarrow and hudi_sync); ``format("hudi")`` reads through hudi_sync where
    the Spark line has the Python Data Source API (4.0+), and is left unregistered on 3.5."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app_name)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", str(max(2, cores * 2)))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.log.level", os.environ.get("HUDI_SYNC_SPARK_LOG_LEVEL", "ERROR"))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        # PySpark 4 records the Python call site of every DataFrame and column call for
        # error messages, several py4j round trips each: about half a write's driver
        # calls. Errors still name the failing expression.
        .config("spark.python.sql.dataFrameDebugging.enabled", "false")
        .config("spark.driver.memory", os.environ.get("HUDI_SYNC_SPARK_DRIVER_MEMORY", "2g"))
    )
    try:
        spark = builder.getOrCreate()
    except PySparkRuntimeError as exc:
        if error_condition(exc) != "JAVA_GATEWAY_EXITED":
            raise
        java_home = os.environ.get("JAVA_HOME", "not set")
        raise SparkStartError(
            f"cannot start Spark: its Java process exited (JAVA_HOME {java_home}); "
            f"PySpark {pyspark.__version__} needs Java {minimum_java()} or later (`java -version`)"
        ) from None
    if has_data_source_api():
        register(spark)  # spark.read.format("hudi")
    return spark


def register(spark: SparkSession) -> None:
    """Make ``format("hudi")`` read through hudi_sync in this session; refused in one line
    on PySpark 3.5, which has no Python Data Source API."""
    require_data_source_api()
    from hudi_sync.spark.datasource import HudiDataSource  # imports pyspark.sql.datasource

    spark.dataSource.register(HudiDataSource)
