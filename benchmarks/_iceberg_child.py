"""One measured publication of ``bench_iceberg`` in a fresh interpreter.

``python -m benchmarks._iceberg_child MODE TABLE [--profile OUT]`` imports what the step
needs, then times only the step and prints one JSON line: wall and CPU seconds, the
step's breakdown, what it published and the peak RSS in KiB (``VmHWM``, see
``benchmarks._child.peak_rss_kib``). Modes:

* ``manifest TABLE``: the manifest sync alone, what a sync publishes before any target:
  ``publish_manifest(HudiTable.open(TABLE))`` (``hudi_sync.sync.job``);
* ``iceberg TABLE``: the same, then ``IcebergStore(table, keep).publish(published)``
  with the sync's timeline listing (one ``TimelineListing`` for both, as ``sync_table``
  shares it), as the ``iceberg`` target calls it; the two parts timed apart
  (``manifest_s``, ``iceberg_s``); new base files' metrics from their footers
  (``hudi_sync.sync.iceberg.metrics.source=footers``, the default);
* ``iceberg-commit TABLE``: the same with ``metrics.source=commit`` (record counts and
  sizes from the commit metadata, no footer read);
* ``footer-floor TABLE``: the floor of reading every base file's footer, on a table
  whose manifest is published: each file the manifest names opened and its last 64 KiB
  read (``read_s``), then parsed by ``pyarrow.parquet.read_metadata`` alone
  (``parse_s``), in plain Python, one thread.

After the timed step, ``iceberg`` reads back what it published without hudi_sync's
Iceberg code (``json`` and plain ``fastavro``): the version hint, the metadata, the
current snapshot's manifest list and every data manifest it names, and reports the
snapshot's live data file paths checked against the manifest's base files (the check
is not timed).
"""

from __future__ import annotations

import cProfile
import json
import sys
import time
from typing import Any

import fastavro

from benchmarks._child import peak_rss_kib

ICEBERG_METADATA = ".hoodie/manifest/iceberg/metadata"


def _manifest(table: str) -> dict[str, Any]:
    from hudi_sync.sync.job import publish_manifest
    from hudi_sync.table import HudiTable

    t0 = time.perf_counter()
    opened = HudiTable.open(table)
    published = publish_manifest(opened)
    t1 = time.perf_counter()
    manifest = published.manifest
    return {
        "manifest_s": t1 - t0,
        "instant": manifest.instant,
        "files": len(manifest.files),
        "incremental": manifest.derived_incrementally,
        "full_listing_reason": manifest.full_listing_reason,
    }


def _iceberg(table: str, metrics: str = "footers") -> dict[str, Any]:
    from hudi_sync.manifest.iceberg.store import IcebergStore
    from hudi_sync.sync.job import DEFAULT_KEEP, publish_manifest
    from hudi_sync.table import HudiTable
    from hudi_sync.table.timeline.listing import TimelineListing

    t0 = time.perf_counter()
    opened = HudiTable.open(table)
    # One listing of the timeline folder for the whole sync, as ``sync_table`` shares it.
    listing = TimelineListing.of(opened.location, opened.config)
    published = publish_manifest(opened, listing=listing)
    t1 = time.perf_counter()
    store = IcebergStore(opened, DEFAULT_KEEP, listing=listing, metrics=metrics)
    result = store.publish(published)
    t2 = time.perf_counter()
    manifest = published.manifest

    def uris() -> list[str]:  # for the check, after the clock stops
        return sorted(opened.location.uri_of(p) for p in manifest.relative_paths())

    return {
        "manifest_s": t1 - t0,
        "iceberg_s": t2 - t1,
        "instant": manifest.instant,
        "files": len(manifest.files),
        "incremental": manifest.derived_incrementally,
        "full_listing_reason": manifest.full_listing_reason,
        "iceberg": result.summary(),
        "_uris": uris,
    }


