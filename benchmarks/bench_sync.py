"""Sync benchmarks: a manifest of a million files, and one sync after a new commit.

``python -m benchmarks.bench_sync [--preset small|full] [--keep DIR | --temp]
[--manifest-repeat N] [--sync-repeat N] [--only manifest|sync|sync-duckdb|sync-bigquery]
[--profile]``

Tables come from ``benchmarks.gen_table`` and are cached in ``DIR`` (default
``benchmarks/results/tables``; ``--temp`` generates into a temporary directory and
deletes it). Every measurement runs on a working copy made of hard links to the cached
table (new files, manifests and commits go to the copy only; the copy is deleted at
the end), each measured step in a fresh interpreter (``benchmarks._sync_child``, which
reports its own ``VmHWM`` as peak RSS) and timed there, without interpreter start or
imports. Every published manifest is checked against the generator's expected snapshot
plus the commits appended since, else the benchmark fails.

1. Manifest of ``manifest_table`` (full preset: 1,000,000 file groups in 1,000
   partitions, 1,100 commits). Its base files are zero-byte (``--empty-base-files``):
   publishing a manifest lists the partition folders (names only, ``os.scandir``) and
   reads the timeline and commit metadata, it never opens a base file
   (``hudi_sync/table/files/listing/storage.py``, ``hudi_sync/table/files/fs_view.py``,
   ``hudi_sync/manifest/snapshot.py``). Each repetition
   deletes ``.hoodie/manifest``, times the full listing + publication (what
   ``hudi_sync.sync.job.publish_manifest(table)`` runs without a previous manifest), appends
   one UPSERT commit (``gen_table.append_upsert``) and times the incremental derivation
   + publication. References in the same run, same files, plain Python: ``os.scandir``
   of the partitions + writing the three manifest files; reading the previous URI list
   + the new commit's JSON + writing the three files. Target: <= 5 s; when missed (or
   with ``--profile``) one more such publication runs under cProfile.
2. Sync after one new commit, ``large_table`` (full: the table-core table, 100,000 file
   groups, 1,000 partitions, 10,000 commits) against ``small_table`` (1,000 file
   groups, same generator). Per table: a first full ``sync_table`` to a DuckDB file
   (reported, not the target), then each repetition appends one UPSERT commit and times
   ``sync_table(path, [DuckDBTarget(db, "t")])`` (it derives the manifest
   incrementally). The tables alternate order between repetitions. Target: median
   large / median small <= 1.5. Reference in the same run, per table: the floor of any
   publication that writes full manifests (the RFC's file list and BigQuery's URI list),
   i.e. the plain-Python ``ref-incremental`` step on the same commit. When missed (or
   with ``--profile``) one more large sync runs under cProfile, and the DuckDB
   statements of a forced sync are timed one by one in a rolled-back transaction, on
   both tables.
   The same runs on a second working copy of each table synced with delta manifests
   (``--delta-commits``, default 10: every timed sync is a delta; a compaction is a
   full-mode publication), target again large / small <= 1.5. A second reference, the
   physical floor of a full-manifest publication: pyarrow's CSV reader and writer
   reading and writing the previous URI and name lists, no logic
   (``ref-physical``), and the same paying a publication's durability: as many files
   written (the two lists, a snapshot meta, the pointer), each fsynced before its
   rename (``ref-physical-durable``); both reported against the large full-mode
   publish time.
   All of it runs again on the archived variants of both tables
   (``benchmarks.gen_archived``: failed writes rolled back, cleaned, archived to
   ``hoodie.keep.min.commits`` 20, so 70 timeline files instead of 30,003), full and
   delta modes, each with its own large / small ratio (the floors, which never read the
   timeline, on the unarchived pair only). An archived table's first sync publishes its
   latest write, before the services that followed it, so the sync after the next
   commit re-bases (a full listing, ``manifest.incremental.why_not_incremental``): that one-off
   sync is reported before the timed, incremental ones.
3. The same sync after one commit into the BigQuery emulator (``--only sync-bigquery``;
   ``--only sync`` runs 2 and 3, ``sync-duckdb`` only 2), on fresh working copies of
   the two tables, full and delta manifests: the publication plus the target's API
   calls to local-bigquery (the local table described as ``gs://bench/...``; the
   emulator's external tables read no file), target large / small <= 1.5 again.

Results: tables on stdout and ``benchmarks/results/sync.json``; profiles in
``sync.prof`` (large sync), ``sync_manifest_full.prof`` and
``sync_manifest_incremental.prof``. A run killed midway leaves its ``work-*`` copy in
the cache directory; delete it by hand.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.bench_table_core import environment
from benchmarks.gen_archived import (
    archived_name,
    generate_archived,
    load_archived,
)
from benchmarks.gen_table import (
    PRESETS,
    AppendedCommit,
    EmptyFiles,
    TableSpec,
    append_upsert,
    generate,
    load_manifest,
    snapshot_digest,
)

PROJECT_ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = Path(__file__).resolve().parent / "results"
MANIFEST_TARGET_S = 5.0
SYNC_TARGET_RATIO = 1.5
CHILD_TIMEOUT_S = 1800
MANIFEST_FOLDER = (".hoodie", "manifest")

Files = dict[tuple[str, str], str]  # (partition, file id) -> base file name


@dataclass(frozen=True)
class SyncPreset:
    """The tables and repetitions of one ``--preset``."""

    manifest_table: TableSpec
    large_table: TableSpec
    small_table: TableSpec
    manifest_repeat: int
    sync_repeat: int
    updates: int = 5  # file groups rewritten by each appended commit
    # Delta-mode syncs compact every this many commits; above the timed syncs per table
    # so every timed delta sync is a delta (a compaction is a full-mode publication).
    delta_commits: int = 10


BENCH_PRESETS: dict[str, SyncPreset] = {
    "small": SyncPreset(
        manifest_table=TableSpec(
            commits=60,
            partitions=20,
            file_groups=20_000,
            insert_commits=20,
            name="bench_cow_20k_empty",
            empty_base_files=True,
        ),
        large_table=PRESETS["small"],  # 2,000 file groups, 20 partitions, 200 commits
        small_table=TableSpec(
            commits=20, partitions=2, file_groups=100, insert_commits=2, name="bench_cow_100"
        ),
        manifest_repeat=3,
        sync_repeat=3,
    ),
    "full": SyncPreset(
        manifest_table=TableSpec(
            commits=1_100,
            partitions=1_000,
            file_groups=1_000_000,
            insert_commits=1_000,
            name="bench_cow_1m_empty",
            empty_base_files=True,
        ),
        large_table=PRESETS["full"],  # 100,000 file groups, 1,000 partitions, 10,000 commits
        small_table=TableSpec(
            commits=100, partitions=10, file_groups=1_000, insert_commits=10, name="bench_cow_1k"
        ),
        manifest_repeat=3,
        sync_repeat=5,
    ),
}


class BenchmarkError(RuntimeError):
    """A step failed or published a wrong manifest."""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- child processes ----------------------------------------------------------------------
def run_child(mode: str, *args: Any, profile_out: Path | None = None) -> dict[str, Any]:
    """Run one measured step in a fresh interpreter and return its report."""
    command = [sys.executable, "-m", "benchmarks._sync_child", mode, *map(str, args)]
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


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Median / min / max of the runs, medians of their numeric breakdown, peak RSS."""
    seconds = [r["seconds"] for r in runs]
    details = {
        key: statistics.median(float(r["details"][key]) for r in runs)
        for key, value in runs[0]["details"].items()
        if key.endswith("_s") and isinstance(value, int | float)
    }
    return {
        "median_s": statistics.median(seconds),
        "min_s": min(seconds),
        "max_s": max(seconds),
        "median_cpu_s": statistics.median(r["cpu_seconds"] for r in runs),
        "peak_rss_mb": max(r["peak_rss_kib"] for r in runs) / 1024,
        "rss_after_imports_mb": statistics.median(r["rss_after_imports_kib"] for r in runs) / 1024,
        "median_breakdown_s": details,
        "runs": runs,
    }


