"""Latest-snapshot listing: hudi_sync's ``HudiTable.file_slices()`` against hudi-rs and
against the physical floor (a plain ``os.scandir`` of the same folders).

``python -m benchmarks.bench_table_core [--preset small|full] [--repeat N] [--keep DIR]
[--profile]`` generates a Hudi table with ``benchmarks.gen_table`` (in a temp dir, or
reused from ``DIR`` when already generated there), then times in the same run, each
repetition in a fresh subprocess (``benchmarks._child``) so peak RSS is comparable
(the child reports its own ``VmHWM``; ``ru_maxrss`` would include this parent's RSS):

* ours: ``HudiTable.open(path).file_slices()``
* hudi-rs: ``hudi.HudiTable(path).get_file_slices()``
* scandir: a plain ``os.scandir`` walk of ``.hoodie`` and the table tree (every
  partition folder) that only collects the file names: the floor any listing of this
  table pays, whatever it does with the names.

Only the open + listing is timed (``time.perf_counter`` in the child), not interpreter
start or imports; peak RSS includes the imports. Every run's ``(partition, file id,
base file)`` set must equal the other reader's and the generator's expected snapshot,
else the benchmark fails (the scandir walk must see at least every base and timeline
file). The readers rotate order between repetitions, after one untimed warm-up each.
Results: a table on stdout and ``benchmarks/results/table_core.json``; with
``--profile`` also a cProfile of one extra run of ours (``table_core.prof``).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks.gen_table import PRESETS, TableSpec, generate, load_manifest, snapshot_digest

PROJECT_ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = Path(__file__).resolve().parent / "results"
IMPLEMENTATIONS = ("ours", "hudi-rs", "scandir")
TARGET_RATIO = 0.2  # ours / hudi-rs, median time
TARGET_SECONDS = 0.5  # ours, median time
CHILD_TIMEOUT_S = 3600


class BenchmarkError(RuntimeError):
    """A reader failed or returned a wrong snapshot."""


@dataclass(frozen=True)
class Run:
    """One child's report."""

    impl: str
    seconds: float
    cpu_seconds: float
    slices: int
    rss_after_imports_kib: int
    peak_rss_kib: int
    ru_maxrss_kib: int


