"""Iceberg publication benchmark: what publishing a synced snapshot as Iceberg adds to
the manifest sync, first and after one commit.

``python -m benchmarks.bench_iceberg [--preset small|full] [--keep DIR | --temp]
[--repeat N] [--profile | --no-profile]``

The tables are ``bench_sync``'s (``benchmarks.gen_table``, real one-row Parquet base
files, cached in ``DIR``, default ``benchmarks/results/tables``): full preset
``large_table`` 100,000 file groups in 1,000 partitions, 10,000 commits, against
``small_table`` 1,000 file groups (small preset: 2,000 and 100). Per table, two working
copies of hard links (``bench_sync.clone_table``): on one only the manifest sync runs
(the reference, ``publish_manifest(table)``), on the other the manifest sync then the
Iceberg publication (``IcebergStore(table, keep).publish(published)``, as the
``iceberg`` target calls it). Each measured step runs in a fresh interpreter
(``benchmarks._iceberg_child``), timed there without interpreter start or imports.

1. First publication of each copy (no previous manifest nor Iceberg metadata): the
   full listing, and for Iceberg every base file's footer read.
2. After one appended UPSERT (``gen_table.append_upsert``, the same commit on both
   copies), ``--repeat`` times (median), the tables alternating order.

Every publication is checked: the manifest against the generator's expected snapshot
plus the commits appended since (``bench_sync.check_published``); the Iceberg snapshot
read back with plain ``json`` and ``fastavro`` (not hudi_sync's readers) at the same
instant, its manifest list's data file count and its live data file paths equal to the
manifest's base files; after a commit the publication must reuse manifests
(``manifests_reused`` > 0) and not list the whole table (``full_listing`` False).

The large table's first publication is also run with the base files' metrics from the
commit metadata (``hudi_sync.sync.iceberg.metrics.source=commit``: record counts and
sizes, no footer read) on a third working copy (``large-iceberg-commit``).

Reference for the first publication, same run (``footer-floor``): every base file the
large manifest names opened and its tail read, then parsed by pyarrow alone, in plain
Python: the floor of any publication that reads each file's footer once, which the
manifest sync never does (it lists names).

Targets (issue 53): after one commit, manifest + Iceberg <= 1.5x the manifest sync on
the large table, and flat: large / small <= 1.5x; first publication of the large table
<= 2x the first manifest sync. ``--profile`` (or a missed target) runs one more large
first publication and one more large publication after a commit under cProfile
(``iceberg_first.prof``, ``iceberg_commit.prof``). Results: stdout and
``benchmarks/results/iceberg.json``.
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
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.bench_sync import (
    BENCH_PRESETS,
    PROJECT_ROOT,
    RESULTS_DIR,
    BenchmarkError,
    WorkTable,
    check_published,
    code_version,
    hotspots,
    log,
    open_work_table,
    write_results,
)
from benchmarks.gen_table import AppendedCommit

AFTER_COMMIT_TARGET = 1.5  # manifest + Iceberg over the manifest sync, after one commit
FLAT_TARGET = 1.5  # large over small, after one commit
FIRST_TARGET = 2.0  # first publication over the first manifest sync, large table
CHILD_TIMEOUT_S = 3600
MODES = ("manifest", "iceberg")


def run_child(mode: str, table: Path, profile_out: Path | None = None) -> dict[str, Any]:
    """One publication in a fresh interpreter; its report."""
    command = [sys.executable, "-m", "benchmarks._iceberg_child", mode, str(table)]
    if profile_out is not None:
        command += ["--profile", str(profile_out)]
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
    proc = subprocess.run(
        command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S
    )
    if proc.returncode != 0:
        raise BenchmarkError(f"{mode} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    report: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return report


def publish(
    table: WorkTable, mode: str, touched: int | None, profile_out: Path | None = None
) -> Any:
    """Publish ``table`` in a child and fail unless what it published is right.
    ``touched``: the partitions the commit appended since the last publication wrote
    (None: a first publication)."""
    first = touched is None
    report = run_child(mode, table.path, profile_out)
    details = report["details"]
    instant = table.appended[-1] if table.appended else table.manifest["latest_completed_instant"]
    if details["incremental"] == first:
        raise BenchmarkError(f"{table.label}: manifest incremental={details['incremental']}")
    table.expected = check_published(table.path, instant, table.expected, table.manifest)
    if mode.startswith("iceberg"):
        iceberg, back = details["iceberg"], details["read_back"]
        problems = []
        if iceberg["instant"] != instant or back["instant"] != instant:
            problems.append(f"published {iceberg['instant']} / read back {back['instant']}")
        if not iceberg["data_files"] == back["listed_data_files"] == details["files"]:
            problems.append(
                f"{iceberg['data_files']} data files reported, {back['listed_data_files']} "
                f"listed, the manifest has {details['files']}"
            )
        if not back["paths_match_manifest"]:
            problems.append("the snapshot's live data files are not the manifest's base files")
        if first and not iceberg["full_listing"]:
            problems.append("a first publication that did not list the table")
        written, reused = iceberg["manifests_written"], iceberg["manifests_reused"]
        # After a commit: one bucket manifest rewritten per partition written at most,
        # every other manifest reused, nothing listed but those partitions.
        if touched is not None and (
            iceberg["full_listing"]
            or written > touched
            or (written + reused > touched and reused == 0)
        ):
            problems.append(
                f"after a commit to {touched} partitions: {written} manifests written, "
                f"{reused} reused, full listing {iceberg['full_listing']}"
            )
        if problems:
            raise BenchmarkError(f"{table.label}: " + "; ".join(problems))
    return report


def partitions(appended: AppendedCommit) -> int:
    """How many partitions an appended commit wrote."""
    return len({partition for partition, *_ in appended.changes})


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    seconds = [r["seconds"] for r in runs]
    parts = {
        key: statistics.median(float(r["details"][key]) for r in runs)
        for key in ("manifest_s", "iceberg_s")
        if key in runs[0]["details"]
    }
    return {
        "median_s": statistics.median(seconds),
        "min_s": min(seconds),
        "max_s": max(seconds),
        "median_cpu_s": statistics.median(r["cpu_seconds"] for r in runs),
        "peak_rss_mb": max(r["peak_rss_kib"] for r in runs) / 1024,
        "median_parts_s": parts,
        "runs": runs,
    }


def bench(
    pairs: dict[str, dict[str, WorkTable]],
    commit_copy: WorkTable,
    repeat: int,
    updates: int,
    profile: bool | None,
) -> dict[str, Any]:
    """``pairs``: per size (``large``, ``small``), its ``manifest`` and ``iceberg`` copy;
    ``commit_copy``: a third copy of the large table, first published with commit metrics;
    ``profile``: profile the large table (None: never; False: when a target is missed)."""
    first: dict[str, dict[str, Any]] = {}
    for size, copies in pairs.items():
        for mode in MODES:
            report = publish(copies[mode], mode, None)
            first[f"{size}-{mode}"] = report
            log(f"  first publication {size} {mode}: {report['seconds']:.3f}s")
    # The large table's first publication with metrics from the commit metadata, on a
    # third working copy (``commit_copy``), checked as the others.
    report = publish(commit_copy, "iceberg-commit", None)
    first["large-iceberg-commit"] = report
    log(f"  first publication large iceberg, commit metrics: {report['seconds']:.3f}s")
    floor = run_child("footer-floor", pairs["large"]["manifest"].path)
    if floor["details"]["files"] != len(pairs["large"]["manifest"].expected or {}):
        raise BenchmarkError("the footer floor read another number of files")
    log(f"  footer floor, large: {floor['seconds']:.3f}s")
    runs: dict[str, list[dict[str, Any]]] = {
        f"{size}-{mode}": [] for size in pairs for mode in MODES
    }
    sizes = list(pairs)
    for rep in range(repeat):
        for size in sizes if rep % 2 == 0 else sizes[::-1]:
            modes = MODES if rep % 2 == 0 else MODES[::-1]
            touched = {mode: partitions(pairs[size][mode].append(updates)) for mode in modes}
            for mode in modes:
                report = publish(pairs[size][mode], mode, touched[mode])
                runs[f"{size}-{mode}"].append(report)
        log(
            f"  after-commit rep {rep + 1}/{repeat}: "
            + ", ".join(f"{label} {r[-1]['seconds']:.3f}s" for label, r in runs.items())
        )
    summary = {label: summarize(r) for label, r in runs.items()}

    def median(label: str) -> float:
        return float(summary[label]["median_s"])

    def iceberg_part(label: str) -> float:
        return float(summary[label]["median_parts_s"]["iceberg_s"])

    result: dict[str, Any] = {
        "first": first,
        "footer_floor": floor,
        "first_over_footer_floor": first["large-iceberg"]["seconds"] / floor["seconds"],
        "after_commit": summary,
        "first_ratio": {
            size: first[f"{size}-iceberg"]["seconds"] / first[f"{size}-manifest"]["seconds"]
            for size in sizes
        },
        "first_ratio_commit_metrics": first["large-iceberg-commit"]["seconds"]
        / first["large-manifest"]["seconds"],
        "after_commit_ratio": {
            size: median(f"{size}-iceberg") / median(f"{size}-manifest") for size in sizes
        },
        "large_over_small": median("large-iceberg") / median("small-iceberg"),
        "large_over_small_manifest": median("large-manifest") / median("small-manifest"),
        "large_over_small_iceberg_part": iceberg_part("large-iceberg")
        / iceberg_part("small-iceberg"),
        "targets": {
            "after_commit_ratio": AFTER_COMMIT_TARGET,
            "large_over_small": FLAT_TARGET,
            "first_ratio": FIRST_TARGET,
        },
    }
    result["meets"] = {
        "after_commit_ratio": result["after_commit_ratio"]["large"] <= AFTER_COMMIT_TARGET,
        "large_over_small": result["large_over_small"] <= FLAT_TARGET,
        "first_ratio": result["first_ratio"]["large"] <= FIRST_TARGET,
        "first_ratio_commit_metrics": result["first_ratio_commit_metrics"] <= FIRST_TARGET,
    }
    if profile or (profile is not None and not all(result["meets"].values())):
        result["diagnosis"] = diagnose(pairs["large"]["iceberg"], updates)
    return result


def diagnose(table: WorkTable, updates: int) -> dict[str, Any]:
    """One more large publication after a commit, and one more first publication (the
    Iceberg folder and the manifest deleted), under cProfile."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    found: dict[str, Any] = {}
    touched = partitions(table.append(updates))
    prof = RESULTS_DIR / "iceberg_commit.prof"
    report = publish(table, "iceberg", touched, profile_out=prof)
    found["after_commit"] = {"profiled_run": report, "hotspots": hotspots(prof)}
    shutil.rmtree(table.path / ".hoodie" / "manifest")
    prof = RESULTS_DIR / "iceberg_first.prof"
    report = publish(table, "iceberg", None, profile_out=prof)
    found["first"] = {"profiled_run": report, "hotspots": hotspots(prof)}
    return found


