"""Upsert benchmark: the PySpark writer against plain Spark rewriting the same files.

``python -m benchmarks.bench_writer [--preset small|full] [--repeat N]
[--operations upsert,delete,insert_overwrite] [--shape narrow|wide] [--modes ...]``

The base table (full preset: 10,000,000 rows in 20 ``day`` partitions, one base file
each, written once by our ``bulk_insert`` and cached under ``benchmarks/results/tables``)
receives an upsert of 1,000,000 rows: 10 % update keys of the two newest days (late
changes), 90 % are new keys of a new day. Each measured write runs in a fresh process
on its own hard-linked copy of the base table:

- **ours**: ``hudi_sync.spark.write(..., upsert)``: profile keys, merge, commit, with
  the default merge engine (Spark's own joins and parquet writer, ``spark_merge``).
- **ours-python**: the same with ``hudi_sync.write.merge.engine=python`` (Spark's Python
  workers merge each file group with pyarrow: the path for tables Spark cannot open
  itself and for CDC logging).
- **reference**: plain Spark, told which files the upsert touches (the two newest days'
  base files): read them, drop the updated keys, union the incoming rows, write parquet
  partitioned by ``day``. No index, no ordering field, no commit protocol.
- **reference-meta**: the reference plus Hudi's five meta columns as plain Spark
  expressions: what the format itself costs Spark (not a target, a yardstick).

``--shape wide`` writes a 21-column table instead of the five narrow columns (key,
day, ts, amount, rider): a taxi trip's shape, with ints and longs, a double, six
decimals, two timestamps, strings of realistic length (zones, payment type, a flag, a
nullable note) and a nullable struct (the pickup location). On five narrow columns
Hudi's five meta columns alone are most of the cost; a realistic row is where users
are. ``--modes`` picks modes (default: all four).

``--operations`` adds two more writes, each with the same modes:

- **delete** of the incoming rows' updated keys (10 % of the upsert, all in the two
  newest days); reference: read the two files, drop those keys, write parquet.
- **insert_overwrite** of the incoming rows' three days; reference: write the incoming
  rows as parquet partitioned by ``day`` (nothing to read).

Times cover the write only (the Spark session is started and warmed up first). Peak
memory is the highest summed RSS of the child's process tree (the Python driver, the
JVM and Spark's Python workers) during the write. Reported as medians and ratios of the
same run; results also go to ``benchmarks/results/writer.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"
KEY, PARTITION, ORDERING = "key", "day", "ts"


@dataclass(frozen=True)
class Preset:
    base_rows: int
    upsert_rows: int
    days: int = 20
    update_fraction: float = 0.1
    update_days: int = 2

    @property
    def label(self) -> str:
        return f"base{self.base_rows}_upsert{self.upsert_rows}_days{self.days}"


PRESETS = {
    "small": Preset(base_rows=200_000, upsert_rows=20_000),
    "full": Preset(base_rows=10_000_000, upsert_rows=1_000_000),
}


SHAPES = ("narrow", "wide")
# About what a row takes in parquet, so the base table gets one file per day.
_RECORD_SIZE = {"narrow": "40", "wide": "120"}


def write_options(operation: str, shape: str = "narrow") -> dict[str, str]:
    return {
        "hoodie.table.name": "bench",
        "hoodie.datasource.write.recordkey.field": KEY,
        "hoodie.datasource.write.precombine.field": ORDERING,
        "hoodie.datasource.write.partitionpath.field": PARTITION,
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.operation": operation,
        "hoodie.copyonwrite.record.size.estimate": _RECORD_SIZE[shape],
    }


# -- process-tree memory --------------------------------------------------------------------
def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            tree.setdefault(int(fields[1]), []).append(int(entry))
    return tree


def tree_rss_bytes(root: int) -> int:
    """Summed RSS of ``root`` and all its descendants."""
    tree, total, stack = _children(), 0, [root]
    while stack:
        pid = stack.pop()
        stack.extend(tree.get(pid, ()))
        try:
            with open(f"/proc/{pid}/statm") as handle:
                total += int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            continue
    return total


class PeakSampler:
    """Samples this process tree's RSS every 0.1 s while active."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_rss_bytes(os.getpid()))
            self._stop.wait(0.1)

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, tree_rss_bytes(os.getpid()))


