"""Upsert benchmark on an object store: the PySpark writer on the local S3 emulator
against the same upsert on local disk, and against plain Spark writing the same merge to
the same emulator through the same storage layer.

``python -m benchmarks.bench_objectstore [--preset small|full] [--repeat N]``

The data is ``bench_writer``'s (full preset: an upsert of 1,000,000 rows into 10,000,000
in 20 ``day`` partitions; cached under ``benchmarks/results/tables``). moto's S3 server
runs in this process on 127.0.0.1; before each run the base table is uploaded to a fresh
bucket (not timed). Each measured write runs in a fresh child process:

- **s3**: ``hudi_sync.spark.write(..., upsert)`` to ``s3://<bucket>/table``;
- **local**: the same upsert to a hard-linked local copy, with the same merge as on S3
  (``hudi_sync.write.merge.engine=python``: Spark cannot open ``s3://`` here, so the
  writer merges in its Python workers there; locally its default is Spark's own merge);
- **reference-s3**: plain Spark, told which files the upsert touches: it reads them,
  drops the updated keys, unions the incoming rows, and its Python workers write one
  parquet file per ``day`` to the bucket through fsspec (Spark has no S3 jars here). No
  index, no ordering field, no commit protocol.

Times cover the write only; peak memory is the child's process tree (driver, JVM,
Python workers), not the S3 server's. Results go to ``benchmarks/results/objectstore.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.bench_writer import (
    KEY,
    PARTITION,
    PRESETS,
    RESULTS_DIR,
    PeakSampler,
    generate,
    link_copy,
    write_options,
)

MODES = ("s3", "local", "reference-s3")


def child(mode: str, table: str, incoming: str, touched: list[str], options: str) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    from hudi_sync.spark import local_session, write
    from hudi_sync.storage import open_location

    storage: dict[str, Any] = json.loads(options)
    spark = local_session(f"bench-objectstore-{mode}")
    spark.range(1000).groupBy((F.col("id") % 3).alias("g")).count().collect()  # warm up
    rows = spark.read.parquet(incoming)
    result: dict[str, Any] = {"mode": mode}
    with PeakSampler() as sampler:
        started = time.monotonic()
        if mode in ("s3", "local"):
            # Both on the Python merge, the only one that reaches the store here.
            engine = {"hudi_sync.write.merge.engine": "python"}
            written = write(
                rows, table, {**write_options("upsert"), **engine}, storage_options=storage
            )
            result["files_written"] = len(written.stats)
        else:
            local_table, target = table.split("|")
            files = [str(p) for t in touched for p in (Path(local_table) / t).glob("*.parquet")]
            old = spark.read.parquet(*files).select(*rows.columns)
            merged = old.join(rows.select(KEY), KEY, "left_anti").unionByName(rows)

            def write_day(group: pa.Table) -> pa.Table:
                location = open_location(target, storage)
                day = group.column(PARTITION)[0].as_py()
                with location.fs.open(location.join(f"{PARTITION}={day}/part.parquet"), "wb") as f:
                    pq.write_table(group.drop_columns([PARTITION]), f)
                return pa.table({"rows": pa.array([group.num_rows], pa.int64())})

            counts = merged.groupBy(PARTITION).applyInArrow(write_day, "rows long").collect()
            result["rows_written"] = sum(r["rows"] for r in counts)
        result["seconds"] = time.monotonic() - started
    result["peak_rss_bytes"] = sampler.peak
    spark.stop()
    return result


def run_child(
    mode: str, table: str, incoming: Path, touched: list[str], options: dict[str, Any]
) -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks.bench_objectstore", "--child", mode, table]
    command += [str(incoming), ",".join(touched), json.dumps(options)]
    env = {
        **os.environ,
        "HUDI_SYNC_SPARK_DRIVER_MEMORY": os.environ.get("HUDI_SYNC_SPARK_DRIVER_MEMORY", "4g"),
    }
    done = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def upload(client: Any, local: Path, bucket: str, prefix: str) -> None:
    client.create_bucket(Bucket=bucket)
    for path in sorted(local.rglob("*")):
        if path.is_file():
            client.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(local).as_posix()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="small")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=RESULTS_DIR / "tables")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "objectstore.json")
    parser.add_argument(
        "--child", nargs=5, metavar=("MODE", "TABLE", "INCOMING", "TOUCHED", "OPTS")
    )
    args = parser.parse_args(argv)
    if args.child:
        mode, table, incoming, touched, options = args.child
        print(json.dumps(child(mode, table, incoming, touched.split(","), options)))
        return 0

    import boto3
    from moto.server import ThreadedMotoServer

    preset = PRESETS[args.preset]
    table, incoming, touched = generate(preset, args.cache)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench-secret")
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        s3_options = {"client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}
        runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
        work = args.cache / "objectstore_work"
        for attempt in range(args.repeat):
            for mode in MODES:  # alternated, so drift affects all alike
                shutil.rmtree(work, ignore_errors=True)
                link_copy(table, work / "table")
                bucket = f"bench-{uuid.uuid4().hex[:12]}"
                if mode == "s3":
                    upload(client, work / "table", bucket, "table")
                    target, options = f"s3://{bucket}/table", s3_options
                elif mode == "local":
                    target, options = str(work / "table"), {}
                else:
                    client.create_bucket(Bucket=bucket)
                    target = f"{work / 'table'}|s3://{bucket}/out"
                    options = s3_options
                run = run_child(mode, target, incoming, touched, options)
                runs[mode].append(run)
                print(
                    f"run {attempt + 1} {mode}: {run['seconds']:.1f} s, "
                    f"peak {run['peak_rss_bytes'] / 2**30:.2f} GiB",
                    flush=True,
                )
        shutil.rmtree(work, ignore_errors=True)
    finally:
        server.stop()
    summary = {
        mode: {
            "median_seconds": statistics.median(r["seconds"] for r in mode_runs),
            "peak_rss_gib": max(r["peak_rss_bytes"] for r in mode_runs) / 2**30,
        }
        for mode, mode_runs in runs.items()
    }
    s3 = summary["s3"]
    ratios = {
        "s3_vs_local_time": s3["median_seconds"] / summary["local"]["median_seconds"],
        "s3_vs_reference_time": s3["median_seconds"] / summary["reference-s3"]["median_seconds"],
        "s3_vs_reference_memory": s3["peak_rss_gib"] / summary["reference-s3"]["peak_rss_gib"],
    }
    report = {"preset": asdict(preset), "summary": summary, "ratios": ratios, "runs": runs}
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(report, indent=2))
    print(
        f"\nupsert of {preset.upsert_rows:,} rows into {preset.base_rows:,}, "
        f"medians of {args.repeat}:"
    )
    for mode, s in summary.items():
        print(f"  {mode:<13} {s['median_seconds']:7.1f} s  peak {s['peak_rss_gib']:.2f} GiB")
    for name, value in ratios.items():
        print(f"  {name:<24} {value:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
