"""Small-write benchmark (P12): a 10-row upsert into a 100,000-row table, by engine.

``python -m benchmarks.bench_small_writes [--preset small|full] [--repeat N] [--tables ...]``

Each table (``bench_writer``'s rows and options: ``day`` partitions, written once and
cached) gets the same 10-row upsert (5 updated keys, 5 new ones) on a fresh hard-linked
copy per run, by three engines, in one process with one Spark session:

- **routed**: ``hudi_sync.spark.write(spark.read.parquet(f))`` with the default routing
  (a DataFrame Spark estimates below ``hudi_sync.write.driver.max.bytes`` is collected and
  written by the driver's Arrow engine), the caller's read of its frame timed with it;
- **frame**: the same ``write(df)`` timed alone, its frame read before the clock starts
  (what the write itself costs beside ``write_arrow``'s);
- **spark**: ``write(df)`` with ``hudi_sync.write.driver.max.bytes=0`` (the Spark engine);
- **arrow**: ``write_arrow`` of the same rows read with pyarrow;

and **cli**: ``hudi-sync write`` of a 3-row parquet file, end to end (a fresh process,
its start included).

Tables (``--tables``): ``cow-simple`` and ``mor-simple`` (``hoodie.index.type=SIMPLE``),
``mor-bucket`` (``BUCKET``). A refused case fails the run (nothing is caught).

Times cover the write only (reading the 10 incoming rows included but for ``frame``),
after ``--warmup`` unrecorded attempts (the session's first jobs). Medians of
``--repeat`` runs and their ratios (``RATIOS``); results also go to
``benchmarks/results/small_writes.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.bench_writer import RESULTS_DIR, _rows, link_copy, write_options

ROOT = Path(__file__).resolve().parents[1]
MOR = {"hoodie.datasource.write.table.type": "MERGE_ON_READ"}
TABLES: dict[str, dict[str, str]] = {
    "cow-simple": {"hoodie.index.type": "SIMPLE"},
    "mor-simple": {**MOR, "hoodie.index.type": "SIMPLE"},
    "mor-bucket": {**MOR, "hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "4"},
}
ENGINES = ("routed", "frame", "spark", "arrow", "cli")
# Ratios reported: each engine against the executors' engine, and P12's against write_arrow.
RATIOS = (
    ("routed", "spark"),
    ("arrow", "spark"),
    ("routed", "arrow"),
    ("frame", "arrow"),
)
SPARK_ENGINE = {"hudi_sync.write.driver.max.bytes": "0"}
DAYS = 4


@dataclass(frozen=True)
class Preset:
    label: str
    rows: int
    repeat: int


PRESETS = {"small": Preset("small", 10_000, 3), "full": Preset("full", 100_000, 5)}


def generate(spark: Any, preset: Preset, name: str, cache: Path) -> Path:
    """The table: ``preset.rows`` rows in ``DAYS`` partitions (a MOR table compacted to
    base files), written once and cached."""
    from hudi_sync.spark import write
    from hudi_sync.spark.writing.compaction import spark_executor
    from hudi_sync.table import HudiTable
    from hudi_sync.table.write.compaction import compact
    from hudi_sync.table.write.lock import TableLock

    folder = cache / f"small_writes_{preset.label}_{name}"
    table = folder / "table"
    if (folder / "done").exists():
        return table
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    operation = "insert" if name == "mor-bucket" else "bulk_insert"
    rows = _rows(spark.range(preset.rows), preset.rows // DAYS, 1)
    write(rows, str(table), {**write_options(operation), **TABLES[name]})
    opened = HudiTable.open(str(table))
    if opened.config.is_mor:
        lock = TableLock(opened.location, opened.location.join(".hoodie"), 60_000, 0)
        compact(opened, lock, executor=spark_executor(spark))
    (folder / "done").write_text("")
    return table


def incoming(spark: Any, preset: Preset, folder: Path) -> tuple[Path, Path]:
    """The 10-row upsert (the 5 newest stored keys, 5 new ones) and the 3-row file (1
    stored key, 2 new), as parquet files; new keys fall in a new day."""
    import pyarrow.parquet as pq

    from hudi_sync.spark.compat import collect_arrow

    files = []
    for name, count in (("ten", 10), ("three", 3)):
        first = preset.rows - count // 2
        ids = spark.range(first, first + count)
        path = folder / f"{name}.parquet"
        pq.write_table(collect_arrow(_rows(ids, preset.rows // DAYS, 2)), path)
        files.append(path)
    return files[0], files[1]


def timed(run: Callable[[], Any]) -> float:
    started = time.monotonic()
    run()
    return time.monotonic() - started


def measure(
    spark: Any, engine: str, table: Path, options: dict[str, str], ten: Path, three: Path
) -> float:
    """One run of one engine on ``table`` (a fresh copy)."""
    import pyarrow.parquet as pq

    from hudi_sync.spark import write, write_arrow

    if engine == "routed":
        return timed(lambda: write(spark.read.parquet(str(ten)), str(table), options))
    if engine == "frame":
        frame = spark.read.parquet(str(ten))
        return timed(lambda: write(frame, str(table), options))
    if engine == "spark":
        spark_options = options | SPARK_ENGINE
        return timed(lambda: write(spark.read.parquet(str(ten)), str(table), spark_options))
    if engine == "arrow":
        return timed(lambda: write_arrow(pq.read_table(ten), str(table), options))
    command = [sys.executable, "-m", "hudi_sync.cli.app", "write", str(table), str(three)]
    for key, value in options.items():
        command += ["--conf", f"{key}={value}"]
    started = time.monotonic()
    done = subprocess.run(command, check=False, cwd=ROOT, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if done.returncode:  # a refused write fails the benchmark with the CLI's error
        raise RuntimeError(f"hudi-sync write into {table}: {done.stderr.strip()}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="small")
    parser.add_argument("--repeat", type=int, default=None, help="default: the preset's")
    parser.add_argument("--cache", type=Path, default=RESULTS_DIR / "tables")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "small_writes.json")
    parser.add_argument("--tables", default=",".join(TABLES), help="of: " + ",".join(TABLES))
    parser.add_argument("--engines", default=",".join(ENGINES), help="of: " + ",".join(ENGINES))
    parser.add_argument("--warmup", type=int, default=1, help="unrecorded attempts first")
    parser.add_argument("--work", type=Path, default=None, help="default: CACHE/small_work")
    args = parser.parse_args(argv)
    from hudi_sync.spark import local_session

    preset = PRESETS[args.preset]
    repeat = args.repeat or preset.repeat
    names = [name for name in TABLES if name in args.tables.split(",")]
    engines = [engine for engine in ENGINES if engine in args.engines.split(",")]
    work = args.work or args.cache / "small_work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    spark = local_session("bench-small-writes")
    tables = {name: generate(spark, preset, name, args.cache) for name in names}
    ten, three = incoming(spark, preset, work)
    runs: dict[str, dict[str, list[float]]] = {name: {e: [] for e in engines} for name in names}
    for attempt in range(-args.warmup, repeat):  # warm-up attempts are not recorded
        for name in names:
            options = {**write_options("upsert"), **TABLES[name]}
            for engine in engines:
                copy = work / f"{name}-{engine}"
                shutil.rmtree(copy, ignore_errors=True)
                link_copy(tables[name], copy)
                seconds = measure(spark, engine, copy, options, ten, three)
                if attempt >= 0:
                    runs[name][engine].append(seconds)
                label = f"run {attempt + 1}" if attempt >= 0 else "warm-up"
                print(f"{label} {name} {engine}: {seconds:.2f} s", flush=True)
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    medians = {name: {e: statistics.median(s) for e, s in rs.items()} for name, rs in runs.items()}
    ratios = {
        name: {
            f"{engine} / {reference}": times[engine] / times[reference]
            for engine, reference in RATIOS
            if engine in times and reference in times
        }
        for name, times in medians.items()
    }
    report = {"preset": preset.label, "repeat": repeat, "rows": preset.rows}
    report |= {"medians": medians, "ratios": ratios, "runs": runs}
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(report, indent=2))
    print(f"\n{preset.label} ({preset.rows:,} rows), medians of {repeat}:")
    for name in names:
        cells = "  ".join(f"{e} {medians[name][e]:6.2f} s" for e in engines)
        ratio = "  ".join(f"{k} {v:.2f}x" for k, v in ratios[name].items())
        print(f"  {name:<11} {cells}  {ratio}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