# -- tables -------------------------------------------------------------------------------
def clone_table(source: Path, target: Path) -> int:
    """Copy a table as hard links (its files are never modified in place: hudi_sync and
    ``append_upsert`` write new files or rename over old ones). Zero-byte files that
    cannot take one more link get a fresh empty template instead."""
    empty = EmptyFiles(target.parent / f"{target.name}.empty")
    count = 0
    for directory, dirnames, filenames in os.walk(source):
        relative = os.path.relpath(directory, source)
        if relative == os.path.join(*MANIFEST_FOLDER):
            dirnames.clear()
            continue
        destination = target / relative if relative != "." else target
        destination.mkdir(parents=True, exist_ok=True)
        for name in filenames:
            src, dst = os.path.join(directory, name), destination / name
            try:
                os.link(src, dst)
            except OSError:
                if os.path.getsize(src) == 0:
                    empty.create(dst)
                else:
                    shutil.copy2(src, dst)
            count += 1
    return count


def read_published(table: Path, uri: str | None = None) -> tuple[str, Files]:
    """The instant and files of the table's last published manifest, with its three
    files checked against each other (``uri``: the table's URI in the manifest, when it
    was opened as another URI than its local path)."""
    folder = table.joinpath(*MANIFEST_FOLDER)
    instant = json.loads((folder / "latest.json").read_text())["instant"]
    snapshot = folder / "snapshots" / instant
    prefix = (uri or str(table)).rstrip("/") + "/"
    files: Files = {}
    lines = (snapshot / "uris.csv").read_text().splitlines()
    for line in lines:
        if not line.startswith(prefix):
            raise BenchmarkError(f"manifest URI {line!r} is not under {prefix}")
        partition, _, name = line[len(prefix) :].rpartition("/")
        files[(partition, name.split("_", 1)[0])] = name
    names = (snapshot / "files.csv").read_text()
    problems = []
    if len(files) != len(lines):
        problems.append(f"{len(lines) - len(files)} duplicate file groups in uris.csv")
    if names.splitlines() != sorted(files.values()):
        problems.append("files.csv does not list the names of uris.csv, sorted")
    if (folder / "latest_snapshot_files.csv").read_text() != names:
        problems.append("latest_snapshot_files.csv differs from the snapshot's files.csv")
    if problems:
        raise BenchmarkError(f"{table}: manifest {instant}: " + "; ".join(problems))
    return instant, files