def _footer_floor(table: str) -> dict[str, Any]:
    """The floor of any publication that reads each base file's footer: the files the
    published manifest names, each opened and its tail read (what ``read_footer`` reads
    first), then the same bytes parsed by pyarrow alone (no statistics looked at)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = f"{table}/.hoodie/manifest"
    with open(f"{folder}/latest.json", "rb") as handle:
        instant = json.load(handle)["instant"]
    with open(f"{folder}/snapshots/{instant}/uris.csv", encoding="utf-8") as handle:
        paths = [_local(line.rstrip("\n")) for line in handle]
    t0 = time.perf_counter()
    tails = []
    for path in paths:
        with open(path, "rb") as file:
            size = file.seek(0, 2)
            file.seek(max(0, size - 64 * 1024))
            tails.append(file.read())
    t1 = time.perf_counter()
    rows = sum(pq.read_metadata(pa.BufferReader(tail)).num_rows for tail in tails)
    t2 = time.perf_counter()
    return {"read_s": t1 - t0, "parse_s": t2 - t1, "files": len(paths), "rows": rows}


def _iceberg_commit(table: str) -> dict[str, Any]:
    return _iceberg(table, "commit")


MODES = {
    "manifest": _manifest,
    "iceberg": _iceberg,
    "iceberg-commit": _iceberg_commit,
    "footer-floor": _footer_floor,
}


def read_back(table: str) -> dict[str, Any]:
    """The current Iceberg snapshot as plain JSON and fastavro read it: its instant,
    the manifest list's data file count and the live data file paths."""
    metadata_dir = f"{table}/{ICEBERG_METADATA}"
    with open(f"{metadata_dir}/version-hint.text", encoding="ascii") as hint:
        version = int(hint.read().strip())
    with open(f"{metadata_dir}/v{version}.metadata.json", "rb") as handle:
        metadata = json.load(handle)
    current = metadata["current-snapshot-id"]
    snapshot = next(s for s in metadata["snapshots"] if s["snapshot-id"] == current)
    listed = 0
    paths: list[str] = []
    with open(_local(snapshot["manifest-list"]), "rb") as handle:
        manifests = list(fastavro.reader(handle))
    for manifest in manifests:
        if manifest["content"] != 0:
            continue
        listed += manifest["added_files_count"] + manifest["existing_files_count"]
        with open(_local(manifest["manifest_path"]), "rb") as handle:
            paths += [
                e["data_file"]["file_path"] for e in fastavro.reader(handle) if e["status"] != 2
            ]
    return {
        "instant": snapshot["summary"].get("hudi.instant"),
        "listed_data_files": listed,
        "paths": sorted(paths),
    }


def _local(uri: str) -> str:
    return uri.removeprefix("file://")


def main(argv: list[str]) -> int:
    """Run one step; see the module docstring for arguments."""
    profile_out = None
    if "--profile" in argv:
        at = argv.index("--profile")
        profile_out = argv[at + 1]
        argv = argv[:at] + argv[at + 2 :]
    mode, table = argv
    step = MODES[mode]
    # Import what the step needs before the clock starts.
    import hudi_sync.manifest.iceberg.store
    import hudi_sync.sync.job  # noqa: F401

    rss_after_imports = peak_rss_kib()
    profiler = cProfile.Profile() if profile_out else None
    cpu0, t0 = time.process_time(), time.perf_counter()
    if profiler is not None:
        profiler.enable()
    details = step(table)
    if profiler is not None:
        profiler.disable()
    seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - cpu0
    peak = peak_rss_kib()
    if profiler is not None and profile_out:
        profiler.dump_stats(profile_out)
    uris = details.pop("_uris", None)
    if uris is not None:
        back = read_back(table)
        expected = uris()
        details["read_back"] = {
            "instant": back["instant"],
            "listed_data_files": back["listed_data_files"],
            "live_data_files": len(back["paths"]),
            "paths_match_manifest": back["paths"] == expected,
        }
    report = {
        "mode": mode,
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "rss_after_imports_kib": rss_after_imports,
        "peak_rss_kib": peak,
        "details": details,
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
