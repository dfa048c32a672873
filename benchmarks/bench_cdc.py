"""CDC benchmark: the CDC query against diffing snapshots, and the cost of CDC on write.

``python -m benchmarks.bench_cdc [--preset small|full] [--repeat N] [--only query|write]``

Base tables as in ``bench_writer`` (full preset: 10,000,000 rows in 20 ``day``
partitions, one base file each, written once by our ``bulk_insert`` and cached under
``benchmarks/results/tables``): ``bench_writer``'s own table (CDC off) and one per
supplemental logging mode (CDC is fixed at table creation). Each CDC table also gets a
cached copy with one more commit, an upsert updating 1 % of the rows (every 100th key,
so every file group is rewritten): the commit the queries read.

1. **CDC query** of exactly that commit (begin: the bulk insert, end: the upsert):

   - **cdc**: ``hudi_sync.spark.read(..., incremental, format cdc)`` in each mode;
   - **latest_state**: the incremental query of the same commit (data_before_after table);
   - **diff**: plain Spark computing the same changes from the two snapshots (time
     travel to the two commits): full outer join on ``_hoodie_record_key``, rows whose
     data columns differ, ``to_json`` of the data columns as ``before``/``after``.

   Every query is evaluated in full: the sum of the lengths of all its columns (so the
   JSON images are built) and the row count.
2. **CDC write overhead**: ``bench_writer``'s upsert (full: 1,000,000 rows, 10 % updates
   of the two newest days, the rest a new day) into the CDC-off table and into each CDC
   table, each on its own hard-linked copy, by ``bench_writer``'s own measured child,
   all with the Python merge (``ours-python``: CDC logs are written by it), so the ratio
   is what CDC costs the same merge.

Each measurement runs in a fresh process (Spark started and warmed up first; only the
query or write is timed); peak memory is the highest summed RSS of that process tree.
Medians and ratios of the same run; results also go to ``benchmarks/results/cdc.json``.
"""

from __future__ import annotations

import argparse
import json
import operator
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict
from functools import reduce
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
    run_child,
    write_options,
)

MODES = ("op_key_only", "data_before", "data_before_after")
QUERY_FRACTION = 0.01  # of the base rows, updated by the queried commit
DEFAULT_REPEAT = {"small": 1, "full": 3}
# (name, kind, mode of the table it runs on)
QUERIES = (
    ("cdc", "cdc", "data_before_after"),
    ("latest_state", "latest_state", "data_before_after"),
    ("diff", "diff", "data_before_after"),
    ("cdc_op_key_only", "cdc", "op_key_only"),
    ("cdc_data_before", "cdc", "data_before"),
)
WRITES = ("off", *MODES)
TARGETS = {"diff_over_cdc": 8.0, "cdc_over_latest_state": 1.15, "write_on_over_off": 1.15}
# The CDC query of each logging mode, by its name in QUERIES.
MODE_QUERIES = {
    "op_key_only": "cdc_op_key_only",
    "data_before": "cdc_data_before",
    "data_before_after": "cdc",
}
PARTS = ("query", "write")
RECORD_KEY = "_hoodie_record_key"


def cdc_options(mode: str) -> dict[str, str]:
    return {
        "hoodie.table.cdc.enabled": "true",
        "hoodie.table.cdc.supplemental.logging.mode": mode,
    }


# -- tables (built once, in a child process) ----------------------------------------------------
def generate_cdc_tables(preset: Preset, cache: Path) -> dict[str, dict[str, str]]:
    """Per mode: the CDC base table, its copy with the queried commit, and that commit's
    ``begin``/``end`` instants (cached in ``tables.json``)."""
    folder = cache / f"cdc_{preset.label}"
    info = folder / "tables.json"
    if info.exists():
        return dict(json.loads(info.read_text()))
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    from hudi_sync.spark import local_session, write

    spark = local_session("bench-cdc-generate")
    per_day = preset.base_rows // preset.days
    base_rows = _rows(spark.range(preset.base_rows), per_day, 1)
    step = round(1 / QUERY_FRACTION)
    updates = _rows(spark.range(0, preset.base_rows, step), per_day, 2)
    tables: dict[str, dict[str, str]] = {}
    for mode in MODES:
        base, query = folder / f"base_{mode}", folder / f"query_{mode}"
        started = time.monotonic()
        created = write(base_rows, str(base), {**write_options("bulk_insert"), **cdc_options(mode)})
        link_copy(base, query)
        committed = write(updates, str(query), write_options("upsert"))
        tables[mode] = {
            "base": str(base),
            "query": str(query),
            "begin": created.instant,
            "end": committed.instant,
        }
        print(f"generated {mode} tables in {time.monotonic() - started:.0f} s", file=sys.stderr)
    spark.stop()
    info.write_text(json.dumps(tables, indent=2))
    return tables


