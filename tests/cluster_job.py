"""A write sequence on a real multi-process Spark cluster, run by tests in a subprocess.

``local-cluster[2,1,1024]`` starts two executor JVMs, each with its own Python workers,
from the pyspark package: nothing but the object store is shared between the driver and
the processes that write the base files. Usage::

    python -m tests.cluster_job TABLE_URI STORAGE_OPTIONS_JSON [--connect]
    python -m tests.cluster_job --serve

It writes insert → upsert → delete → insert_overwrite of a small table to TABLE_URI (or
the first ``steps`` of them) and prints one JSON object: each commit's instant and the
rows our reader reads back. With
``--connect`` the same runs as a Spark Connect client of a local Connect server (started
from the pyspark package), as on a Connect-only cluster. With ``--serve`` one
``local-cluster`` stays up and runs the sequence once per line of standard input
(``{"uri": ..., "storage_options": ..., "steps": N}``), answering each with a line ``RESULT {...}``
(or ``FAILED <traceback>``): starting the three JVMs and warming them up costs far more
than a sequence, so the tests share one cluster.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from pyspark.sql import SparkSession

from hudi_sync.spark.compat import collect_arrow
from tests.frames import rows_frame

SCHEMA = "id int, p string, name string, ts long"
STEPS: list[tuple[str, list[tuple[int, str, str, int]]]] = [
    ("insert", [(i, "abc"[i % 3], f"v{i}", 1) for i in range(12)]),
    ("upsert", [(1, "b", "u1", 2), (4, "b", "u4", 2), (20, "c", "new20", 2), (7, "b", "old", 0)]),
    ("delete", [(2, "c", "", 3), (5, "c", "", 3)]),
    ("insert_overwrite", [(30, "a", "only-a", 4)]),
]


def options(operation: str) -> dict[str, Any]:
    return {
        "hoodie.table.name": "cluster_t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.write.table.version": 8,
        "hoodie.datasource.write.operation": operation,
        "hoodie.parquet.max.file.size": 6000,
        "hoodie.parquet.small.file.limit": 3000,
        "hoodie.copyonwrite.record.size.estimate": 400,
        # The executors write, however small the rows: what this job proves is that they
        # need nothing of the driver's but the object store.
        "hudi_sync.write.driver.max.bytes": 0,
    }


def session(connect: bool) -> SparkSession:
    if connect:
        return SparkSession.builder.remote("local[2]").getOrCreate()
    return (
        SparkSession.builder.master("local-cluster[2,1,1024]")
        .appName("hudi_sync cluster test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.log.level", "ERROR")
        .config("spark.executorEnv.PYTHONPATH", os.environ.get("PYTHONPATH", ""))
        .getOrCreate()
    )


def main(uri: str, storage_options: dict[str, Any], connect: bool = False) -> dict[str, Any]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = session(connect)
    try:
        return run_sequence(spark, uri, storage_options, connect)
    finally:
        spark.stop()


def serve() -> None:
    """Run the sequence for each request line on one local-cluster, until end of input."""
    import traceback

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = session(False)
    try:
        for line in sys.stdin:
            request = json.loads(line)
            try:
                report = run_sequence(
                    spark, request["uri"], request["storage_options"], False, request["steps"]
                )
            except Exception:
                answer = "FAILED " + json.dumps(traceback.format_exc())
            else:
                answer = "RESULT " + json.dumps(report)
            print(answer, flush=True)
    finally:
        spark.stop()


def run_sequence(
    spark: SparkSession,
    uri: str,
    storage_options: dict[str, Any],
    connect: bool,
    steps: int = len(STEPS),
) -> dict[str, Any]:
    """The first ``steps`` of STEPS, each frame spread over four partitions (the
    executors' tasks), then our reader's rows."""
    from hudi_sync.spark import read, write

    instants = []
    for operation, rows in STEPS[:steps]:
        frame = rows_frame(spark, rows, SCHEMA).repartition(4)
        result = write(frame, uri, options(operation), storage_options=storage_options)
        instants.append(result.instant)
    read_back = collect_arrow(read(spark, uri, {}, storage_options)).to_pylist()
    worker_pids = [] if connect else _worker_pids(spark)
    rows = sorted((r["id"], r["p"], r["name"], r["ts"]) for r in read_back)
    return {
        "instants": instants,
        "rows": rows,
        "driver_pid": os.getpid(),
        "worker_pids": worker_pids,
    }


def _worker_pids(spark: SparkSession) -> list[int]:
    """The process ids of the Python workers that run tasks (the executors')."""
    pids = spark.sparkContext.parallelize(range(8), 8).map(lambda _: os.getpid())
    return sorted(pids.distinct().collect())


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        print(json.dumps(main(sys.argv[1], json.loads(sys.argv[2]), "--connect" in sys.argv[3:])))