def read_published_delta(table: Path) -> tuple[str, Files]:
    """The instant and files of the table's last published delta manifest: its base
    snapshot's URI list with the delta's changes applied."""
    folder = table.joinpath(*MANIFEST_FOLDER)
    pointer = json.loads((folder / "delta.json").read_text())
    prefix = str(table).rstrip("/") + "/"
    files: Files = {}
    for line in (folder / "snapshots" / pointer["base"] / "uris.csv").read_text().splitlines():
        partition, _, name = line[len(prefix) :].rpartition("/")
        files[(partition, name.split("_", 1)[0])] = name
    changes = (folder / "deltas" / f"{pointer['base']}_{pointer['instant']}.csv").read_text()
    for row in csv.reader(io.StringIO(changes)):
        partition, _, file_id = row[0].rpartition("/")
        if row[1]:
            files[(partition, file_id)] = row[1]
        else:
            files.pop((partition, file_id), None)
    if len(files) != pointer["files"]:
        raise BenchmarkError(
            f"{table}: delta.json counts {pointer['files']} files, not {len(files)}"
        )
    return str(pointer["instant"]), files


def check_published(
    table: Path,
    instant: str,
    expected: Files | None,
    manifest: dict[str, Any],
    delta: bool = False,
    uri: str | None = None,
) -> Files:
    """Fail unless the published manifest (``delta``: delta manifest) is ``expected``
    (or, when ``None``, the generator's expected snapshot) at ``instant``; returns the
    published files. ``uri``: the table's URI in a full manifest, when not its path."""
    published_instant, files = read_published_delta(table) if delta else read_published(table, uri)
    problems = []
    if published_instant != instant:
        problems.append(f"published instant {published_instant}, expected {instant}")
    if expected is None:
        lines = [f"{p}\t{f}\t{n}" for (p, f), n in files.items()]
        if len(files) != manifest["expected_latest_slices"]:
            problems.append(f"{len(files)} files, expected {manifest['expected_latest_slices']}")
        elif snapshot_digest(lines) != manifest["expected_slices_sha256"]:
            problems.append("file set differs from the generator's expected snapshot")
    elif files != expected:
        wrong = sorted(set(files.items()) ^ set(expected.items()))[:4]
        problems.append(f"{len(files)} files, expected {len(expected)}; first differences {wrong}")
    if problems:
        raise BenchmarkError(f"{table}: " + "; ".join(problems))
    return files


def apply_commit(expected: Files, appended: AppendedCommit) -> None:
    for partition, file_id, old, new in appended.changes:
        if expected.get((partition, file_id)) != old:
            raise BenchmarkError(f"appended commit rewrote {old}, not the latest version")
        expected[(partition, file_id)] = new


@dataclass
class WorkTable:
    """A working copy of a cached table and what its manifest must be."""

    label: str
    spec: TableSpec
    path: Path
    manifest: dict[str, Any]
    reused: bool
    archived: bool = False  # a copy of the archived variant (``benchmarks.gen_archived``)
    expected: Files | None = None
    appended: list[str] = field(default_factory=list)

    def append(self, updates: int) -> AppendedCommit:
        appended = append_upsert(self.path, updates)
        if self.expected is None:
            raise BenchmarkError(f"{self.label}: append before the first checked publication")
        apply_commit(self.expected, appended)
        self.appended.append(appended.instant)
        return appended

    def info(self) -> dict[str, Any]:
        generated = {k: v for k, v in self.manifest.items() if k != "ignored_base_files"}
        return generated | {"reused": self.reused, "appended_commits": len(self.appended)}


def cached_table(spec: TableSpec, cache: Path) -> tuple[Path, dict[str, Any], bool]:
    """The table in ``cache`` with this spec, generated there first if needed."""
    root = cache / spec.name
    manifest = load_manifest(cache, spec)
    if manifest is not None:
        return root, manifest, True
    if root.exists():
        raise BenchmarkError(
            f"{root} exists but is not a complete table of this spec (an interrupted "
            "generation?); remove it"
        )
    log(f"generating {spec.name} into {cache} ...")
    return root, generate(cache, spec), False


def cached_archived_table(spec: TableSpec, cache: Path) -> tuple[Path, dict[str, Any], bool]:
    """The archived variant of ``spec`` in ``cache`` (``benchmarks.gen_archived``),
    made there first if needed."""
    root = cache / archived_name(spec)
    manifest = load_archived(cache, spec)
    if manifest is not None:
        return root, manifest, True
    if root.exists():
        raise BenchmarkError(f"{root} exists but is not a complete archived table; remove it")
    log(f"archiving a copy of {spec.name} into {root} ...")
    return root, generate_archived(cache, spec), False


def open_work_table(
    label: str, spec: TableSpec, cache: Path, work: Path, archived: bool = False
) -> WorkTable:
    """A working copy of the cached table ``spec`` (``archived``: its archived variant)."""
    cached, manifest, reused = (cached_archived_table if archived else cached_table)(spec, cache)
    origin = "reused" if reused else f"generated in {manifest['generation_seconds']:.1f}s"
    started = time.perf_counter()
    path = (work / label / spec.name).resolve()
    linked = clone_table(cached, path)
    log(
        f"{label} table {cached.name}: {origin}; {manifest['expected_latest_slices']} slices, "
        f"{manifest['base_files']} base files, {manifest['partitions']} partitions, "
        f"{manifest['completed_commits']} commits; working copy of {linked} files in "
        f"{time.perf_counter() - started:.1f}s"
    )
    return WorkTable(label, spec, path, manifest, reused, archived)


# -- 1. manifest of a million files ---------------------------------------------------------
MANIFEST_STEPS = ("full", "ref-full", "incremental", "ref-incremental")


