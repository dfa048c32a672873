"""A bucket-index upsert of a batch several times the driver's memory, on a real
multi-process cluster, run by ``tests/test_bucket_write_cluster.py`` in a subprocess.

``local-cluster[2,1,1024]`` (two executor JVMs with their own Python workers) with
``spark.driver.memory=256m``. The batch is ~650 MB of incompressible text (wide rows: few
of them, each a long random string), generated and stored as parquet by the executors,
so Spark's size estimate of it is its real size. The size is the point, but only against
the driver's heap: a 256 MB heap (Spark's reserve for its own bookkeeping lowered from
300 MB, which would leave a heap that small no room) and half of the data prove what a
512 MB heap and twice the data do, for half the generating, writing and reading. A
small insert makes some buckets first; the upsert then both updates stored keys and adds
new ones. Usage::

    python -m tests.bucket_cluster_job TABLE_URI WORK_FOLDER

It prints one JSON object: the driver JVM's heap limit, the size Spark estimated, what
the write committed and each upserted key's partition, ordering value and payload MD5.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession

DRIVER_MEMORY_MB = 256
ROWS = 1300
PAYLOAD_BYTES = 512 * 1024  # text: half as many random bytes, hex-encoded
FIRST_KEYS = [*range(0, ROWS, 7), *range(ROWS, ROWS + 40)]  # stored before the upsert


def options(operation: str) -> dict[str, Any]:
    return {
        "hoodie.table.name": "bucket_cluster",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.index.type": "BUCKET",
        "hoodie.bucket.index.num.buckets": 8,
        "hoodie.datasource.write.operation": operation,
    }


def session() -> SparkSession:
    return (
        SparkSession.builder.master("local-cluster[2,1,1024]")
        .appName("hudi_sync bucket cluster test")
        .config("spark.driver.memory", f"{DRIVER_MEMORY_MB}m")
        # Spark refuses a heap under 1.5 x its reserve (300 MB by default).
        .config("spark.testing.reservedMemory", str(64 * 2**20))
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.log.level", "ERROR")
        # Wide rows: Arrow batches of a few dozen rows (~32 MB), not Spark's 10,000.
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "64")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.executorEnv.PYTHONPATH", os.environ.get("PYTHONPATH", ""))
        .getOrCreate()
    )


def _payloads(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        ids = batch.column(0).to_pylist()
        payloads = [os.urandom(PAYLOAD_BYTES // 2).hex() for _ in ids]
        yield pa.record_batch(
            {
                "id": pa.array(ids, pa.int64()),
                "p": pa.array([f"p{i % 4}" for i in ids]),
                "ts": pa.array([2] * len(ids), pa.int64()),
                "payload": pa.array(payloads),
                "digest": pa.array([hashlib.md5(text.encode()).hexdigest() for text in payloads]),
            }
        )


def main(uri: str, work: str) -> dict[str, Any]:
    from hudi_sync.spark import write
    from hudi_sync.spark.writing.engine_choice import size_estimate

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = session()
    try:
        source = os.path.join(work, "batch")
        generated = spark.range(0, ROWS, numPartitions=24).mapInArrow(
            _payloads, "id long, p string, ts long, payload string, digest string"
        )
        generated.write.parquet(source)
        first = [(k, f"p{k % 4}", 1, f"first-{k}", f"first-{k}") for k in FIRST_KEYS]
        schema = "id long, p string, ts long, payload string, digest string"
        write(spark.createDataFrame(first, schema), uri, options("insert"))
        batch = spark.read.parquet(source)
        estimate = size_estimate(batch)
        result = write(batch, uri, options("upsert"))
        digests = batch.select("id", "p", "ts", "digest").collect()
        heap = spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()  # type: ignore[union-attr]
        return {
            "driver_heap_bytes": int(heap),
            "estimate_bytes": estimate,
            "instant": result.instant,
            "write_tokens": sorted({s.path.rsplit("_", 1)[1] for s in result.stats}),
            "upserted": [[r[0], r[1], r[2], r[3]] for r in digests],
            "first": [[k, f"p{k % 4}", 1, f"first-{k}"] for k in FIRST_KEYS],
        }
    finally:
        spark.stop()


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
