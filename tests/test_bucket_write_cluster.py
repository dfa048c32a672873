"""A bucket-index upsert several times the driver's memory succeeds on a multi-process
cluster (``local-cluster[2,1,1024]``, ``spark.driver.memory=256m``): the executors key,
hash and append the rows (collecting the batch to the driver, as ``toArrow`` did, cannot
fit), and hudi-rs reads every upserted row, payload for payload, beside the stored rows
the upsert did not touch (``tests/bucket_cluster_job.py``)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.bucket_cluster_job import DRIVER_MEMORY_MB, PAYLOAD_BYTES, ROWS
from tests.warehouse_rows import hudi_rs_rows

REPO = Path(__file__).resolve().parents[1]


def test_an_upsert_several_times_the_drivers_memory(tmp_path: Path) -> None:
    """Over 30 s by nature: its own cluster of executor JVMs writes a batch larger than
    the driver's memory, which is the point."""
    uri, work = str(tmp_path / "table"), tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "tests.bucket_cluster_job", uri, str(work)],
        capture_output=True, text=True, check=False, env=env, cwd=work, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    heap = report["driver_heap_bytes"]
    assert heap <= DRIVER_MEMORY_MB * 2**20
    batch_bytes = ROWS * PAYLOAD_BYTES
    assert batch_bytes >= 2.5 * heap  # several times the driver's memory
    assert report["estimate_bytes"] >= 0.95 * batch_bytes  # so the size switch sends it out
    assert "0-0-0" not in report["write_tokens"]  # written by Spark tasks

    expected = {row[0]: tuple(row[1:]) for row in report["first"]}
    expected |= {row[0]: tuple(row[1:]) for row in report["upserted"]}
    assert len(expected) == ROWS + 40  # updated keys and new ones
    rows = hudi_rs_rows(uri).select(["id", "p", "ts", "payload", "digest"])
    found = {}
    for batch in rows.to_batches():
        columns = [batch.column(c) for c in range(5)]
        for i in range(batch.num_rows):
            key, partition, ts, payload, digest = (column[i].as_py() for column in columns)
            if not payload.startswith("first-"):  # every byte of an upserted payload read
                assert hashlib.md5(payload.encode()).hexdigest() == digest, key
            found[key] = (partition, ts, digest)
    assert rows.num_rows == len(found) == len(expected)
    assert found == expected