def check_publish_report(table: WorkTable, report: dict[str, Any], incremental: bool) -> None:
    details = report["details"]
    if details["incremental"] != incremental:
        how = "incremental" if incremental else "full"
        raise BenchmarkError(
            f"{table.label}: expected a {how} publication, got {details} "
            f"({details['full_listing_reason']})"
        )
    instant = table.appended[-1] if table.appended else table.manifest["latest_completed_instant"]
    table.expected = check_published(table.path, instant, table.expected, table.manifest)


def profile_publish(table: WorkTable, incremental: bool, updates: int) -> dict[str, Any]:
    """One more full (or, after a new commit, incremental) publication under cProfile."""
    how = "incremental" if incremental else "full"
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    prof = RESULTS_DIR / f"sync_manifest_{how}.prof"
    if incremental:
        table.append(updates)
    else:
        shutil.rmtree(table.path.joinpath(*MANIFEST_FOLDER), ignore_errors=True)
    report = run_child("publish", table.path, profile_out=prof)
    check_publish_report(table, report, incremental=incremental)
    log(f"  profiled {how} publication: {report['seconds']:.3f}s (under cProfile)")
    return {"profiled_run": report, "profile_file": str(prof), "hotspots": hotspots(prof)}


def bench_manifest(
    table: WorkTable, repeat: int, updates: int, scratch: Path, profile: bool
) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {step: [] for step in MANIFEST_STEPS}
    manifest_dir = table.path.joinpath(*MANIFEST_FOLDER)
    for rep in range(repeat):
        shutil.rmtree(manifest_dir, ignore_errors=True)
        ours_first = rep % 2 == 0
        for ours in (ours_first, not ours_first):
            if ours:
                report = run_child("publish", table.path)
                check_publish_report(table, report, incremental=False)
                runs["full"].append(report)
            else:
                report = run_child("ref-full", table.path, scratch / "ref-full")
                if report["details"]["files"] < len(table.expected or {}):
                    raise BenchmarkError("the reference listed fewer files than the snapshot")
                runs["ref-full"].append(report)
        previous = json.loads((manifest_dir / "latest.json").read_text())["instant"]
        previous_uris = manifest_dir / "snapshots" / previous / "uris.csv"
        appended = table.append(updates)
        for ours in (ours_first, not ours_first):
            if ours:
                report = run_child("publish", table.path)
                check_publish_report(table, report, incremental=True)
                runs["incremental"].append(report)
            else:
                report = run_child(
                    "ref-incremental",
                    table.path,
                    previous_uris,
                    appended.commit_file,
                    scratch / "ref-incremental",
                )
                if report["details"]["files"] != len(table.expected or {}):
                    raise BenchmarkError("reference derived a different number of files")
                runs["ref-incremental"].append(report)
        log(
            f"  manifest rep {rep + 1}/{repeat}: "
            + ", ".join(f"{step} {runs[step][-1]['seconds']:.3f}s" for step in MANIFEST_STEPS)
            + f"; peak RSS ours {runs['full'][-1]['peak_rss_kib'] / 1024:.0f} MB"
        )
    summary = {step: summarize(runs[step]) for step in MANIFEST_STEPS}
    full, incremental = summary["full"]["median_s"], summary["incremental"]["median_s"]
    diagnosis = {}
    if profile or full > MANIFEST_TARGET_S:
        diagnosis["full"] = profile_publish(table, False, updates)
    if profile or incremental > MANIFEST_TARGET_S:
        diagnosis["incremental"] = profile_publish(table, True, updates)
    return {
        "diagnosis": diagnosis,
        "files": len(table.expected or {}),
        "steps": summary,
        "ratio_full_over_reference": full / summary["ref-full"]["median_s"],
        "ratio_incremental_over_reference": incremental / summary["ref-incremental"]["median_s"],
        "target_s": MANIFEST_TARGET_S,
        "meets_target_full": full <= MANIFEST_TARGET_S,
        "meets_target_incremental": incremental <= MANIFEST_TARGET_S,
    }


# -- 2. sync after one new commit ----------------------------------------------------------
def is_delta(table: WorkTable) -> bool:
    """Working copies labelled ``*-delta`` are synced with delta manifests."""
    return table.label.endswith("-delta")


def variant(table: WorkTable) -> str:
    """What the large and small tables of a ratio share: archived or not, delta or not."""
    return table.label.split("-", 1)[1] if "-" in table.label else "full"


def check_sync_report(
    table: WorkTable, report: dict[str, Any], first: bool, rebased: bool = False
) -> None:
    """Fail unless the sync created (``first``) or updated the DuckDB table, derived
    its manifest incrementally unless ``first`` or ``rebased``, and published the
    expected files."""
    details = report["details"]
    action = "create" if first else "update"
    if (
        details["errors"]
        or details["actions"] != [action]
        or details["incremental"] == (first or rebased)
    ):
        raise BenchmarkError(f"{table.label}: unexpected sync report {details}")
    instant = table.appended[-1] if table.appended else table.manifest["latest_completed_instant"]
    table.expected = check_published(
        table.path, instant, table.expected, table.manifest, delta=is_delta(table)
    )


def sync_child(table: WorkTable, database: Path, delta_commits: int, **kwargs: Any) -> Any:
    return run_child(
        "sync", table.path, database, delta_commits if is_delta(table) else 0, **kwargs
    )


