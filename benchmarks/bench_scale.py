"""Scale: how the listing and the syncs grow with the table (issue 31, item 5).

``python -m benchmarks.bench_scale [--preset small|full] [--keep DIR] [--listing-repeat N]
[--sync-repeat N] [--bigquery-repeat N] [--only listing|sync|bigquery] [--profile]``

Two tables from ``benchmarks.gen_table``, the second ten times the first in every
dimension (full preset: ``full``, 100,000 file groups, 10,000 commits, 1,000 partitions,
against ``full10x``, 1,000,000 file groups, 100,000 commits, 10,000 partitions, so each
partition holds 100 file groups in both), both with zero-byte base files
(``--empty-base-files``: nothing here opens a base file) and both archived as Hudi's
default services would leave them (``benchmarks.gen_archived``: failed writes rolled
back, a clean, archival to ``hoodie.keep.min.commits``). Tables are cached in ``DIR``
(default ``benchmarks/results/tables``). In one run, each measured step in a fresh
interpreter, medians of several runs, the two tables alternating order:

1. **Listing**: ``HudiTable.open(p).file_slices()`` on each archived table
   (``benchmarks._child``, as ``bench_table_core``; one untimed warm-up each), time and
   peak RSS (``VmHWM``), each run's slices checked against the generator's expected
   snapshot. Target: the large table's time <= 10x the small one's, memory bounded
   (reported: how peak RSS and the listing's own RSS grow).
2. **Delta-manifest sync after one commit to DuckDB** (``bench_sync``'s machinery, on
   hard-linked working copies): a first sync, one re-basing sync after the archival's
   services, then each run appends one UPSERT (``gen_table.append_upsert``) and times
   ``sync_table(path, [DuckDBTarget])`` with ``hoodie.manifest.delta.commits``
   (``--delta-commits``, default 10, above the timed syncs: every timed one is a
   delta). Target: large / small <= 1.5.
3. **BigQuery manifest-file mode** (``use_bq_manifest_file``) against the emulator
   (local-bigquery, as ``bench_sync``): the mode needs the table at its ``gs://``
   location, so the working copy is opened as ``gs://bench/...`` through an fsspec
   ``DirFileSystem`` serving it from local disk (``benchmarks._sync_child
   sync-bigquery-manifest``: hudi_sync's object-store paths, no network). Manifest mode
   keeps full manifests, so each sync after one commit writes the whole URI list.
   Reported: the sync's time (publication and API calls), the manifest's weight
   (``uris.csv`` bytes and rows, ``files.csv`` bytes) and the external table
   definition's (its REST resource as the emulator returns it, bytes of JSON).

Memory: the DuckDB history view is bound from the table's schema, so creating it opens
no base file; the first sync's peak RSS is reported beside its time (target on the full
preset: the large table's under 2 GB, its time <= 10x the small table's). Before that
binding, DuckDB read every base file's footer and the large table's first sync peaked at
about 20 GB.

With ``--profile`` (or when a target is missed) one more large run of the step under
cProfile: ``scale_listing.prof``, ``scale_sync.prof``. Results: a table on stdout and
``benchmarks/results/scale.json``. A killed run leaves its ``work-*`` copy in the cache
directory; delete it by hand.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks import bench_table_core
from benchmarks.bench_sync import (
    BenchmarkError,
    WorkTable,
    cached_archived_table,
    check_published,
    check_sync_report,
    code_version,
    hotspots,
    log,
    open_work_table,
    run_child,
    summarize,
    sync_child,
    write_results,
)
from benchmarks.gen_table import (
    PRESETS,
    EmptyFiles,
    TableSpec,
    base_file_bytes,
    instant_time,
    load_manifest,
    partition_path,
)

RESULTS_DIR = Path(__file__).resolve().parent / "results"
LISTING_TARGET_RATIO = 10.0
SYNC_TARGET_RATIO = 1.5
GCS_BUCKET = "bench"


def _empty(spec: TableSpec, name: str) -> TableSpec:
    return dataclasses.replace(spec, name=name, empty_base_files=True)


@dataclass(frozen=True)
class ScalePreset:
    """The two tables (``large`` ten times ``small``) and the repetitions."""

    small: TableSpec
    large: TableSpec
    listing_repeat: int
    sync_repeat: int
    bigquery_repeat: int
    updates: int = 5  # file groups rewritten by each appended commit
    delta_commits: int = 10


SCALE_PRESETS: dict[str, ScalePreset] = {
    "small": ScalePreset(
        small=TableSpec(
            commits=200,
            partitions=20,
            file_groups=2_000,
            insert_commits=20,
            name="bench_scale_2k_empty",
            empty_base_files=True,
        ),
        large=TableSpec(
            commits=2_000,
            partitions=200,
            file_groups=20_000,
            insert_commits=200,
            name="bench_scale_20k_empty",
            empty_base_files=True,
        ),
        listing_repeat=3,
        sync_repeat=3,
        bigquery_repeat=2,
    ),
    "full": ScalePreset(
        small=_empty(PRESETS["full"], "bench_cow_empty"),
        large=_empty(PRESETS["full10x"], "bench_cow_10x_empty"),
        listing_repeat=5,
        sync_repeat=5,
        bigquery_repeat=3,
    ),
}
SIZES = ("small", "large")


def ensure_tables(preset: ScalePreset, cache: Path) -> dict[str, dict[str, Any]]:
    """Both archived tables (generated first when missing) and what they are."""
    tables = {}
    for size in SIZES:
        spec: TableSpec = getattr(preset, size)
        t0 = time.perf_counter()
        root, archived, reused = cached_archived_table(spec, cache)
        source = load_manifest(cache, spec) or {}
        archive_folder = root / ".hoodie" / "archived"
        tables[size] = {
            "name": root.name,
            "path": str(root),
            "spec": asdict(spec),
            "reused": reused,
            "seconds_this_run": time.perf_counter() - t0,
            "generation_s": source.get("generation_seconds"),
            "archival_s": archived["generation_seconds"],
            "services_s": archived["services_seconds"],
            "slices": archived["expected_latest_slices"],
            "partitions": archived["partitions"],
            "completed_commits": archived["completed_commits"],
            "source_base_files": source.get("base_files"),
            "source_timeline_files": source.get("timeline_files"),
            "base_files": archived["base_files"],
            "timeline_files": archived["timeline_files"],
            "archived_instants": archived["archived_instants"],
            "archive_bytes": sum(f.stat().st_size for f in archive_folder.iterdir()),
            "disk": archived["disk"],
            "manifest": archived,
        }
        log(
            f"{size} table {root.name}: {'reused' if reused else 'generated'}; "
            f"{archived['expected_latest_slices']:,} slices, {archived['base_files']:,} base "
            f"files, {archived['timeline_files']} timeline files, "
            f"{archived['archived_instants']:,} instants archived"
        )
    return tables


# -- 1. listing ---------------------------------------------------------------------------
def bench_listing(
    tables: dict[str, dict[str, Any]], repeat: int, work: Path, profile: bool
) -> dict[str, Any]:
    runs: dict[str, list[bench_table_core.Run]] = {size: [] for size in SIZES}

    def measure(size: str, profile_out: Path | None = None) -> bench_table_core.Run:
        info = tables[size]
        run, rows = bench_table_core.run_child(
            "ours", Path(info["path"]), work, profile_out=profile_out
        )
        bench_table_core.check_rows(f"listing {size}", rows, info["manifest"], None)
        return run

    for size in SIZES:  # warm-up, untimed
        measure(size)
    for rep in range(repeat):
        for size in SIZES if rep % 2 == 0 else SIZES[::-1]:
            runs[size].append(measure(size))
        log(
            f"  listing rep {rep + 1}/{repeat}: "
            + ", ".join(
                f"{s} {r[-1].seconds:.3f}s {r[-1].peak_rss_kib / 1024:.0f} MB"
                for s, r in runs.items()
            )
        )
    summary = {size: bench_table_core.summarize(runs[size]) for size in SIZES}
    ratio = summary["large"]["median_s"] / summary["small"]["median_s"]
    result: dict[str, Any] = {
        "steps": summary,
        "ratio_large_over_small": ratio,
        "rss_ratio_large_over_small": summary["large"]["peak_rss_mb"]
        / summary["small"]["peak_rss_mb"],
        "listing_rss_ratio_large_over_small": summary["large"]["listing_rss_mb"]
        / max(summary["small"]["listing_rss_mb"], 1e-9),
        "target_ratio": LISTING_TARGET_RATIO,
        "meets_target": ratio <= LISTING_TARGET_RATIO,
    }
    if profile or ratio > LISTING_TARGET_RATIO:
        prof = RESULTS_DIR / "scale_listing.prof"
        run = measure("large", profile_out=prof)
        log(f"  profiled large listing: {run.seconds:.3f}s (under cProfile)")
        result["diagnosis"] = {
            "profiled_run": asdict(run),
            "profile_file": str(prof),
            "hotspots": hotspots(prof),
        }
    return result


# -- 2. delta-manifest sync to DuckDB -----------------------------------------------------
def parquet_template(spec: TableSpec) -> bytes:
    """A valid one-row base file of the generated tables' schema (its meta columns
    name another file: only a query of the DuckDB history view reads it)."""
    name = f"{uuid.UUID(int=0)}-0_0-1-1_{instant_time(0)}.parquet"
    return base_file_bytes(partition_path(0), "key-000000000", name, instant_time(0), "0-1-1", 0)


def clone_with_parquet(source: Path, target: Path, template: bytes) -> int:
    """``bench_sync.clone_table``, but each zero-byte base file becomes a hard link to a
    valid parquet template: a query of the DuckDB target's history view
    (``read_parquet``) reads every base file, and a zero-byte file is no parquet file
    (a history read by name, ``union_by_name``, reads every footer when it is
    created). Names, timeline and sizes in the commit metadata stay as generated."""
    templates = EmptyFiles(target.parent / f"{target.name}.parquet-templates", content=template)
    count = 0
    for directory, dirnames, filenames in os.walk(source):
        relative = os.path.relpath(directory, source)
        if relative == os.path.join(".hoodie", "manifest"):
            dirnames.clear()
            continue
        destination = target / relative if relative != "." else target
        destination.mkdir(parents=True, exist_ok=True)
        for name in filenames:
            src, dst = os.path.join(directory, name), destination / name
            base_file = name.endswith(".parquet") and not relative.startswith(".hoodie")
            if base_file and os.path.getsize(src) == 0:
                templates.create(dst)
                count += 1
                continue
            os.link(src, dst)
            count += 1
    return count


def open_parquet_work_table(label: str, spec: TableSpec, cache: Path, work: Path) -> WorkTable:
    """``bench_sync.open_work_table`` of the archived variant, cloned with
    ``clone_with_parquet``."""
    cached, manifest, reused = cached_archived_table(spec, cache)
    started = time.perf_counter()
    path = (work / label / spec.name).resolve()
    linked = clone_with_parquet(cached, path, parquet_template(spec))
    log(
        f"{label} table {cached.name}: working copy of {linked} files (base files linked to "
        f"a parquet template) in {time.perf_counter() - started:.1f}s"
    )
    return WorkTable(label, spec, path, manifest, reused, archived=True)


def bench_delta_sync(
    preset: ScalePreset, cache: Path, work: Path, repeat: int, delta: int, profile: bool
) -> dict[str, Any]:
    tables = {
        size: open_parquet_work_table(f"{size}-delta", getattr(preset, size), cache, work)
        for size in SIZES
    }
    databases = {size: work / f"{size}-delta.duckdb" for size in SIZES}
    first: dict[str, Any] = {}
    rebased: dict[str, Any] = {}
    for size, table in tables.items():
        report = sync_child(table, databases[size], delta)
        check_sync_report(table, report, first=True)
        first[size] = report
        log(
            f"  first sync {size}: {report['seconds']:.3f}s, "
            f"peak RSS {report['peak_rss_kib'] / 1024:.0f} MB"
        )
    for size, table in tables.items():
        table.append(preset.updates)
        report = sync_child(table, databases[size], delta)
        check_sync_report(table, report, first=False, rebased=True)
        rebased[size] = report
        log(f"  re-basing sync after the services {size}: {report['seconds']:.3f}s")
    runs: dict[str, list[dict[str, Any]]] = {size: [] for size in SIZES}
    for rep in range(repeat):
        for size in SIZES if rep % 2 == 0 else SIZES[::-1]:
            table = tables[size]
            table.append(preset.updates)
            report = sync_child(table, databases[size], delta)
            check_sync_report(table, report, first=False)
            runs[size].append(report)
        log(
            f"  delta sync rep {rep + 1}/{repeat}: "
            + ", ".join(f"{s} {r[-1]['seconds']:.3f}s" for s, r in runs.items())
        )
    summary = {size: summarize(runs[size]) for size in SIZES}
    ratio = summary["large"]["median_s"] / summary["small"]["median_s"]
    result: dict[str, Any] = {
        "first_sync": first,
        "sync_after_services": rebased,
        "incremental_sync": summary,
        "delta_commits": delta,
        "ratio_large_over_small": ratio,
        "target_ratio": SYNC_TARGET_RATIO,
        "meets_target": ratio <= SYNC_TARGET_RATIO,
        "tables": {size: t.info() for size, t in tables.items()},
    }
    if profile or ratio > SYNC_TARGET_RATIO:
        prof = RESULTS_DIR / "scale_sync.prof"
        table = tables["large"]
        table.append(preset.updates)
        report = sync_child(table, databases["large"], delta, profile_out=prof)
        check_sync_report(table, report, first=False)
        log(f"  profiled large delta sync: {report['seconds']:.3f}s (under cProfile)")
        result["diagnosis"] = {
            "profiled_run": report,
            "profile_file": str(prof),
            "hotspots": hotspots(prof),
        }
    for table in tables.values():
        shutil.rmtree(table.path.parent, ignore_errors=True)
    return result


# -- 3. BigQuery manifest-file mode -------------------------------------------------------
def _manifest_weight(table: WorkTable) -> dict[str, Any]:
    folder = table.path / ".hoodie" / "manifest"
    instant = json.loads((folder / "latest.json").read_text())["instant"]
    snapshot = folder / "snapshots" / instant
    uris = snapshot / "uris.csv"
    with uris.open("rb") as handle:
        rows = sum(1 for _ in handle)
    return {
        "instant": instant,
        "uris_csv_bytes": uris.stat().st_size,
        "uris_csv_rows": rows,
        "files_csv_bytes": (snapshot / "files.csv").stat().st_size,
        "bytes_per_row": uris.stat().st_size / max(rows, 1),
    }


def bench_bigquery_manifest(
    preset: ScalePreset, cache: Path, work: Path, repeat: int
) -> dict[str, Any]:
    from tests.bigquery_emulator import running_bigquery_emulator
    from tests.objectstores import running_gcs_server

    gcs_root = work / "local-gcs"
    tables = {
        size: open_work_table(
            f"bq-{size}", getattr(preset, size), cache, gcs_root / GCS_BUCKET, archived=True
        )
        for size in SIZES
    }
    uris = {size: f"gs://{t.path.relative_to(gcs_root).as_posix()}" for size, t in tables.items()}
    datasets = {size: f"bench_scale_{size}" for size in SIZES}
    first: dict[str, Any] = {}
    rebased: dict[str, Any] = {}
    runs: dict[str, list[dict[str, Any]]] = {size: [] for size in SIZES}
    (work / "gcs").mkdir(exist_ok=True)
    (work / "bigquery").mkdir(exist_ok=True)
    with (
        running_gcs_server(work / "gcs") as gcs,
        running_bigquery_emulator(gcs, work / "bigquery") as emulator,
    ):

        def sync(size: str, first_sync: bool = False, rebase: bool = False) -> dict[str, Any]:
            table = tables[size]
            report = run_child(
                "sync-bigquery-manifest",
                gcs_root,
                uris[size],
                emulator.endpoint_url,
                datasets[size],
            )
            details = report["details"]
            action = "create" if first_sync else "update"
            if (
                details["errors"]
                or details["actions"] != [action]
                or details["incremental"] == (first_sync or rebase)
            ):
                raise BenchmarkError(f"bq-{size}: unexpected sync report {details}")
            instant = (
                table.appended[-1] if table.appended else table.manifest["latest_completed_instant"]
            )
            table.expected = check_published(
                table.path, instant, table.expected, table.manifest, uri=uris[size]
            )
            return report

        for size in SIZES:
            first[size] = sync(size, first_sync=True)
            log(f"  first BigQuery manifest-mode sync {size}: {first[size]['seconds']:.3f}s")
        for size in SIZES:
            tables[size].append(preset.updates)
            rebased[size] = sync(size, rebase=True)
            log(f"  re-basing manifest-mode sync {size}: {rebased[size]['seconds']:.3f}s")
        for rep in range(repeat):
            for size in SIZES if rep % 2 == 0 else SIZES[::-1]:
                tables[size].append(preset.updates)
                runs[size].append(sync(size))
            log(
                f"  BigQuery manifest-mode sync rep {rep + 1}/{repeat}: "
                + ", ".join(f"{s} {r[-1]['seconds']:.3f}s" for s, r in runs.items())
            )
        client = emulator.client()
        definitions = {}
        for size in SIZES:
            resource = client.get_table(f"{client.project}.{datasets[size]}.t").to_api_repr()
            text = json.dumps(resource, sort_keys=True)
            definitions[size] = {
                "resource_bytes": len(text.encode()),
                "source_uris": resource.get("externalDataConfiguration", {}).get("sourceUris"),
                "file_set_spec_type": resource.get("externalDataConfiguration", {}).get(
                    "fileSetSpecType"
                ),
                "schema_fields": len(resource.get("schema", {}).get("fields", [])),
            }
    summary = {size: summarize(runs[size]) for size in SIZES}
    weights = {size: _manifest_weight(t) for size, t in tables.items()}
    ratio = summary["large"]["median_s"] / summary["small"]["median_s"]
    result = {
        "table_uris": uris,
        "first_sync": first,
        "sync_after_services": rebased,
        "incremental_sync": summary,
        "manifest": weights,
        "table_definition": definitions,
        "ratio_large_over_small": ratio,
        "manifest_bytes_ratio": weights["large"]["uris_csv_bytes"]
        / weights["small"]["uris_csv_bytes"],
        "tables": {size: t.info() for size, t in tables.items()},
    }
    for table in tables.values():
        shutil.rmtree(table.path.parent, ignore_errors=True)
    return result


# -- report -------------------------------------------------------------------------------
def _mb(kib: float) -> float:
    return kib / 1024


def print_report(result: dict[str, Any]) -> None:
    tables = result["tables"]
    print("\nTables (archived, zero-byte base files)")
    header = (
        f"{'table':<6} {'name':<30} {'slices':>10} {'partitions':>10} {'commits':>8} "
        f"{'base files':>10} {'timeline':>8} {'archived':>8} {'archive MB':>10} "
        f"{'gen s':>7} {'archival s':>10}"
    )
    print(header)
    print("-" * len(header))
    for size in SIZES:
        t = tables[size]
        gen = f"{t['generation_s']:7.1f}" if t["generation_s"] is not None else f"{'?':>7}"
        print(
            f"{size:<6} {t['name']:<30} {t['slices']:10,d} {t['partitions']:10,d} "
            f"{t['completed_commits']:8,d} {t['base_files']:10,d} {t['timeline_files']:8d} "
            f"{t['archived_instants']:8,d} {t['archive_bytes'] / 1e6:10.1f} {gen} "
            f"{t['archival_s']:10.1f}"
        )
    print("\nmeasurement                               small        large      large/small  target")
    print("-" * 92)
    if "listing" in result:
        listing = result["listing"]
        s, lg = listing["steps"]["small"], listing["steps"]["large"]
        verdict = "met" if listing["meets_target"] else "MISSED"
        print(
            f"{'listing, median s':<38} {s['median_s']:12.3f} {lg['median_s']:12.3f} "
            f"{listing['ratio_large_over_small']:10.2f}x  <= 10x ({verdict})"
        )
        print(
            f"{'listing, peak RSS MB':<38} {s['peak_rss_mb']:12.1f} {lg['peak_rss_mb']:12.1f} "
            f"{listing['rss_ratio_large_over_small']:10.2f}x  bounded"
        )
        print(
            f"{'listing, RSS above imports MB':<38} {s['listing_rss_mb']:12.1f} "
            f"{lg['listing_rss_mb']:12.1f} {listing['listing_rss_ratio_large_over_small']:10.2f}x"
        )
    if "delta_sync" in result:
        sync = result["delta_sync"]
        s, lg = sync["incremental_sync"]["small"], sync["incremental_sync"]["large"]
        verdict = "met" if sync["meets_target"] else "MISSED"
        print(
            f"{'DuckDB delta sync after 1 commit, s':<38} {s['median_s']:12.3f} "
            f"{lg['median_s']:12.3f} {sync['ratio_large_over_small']:10.2f}x  <= 1.5x ({verdict})"
        )
        _print_breakdown(s, lg)
        _print_one_off_syncs(sync)
    if "bigquery_manifest" in result:
        bq = result["bigquery_manifest"]
        s, lg = bq["incremental_sync"]["small"], bq["incremental_sync"]["large"]
        print(
            f"{'BigQuery manifest-mode sync, 1 commit, s':<38} {s['median_s']:12.3f} "
            f"{lg['median_s']:12.3f} {bq['ratio_large_over_small']:10.2f}x"
        )
        _print_breakdown(s, lg)
        ws, wl = bq["manifest"]["small"], bq["manifest"]["large"]
        print(
            f"{'  manifest uris.csv, MB':<38} {ws['uris_csv_bytes'] / 1e6:12.2f} "
            f"{wl['uris_csv_bytes'] / 1e6:12.2f} {bq['manifest_bytes_ratio']:10.2f}x"
        )
        print(f"{'  manifest rows':<38} {ws['uris_csv_rows']:12,d} {wl['uris_csv_rows']:12,d}")
        print(
            f"{'  manifest files.csv, MB':<38} {ws['files_csv_bytes'] / 1e6:12.2f} "
            f"{wl['files_csv_bytes'] / 1e6:12.2f}"
        )
        ds, dl = bq["table_definition"]["small"], bq["table_definition"]["large"]
        print(
            f"{'  external table definition, bytes':<38} {ds['resource_bytes']:12,d} "
            f"{dl['resource_bytes']:12,d}   (sourceUris: {len(dl['source_uris'] or [])} URI, "
            f"{dl['file_set_spec_type']})"
        )
        _print_one_off_syncs(bq)
    for key, what in (("listing", "large listing"), ("delta_sync", "large delta sync")):
        diagnosis = result.get(key, {}).get("diagnosis")
        if diagnosis:
            spots = diagnosis["hotspots"]
            print(f"\ncProfile of one {what} ({spots['profiled_total_s']:.3f}s profiled)")
            for r in spots["hudi_sync_by_cumulative"][:12]:
                print(f"  {r['cumulative_s']:8.3f}s {r['calls']:9d}  {r['function']}")
            print("  by own time:")
            for r in spots["all_by_own_time"][:8]:
                print(f"  {r['own_s']:8.3f}s {r['calls']:9d}  {r['function']}")


# -- main ---------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(SCALE_PRESETS), default="small")
    parser.add_argument("--keep", type=Path, default=RESULTS_DIR / "tables", help="table cache")
    parser.add_argument("--listing-repeat", type=int)
    parser.add_argument("--sync-repeat", type=int)
    parser.add_argument("--bigquery-repeat", type=int)
    parser.add_argument("--delta-commits", type=int)
    parser.add_argument("--only", choices=("listing", "sync", "bigquery"))
    parser.add_argument("--profile", action="store_true", help="always profile the large runs")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "scale.json")
    args = parser.parse_args(argv)
    preset = SCALE_PRESETS[args.preset]
    preset = dataclasses.replace(
        preset,
        listing_repeat=args.listing_repeat or preset.listing_repeat,
        sync_repeat=args.sync_repeat or preset.sync_repeat,
        bigquery_repeat=args.bigquery_repeat or preset.bigquery_repeat,
        delta_commits=args.delta_commits or preset.delta_commits,
    )
    if min(preset.listing_repeat, preset.sync_repeat, preset.bigquery_repeat) < 1:
        parser.error("repetitions must be >= 1")
    if preset.sync_repeat + 2 >= preset.delta_commits:
        parser.error("--delta-commits must exceed the timed syncs + 2 (every timed one a delta)")

    started = time.perf_counter()
    version_at_start = code_version()
    cache = args.keep.resolve()
    cache.mkdir(parents=True, exist_ok=True)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "benchmark": "scale",
        "preset": args.preset,
        "preset_config": asdict(preset),
    }
    tables = ensure_tables(preset, cache)
    result["tables"] = {
        size: {k: v for k, v in t.items() if k != "manifest"} for size, t in tables.items()
    }
    work = Path(tempfile.mkdtemp(prefix="work-", dir=cache))  # same file system: hard links
    try:
        if args.only in (None, "listing"):
            log("1. listing ...")
            result["listing"] = bench_listing(tables, preset.listing_repeat, work, args.profile)
        if args.only in (None, "sync"):
            log("2. delta-manifest sync to DuckDB after one commit ...")
            result["delta_sync"] = bench_delta_sync(
                preset, cache, work, preset.sync_repeat, preset.delta_commits, args.profile
            )
        if args.only in (None, "bigquery"):
            log("3. BigQuery manifest-mode sync after one commit ...")
            result["bigquery_manifest"] = bench_bigquery_manifest(
                preset, cache, work, preset.bigquery_repeat
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_report(result)
    write_results(args.results, result, started, version_at_start)
    return 0


def _print_breakdown(small: dict[str, Any], large: dict[str, Any]) -> None:
    """A sync's publication and target time, and its peak RSS, both tables."""
    for part in ("publish_s", "target_s"):
        print(
            f"{'  of which ' + part[:-2]:<38} {small['median_breakdown_s'][part]:12.3f} "
            f"{large['median_breakdown_s'][part]:12.3f}"
        )
    print(
        f"{'  peak RSS MB':<38} {small['peak_rss_mb']:12.1f} {large['peak_rss_mb']:12.1f} "
        f"{large['peak_rss_mb'] / small['peak_rss_mb']:10.2f}x"
    )


def _print_one_off_syncs(section: dict[str, Any]) -> None:
    """The first sync and the re-basing one after the services, both tables."""
    labels = {
        "first_sync": "  first sync (full listing), s",
        "sync_after_services": "  re-basing sync after services, s",
    }
    for what, label in labels.items():
        a, b = section[what]["small"]["seconds"], section[what]["large"]["seconds"]
        print(f"{label:<38} {a:12.3f} {b:12.3f} {b / a:10.2f}x")
        if "peak_rss_kib" in section[what]["small"]:
            a, b = (section[what][size]["peak_rss_kib"] / 1024 for size in SIZES)
            print(f"{'    its peak RSS MB':<38} {a:12.1f} {b:12.1f} {b / a:10.2f}x")


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except (BenchmarkError, bench_table_core.BenchmarkError) as error:
        print(f"BENCHMARK FAILED: {error}", file=sys.stderr)
        raise SystemExit(1) from None
