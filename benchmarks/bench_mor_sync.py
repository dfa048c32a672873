"""Merge-on-Read sync benchmark: does a sync's cost follow the change, not the table?

``python -m benchmarks.bench_mor_sync [--preset small|full|scale] [--processes N]
[--tables DIR]``

Two Merge-on-Read tables written through the bucket index (``write_arrow``, no Spark),
one ten times the other in partitions (each partition 4 buckets, every bucket with a
log file). Each is synced to a DuckDB file once (the first sync folds every slice's
log), then takes one upsert into one partition and is synced again: that second sync
is measured (the median of several rounds, each its own upsert), with what it folded.
Reported: the sync after one commit on the large table against the small one (the
target is the same as for Copy-on-Write delta syncs: at most 1.5x), and the first
sync of each for scale, in slices folded a second. Preset ``scale`` is the first sync
of 4,000 and 40,000 slices (1,000 and 10,000 partitions); ``--processes`` sets the
fold's worker processes (``hudi_sync.sync.log.fold.processes``; 0, the default: one per
CPU; 1: this process only); ``--tables DIR`` keeps the written tables there and syncs
copies of them, so a later run skips the writes. Results go to
``benchmarks/results/mor_sync.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

from benchmarks.bench_writer import RESULTS_DIR
from hudi_sync.manifest.log_parquet import LOG_FOLDER
from hudi_sync.manifest.snapshot import MANIFEST_FOLDER
from hudi_sync.spark.writing.writer import write_arrow
from hudi_sync.sync.job import sync_table
from hudi_sync.warehouse.duckdb import DuckDBTarget

# Partitions of the small table (the large one has ten times as many), rounds.
PRESETS = {"small": (10, 3), "full": (100, 5), "scale": (1000, 1)}
ROWS_PER_PARTITION = 400


def _options(operation: str = "upsert") -> dict[str, object]:
    return {
        "hoodie.table.name": "bench",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.index.type": "BUCKET",
        "hoodie.bucket.index.num.buckets": 4,
        "hoodie.write.table.version": 8,
        "hoodie.datasource.write.operation": operation,
        "hoodie.cleaner.commits.retained": 1000,
        "hoodie.keep.min.commits": 1001,
        "hoodie.keep.max.commits": 1002,
    }


def _rows(partitions: range, ts: int, per_partition: int) -> pa.Table:
    ids = [p * 1_000_000 + i for p in partitions for i in range(per_partition)]
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "p": pa.array([f"p{i // 1_000_000:04d}" for i in ids]),
            "name": pa.array([f"name-{ts}-{i}" for i in ids]),
            "ts": pa.array([ts] * len(ids), pa.int64()),
        }
    )


def _written(folder: Path, partitions: int) -> Path:
    """The table of ``partitions`` in ``folder``, written unless it is there."""
    table = folder / f"t{partitions}"
    if not (table / ".hoodie").exists():
        # Two writes: base rows, then an update of every key, so every bucket has a log.
        write_arrow(_rows(range(partitions), 1, ROWS_PER_PARTITION), str(table), _options())
        write_arrow(_rows(range(partitions), 2, ROWS_PER_PARTITION), str(table), _options())
    return table


def measure(
    work: Path, partitions: int, rounds: int, processes: int, tables: Path | None
) -> dict[str, Any]:
    table = work / f"t{partitions}"
    if tables is None:
        _written(work, partitions)
    else:
        shutil.copytree(_written(tables, partitions), table)
        shutil.rmtree(table / MANIFEST_FOLDER, ignore_errors=True)  # a synced copy's
    database = work / f"w{partitions}.duckdb"
    target = DuckDBTarget(str(database), "t")
    started = time.perf_counter()
    assert sync_table(str(table), [target], fold_processes=processes).ok
    first = time.perf_counter() - started
    folded = len(list((table / LOG_FOLDER / "parquet").iterdir()))
    seconds, converted = [], []
    for round_number in range(rounds):
        before = set((table / LOG_FOLDER / "parquet").iterdir())
        one = _rows(range(round_number % partitions, round_number % partitions + 1), 10, 50)
        write_arrow(
            one.set_column(3, "ts", pa.array([10 + round_number] * 50)), str(table), _options()
        )
        started = time.perf_counter()
        assert sync_table(str(table), [target], fold_processes=processes).ok
        seconds.append(time.perf_counter() - started)
        converted.append(len(set((table / LOG_FOLDER / "parquet").iterdir()) - before))
    return {
        "partitions": partitions,
        "file_groups": partitions * 4,
        "first_sync_seconds": first,
        "first_sync_folded": folded,
        "first_sync_slices_per_second": folded / first,
        "one_commit_sync_seconds": statistics.median(seconds),
        "one_commit_converted": converted,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="small")
    parser.add_argument("--processes", type=int, default=0)
    parser.add_argument("--tables", type=Path, default=None)
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "mor_sync.json")
    args = parser.parse_args(argv)
    small, rounds = PRESETS[args.preset]
    work = Path(tempfile.mkdtemp(prefix="bench-mor-sync-"))
    try:
        runs = [
            measure(work, partitions, rounds, args.processes, args.tables)
            for partitions in (small, small * 10)
        ]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ratio = runs[1]["one_commit_sync_seconds"] / runs[0]["one_commit_sync_seconds"]
    args.results.parent.mkdir(parents=True, exist_ok=True)
    written = {"ratio": ratio, "processes": args.processes, "runs": runs}
    args.results.write_text(json.dumps(written, indent=2))
    for run in runs:
        print(
            f"  {run['file_groups']:>5} file groups: first sync {run['first_sync_seconds']:.2f} s "
            f"({run['first_sync_folded']} slices folded, "
            f"{run['first_sync_slices_per_second']:.0f} a second); after one commit "
            f"{run['one_commit_sync_seconds']:.3f} s (folded {run['one_commit_converted']})"
        )
    print(f"sync after one commit, large / small table: {ratio:.2f}x (target <= 1.5x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