def bench_sync_after_commit(
    tables: list[WorkTable], repeat: int, updates: int, work: Path, profile: bool, delta: int
) -> dict[str, Any]:
    """``tables``: large and small pairs (``large``, ``small``, ``large-archived``, ...),
    the first pair unarchived full-mode; the floors are measured on that pair only (they
    read and write the manifest, not the timeline)."""
    databases = {t.label: work / f"{t.label}.duckdb" for t in tables}
    first: dict[str, dict[str, Any]] = {}
    for table in tables:
        report = sync_child(table, databases[table.label], delta)
        check_sync_report(table, report, first=True)
        first[table.label] = report
        log(f"  first sync {table.label}: {report['seconds']:.3f}s")
    # An archived table's first sync publishes its latest write, before the rollbacks,
    # clean and archival that followed it: the sync after the next commit re-bases.
    rebased: dict[str, dict[str, Any]] = {}
    for table in (t for t in tables if t.archived):
        table.append(updates)
        report = sync_child(table, databases[table.label], delta)
        check_sync_report(table, report, first=False, rebased=True)
        rebased[table.label] = report
        log(f"  re-basing sync after the services {table.label}: {report['seconds']:.3f}s")
    runs: dict[str, list[dict[str, Any]]] = {t.label: [] for t in tables}
    full_tables = [t for t in tables if not is_delta(t) and not t.archived]
    floors: dict[str, list[dict[str, Any]]] = {t.label: [] for t in full_tables}
    physical: dict[str, list[dict[str, Any]]] = {t.label: [] for t in full_tables}
    durable: dict[str, list[dict[str, Any]]] = {t.label: [] for t in full_tables}
    for rep in range(repeat):
        for table in tables if rep % 2 == 0 else tables[::-1]:
            manifest_dir = table.path.joinpath(*MANIFEST_FOLDER)
            previous = json.loads((manifest_dir / "latest.json").read_text())["instant"]
            previous_uris = manifest_dir / "snapshots" / previous / "uris.csv"
            previous_files = manifest_dir / "snapshots" / previous / "files.csv"
            appended = table.append(updates)
            if table.label in floors:
                floor = run_child(
                    "ref-incremental",
                    table.path,
                    previous_uris,
                    appended.commit_file,
                    work / f"floor-{table.label}",
                )
                floors[table.label].append(floor)
                physical[table.label].append(
                    run_child(
                        "ref-physical",
                        previous_uris,
                        previous_files,
                        work / f"physical-{table.label}",
                    )
                )
                durable[table.label].append(
                    run_child(
                        "ref-physical-durable",
                        previous_uris,
                        previous_files,
                        work / f"durable-{table.label}",
                    )
                )
            report = sync_child(table, databases[table.label], delta)
            check_sync_report(table, report, first=False)
            runs[table.label].append(report)
        log(
            f"  sync rep {rep + 1}/{repeat}: "
            + ", ".join(f"{label} {r[-1]['seconds']:.3f}s" for label, r in runs.items())
            + "; full-manifest floor "
            + ", ".join(f"{label} {r[-1]['seconds']:.3f}s" for label, r in floors.items())
            + "; physical floor "
            + ", ".join(f"{label} {r[-1]['seconds']:.3f}s" for label, r in physical.items())
            + "; durable physical floor "
            + ", ".join(f"{label} {r[-1]['seconds']:.3f}s" for label, r in durable.items())
        )
    summary = {label: summarize(r) for label, r in runs.items()}
    floor_summary = {label: summarize(r) for label, r in floors.items()}
    physical_summary = {label: summarize(r) for label, r in physical.items()}
    durable_summary = {label: summarize(r) for label, r in durable.items()}
    large, small = tables[0].label, tables[1].label
    ratios = {
        variant(t): summary[t.label]["median_s"] / summary[f"small{t.label[5:]}"]["median_s"]
        for t in tables
        if t.label.startswith("large")
    }
    ratio, delta_ratio = ratios["full"], ratios["delta"]
    publish_large = summary[large]["median_breakdown_s"]["publish_s"]
    result: dict[str, Any] = {
        "first_sync": first,
        "sync_after_services": rebased,
        "incremental_sync": summary,
        "full_manifest_floor": floor_summary,
        "physical_floor": physical_summary,
        "floor_ratio_large_over_small": (
            floor_summary[large]["median_s"] / floor_summary[small]["median_s"]
        ),
        "durable_physical_floor": durable_summary,
        "full_publish_over_physical_floor": publish_large / physical_summary[large]["median_s"],
        "full_publish_over_durable_physical_floor": (
            publish_large / durable_summary[large]["median_s"]
        ),
        "ratio_large_over_small": ratio,
        "delta_commits": delta,
        "delta_ratio_large_over_small": delta_ratio,
        "ratios_large_over_small": ratios,
        "target_ratio": SYNC_TARGET_RATIO,
        "meets_target": ratio <= SYNC_TARGET_RATIO,
        "delta_meets_target": delta_ratio <= SYNC_TARGET_RATIO,
    }
    if profile or min(ratio, delta_ratio) > SYNC_TARGET_RATIO:
        result["diagnosis"] = diagnose(tables, databases, updates, delta)
    return result


