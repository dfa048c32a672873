"""Iceberg publication after one commit with delta manifests: what a sync with the
``iceberg`` target and ``--delta-commits`` costs as the table grows.

``python -m benchmarks.bench_iceberg_delta [--repeat N] [--keep DIR]``

The tables are ``bench_iceberg``'s full preset (``bench_cow``, 100,000 file groups, and
``bench_cow_1k``, 1,000), cached in ``DIR`` (default ``benchmarks/results/tables``; run
``bench_iceberg --preset full`` once to generate them). Per table two working copies of
hard links: on one only the manifest sync runs, in delta mode
(``publish_manifest(table, delta_commits=1000)``), on the other the same then
``IcebergStore(table, keep).publish(published)``. A first publication of each (metrics
from the commit metadata, to keep it short), then ``--repeat`` times an appended UPSERT
of 5 file groups (``gen_table.append_upsert``) on every copy and a publication, each in
a fresh interpreter, copies alternating. Checked: every publication is a delta at the
appended instant and the Iceberg snapshot names it without listing the table.
Reported: medians, the ratios of the targets of issue 53 (after one commit, manifest +
Iceberg over the manifest sync; large over small).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_sync import PROJECT_ROOT, RESULTS_DIR, BenchmarkError, clone_table
from benchmarks.gen_table import append_upsert

DELTA_COMMITS = 1000  # no compaction during the run: every publication after a commit is a delta
TABLES = (("large", "bench_cow"), ("small", "bench_cow_1k"))
MODES = ("manifest", "iceberg")


def child(mode: str, table: str, metrics: str) -> dict[str, Any]:
    """One publication, timed without interpreter start or imports (in the child)."""
    from hudi_sync.manifest.iceberg.store import IcebergStore
    from hudi_sync.sync.job import DEFAULT_KEEP, publish_manifest
    from hudi_sync.table import HudiTable
    from hudi_sync.table.timeline.listing import TimelineListing

    t0, c0 = time.perf_counter(), time.process_time()
    opened = HudiTable.open(table)
    listing = TimelineListing.of(opened.location, opened.config)
    published = publish_manifest(opened, listing=listing, delta_commits=DELTA_COMMITS)
    t1 = time.perf_counter()
    report: dict[str, Any] = {
        "manifest_s": t1 - t0,
        "instant": published.manifest.instant,
        "delta": published.delta is not None,
    }
    if mode == "iceberg":
        store = IcebergStore(opened, DEFAULT_KEEP, listing=listing, metrics=metrics)
        result = store.publish(published)
        report |= {
            "iceberg_s": time.perf_counter() - t1,
            "iceberg_instant": result.instant,
            "full_listing": result.full_listing,
        }
    report |= {"seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0}
    return report


def run_child(mode: str, table: Path, metrics: str = "footers") -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks.bench_iceberg_delta", "--child", mode]
    command += [str(table), metrics]
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
    proc = subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BenchmarkError(f"{mode} {table} failed:\n{proc.stderr[-4000:]}")
    report: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", type=Path, default=RESULTS_DIR / "tables", help="table cache")
    parser.add_argument("--child", nargs=3, metavar=("MODE", "TABLE", "METRICS"))
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    cache = args.keep.resolve()
    work = Path(tempfile.mkdtemp(prefix="work-delta-", dir=cache))
    try:
        copies: dict[tuple[str, str], Path] = {}
        for size, name in TABLES:
            if not (cache / name).is_dir():
                raise BenchmarkError(f"{cache / name}: run bench_iceberg --preset full first")
            for mode in MODES:
                path = work / f"{size}-{mode}" / name
                clone_table(cache / name, path)
                copies[(size, mode)] = path
                first = run_child(mode, path, "commit")
                print(f"first publication {size} {mode}: {first['seconds']:.3f}s", flush=True)
        runs: dict[tuple[str, str], list[dict[str, Any]]] = {key: [] for key in copies}
        for rep in range(args.repeat):
            order = list(copies) if rep % 2 == 0 else list(copies)[::-1]
            for key in order:
                appended = append_upsert(copies[key], 5)
                report = run_child(key[1], copies[key])
                if report["instant"] != appended.instant or not report["delta"]:
                    raise BenchmarkError(f"{key}: not a delta at {appended.instant}: {report}")
                if key[1] == "iceberg" and (
                    report["iceberg_instant"] != appended.instant or report["full_listing"]
                ):
                    raise BenchmarkError(f"{key}: Iceberg published {report}")
                runs[key].append(report)
            load = Path("/proc/loadavg").read_text().split()[0]
            latest = ", ".join(f"{s}-{m} {r[-1]['seconds']:.3f}s" for (s, m), r in runs.items())
            print(f"rep {rep + 1}/{args.repeat}: {latest} (load {load})", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def median(key: tuple[str, str], field: str = "seconds") -> float:
        return statistics.median(float(r[field]) for r in runs[key])

    for (size, mode), _ in runs.items():
        part = (
            f", Iceberg part {median((size, mode), 'iceberg_s'):.3f}s" if mode == "iceberg" else ""
        )
        print(f"{size} {mode}: median {median((size, mode)):.3f}s{part}")
    large, small = ("large", "iceberg"), ("small", "iceberg")
    parts = median(large, "iceberg_s") / median(small, "iceberg_s")
    print(
        f"after one commit, large: manifest + Iceberg / manifest "
        f"{median(large) / median(('large', 'manifest')):.2f}x; large / small: "
        f"totals {median(large) / median(small):.2f}x, manifest "
        f"{median(('large', 'manifest')) / median(('small', 'manifest')):.2f}x, "
        f"Iceberg part {parts:.2f}x"
    )
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except BenchmarkError as error:
        print(f"BENCHMARK FAILED: {error}", file=sys.stderr)
        raise SystemExit(1) from None
