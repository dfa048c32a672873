"""Whether Spark's own (Hadoop) file systems can open a table, or Python must."""

from __future__ import annotations

from pyspark.sql import SparkSession

from hudi_sync.storage import Location


def spark_opens(spark: SparkSession, location: Location) -> bool:
    """Whether Spark's own parquet reader can read ``location``: local files, or a
    scheme Spark's Hadoop has a file system for when no storage options were given
    (Spark would not see fsspec's endpoint and credentials)."""
    if location.is_local:
        return True
    if location.storage_options or "://" not in location.uri:
        return False
    scheme = location.uri.split("://", 1)[0].lower()
    try:  # classic sessions only (Spark Connect has no JVM here)
        hadoop = spark._jvm.org.apache.hadoop.fs.FileSystem  # type: ignore[union-attr]
        hadoop.getFileSystemClass(scheme, spark._jsc.hadoopConfiguration())
    except Exception:  # no file system for the scheme (or no JVM): read in Python
        return False
    return True
