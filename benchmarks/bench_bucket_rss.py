"""The driver's peak memory as a bucket-index upsert grows tenfold, on a cluster.

``python -m benchmarks.bench_bucket_rss [--rows N] [--growth 10] [--driver-memory 512m]``

On ``local-cluster[2,1,1024]`` (two executor JVMs with their own Python workers) with a
small driver memory, a bucket-index MOR table (4 buckets a day) takes an upsert of
``N`` rows, then, on a fresh copy, of ``growth * N`` rows (bench_writer's narrow rows,
stored as parquet by the executors: updates of existing keys and new keys, several
days). Measured: the write's time and the peak RSS of the driver alone, its Python
process and its JVM (sampled every 0.1 s), not the executors or their Python workers
(the JVM's child processes). Each size runs in a fresh process. The executors write
(``hudi_sync.write.driver.max.bytes=0``); with ``--size-switch`` the write goes
where ``write`` sends it by the batch's estimated size. Target: a flat driver peak.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_writer import RESULTS_DIR, _rows, run_benchmark_child, write_options

BUCKET = {
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.index.type": "BUCKET",
    "hoodie.bucket.index.num.buckets": "4",
}
DAYS = 10


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def _driver_jvm(python_pid: int) -> int | None:
    """The driver's JVM: this process's child running java."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                command = handle.read()
        except OSError:
            continue
        if parent == python_pid and b"java" in command:
            return int(entry)
    return None


class DriverPeak:
    """The peak of the driver's Python RSS plus its JVM's (sampled every 0.1 s)."""

    def __init__(self) -> None:
        self.peak = 0
        self.jvm = _driver_jvm(os.getpid())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        jvm = _rss(self.jvm) if self.jvm else 0
        self.peak = max(self.peak, _rss(os.getpid()) + jvm)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(0.1)

    def __enter__(self) -> DriverPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()


def child(rows: int, work: str, driver_memory: str, switch: bool) -> dict[str, Any]:
    """One fresh cluster: the base table, the incoming rows, then the measured upsert."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from hudi_sync.spark import write

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local-cluster[2,1,1024]")
        .appName("bench-bucket-rss")
        .config("spark.driver.memory", driver_memory)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.log.level", "ERROR")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.executorEnv.PYTHONPATH", os.environ.get("PYTHONPATH", ""))
        .getOrCreate()
    )
    table, incoming = os.path.join(work, "table"), os.path.join(work, "incoming")
    per_day = rows // DAYS
    # The table holds the batch's keys once; the batch updates half and adds as many.
    executors = {"hudi_sync.write.driver.max.bytes": "0"}  # nothing kept in the driver
    insert = {**write_options("insert"), **BUCKET, **executors}
    write(_rows(spark.range(rows // 2), per_day, 1), table, insert)
    _rows(spark.range(rows), per_day, 2).withColumn("amount", F.col("amount") + 1).write.parquet(
        incoming
    )
    with DriverPeak() as peak:
        started = time.monotonic()
        options = {**write_options("upsert"), **BUCKET}
        if not switch:
            options |= executors
        result = write(spark.read.parquet(incoming), table, options)
        seconds = time.monotonic() - started
    on_executors = any(not s.path.endswith("_0-0-0") for s in result.stats)
    spark.stop()
    return {
        "rows": rows,
        "seconds": seconds,
        "driver_peak_rss_bytes": peak.peak,
        "driver_jvm_found": peak.jvm is not None,
        "on_executors": on_executors,
        "log_files": len(result.stats),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--growth", type=int, default=10)
    parser.add_argument("--driver-memory", default="512m")
    parser.add_argument("--work", type=Path, default=RESULTS_DIR / "bucket_rss_work")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "bucket_rss.json")
    parser.add_argument("--size-switch", action="store_true")
    parser.add_argument("--child", nargs=4, metavar=("ROWS", "WORK", "DRIVER_MEMORY", "SWITCH"))
    args = parser.parse_args(argv)
    if args.child:
        rows, work, memory, switch = args.child
        print(json.dumps(child(int(rows), work, memory, switch == "switch")))
        return 0
    runs = []
    for rows in (args.rows, args.rows * args.growth):
        shutil.rmtree(args.work, ignore_errors=True)
        args.work.mkdir(parents=True)
        run = run_benchmark_child(
            "benchmarks.bench_bucket_rss",
            [
                str(rows),
                str(args.work),
                args.driver_memory,
                "switch" if args.size_switch else "executors",
            ],
        )
        runs.append(run)
        print(
            f"{rows:>12,} rows: {run['seconds']:.1f} s, driver peak "
            f"{run['driver_peak_rss_bytes'] / 2**20:.0f} MiB "
            f"({'executors' if run['on_executors'] else 'driver'} wrote)",
            flush=True,
        )
    shutil.rmtree(args.work, ignore_errors=True)
    growth = runs[1]["driver_peak_rss_bytes"] / runs[0]["driver_peak_rss_bytes"]
    report = {"driver_memory": args.driver_memory, "runs": runs, "peak_growth": growth}
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(report, indent=2))
    print(f"driver peak RSS x{growth:.2f} as the batch grows x{args.growth}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
