"""The change feed's cost on a sync after one commit.

``python -m benchmarks.bench_change_feed [--preset small|medium|full] [--repeat N] [--keep DIR]``

Two hard-linked working copies of a ``benchmarks.gen_table`` table (small: 2,000 file
groups, 200 commits; medium: 20,000 file groups, 2,000 commits; full: 100,000 file
groups, 10,000 commits): one synced to DuckDB
with the change feed (``hudi_sync.sync.change.feed=on``: the generated table has no CDC
logs, so each commit's changes are inferred by comparing every rewritten base file with
its previous version, what the feed costs a Copy-on-Write table without CDC), the other
without it (``off``, the reference, measured in the same run). Each gets a first sync
(reported: the feed's backfill of every commit), then each repetition appends one UPSERT
(``gen_table.append_upsert``, 5 file groups) to both and times both syncs, in
alternating order. Checked: every timed sync publishes the new commit, and its feed rows
are the appended commit's updates. Reported: the medians of the wall times and their
ratio, the median of each repetition's ratio (the two syncs of one repetition run back
to back, so a machine whose load drifts skews it less), and the same for the process's
CPU time (which a machine shared with other work inflates less; it leaves out waits on
the disk). Results on stdout and in ``benchmarks/results/change_feed.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb

from benchmarks.bench_sync import clone_table
from benchmarks.gen_table import PRESETS, append_upsert, generate
from hudi_sync.sync.job import sync_table
from hudi_sync.warehouse.duckdb import DuckDBTarget

RESULTS = Path(__file__).resolve().parent / "results"
UPDATES = 5
# The full table a fifth as large in every dimension: a feed of 2,000 commits whose
# backfill takes about a minute.
FEED_PRESETS = {
    **PRESETS,
    "medium": dataclasses.replace(
        PRESETS["full"],
        commits=2_000,
        partitions=200,
        file_groups=20_000,
        insert_commits=200,
        name="bench_cow_medium",
    ),
}


def timed_sync(table: Path, database: Path, feed: str) -> tuple[float, Any]:
    seconds, _cpu, report = timed_sync_cpu(table, database, feed)
    return seconds, report


def timed_sync_cpu(table: Path, database: Path, feed: str) -> tuple[float, float, Any]:
    """A sync's wall time, its CPU time (this process's, every thread's), its report."""
    started, cpu = time.perf_counter(), time.process_time()
    report = sync_table(str(table), [DuckDBTarget(str(database), "t")], change_feed=feed)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    if not report.ok:
        raise RuntimeError(f"{table}: sync failed: {report.errors}")
    return seconds, cpu, report


def feed_rows(database: Path, instant: str) -> list[tuple[str, str]]:
    with duckdb.connect(str(database), read_only=True) as con:
        return con.execute(
            "SELECT op, record_key FROM t_changes WHERE commit_time = ?", [instant]
        ).fetchall()


def paired_ratio(times: dict[str, list[float]]) -> float:
    """The median of each repetition's feed-on over feed-off time."""
    return statistics.median(on / off for on, off in zip(times["on"], times["off"], strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=("small", "medium", "full"), default="small")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="cache the generated table here")
    args = parser.parse_args()
    spec = FEED_PRESETS[args.preset]
    cache = args.keep or Path(tempfile.mkdtemp(prefix="bench-feed-"))
    cache.mkdir(parents=True, exist_ok=True)
    if not (cache / spec.name / ".hoodie").exists():
        generate(cache, spec, verbose=False)
    work = Path(tempfile.mkdtemp(prefix="bench-feed-work-", dir=cache))
    try:
        copies = {feed: work / f"t_{feed}" for feed in ("on", "off")}
        databases = {feed: work / f"{feed}.duckdb" for feed in copies}
        first: dict[str, float] = {}
        for feed, copy in copies.items():
            clone_table(cache / spec.name, copy)
            first[feed], report = timed_sync(copy, databases[feed], feed)
            changes = report.changes
            print(
                f"first sync, feed {feed}: {first[feed]:.3f} s"
                + (f" ({changes.written} change files)" if changes else ""),
                file=sys.stderr,
            )
        runs: dict[str, list[float]] = {feed: [] for feed in copies}
        cpu: dict[str, list[float]] = {feed: [] for feed in copies}
        for rep in range(args.repeat):
            appended = {feed: append_upsert(copy, UPDATES) for feed, copy in copies.items()}
            for feed in ("on", "off") if rep % 2 == 0 else ("off", "on"):
                seconds, used, report = timed_sync_cpu(copies[feed], databases[feed], feed)
                if report.instant != appended[feed].instant:
                    raise RuntimeError(f"feed {feed}: synced {report.instant}")
                runs[feed].append(seconds)
                cpu[feed].append(used)
            rows = feed_rows(databases["on"], appended["on"].instant)
            if len(rows) != UPDATES or {op for op, _ in rows} != {"u"}:
                raise RuntimeError(f"the feed of {appended['on'].instant} is {rows}")
            print(
                f"rep {rep + 1}: feed on {runs['on'][-1]:.3f} s, off {runs['off'][-1]:.3f} s",
                file=sys.stderr,
            )
        median = {feed: statistics.median(r) for feed, r in runs.items()}
        cpu_median = {feed: statistics.median(r) for feed, r in cpu.items()}
        result = {
            "preset": args.preset,
            "table": spec.name,
            "first_sync_s": first,
            "sync_after_one_commit_median_s": median,
            "feed_over_no_feed": median["on"] / median["off"],
            "paired_ratio_median": paired_ratio(runs),
            "cpu_median_s": cpu_median,
            "cpu_feed_over_no_feed": cpu_median["on"] / cpu_median["off"],
            "cpu_paired_ratio_median": paired_ratio(cpu),
            "runs_s": runs,
            "cpu_s": cpu,
        }
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "change_feed.json").write_text(json.dumps(result, indent=2) + "\n")
        print(json.dumps(result, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if args.keep is None:
            shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
