"""First sync of a table on an object store: listing through the metadata table against
a direct listing.

``python -m benchmarks.bench_mdt_listing [--preset small|full] [--repeat N]``

The table (cached under ``benchmarks/results/tables``): a version 9 Copy-on-Write table
written by hudi_sync's PySpark writer with ``hoodie.metadata.enable=true`` (so the
writer creates its metadata table, ``files`` partition, and keeps it current), one row
per partition in ``partitions`` partitions (full: 1,000), over ``commits`` upserts.
moto's S3 server runs in this process on 127.0.0.1; the table is uploaded twice, as
written (**mdt**: readers list through ``.hoodie/metadata``) and without its metadata
table (**direct**: ``.hoodie/metadata`` left out and ``hoodie.table.metadata.partitions``
cleared, so readers list the partition folders).

Measured, each run in a fresh child process: what a first sync does before it writes
anything, ``HudiTable.open`` plus the manifest's full listing (``build_manifest``); the
time, and the S3 requests the server answered during it (counted from its request log,
by method). The two manifests must be equal. Results go to
``benchmarks/results/mdt_listing.json``.
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
import threading
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks.bench_objectstore import upload

RESULTS_DIR = Path(__file__).resolve().parent / "results"
MODES = ("mdt", "direct")


@dataclass(frozen=True)
class Preset:
    partitions: int
    commits: int


PRESETS = {"small": Preset(50, 2), "full": Preset(1000, 2)}


def generate(preset: Preset, cache: Path) -> Path:
    """The table with its metadata table, written once and cached."""
    path = cache / f"mdt_listing_{preset.partitions}p_{preset.commits}c"
    if (path / ".hoodie/metadata/.hoodie/hoodie.properties").exists():
        return path
    shutil.rmtree(path, ignore_errors=True)
    from hudi_sync.spark import local_session, write

    spark = local_session("bench-mdt-listing-gen")
    options = {
        "hoodie.table.name": "mdt_listing",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "part",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.write.table.version": "9",
        "hoodie.datasource.write.operation": "upsert",
        "hoodie.metadata.enable": "true",
    }
    for commit in range(preset.commits):
        rows = [(i, f"{i:05d}", f"row {i} v{commit}", commit) for i in range(preset.partitions)]
        df = spark.createDataFrame(rows, "id int, part string, name string, ts long")
        write(df, str(path), options)
    spark.stop()
    return path


def without_metadata_table(table: Path, target: Path) -> None:
    """A copy of ``table`` without its metadata table (listed directly by readers)."""
    shutil.copytree(table, target, ignore=shutil.ignore_patterns("metadata"))
    props = target / ".hoodie/hoodie.properties"
    lines = [
        line
        for line in props.read_text().splitlines()
        if not line.startswith("hoodie.table.metadata.partitions")
    ]
    props.write_text("\n".join(lines) + "\n")


def child(uri: str, options: str) -> dict[str, Any]:
    from hudi_sync.manifest.snapshot import build_manifest
    from hudi_sync.table import HudiTable

    storage: dict[str, Any] = json.loads(options)
    started = time.monotonic()
    table = HudiTable.open(uri, storage)
    manifest = build_manifest(table)
    seconds = time.monotonic() - started
    return {
        "seconds": seconds,
        "instant": manifest.instant,
        "files": sorted(manifest.relative_paths()),
    }


class RequestCounter(logging.Handler):
    """Counts the S3 requests moto's server logs (werkzeug's request lines)."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()
        self.counts_lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        for method in ("GET", "HEAD", "PUT", "POST", "DELETE"):
            if f'"{method} ' in message:
                kind = method
                if method == "GET" and ("list-type=" in message or "delimiter=" in message):
                    kind = "LIST"
                with self.counts_lock:
                    self.counts[kind] += 1
                return

    def take(self) -> dict[str, int]:
        with self.counts_lock:
            counts = dict(self.counts)
            self.counts.clear()
        return counts


def run_child(uri: str, options: dict[str, Any]) -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks.bench_mdt_listing", "--child", uri]
    command.append(json.dumps(options))
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="small")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=RESULTS_DIR / "tables")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "mdt_listing.json")
    parser.add_argument("--child", nargs=2, metavar=("URI", "OPTS"))
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0

    import boto3
    from moto.server import ThreadedMotoServer

    preset = PRESETS[args.preset]
    table = generate(preset, args.cache)
    work = args.cache / "mdt_listing_work"
    shutil.rmtree(work, ignore_errors=True)
    without_metadata_table(table, work / "direct")
    counter = RequestCounter()
    werkzeug = logging.getLogger("werkzeug")
    werkzeug.setLevel(logging.INFO)
    werkzeug.propagate = False
    werkzeug.addHandler(counter)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=True)
    server.start()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench-secret")
    runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        options = {"client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}
        bucket = f"bench-{uuid.uuid4().hex[:12]}"
        upload(client, table, bucket, "mdt")
        client.put_object(Bucket=bucket, Key="unused", Body=b"")
        upload_direct = work / "direct"
        for path in sorted(upload_direct.rglob("*")):
            if path.is_file():
                key = f"direct/{path.relative_to(upload_direct).as_posix()}"
                client.upload_file(str(path), bucket, key)
        counter.take()
        manifests: dict[str, list[str]] = {}
        for attempt in range(args.repeat):
            for mode in MODES:  # alternated, so drift affects both alike
                run = run_child(f"s3://{bucket}/{mode}", options)
                run["requests"] = counter.take()
                manifests[mode] = run.pop("files")
                runs[mode].append(run)
                print(
                    f"run {attempt + 1} {mode}: {run['seconds']:.2f} s, "
                    f"{sum(run['requests'].values())} requests {run['requests']}",
                    flush=True,
                )
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    if manifests["mdt"] != manifests["direct"]:
        raise SystemExit("the two listings differ")
    summary = {
        mode: {
            "median_seconds": statistics.median(r["seconds"] for r in mode_runs),
            "median_requests": statistics.median(sum(r["requests"].values()) for r in mode_runs),
        }
        for mode, mode_runs in runs.items()
    }
    ratios = {
        "mdt_vs_direct_time": summary["mdt"]["median_seconds"]
        / summary["direct"]["median_seconds"],
        "mdt_vs_direct_requests": summary["mdt"]["median_requests"]
        / summary["direct"]["median_requests"],
    }
    report = {
        "preset": asdict(preset),
        "files": len(manifests["mdt"]),
        "summary": summary,
        "ratios": ratios,
        "runs": runs,
    }
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(report, indent=2))
    print(
        f"\nfirst sync of {preset.partitions:,} partitions ({len(manifests['mdt']):,} base "
        f"files), medians of {args.repeat}:"
    )
    for mode, s in summary.items():
        print(f"  {mode:<7} {s['median_seconds']:7.2f} s  {s['median_requests']:6.0f} requests")
    for name, value in ratios.items():
        print(f"  {name:<24} {value:.3f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
