"""Merge-on-Read benchmark: upsert, snapshot read and compaction against Copy-on-Write.

``python -m benchmarks.bench_mor [--preset small|full] [--repeat N]``

The writer benchmark's base table (``bench_writer``: full preset 10,000,000 rows in 20
``day`` partitions) is written once more as a Merge-on-Read table (``bulk_insert``: base
files only), and its incoming rows (10 % updates of the two newest days, 90 % new keys)
are upserted into each, in fresh processes, on hard-linked copies:

- **cow-upsert**: the Copy-on-Write upsert (rewrites the two touched base files);
- **mor-upsert**: the Merge-on-Read upsert (updates appended as log files, new keys in
  new base files): target <= 0.5x cow-upsert;
- **mor-read** / **compacted-read**: a snapshot read of every row and column (Spark's
  ``noop`` sink) of the MOR table after an update of 10 % of its rows spread over every
  day (so every file slice has a log), and of the same table once compacted:
  target mor-read <= 1.5x compacted-read;
- **compaction**: compacting that table (every slice: base + log -> new base file):
  target <= cow-upsert;
- **bucket-upsert**: the same upsert into the same rows kept as a bucket-index MOR table
  (``hoodie.index.type=BUCKET``, 4 buckets a day; generated once through the bucket
  path, then compacted: base files only): each touched bucket's rows appended as a log
  file, no key lookup; the batch goes to the driver or the executors by its estimated
  size (``hudi_sync.write.driver.max.bytes``): target <= 0.4x cow-upsert;
- **bucket-upsert-executors**: the same, the executors writing whatever the size.

``--steps`` runs some of them (e.g. ``cow-upsert,bucket-upsert``).

Times cover the measured step only; peak memory is the summed RSS of the child's process
tree. Medians of ``--repeat`` runs; results also go to ``benchmarks/results/mor.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_writer import (
    PRESETS,
    RESULTS_DIR,
    PeakSampler,
    Preset,
    _rows,
    generate,
    link_copy,
    run_benchmark_child,
    write_options,
)

MOR = {"hoodie.datasource.write.table.type": "MERGE_ON_READ"}
BUCKET = {**MOR, "hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "4"}
ON_EXECUTORS = {"hudi_sync.write.driver.max.bytes": "0"}
STEPS = (
    "cow-upsert",
    "mor-upsert",
    "mor-read",
    "compacted-read",
    "compaction",
    "bucket-upsert",
    "bucket-upsert-executors",
)


def generate_mor(preset: Preset, cache: Path) -> tuple[Path, Path, Path, Path]:
    """The COW base table and incoming rows (``bench_writer``'s), the same base as a MOR
    table, and that MOR table with 10 % of its rows updated in log files."""
    cow, incoming, _ = generate(preset, cache)
    folder = cache / f"mor_{preset.label}"
    base, logged = folder / "base", folder / "logged"
    if (folder / "done").exists():
        return cow, incoming, base, logged
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    from pyspark.sql import functions as F

    from hudi_sync.spark import local_session, write

    spark = local_session("bench-mor-generate")
    per_day = preset.base_rows // preset.days
    write(
        _rows(spark.range(preset.base_rows), per_day, 1),
        str(base),
        {**write_options("bulk_insert"), **MOR},
    )
    link_copy(base, logged)
    # Every tenth key of every day, with a higher ordering value: 10 % of rows in logs.
    updates = _rows(spark.range(0, preset.base_rows, 10), per_day, 3).withColumn(
        "amount", F.col("amount") + 1
    )
    write(updates, str(logged), {**write_options("upsert"), **MOR})
    spark.stop()
    (folder / "done").write_text("")
    return cow, incoming, base, logged


def generate_bucket(preset: Preset, cache: Path) -> Path:
    """The writer benchmark's base rows as a bucket-index MOR table: inserted through
    the bucket path (log files), then compacted (base files only), in a new folder."""
    folder = cache / f"mor_bucket_{preset.label}"
    table = folder / "table"
    if (folder / "done").exists():
        return table
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    from hudi_sync.spark import local_session, write
    from hudi_sync.spark.writing.compaction import spark_executor
    from hudi_sync.table import HudiTable
    from hudi_sync.table.write.compaction import compact
    from hudi_sync.table.write.lock import TableLock

    spark = local_session("bench-mor-bucket-generate")
    per_day = preset.base_rows // preset.days
    started = time.monotonic()
    rows = _rows(spark.range(preset.base_rows), per_day, 1)
    write(rows, str(table), {**write_options("insert"), **BUCKET})
    opened = HudiTable.open(str(table))
    lock = TableLock(opened.location, opened.location.join(".hoodie"), 60_000, 0)
    compact(opened, lock, executor=spark_executor(spark))
    print(f"generated the bucket table in {time.monotonic() - started:.0f} s", flush=True)
    spark.stop()
    (folder / "done").write_text("")
    return table


def child(step: str, table: str, incoming: str) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from hudi_sync.spark import local_session, read, write
    from hudi_sync.spark.writing.compaction import spark_executor
    from hudi_sync.table import HudiTable
    from hudi_sync.table.write.compaction import compact
    from hudi_sync.table.write.lock import TableLock

    spark = local_session(f"bench-mor-{step}")
    spark.range(1000).groupBy((F.col("id") % 3).alias("g")).count().collect()  # warm up
    result: dict[str, Any] = {"step": step}
    with PeakSampler() as sampler:
        started = time.monotonic()
        if step in ("cow-upsert", "mor-upsert", "bucket-upsert", "bucket-upsert-executors"):
            options = write_options("upsert")
            if step.startswith("bucket-"):
                options |= BUCKET | (ON_EXECUTORS if step.endswith("executors") else {})
            written = write(spark.read.parquet(incoming), table, options)
            result["log_files"] = sum(1 for s in written.stats if s.log_files)
        elif step in ("mor-read", "compacted-read"):
            read(spark, table).write.format("noop").mode("overwrite").save()
        else:
            opened = HudiTable.open(table)
            lock = TableLock(
                opened.location, opened.location.join(".hoodie"), wait_ms=60_000, expire_minutes=0
            )
            result["compactions"] = compact(opened, lock, executor=spark_executor(spark))
        result["seconds"] = time.monotonic() - started
    result["peak_rss_bytes"] = sampler.peak
    spark.stop()
    return result


def run_child(step: str, table: Path, incoming: Path) -> dict[str, Any]:
    return run_benchmark_child("benchmarks.bench_mor", [step, str(table), str(incoming)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="small")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=RESULTS_DIR / "tables")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "mor.json")
    parser.add_argument("--steps", default=",".join(STEPS), help="of: " + ",".join(STEPS))
    parser.add_argument("--work", type=Path, default=None, help="default: CACHE/mor_work")
    parser.add_argument("--child", nargs=3, metavar=("STEP", "TABLE", "INCOMING"))
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    preset = PRESETS[args.preset]
    steps = [step for step in STEPS if step in args.steps.split(",")]
    cow, incoming, base, logged = generate_mor(preset, args.cache)
    bucket = generate_bucket(preset, args.cache) if any("bucket" in s for s in steps) else base
    work = args.work or args.cache / "mor_work"
    runs: dict[str, list[dict[str, Any]]] = {step: [] for step in steps}
    for attempt in range(args.repeat):
        for step in steps:
            shutil.rmtree(work, ignore_errors=True)
            sources = {"cow-upsert": cow, "mor-upsert": base, "bucket-upsert": bucket}
            source = sources.get(step.removesuffix("-executors"), logged)
            link_copy(source, work / "table")
            if step == "compacted-read":  # compacted outside the measurement
                run_child("compaction", work / "table", incoming)
            run = run_child(step, work / "table", incoming)
            runs[step].append(run)
            print(
                f"run {attempt + 1} {step}: {run['seconds']:.1f} s, "
                f"peak {run['peak_rss_bytes'] / 2**30:.2f} GiB",
                flush=True,
            )
    shutil.rmtree(work, ignore_errors=True)
    medians = {step: statistics.median(r["seconds"] for r in rs) for step, rs in runs.items()}
    peaks = {step: max(r["peak_rss_bytes"] for r in rs) / 2**30 for step, rs in runs.items()}
    targets = [
        ("mor-upsert", "cow-upsert", 0.5),
        ("mor-read", "compacted-read", 1.5),
        ("compaction", "cow-upsert", 1.0),
        ("bucket-upsert", "cow-upsert", 0.4),
        ("bucket-upsert-executors", "cow-upsert", 0.4),
    ]
    ratios = {
        f"{step} / {reference} (target <= {target})": medians[step] / medians[reference]
        for step, reference, target in targets
        if step in medians and reference in medians
    }
    report = {"preset": preset.label, "repeat": args.repeat, "medians": medians}
    report |= {"peak_gib": peaks, "ratios": ratios, "runs": runs}
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(report, indent=2))
    print(f"\n{preset.label}, medians of {args.repeat}:")
    for step in steps:
        print(f"  {step:<24} {medians[step]:7.1f} s  peak {peaks[step]:.2f} GiB")
    for name, value in ratios.items():
        print(f"  {name}: {value:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