# -- data -------------------------------------------------------------------------------------
def generate(preset: Preset, cache: Path, shape: str = "narrow") -> tuple[Path, Path, list[str]]:
    """The cached base table, the incoming rows (parquet) and the touched partitions."""
    folder = cache / (
        f"writer_{preset.label}" if shape == "narrow" else f"writer_{shape}_{preset.label}"
    )
    rows_of = _rows if shape == "narrow" else _wide_rows
    table, incoming = folder / "table", folder / "incoming"
    update_days = [f"{preset.days - 1 - i:02d}" for i in range(preset.update_days)]
    touched = [f"{PARTITION}={d}" for d in sorted(update_days)]
    if (folder / "done").exists():
        return table, incoming, touched
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    from pyspark.sql import functions as F

    from hudi_sync.spark import local_session, write

    spark = local_session("bench-writer-generate")
    per_day = preset.base_rows // preset.days
    base = rows_of(spark.range(preset.base_rows), per_day, 1)
    started = time.monotonic()
    write(base, str(table), write_options("bulk_insert", shape))
    print(f"generated {preset.base_rows:,} rows in {time.monotonic() - started:.0f} s")
    updates = int(preset.upsert_rows * preset.update_fraction)
    first_updated = (preset.days - preset.update_days) * per_day
    span = preset.update_days * per_day
    updated_ids = spark.range(updates).select(
        (F.lit(first_updated) + (F.col("id") * 7919) % span).alias("id")
    )
    new_ids = spark.range(preset.base_rows, preset.base_rows + preset.upsert_rows - updates)
    incoming_rows = rows_of(updated_ids, per_day, 2).unionByName(
        rows_of(new_ids, per_day, 2).withColumn(PARTITION, F.lit(f"{preset.days:02d}"))
    )
    incoming_rows.write.parquet(str(incoming))
    spark.stop()
    (folder / "done").write_text("")
    return table, incoming, touched


def _rows(ids: Any, per_day: int, ts: int) -> Any:
    from pyspark.sql import functions as F

    return ids.select(
        F.format_string("k%010d", "id").alias(KEY),
        F.format_string("%02d", (F.col("id") / per_day).cast("int")).alias(PARTITION),
        F.lit(ts).cast("long").alias(ORDERING),
        (F.col("id") * 31 % 1000).cast("double").alias("amount"),
        F.concat(F.lit("rider-"), (F.col("id") % 10_000).cast("string")).alias("rider"),
    )


_ZONES = [
    "Upper East Side North",
    "Midtown Center",
    "JFK Airport",
    "East Village",
    "Williamsburg (North Side)",
    "Times Sq/Theatre District",
    "Lincoln Square East",
    "LaGuardia Airport",
    "Clinton East",
    "Murray Hill",
    "Park Slope",
    "Astoria",
]
_PAYMENTS = ["credit_card", "cash", "no_charge", "dispute", "voided_trip"]
_NOTES = [
    "rider asked for the scenic route along the river",
    "luggage in the trunk, two large suitcases and a stroller",
    "dropoff at the side entrance, gate code given by phone",
]


def _wide_rows(ids: Any, per_day: int, ts: int) -> Any:
    """``_rows``'s key, day and ordering columns plus a taxi trip's 18 columns, each a
    deterministic function of the id (so an update changes only the ordering value)."""
    from pyspark.sql import functions as F

    def pick(values: list[str], salt: int) -> Any:
        index = F.pmod(F.xxhash64(F.col("id"), F.lit(salt)), F.lit(len(values))) + 1
        return F.element_at(F.array(*[F.lit(v) for v in values]), index.cast("int"))

    def decimal(scale_of: int, precision: int = 10) -> Any:
        return (F.pmod(F.col("id") * scale_of, F.lit(100_000)) / 100).cast(
            f"decimal({precision},2)"
        )

    start = F.lit(1_704_067_200) + F.col("id") % 31_536_000  # seconds in 2024
    seconds = F.pmod(F.col("id") * 37, F.lit(3_600)) + 60
    return ids.select(
        F.format_string("k%010d", "id").alias(KEY),
        F.format_string("%02d", (F.col("id") / per_day).cast("int")).alias(PARTITION),
        F.lit(ts).cast("long").alias(ORDERING),
        (F.col("id") % 3 + 1).cast("int").alias("vendor_id"),
        (F.col("id") % 6 + 1).cast("int").alias("passenger_count"),
        (F.col("id") % 7).cast("long").alias("rate_code"),
        (F.pmod(F.col("id") * 13, F.lit(3_000)) / 100).alias("trip_distance"),
        decimal(31).alias("fare_amount"),
        decimal(7).alias("extra"),
        decimal(3).alias("mta_tax"),
        decimal(17).alias("tip_amount"),
        decimal(11).alias("tolls_amount"),
        decimal(53, 12).alias("total_amount"),
        F.timestamp_seconds(start).alias("pickup_at"),
        F.timestamp_seconds(start + seconds).alias("dropoff_at"),
        pick(_ZONES, 1).alias("pickup_zone"),
        pick(_ZONES, 2).alias("dropoff_zone"),
        pick(_PAYMENTS, 3).alias("payment_type"),
        F.when(F.col("id") % 50 == 0, F.lit("Y")).otherwise(F.lit("N")).alias("store_and_fwd_flag"),
        F.when(F.col("id") % 4 == 0, pick(_NOTES, 4)).alias("driver_note"),
        F.when(
            F.col("id") % 10 != 0,
            F.struct(
                (F.lit(40.5) + F.pmod(F.col("id"), F.lit(5_000)) / 10_000).alias("lat"),
                (F.lit(-74.2) + F.pmod(F.col("id") * 7, F.lit(5_000)) / 10_000).alias("lon"),
            ),
        ).alias("pickup_location"),
    )