# -- one measured query (child process) ---------------------------------------------------------
def query_frame(spark: Any, kind: str, table: str, begin: str, end: str) -> Any:
    from pyspark.sql import functions as F

    from hudi_sync.spark import read

    if kind in ("cdc", "latest_state"):
        return read(
            spark,
            table,
            {
                "hoodie.datasource.query.type": "incremental",
                "hoodie.datasource.query.incremental.format": kind,
                "hoodie.datasource.read.begin.instanttime": begin,
                "hoodie.datasource.read.end.instanttime": end,
            },
        )

    def snapshot(instant: str, image: str) -> Any:
        frame = read(
            spark, table, {"hoodie.datasource.query.type": "snapshot", "as.of.instant": instant}
        )
        data = [c for c in frame.columns if not c.startswith("_hoodie_")]
        return frame.select(F.col(RECORD_KEY).alias("k"), F.struct(*data).alias(image))

    changed = (
        snapshot(begin, "b")
        .join(snapshot(end, "a"), "k", "full_outer")
        .where(~F.col("b").eqNullSafe(F.col("a")))
    )
    return changed.select(
        F.when(F.col("b").isNull(), "i").when(F.col("a").isNull(), "d").otherwise("u").alias("op"),
        F.lit(end).alias("ts_ms"),
        F.to_json("b").alias("before"),
        F.to_json("a").alias("after"),
    )


def evaluate(frame: Any) -> tuple[int, int]:
    """Rows, and the summed length of every column as a string (so every value is built)."""
    from pyspark.sql import functions as F

    lengths = [F.coalesce(F.length(F.col(c).cast("string")), F.lit(0)) for c in frame.columns]
    row = frame.select(F.count(F.lit(1)), F.sum(reduce(operator.add, lengths))).collect()[0]
    return int(row[0]), int(row[1] or 0)


def query_child(kind: str, table: str, begin: str, end: str) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from hudi_sync.spark import local_session

    spark = local_session(f"bench-cdc-{kind}")
    spark.range(1000).groupBy((F.col("id") % 3).alias("g")).count().collect()  # warm up
    result: dict[str, Any] = {"kind": kind}
    with PeakSampler() as sampler:
        started = time.monotonic()
        result["rows"], result["chars"] = evaluate(query_frame(spark, kind, table, begin, end))
        result["seconds"] = time.monotonic() - started
    result["peak_rss_bytes"] = sampler.peak
    spark.stop()
    return result


def run_query_child(kind: str, table: str, begin: str, end: str) -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks.bench_cdc", "--child", kind, table, begin, end]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def measured(run: Any, *args: Any) -> dict[str, Any]:
    """``run(*args)``; a failed child's stderr tail is shown before the error is raised."""
    try:
        return dict(run(*args))
    except subprocess.CalledProcessError as exc:
        print("".join((exc.stderr or "").splitlines(keepends=True)[-20:]), file=sys.stderr)
        raise


# -- the run -----------------------------------------------------------------------------------
def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    summary = {
        "median_seconds": statistics.median(r["seconds"] for r in runs),
        "peak_rss_gib": max(r["peak_rss_bytes"] for r in runs) / 2**30,
    }
    for extra in ("rows", "files_written", "files_rewritten"):
        if extra in runs[0]:
            summary[extra] = runs[0][extra]
    return summary


def _print_queries(
    preset: Preset, repeat: int, summary: dict[str, Any], ratios: dict[str, float]
) -> None:
    updated = len(range(0, preset.base_rows, round(1 / QUERY_FRACTION)))
    print(
        f"\nCDC query of one commit updating {updated:,} of {preset.base_rows:,} rows, "
        f"medians of {repeat}:"
    )
    for name, s in summary.items():
        print(
            f"  {name:<16} {s['median_seconds']:7.2f} s  peak {s['peak_rss_gib']:.2f} GiB  "
            f"rows {s['rows']:,}"
        )
    row_counts = {name: s["rows"] for name, s in summary.items()}
    if len(set(row_counts.values())) != 1:
        print(f"  WARNING: the queries disagree on the row count: {row_counts}")
    for mode in MODE_QUERIES:
        print(
            f"  diff / cdc {mode:<18} {ratios[f'diff_over_cdc_{mode}']:6.2f}x "
            f"(target >= {TARGETS['diff_over_cdc']}x)"
        )
    print(
        f"  cdc / latest_state (data_before_after) {ratios['cdc_over_latest_state']:6.2f}x "
        f"(target <= {TARGETS['cdc_over_latest_state']}x)"
    )