def bench_bigquery_sync_after_commit(
    tables: list[WorkTable], repeat: int, updates: int, work: Path, delta: int
) -> dict[str, Any]:
    """The sync after one commit into the BigQuery emulator (local-bigquery, fake GCS
    for its root), ``tables`` as for ``bench_sync_after_commit``: what is timed is the
    publication plus the target's API calls to a local server (its external tables
    read no file, so no query cost is in it)."""
    from tests.bigquery_emulator import running_bigquery_emulator
    from tests.objectstores import running_gcs_server

    runs: dict[str, list[dict[str, Any]]] = {t.label: [] for t in tables}
    first: dict[str, dict[str, Any]] = {}
    (work / "gcs").mkdir(exist_ok=True)
    (work / "bigquery").mkdir(exist_ok=True)
    with (
        running_gcs_server(work / "gcs") as gcs,
        running_bigquery_emulator(gcs, work / "bigquery") as emulator,
    ):
        datasets = {t.label: f"bench_{t.label.replace('-', '_')}" for t in tables}

        def child(table: WorkTable) -> dict[str, Any]:
            return run_child(
                "sync-bigquery",
                table.path,
                emulator.endpoint_url,
                datasets[table.label],
                delta if is_delta(table) else 0,
            )

        for table in tables:
            report = child(table)
            check_sync_report(table, report, first=True)
            first[table.label] = report
            log(f"  first BigQuery sync {table.label}: {report['seconds']:.3f}s")
        for rep in range(repeat):
            for table in tables if rep % 2 == 0 else tables[::-1]:
                table.append(updates)
                report = child(table)
                check_sync_report(table, report, first=False)
                runs[table.label].append(report)
            log(
                f"  BigQuery sync rep {rep + 1}/{repeat}: "
                + ", ".join(f"{label} {r[-1]['seconds']:.3f}s" for label, r in runs.items())
            )
    summary = {label: summarize(r) for label, r in runs.items()}
    large, small = tables[0].label, tables[1].label
    ratio = summary[large]["median_s"] / summary[small]["median_s"]
    delta_ratio = summary[f"{large}-delta"]["median_s"] / summary[f"{small}-delta"]["median_s"]
    return {
        "first_sync": first,
        "incremental_sync": summary,
        "ratio_large_over_small": ratio,
        "delta_commits": delta,
        "delta_ratio_large_over_small": delta_ratio,
        "target_ratio": SYNC_TARGET_RATIO,
        "meets_target": ratio <= SYNC_TARGET_RATIO,
        "delta_meets_target": delta_ratio <= SYNC_TARGET_RATIO,
    }


def print_bigquery_sync(result: dict[str, Any], repeat: int) -> None:
    print(f"\nBigQuery-emulator sync after one commit (median of {repeat})")
    print(_header())
    for label, s in result["incremental_sync"].items():
        print(_row(label, s, _breakdown(s)))
    print(
        f"large/small: full manifests {result['ratio_large_over_small']:.2f}x, "
        f"delta manifests (every {result['delta_commits']}) "
        f"{result['delta_ratio_large_over_small']:.2f}x "
        f"(target <= {result['target_ratio']}x)"
    )


def diagnose(
    tables: list[WorkTable], databases: dict[str, Path], updates: int, delta: int
) -> dict[str, Any]:
    """One more large (delta-mode) sync under cProfile, and the full-mode tables' DuckDB
    statements timed."""
    large = next((t for t in tables if is_delta(t)), tables[0])
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    prof = RESULTS_DIR / "sync.prof"
    large.append(updates)
    report = sync_child(large, databases[large.label], delta, profile_out=prof)
    check_sync_report(large, report, first=False)
    log(f"  profiled sync {large.label}: {report['seconds']:.3f}s (under cProfile)")
    statements = {}
    for table in tables[:2]:
        timed = run_child("statements", table.path, databases[table.label])
        statements[table.label] = timed["details"]["statements"]
    return {
        "profiled_run": report,
        "profile_file": str(prof),
        "hotspots": hotspots(prof),
        "duckdb_statements": statements,
    }


def hotspots(path: Path, top: int = 15) -> dict[str, Any]:
    """hudi_sync functions by cumulative time, and all functions by own time."""
    stats = pstats.Stats(str(path))
    raw: dict[Any, Any] = getattr(stats, "stats", {})
    rows = []
    for (file, line, func), (_cc, calls, own, cumulative, _callers) in raw.items():
        marker = f"{os.sep}hudi_sync{os.sep}"
        where = f"hudi_sync/{file.rsplit(marker, 1)[1]}" if marker in file else Path(file).name
        rows.append(
            {
                "function": f"{where}:{line}({func})",
                "in_hudi_sync": marker in file,
                "calls": calls,
                "own_s": own,
                "cumulative_s": cumulative,
            }
        )
    total = max([r["cumulative_s"] for r in rows] + [1e-9])
    ours = [r for r in rows if r["in_hudi_sync"]]
    return {
        "profiled_total_s": total,
        "hudi_sync_by_cumulative": sorted(ours, key=lambda r: -r["cumulative_s"])[:top],
        "all_by_own_time": sorted(rows, key=lambda r: -r["own_s"])[:top],
    }


# -- report -----------------------------------------------------------------------------------
def _row(label: str, s: dict[str, Any], extra: str = "") -> str:
    return (
        f"{label:<38} {s['median_s']:9.3f} {s['min_s']:8.3f} {s['max_s']:8.3f} "
        f"{s['median_cpu_s']:7.2f} {s['peak_rss_mb']:12.1f}  {extra}"
    )


def _breakdown(s: dict[str, Any]) -> str:
    return " ".join(f"{k[:-2]} {v:.3f}" for k, v in s["median_breakdown_s"].items())