def link_copy(source: Path, target: Path) -> None:
    """A copy whose data files are hard links (Hudi never rewrites a file in place)."""
    shutil.copytree(source, target, copy_function=os.link)


# -- one measured write (child process) --------------------------------------------------------
MODES = ("ours", "ours-python", "reference", "reference-meta")
OPERATIONS = ("upsert", "delete", "insert_overwrite")


def child(
    mode: str,
    table: str,
    incoming: str,
    touched: list[str],
    out: str,
    operation: str = "upsert",
    shape: str = "narrow",
) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from hudi_sync.spark import local_session, write
    from hudi_sync.table import HudiTable

    spark = local_session(f"bench-writer-{mode}")
    spark.range(1000).groupBy((F.col("id") % 3).alias("g")).count().collect()  # warm up
    rows = spark.read.parquet(incoming)
    if operation == "delete":  # the updated keys: those of the touched (stored) days
        rows = rows.where(F.concat(F.lit(f"{PARTITION}="), F.col(PARTITION)).isin(touched))
    result: dict[str, Any] = {"mode": mode, "operation": operation}
    with PeakSampler() as sampler:
        started = time.monotonic()
        if mode in ("ours", "ours-python"):
            options = write_options(operation, shape)
            if mode == "ours-python":
                options["hudi_sync.write.merge.engine"] = "python"
            written = write(rows, table, options)
            result["files_written"] = len(written.stats)
            result["files_rewritten"] = sum(1 for s in written.stats if s.prev_commit)
        elif operation == "insert_overwrite":
            new = _with_meta_columns(rows) if mode == "reference-meta" else rows
            new.write.partitionBy(PARTITION).mode("overwrite").parquet(out)
            result["files_rewritten"] = 0
        else:
            snapshot = HudiTable.open(table).view.base_files_as_of()
            files = [
                os.path.join(table, partition, name)
                for (partition, _), name in snapshot.items()
                if partition in touched
            ]
            old = spark.read.parquet(*files).select(*rows.columns)
            merged = old.join(rows.select(KEY), KEY, "left_anti")
            if operation == "upsert":
                merged = merged.unionByName(rows)
            if mode == "reference-meta":
                merged = _with_meta_columns(merged)
            merged.write.partitionBy(PARTITION).mode("overwrite").parquet(out)
            result["files_rewritten"] = len(files)
        result["seconds"] = time.monotonic() - started
    result["peak_rss_bytes"] = sampler.peak
    spark.stop()
    return result


def _with_meta_columns(rows: Any) -> Any:
    """``rows`` with Hudi's five meta columns as plain Spark expressions (commit time,
    a per-task sequence number, key, partition path, a file name per task and day):
    what writing the Hudi format costs plain Spark, without index, dedup or commit."""
    from pyspark.sql import functions as F

    instant = F.lit("20250101000000000")
    task = F.spark_partition_id().cast("string")
    return rows.select(
        instant.alias("_hoodie_commit_time"),
        F.concat(instant, F.lit("_"), task, F.lit("_"), F.monotonically_increasing_id()).alias(
            "_hoodie_commit_seqno"
        ),
        F.col(KEY).alias("_hoodie_record_key"),
        F.concat(F.lit(f"{PARTITION}="), F.col(PARTITION)).alias("_hoodie_partition_path"),
        F.concat(F.lit("00000000-0000-0000-0000-"), task, F.lit("-"), F.col(PARTITION)).alias(
            "_hoodie_file_name"
        ),
        *rows.columns,
    )