def _print_writes(
    preset: Preset, repeat: int, summary: dict[str, Any], ratios: dict[str, float]
) -> None:
    print(
        f"\nupsert of {preset.upsert_rows:,} rows ({preset.update_fraction:.0%} updates) "
        f"into {preset.base_rows:,} rows, medians of {repeat}:"
    )
    for name, s in summary.items():
        ratio = "" if name == "off" else f"  on/off {ratios[f'write_{name}_over_off']:.2f}x"
        print(
            f"  cdc {name:<18} {s['median_seconds']:7.1f} s  peak {s['peak_rss_gib']:.2f} GiB"
            f"{ratio}"
        )
    print(f"  (target on/off <= {TARGETS['write_on_over_off']}x)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="small")
    parser.add_argument("--repeat", type=int, help="default: 1 (small), 3 (full)")
    parser.add_argument("--cache", type=Path, default=RESULTS_DIR / "tables")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "cdc.json")
    parser.add_argument("--only", choices=PARTS, help="run only the query or the write part")
    parser.add_argument("--child", nargs=4, metavar=("KIND", "TABLE", "BEGIN", "END"))
    parser.add_argument("--generate", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(query_child(*args.child)))
        return 0
    preset = PRESETS[args.preset]
    if args.generate:
        generate(preset, args.cache)  # bench_writer's table (CDC off) and its upsert
        print(json.dumps(generate_cdc_tables(preset, args.cache)))
        return 0
    repeat = args.repeat or DEFAULT_REPEAT[args.preset]
    # Built in a child, so this process holds no JVM while the measured children run.
    command = [sys.executable, "-m", "benchmarks.bench_cdc", "--generate"]
    command += ["--preset", args.preset, "--cache", str(args.cache)]
    done = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True)
    tables: dict[str, dict[str, str]] = json.loads(done.stdout.strip().splitlines()[-1])
    writer_table, incoming, touched = generate(preset, args.cache)  # cached: no Spark
    bases = {"off": writer_table, **{m: Path(tables[m]["base"]) for m in MODES}}

    parts = (args.only,) if args.only else PARTS
    queries: dict[str, list[dict[str, Any]]] = {
        name: [] for name, _, _ in QUERIES if "query" in parts
    }
    writes: dict[str, list[dict[str, Any]]] = {name: [] for name in WRITES if "write" in parts}
    work = args.cache / "cdc_work"
    for attempt in range(repeat):
        for name, kind, mode in QUERIES:  # alternated, so drift affects all alike
            if name not in queries:
                continue
            t = tables[mode]
            run = measured(run_query_child, kind, t["query"], t["begin"], t["end"])
            queries[name].append(run)
            print(
                f"run {attempt + 1} query {name}: {run['seconds']:.2f} s, {run['rows']:,} rows, "
                f"peak {run['peak_rss_bytes'] / 2**30:.2f} GiB",
                flush=True,
            )
        for name in writes:
            shutil.rmtree(work, ignore_errors=True)
            link_copy(bases[name], work / "table")
            run = measured(
                run_child, "ours-python", work / "table", incoming, touched, work / "out"
            )
            writes[name].append(run)
            print(
                f"run {attempt + 1} write cdc {name}: {run['seconds']:.1f} s, "
                f"peak {run['peak_rss_bytes'] / 2**30:.2f} GiB",
                flush=True,
            )
    shutil.rmtree(work, ignore_errors=True)

    query_summary = {name: _summary(runs) for name, runs in queries.items()}
    write_summary = {name: _summary(runs) for name, runs in writes.items()}
    ratios: dict[str, float] = {}
    if query_summary:
        diff_seconds = query_summary["diff"]["median_seconds"]
        cdc_seconds = query_summary["cdc"]["median_seconds"]
        ratios["diff_over_cdc"] = diff_seconds / cdc_seconds
        ratios["cdc_over_latest_state"] = (
            cdc_seconds / query_summary["latest_state"]["median_seconds"]
        )
        for mode, name in MODE_QUERIES.items():
            ratios[f"diff_over_cdc_{mode}"] = diff_seconds / query_summary[name]["median_seconds"]
    if write_summary:
        for mode in MODES:
            ratios[f"write_{mode}_over_off"] = (
                write_summary[mode]["median_seconds"] / write_summary["off"]["median_seconds"]
            )
    report = {
        "preset": {**asdict(preset), "query_fraction": QUERY_FRACTION},
        "repeat": repeat,
        "parts": list(parts),
        "tables": tables,
        "queries": query_summary,
        "writes": write_summary,
        "ratios": ratios,
        "targets": TARGETS,
        "runs": {"queries": queries, "writes": writes},
    }
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(report, indent=2))

    if query_summary:
        _print_queries(preset, repeat, query_summary, ratios)
    if write_summary:
        _print_writes(preset, repeat, write_summary, ratios)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