def _header() -> str:
    header = (
        f"{'step':<38} {'median s':>9} {'min s':>8} {'max s':>8} {'cpu s':>7} "
        f"{'peak RSS MB':>12}  breakdown (medians, s)"
    )
    return header + "\n" + "-" * (len(header) + 10)


def print_manifest(result: dict[str, Any], table: WorkTable, repeat: int) -> None:
    steps = result["steps"]
    print(
        f"\n1. manifest of {result['files']:,} files ({table.spec.name}: "
        f"{table.manifest['partitions']} partitions, {table.manifest['base_files']:,} "
        f"zero-byte base files, {table.manifest['completed_commits']} commits); "
        f"{repeat} runs each\n"
    )
    print(_header())
    labels = {
        "full": "ours: full listing + publish",
        "ref-full": "reference: scandir + write 3 files",
        "incremental": "ours: incremental derive + publish",
        "ref-incremental": "reference: read previous + write",
    }
    for step, label in labels.items():
        print(_row(label, steps[step], _breakdown(steps[step])))
    print(
        f"\nratio ours/reference (medians): full {result['ratio_full_over_reference']:.2f}x, "
        f"incremental {result['ratio_incremental_over_reference']:.2f}x"
    )
    for step in ("full", "incremental"):
        verdict = "meets" if result[f"meets_target_{step}"] else "MISSES"
        print(
            f"{step}: {steps[step]['median_s']:.3f}s -> {verdict} target <= "
            f"{result['target_s']:.0f}s"
        )
    for step, diagnosis in result["diagnosis"].items():
        print_hotspots(f"one {step} publication", diagnosis)


def print_hotspots(what: str, diagnosis: dict[str, Any]) -> None:
    spots = diagnosis["hotspots"]
    print(
        f"\ncProfile of {what} ({diagnosis['profiled_run']['seconds']:.3f}s wall, "
        f"profiled {spots['profiled_total_s']:.3f}s): hudi_sync by cumulative time"
    )
    for r in spots["hudi_sync_by_cumulative"]:
        print(f"  {r['cumulative_s']:8.3f}s {r['calls']:8d}  {r['function']}")
    print("all functions by own time")
    for r in spots["all_by_own_time"][:10]:
        print(f"  {r['own_s']:8.3f}s {r['calls']:8d}  {r['function']}")


def print_sync(result: dict[str, Any], tables: list[WorkTable], repeat: int) -> None:
    print(f"\n2. sync to DuckDB after one new commit; {repeat} runs each\n")
    header = (
        f"{'table':<20} {'slices':>8} {'base files':>10} {'commits':>7} {'timeline':>8} "
        f"{'first sync s':>12} {'median s':>9} {'min s':>7} {'max s':>7} {'publish s':>9} "
        f"{'duckdb s':>8} {'peak RSS MB':>11}"
    )
    print(header)
    print("-" * len(header))
    for table in tables:
        s = result["incremental_sync"][table.label]
        b = s["median_breakdown_s"]
        m = table.manifest
        print(
            f"{table.label:<20} {m['expected_latest_slices']:8d} {m['base_files']:10d} "
            f"{m['completed_commits']:7d} {m['timeline_files']:8d} "
            f"{result['first_sync'][table.label]['seconds']:12.3f} "
            f"{s['median_s']:9.3f} {s['min_s']:7.3f} {s['max_s']:7.3f} {b['publish_s']:9.3f} "
            f"{b['target_s']:8.3f} {s['peak_rss_mb']:11.1f}"
        )
    print("(timeline: files on the active timeline, before the appended commits)")
    for name, ratio in result["ratios_large_over_small"].items():
        archived = "archived timeline" if name.startswith("archived") else "unarchived timeline"
        mode = (
            f"delta manifests (every {result['delta_commits']})"
            if "delta" in name
            else "full manifests"
        )
        verdict = "meets" if ratio <= result["target_ratio"] else "MISSES"
        print(
            f"ratio large/small, {archived}, {mode} (medians): {ratio:.2f}x -> "
            f"{verdict} target <= {result['target_ratio']}x"
        )
    print(
        "one-off sync after the rollbacks, clean and archival (re-bases: a full listing; "
        "one run each): "
        + ", ".join(
            f"{label} {r['seconds']:.3f}s (publish {r['details']['publish_s']:.3f}s)"
            for label, r in result["sync_after_services"].items()
        )
    )
    for floor, what, ratio in (
        (
            "physical_floor",
            "physical floor (pyarrow CSV read + write of the previous URI and name lists)",
            "full_publish_over_physical_floor",
        ),
        (
            "durable_physical_floor",
            "durable physical floor (the same + snapshot meta + pointer, each file fsynced "
            "before its rename, as a publication does)",
            "full_publish_over_durable_physical_floor",
        ),
    ):
        print(
            f"{what}: "
            + ", ".join(f"{label} {s['median_s']:.3f}s" for label, s in result[floor].items())
            + f"; large full-manifest publish / {floor.replace('_', ' ')}: "
            f"{result[ratio]:.2f}x"
        )
    floors = result["full_manifest_floor"]
    print(
        "full-manifest floor (plain Python: read the previous URI list, apply the commit, "
        "write the three files): "
        + ", ".join(f"{label} {f['median_s']:.3f}s" for label, f in floors.items())
        + f" -> ratio {result['floor_ratio_large_over_small']:.2f}x"
    )
    diagnosis = result.get("diagnosis")
    if not diagnosis:
        return
    print_hotspots("one large sync", diagnosis)
    for label, statements in diagnosis["duckdb_statements"].items():
        print(f"DuckDB statements of a forced sync, {label} table (rolled back):")
        for seconds, statement in statements:
            print(f"  {seconds:8.3f}s  {' '.join(statement.split())[:110]}")