def run_child(
    impl: str, table: Path, work: Path, profile_out: Path | None = None
) -> tuple[Run, list[str]]:
    """Run one measured listing in a fresh interpreter; return its report and rows."""
    out_tsv = work / f"{impl}.tsv"
    command = [sys.executable, "-m", "benchmarks._child", impl, str(table), str(out_tsv)]
    if profile_out is not None:
        command.append(str(profile_out))
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
    proc = subprocess.run(
        command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S
    )
    if proc.returncode != 0:
        raise BenchmarkError(f"{impl} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    text = out_tsv.read_text(encoding="utf-8")
    rows = text.split("\n") if text else []
    return Run(**report), rows


def check_rows(
    impl: str, rows: list[str], manifest: dict[str, Any], reference: set[str] | None
) -> set[str]:
    """Fail loudly unless ``rows`` are the expected snapshot (and equal ``reference``)."""
    unique = set(rows)
    expected = int(manifest["expected_latest_slices"])
    problems = []
    if len(unique) != len(rows):
        problems.append(f"{len(rows) - len(unique)} duplicate slices")
    if len(unique) != expected:
        problems.append(f"{len(unique)} slices, expected {expected}")
    if snapshot_digest(list(unique)) != manifest["expected_slices_sha256"]:
        problems.append("slice set differs from the generator's expected snapshot")
    if reference is not None and unique != reference:
        only_here = sorted(unique - reference)[:5]
        only_there = sorted(reference - unique)[:5]
        problems.append(
            f"differs from the other reader: only here {only_here}, only there {only_there}"
        )
    if problems:
        raise BenchmarkError(f"{impl}: " + "; ".join(problems))
    return unique


def check_names(run: Run, manifest: dict[str, Any]) -> None:
    """The scandir floor must have read at least every base file and timeline file."""
    least = int(manifest["base_files"]) + int(manifest.get("timeline_files") or 0)
    if run.slices < least:
        raise BenchmarkError(f"scandir: {run.slices} names, expected at least {least}")


def summarize(runs: list[Run]) -> dict[str, Any]:
    seconds = [r.seconds for r in runs]
    return {
        "median_s": statistics.median(seconds),
        "min_s": min(seconds),
        "max_s": max(seconds),
        "median_cpu_s": statistics.median(r.cpu_seconds for r in runs),
        "median_peak_rss_mb": statistics.median(r.peak_rss_kib for r in runs) / 1024,
        "peak_rss_mb": max(r.peak_rss_kib for r in runs) / 1024,
        "rss_after_imports_mb": statistics.median(r.rss_after_imports_kib for r in runs) / 1024,
        "listing_rss_mb": statistics.median(r.peak_rss_kib - r.rss_after_imports_kib for r in runs)
        / 1024,
        "runs": [asdict(r) for r in runs],
    }


def prepare_table(
    spec: TableSpec, keep: Path | None
) -> tuple[Path, dict[str, Any], bool, Path | None]:
    """Generate the table, or reuse it from ``keep``; returns (table, manifest, reused,
    temp dir to delete)."""
    if keep is not None:
        manifest = load_manifest(keep, spec)
        if manifest is not None:
            return keep / spec.name, manifest, True, None
        print(f"generating {spec.name} into {keep} ...", file=sys.stderr)
        return keep / spec.name, generate(keep, spec), False, None
    temp = Path(tempfile.mkdtemp(prefix="hudi-bench-"))
    print(f"generating {spec.name} into {temp} ...", file=sys.stderr)
    return temp / spec.name, generate(temp, spec), False, temp


def profile_report(path: Path, top: int = 25) -> str:
    """Top functions of a cProfile dump by own time and by cumulative time, with the
    share of the profiled total."""
    stats = pstats.Stats(str(path))
    raw: dict[Any, Any] = getattr(stats, "stats", {})
    entries = [
        (f"{Path(file).name}:{line}({func})", tt, ct, nc)
        for (file, line, func), (_cc, nc, tt, ct, _callers) in raw.items()
    ]
    # The outermost call's cumulative time is the profiled section's total.
    total = max([float(getattr(stats, "total_tt", 0.0))] + [e[2] for e in entries]) or 1.0
    out = io.StringIO()
    out.write(f"profiled total {total:.3f}s\n")
    for title, index in (("own time", 1), ("cumulative time", 2)):
        out.write(f"\ntop {top} by {title}:\n{'%':>6} {'seconds':>8} {'calls':>9}  function\n")
        for name, tt, ct, nc in sorted(entries, key=lambda e: e[index], reverse=True)[:top]:
            value = tt if index == 1 else ct
            out.write(f"{100 * value / total:6.1f} {value:8.3f} {nc:9d}  {name}\n")
    return out.getvalue()


def environment() -> dict[str, Any]:
    def version(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "hudi": version("hudi"),
        "hudi_sync": version("hudi-sync"),
        "pyarrow": version("pyarrow"),
    }


def ratios(summary: dict[str, dict[str, Any]]) -> dict[str, float]:
    """ours / hudi-rs and ours / scandir, of the median time and median peak RSS."""
    ours = summary["ours"]
    return {
        f"{what}_ours_over_{other.replace('-', '_')}": ours[key] / summary[other][key]
        for other in ("hudi-rs", "scandir")
        for what, key in (("time", "median_s"), ("rss", "median_peak_rss_mb"))
    }


def print_table(summary: dict[str, dict[str, Any]], ratio: dict[str, float]) -> None:
    header = (
        f"{'reader':<8} {'median s':>9} {'min s':>8} {'max s':>8} {'cpu s':>7} "
        f"{'peak RSS MB':>12} {'after imports':>14} {'listing +MB':>12}"
    )
    print(header)
    print("-" * len(header))
    for impl in IMPLEMENTATIONS:
        s = summary[impl]
        print(
            f"{impl:<8} {s['median_s']:9.3f} {s['min_s']:8.3f} {s['max_s']:8.3f} "
            f"{s['median_cpu_s']:7.2f} {s['median_peak_rss_mb']:12.1f} "
            f"{s['rss_after_imports_mb']:14.1f} {s['listing_rss_mb']:12.1f}"
        )
    time_rs, time_floor = ratio["time_ours_over_hudi_rs"], ratio["time_ours_over_scandir"]
    print(
        f"\nours/hudi-rs (medians): {time_rs:.2f}x time, "
        f"{ratio['rss_ours_over_hudi_rs']:.2f}x peak RSS"
        f"\nours/scandir (medians): {time_floor:.2f}x time, "
        f"{ratio['rss_ours_over_scandir']:.2f}x peak RSS"
    )
    seconds = summary["ours"]["median_s"]
    for met, target in (
        (time_rs <= TARGET_RATIO, f"time <= {TARGET_RATIO}x hudi-rs"),
        (seconds < TARGET_SECONDS, f"ours < {TARGET_SECONDS} s"),
    ):
        print(f"{'meets' if met else 'MISSES'} target {target}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="small")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per reader (default 5)")
    parser.add_argument("--keep", type=Path, help="generate into / reuse the table in DIR")
    parser.add_argument("--profile", action="store_true", help="also cProfile one run of ours")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "table_core.json")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be >= 1")

    spec = PRESETS[args.preset]
    if args.keep is not None:
        args.keep = args.keep.resolve()  # hudi-rs opens only absolute paths
    started = time.perf_counter()
    load_before = os.getloadavg()[0]  # wall times stretch on a busy machine; CPU less so
    table, manifest, reused, temp = prepare_table(spec, args.keep)
    origin = "reused" if reused else f"generated in {manifest['generation_seconds']:.1f}s"
    print(
        f"table {table}: {origin}, {manifest['completed_commits']} commits, "
        f"{manifest['partitions']} partitions, {manifest['base_files']} base files, "
        f"{manifest['expected_latest_slices']} expected slices, "
        f"{manifest['disk']['allocated_bytes'] / 2**20:.0f} MiB on disk",
        file=sys.stderr,
    )
    runs: dict[str, list[Run]] = {impl: [] for impl in IMPLEMENTATIONS}
    profile_text = None
    try:
        with tempfile.TemporaryDirectory(prefix="hudi-bench-rows-") as scratch:
            work = Path(scratch)
            reference: set[str] | None = None
            for impl in IMPLEMENTATIONS:  # untimed warm-up, fully verified
                run, rows = run_child(impl, table, work)
                if impl == "scandir":
                    check_names(run, manifest)
                else:
                    reference = check_rows(impl, rows, manifest, reference)
            for rep in range(args.repeat):
                shift = rep % len(IMPLEMENTATIONS)
                order = IMPLEMENTATIONS[shift:] + IMPLEMENTATIONS[:shift]
                for impl in order:
                    run, rows = run_child(impl, table, work)
                    if impl == "scandir":
                        check_names(run, manifest)
                    else:
                        check_rows(impl, rows, manifest, reference)
                    runs[impl].append(run)
                    print(
                        f"  rep {rep + 1}/{args.repeat} {impl:<8} {run.seconds:8.3f}s "
                        f"peak RSS {run.peak_rss_kib / 1024:7.1f} MB",
                        file=sys.stderr,
                    )
            if args.profile:
                args.results.parent.mkdir(parents=True, exist_ok=True)
                prof = args.results.with_suffix(".prof")
                run_child("ours", table, work, prof)
                profile_text = profile_report(prof)
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)

    summary = {impl: summarize(runs[impl]) for impl in IMPLEMENTATIONS}
    ratio = ratios(summary)
    print(
        f"\npreset {args.preset}: {manifest['expected_latest_slices']} slices, "
        f"{manifest['base_files']} base files, {manifest['partitions']} partitions, "
        f"{manifest['completed_commits']} commits; {args.repeat} runs each\n"
    )
    print_table(summary, ratio)
    load_after = os.getloadavg()[0]
    print(f"load average (1 min) before / after the runs: {load_before:.1f} / {load_after:.1f}")
    if profile_text:
        print("\ncProfile of ours (one run):\n" + profile_text)

    table_info = {k: v for k, v in manifest.items() if k != "ignored_base_files"}
    result = {
        "benchmark": "table_core.latest_snapshot_listing",
        "preset": args.preset,
        "repeat": args.repeat,
        "table": table_info | {"reused": reused},
        "results": summary,
        "ratio_ours_over_hudi_rs": ratio["time_ours_over_hudi_rs"],
        "ratios": ratio,
        "target_ratio": TARGET_RATIO,
        "target_seconds": TARGET_SECONDS,
        "meets_target": ratio["time_ours_over_hudi_rs"] <= TARGET_RATIO
        and summary["ours"]["median_s"] < TARGET_SECONDS,
        "environment": environment(),
        "wall_seconds": time.perf_counter() - started,
        "load_average_before_after": [load_before, load_after],
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nresults written to {args.results}")
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except BenchmarkError as error:
        print(f"BENCHMARK FAILED: {error}", file=sys.stderr)
        raise SystemExit(1) from None