def run_child(
    mode: str,
    table: Path,
    incoming: Path,
    touched: list[str],
    out: Path,
    operation: str = "upsert",
    shape: str = "narrow",
) -> dict[str, Any]:
    args = [mode, operation, str(table), str(incoming), ",".join(touched), str(out)]
    return run_benchmark_child("benchmarks.bench_writer", [*args, "--shape", shape])


def run_benchmark_child(module: str, args: list[str]) -> dict[str, Any]:
    """Run ``python -m module --child ARGS`` in a fresh process; its last output line
    is the measurement (JSON)."""
    command = [sys.executable, "-m", module, "--child", *args]
    env = {
        **os.environ,
        "HUDI_SYNC_SPARK_DRIVER_MEMORY": os.environ.get("HUDI_SYNC_SPARK_DRIVER_MEMORY", "4g"),
    }
    done = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="small")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=RESULTS_DIR / "tables")
    parser.add_argument(
        "--results",
        type=Path,
        default=None,
        help="default: results/writer.json (writer_wide.json for --shape wide)",
    )
    parser.add_argument("--operations", default="upsert", help="of: " + ",".join(OPERATIONS))
    parser.add_argument("--shape", choices=SHAPES, default="narrow")
    parser.add_argument("--modes", default=",".join(MODES), help="of: " + ",".join(MODES))
    parser.add_argument(
        "--child", nargs=6, metavar=("MODE", "OPERATION", "TABLE", "INCOMING", "TOUCHED", "OUT")
    )
    args = parser.parse_args(argv)
    if args.child:
        mode, operation, table, incoming, touched, out = args.child
        print(
            json.dumps(child(mode, table, incoming, touched.split(","), out, operation, args.shape))
        )
        return 0
    operations = [o.strip() for o in args.operations.split(",") if o.strip()]
    unknown = set(operations) - set(OPERATIONS)
    if unknown:
        parser.error(f"unknown operations: {', '.join(sorted(unknown))}")
    preset = PRESETS[args.preset]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if set(modes) - set(MODES) or "reference" not in modes:
        parser.error(f"--modes: of {', '.join(MODES)}, with reference")
    table, incoming, touched = generate(preset, args.cache, args.shape)
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {
        op: {mode: [] for mode in modes} for op in operations
    }
    work = args.cache / "writer_work"
    for attempt in range(args.repeat):
        for operation in operations:
            for mode in modes:  # alternated, so drift affects all alike
                shutil.rmtree(work, ignore_errors=True)
                link_copy(table, work / "table")
                run = run_child(
                    mode, work / "table", incoming, touched, work / "out", operation, args.shape
                )
                runs[operation][mode].append(run)
                print(
                    f"run {attempt + 1} {operation} {mode}: {run['seconds']:.1f} s, "
                    f"peak {run['peak_rss_bytes'] / 2**30:.2f} GiB",
                    flush=True,
                )
    shutil.rmtree(work, ignore_errors=True)
    summaries = {op: _summary(op_runs) for op, op_runs in runs.items()}
    report = {
        "preset": asdict(preset),
        "shape": args.shape,
        "repeat": args.repeat,
        "summary": summaries,
        "runs": runs,
    }
    results = args.results or RESULTS_DIR / (
        "writer.json" if args.shape == "narrow" else f"writer_{args.shape}.json"
    )
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps(report, indent=2))
    print(
        f"\n{preset.upsert_rows:,} incoming rows ({preset.update_fraction:.0%} updates) into "
        f"{preset.base_rows:,} rows, medians of {args.repeat} (ratios against reference):"
    )
    for operation, summary in summaries.items():
        for mode, s in summary.items():
            print(
                f"  {operation:<17} {mode:<12} {s['median_seconds']:7.1f} s "
                f"({s['time_ratio']:.2f}x)  peak {s['peak_rss_gib']:.2f} GiB "
                f"({s['memory_ratio']:.2f}x)  files rewritten {s['files_rewritten']}"
            )
    print("  targets: <= 1.3x time, <= 1.5x peak memory (against reference)")
    return 0


def _summary(mode_runs: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Medians and peaks per mode, and their ratios against the reference."""
    summary = {
        mode: {
            "median_seconds": statistics.median(r["seconds"] for r in runs),
            "peak_rss_gib": max(r["peak_rss_bytes"] for r in runs) / 2**30,
            "files_rewritten": runs[0]["files_rewritten"],
        }
        for mode, runs in mode_runs.items()
    }
    reference = summary["reference"]
    for s in summary.values():
        s["time_ratio"] = s["median_seconds"] / reference["median_seconds"]
        s["memory_ratio"] = s["peak_rss_gib"] / reference["peak_rss_gib"]
    return summary


if __name__ == "__main__":
    raise SystemExit(main())