def write_results(
    path: Path, result: dict[str, Any], started: float, version_at_start: Any
) -> None:
    """Finish a benchmark's ``result``: the machine, the code measured at its start and
    end, its wall time, a timestamp and the load average; written to ``path`` as JSON,
    and the code measured printed (said CHANGED when it changed during the run)."""
    result |= {
        "environment": environment(),
        "code_at_start": version_at_start,
        "code_at_end": code_version(),
        "wall_seconds": time.perf_counter() - started,
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average_at_end": os.getloadavg(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, default=str) + "\n")
    versions = {json.dumps(result["code_at_start"]), json.dumps(result["code_at_end"])}
    changed = " (CHANGED during the run)" if len(versions) > 1 else ""
    print(f"\ncode measured: {result['code_at_end']}{changed}")
    print(f"wall time {result['wall_seconds']:.0f}s; results written to {path}")


def code_version() -> dict[str, Any]:
    """The commit measured, and whether ``hudi_sync/`` differed from it at the start."""

    def git(*args: str) -> str:
        try:
            proc = subprocess.run(
                ["git", *args], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=30
            )
        except OSError:
            return ""
        return proc.stdout.strip() if proc.returncode == 0 else ""

    return {
        "git_commit": git("rev-parse", "HEAD") or None,
        "hudi_sync_modified": bool(git("status", "--porcelain", "--", "hudi_sync")),
    }


# -- main -------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(BENCH_PRESETS), default="small")
    parser.add_argument("--keep", type=Path, default=RESULTS_DIR / "tables", help="table cache")
    parser.add_argument("--temp", action="store_true", help="generate into a temp dir instead")
    parser.add_argument("--manifest-repeat", type=int, help="manifest repetitions")
    parser.add_argument("--sync-repeat", type=int, help="timed syncs per table")
    parser.add_argument(
        "--only",
        choices=("manifest", "sync", "sync-duckdb", "sync-bigquery"),
        help="run one benchmark (sync: the DuckDB and the BigQuery-emulator syncs)",
    )
    parser.add_argument("--profile", action="store_true", help="always profile the large sync")
    parser.add_argument("--delta-commits", type=int, help="delta-mode compaction interval")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "sync.json")
    args = parser.parse_args(argv)
    preset = BENCH_PRESETS[args.preset]
    manifest_repeat = args.manifest_repeat or preset.manifest_repeat
    sync_repeat = args.sync_repeat or preset.sync_repeat
    if manifest_repeat < 1 or sync_repeat < 1:
        parser.error("repetitions must be >= 1")

    started = time.perf_counter()
    version_at_start = code_version()
    temp = Path(tempfile.mkdtemp(prefix="hudi-bench-sync-")) if args.temp else None
    cache = (temp or args.keep).resolve()
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="work-", dir=cache))  # same file system: hard links
    result: dict[str, Any] = {
        "benchmark": "sync",
        "preset": args.preset,
        "preset_config": asdict(preset),
        "manifest_repeat": manifest_repeat,
        "sync_repeat": sync_repeat,
    }
    try:
        if args.only in (None, "manifest"):
            table = open_work_table("manifest", preset.manifest_table, cache, work)
            log(f"1. manifest of {table.manifest['expected_latest_slices']:,} files ...")
            manifest = bench_manifest(
                table, manifest_repeat, preset.updates, work / "scratch", args.profile
            )
            result["manifest"] = manifest | {"table": table.info()}
            shutil.rmtree(table.path)
            print_manifest(manifest, table, manifest_repeat)
        if args.only in (None, "sync", "sync-duckdb"):
            tables = [
                open_work_table(size + suffix, spec, cache, work, archived)
                for archived, suffix in ((False, ""), (True, "-archived"))
                for size, spec in (("large", preset.large_table), ("small", preset.small_table))
            ]
            log("2. sync after one new commit ...")
            tables += [
                open_work_table(f"{t.label}-delta", t.spec, cache, work, t.archived)
                for t in list(tables)
            ]
            delta = args.delta_commits or preset.delta_commits
            sync = bench_sync_after_commit(
                tables, sync_repeat, preset.updates, work, args.profile, delta
            )
            result["sync"] = sync | {"tables": {t.label: t.info() for t in tables}}
            print_sync(sync, tables, sync_repeat)
        if args.only in (None, "sync", "sync-bigquery"):
            log("3. BigQuery-emulator sync after one new commit ...")
            tables = [
                open_work_table("bq-large", preset.large_table, cache, work),
                open_work_table("bq-small", preset.small_table, cache, work),
            ]
            tables += [
                open_work_table(f"{t.label}-delta", t.spec, cache, work) for t in list(tables)
            ]
            delta = args.delta_commits or preset.delta_commits
            bigquery = bench_bigquery_sync_after_commit(
                tables, sync_repeat, preset.updates, work, delta
            )
            result["bigquery_sync"] = bigquery | {"tables": {t.label: t.info() for t in tables}}
            print_bigquery_sync(bigquery, sync_repeat)
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