# -- report -----------------------------------------------------------------------------------
def print_result(result: dict[str, Any], pairs: dict[str, dict[str, WorkTable]]) -> None:
    print("\nIceberg publication: manifest sync alone vs manifest sync + Iceberg publication")
    header = (
        f"{'table':<10} {'file groups':>11} {'step':<9} {'first s':>8} {'median s':>9} "
        f"{'min s':>7} {'max s':>7} {'cpu s':>6} {'iceberg part s':>14} {'peak RSS MB':>11}"
    )
    print(header)
    print("-" * len(header))
    for size, copies in pairs.items():
        for mode in MODES:
            label = f"{size}-{mode}"
            s = result["after_commit"][label]
            part = s["median_parts_s"].get("iceberg_s")
            print(
                f"{size:<10} {copies[mode].manifest['expected_latest_slices']:11d} {mode:<9} "
                f"{result['first'][label]['seconds']:8.3f} {s['median_s']:9.3f} "
                f"{s['min_s']:7.3f} {s['max_s']:7.3f} {s['median_cpu_s']:6.2f} "
                f"{'' if part is None else f'{part:.3f}':>14} {s['peak_rss_mb']:11.1f}"
            )
    targets, meets = result["targets"], result["meets"]

    def verdict(key: str) -> str:
        return f"{'meets' if meets[key] else 'MISSES'} target <= {targets[key]}x"

    for size, ratio in result["first_ratio"].items():
        print(f"first publication, {size}: Iceberg / manifest sync {ratio:.2f}x", end="")
        print(f" -> {verdict('first_ratio')}" if size == "large" else "")
    ratio = result["first_ratio_commit_metrics"]
    print(
        f"first publication, large, commit metrics: Iceberg / manifest sync {ratio:.2f}x "
        f"({result['first']['large-iceberg-commit']['seconds']:.3f}s) -> "
        f"{'meets' if meets['first_ratio_commit_metrics'] else 'MISSES'} target <= "
        f"{targets['first_ratio']}x"
    )
    floor = result["footer_floor"]
    print(
        f"footer floor, large ({floor['details']['files']:,} files, plain Python): "
        f"{floor['seconds']:.3f}s (tails read {floor['details']['read_s']:.3f}s, pyarrow's "
        f"footer parse {floor['details']['parse_s']:.3f}s); first Iceberg publication / "
        f"floor {result['first_over_footer_floor']:.2f}x"
    )
    for size, ratio in result["after_commit_ratio"].items():
        print(f"after one commit, {size}: Iceberg / manifest sync {ratio:.2f}x", end="")
        print(f" -> {verdict('after_commit_ratio')}" if size == "large" else "")
    print(
        f"after one commit, large / small: {result['large_over_small']:.2f}x -> "
        f"{verdict('large_over_small')} (manifest sync alone "
        f"{result['large_over_small_manifest']:.2f}x, the Iceberg part alone "
        f"{result['large_over_small_iceberg_part']:.2f}x)"
    )
    for what, diagnosis in result.get("diagnosis", {}).items():
        spots = diagnosis["hotspots"]
        print(
            f"\ncProfile of one large {what.replace('_', ' ')} publication "
            f"({diagnosis['profiled_run']['seconds']:.3f}s wall): hudi_sync by cumulative time"
        )
        for r in spots["hudi_sync_by_cumulative"]:
            print(f"  {r['cumulative_s']:8.3f}s {r['calls']:8d}  {r['function']}")
        print("all functions by own time")
        for r in spots["all_by_own_time"][:10]:
            print(f"  {r['own_s']:8.3f}s {r['calls']:8d}  {r['function']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(BENCH_PRESETS), default="small")
    parser.add_argument("--keep", type=Path, default=RESULTS_DIR / "tables", help="table cache")
    parser.add_argument("--temp", action="store_true", help="generate into a temp dir instead")
    parser.add_argument("--repeat", type=int, help="publications after a commit, per copy")
    parser.add_argument("--profile", action="store_true", help="always profile the large table")
    parser.add_argument(
        "--no-profile", action="store_true", help="never profile, even when a target is missed"
    )
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "iceberg.json")
    args = parser.parse_args(argv)
    preset = BENCH_PRESETS[args.preset]
    repeat = args.repeat or preset.sync_repeat
    if repeat < 1:
        parser.error("--repeat must be >= 1")
    started = time.perf_counter()
    version_at_start = code_version()
    temp = Path(tempfile.mkdtemp(prefix="hudi-bench-iceberg-")) if args.temp else None
    cache = (temp or args.keep).resolve()
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="work-", dir=cache))  # same file system: hard links
    result: dict[str, Any] = {
        "benchmark": "iceberg",
        "preset": args.preset,
        "preset_config": asdict(preset),
        "repeat": repeat,
    }
    try:
        pairs = {
            size: {mode: open_work_table(f"{size}-{mode}", spec, cache, work) for mode in MODES}
            for size, spec in (("large", preset.large_table), ("small", preset.small_table))
        }
        commit_copy = open_work_table("large-iceberg-commit", preset.large_table, cache, work)
        profile = None if args.no_profile else args.profile
        result |= bench(pairs, commit_copy, repeat, preset.updates, profile)
        result["tables"] = {
            f"{size}-{mode}": table.info() for size, c in pairs.items() for mode, table in c.items()
        }
        print_result(result, pairs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
    write_results(args.results, result, started, version_at_start)
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except BenchmarkError as error:
        print(f"BENCHMARK FAILED: {error}", file=sys.stderr)
        raise SystemExit(1) from None
