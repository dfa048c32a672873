"""One measured step of ``bench_sync`` in a fresh interpreter.

``python -m benchmarks._sync_child MODE ARGS... [--profile OUT]`` imports what the
step needs, then times only the step and prints one JSON line: wall and CPU seconds,
the step's own breakdown, and peak RSS in KiB (``VmHWM``, see
``benchmarks._child.peak_rss_kib``) after imports and after the step. Modes:

* ``publish TABLE``: hudi_sync's manifest publication, i.e. what
  ``hudi_sync.sync.job.publish_manifest(HudiTable.open(TABLE))`` runs, split into its three
  calls so the report can break it down: ``HudiTable.open``, ``ManifestStore.build()``
  (a full listing without a previous manifest, else the incremental derivation) and
  ``ManifestStore.publish(manifest)``;
* ``ref-full TABLE OUT_DIR``: the plain-Python floor of a full publication: list the
  partition folders with ``os.scandir`` and write every ``.parquet`` name found in the
  three manifest files (names, absolute URIs, latest copy) under ``OUT_DIR``;
* ``ref-incremental TABLE PREVIOUS_URIS COMMIT_FILE OUT_DIR``: the floor of an
  incremental publication: read the previous URI list, apply the new commit's write
  stats (plain ``json``), write the same three files;
* ``ref-physical PREVIOUS_URIS PREVIOUS_FILES OUT_DIR``: the physical floor of a
  full-manifest publication: read the previous URI and name lists with pyarrow's CSV
  reader and write the same rows back with its CSV writer (no logic at all);
* ``ref-physical-durable PREVIOUS_URIS PREVIOUS_FILES OUT_DIR``: the same, paying the
  durability a publication pays: the same number of files written (the two lists, a
  snapshot meta and the pointer), each to a temporary name, fsynced, then renamed;
* ``sync TABLE DB [DELTA_COMMITS]``: ``hudi_sync.sync.job.sync_table(TABLE,
  [DuckDBTarget(DB, "t")], delta_commits=DELTA_COMMITS)`` (default 0: full manifests),
  the target wrapped only to time its share;
* ``sync-bigquery TABLE ENDPOINT DATASET [DELTA_COMMITS]``: the same with a
  ``BigQueryTarget`` (view mode, table ``t``) on the emulator at ``ENDPOINT``, the local
  table described to it as ``gs://bench/<table folder name>`` (``source_uri_prefix``;
  the emulator's external tables read no file), its client made before the timing;
* ``sync-bigquery-manifest GCS_ROOT TABLE_URI ENDPOINT DATASET``: the same in
  manifest-file mode (``use_bq_manifest_file``, table ``t``), which needs the table at
  its ``gs://`` location: ``TABLE_URI`` (``gs://BUCKET/...``) is read and written
  through an fsspec ``DirFileSystem`` registered as ``gs`` that serves
  ``GCS_ROOT/BUCKET/...`` from local disk (the object-store code paths, no network);
* ``statements TABLE DB``: the DuckDB statements a forced sync of the last published
  manifest would run, each timed, inside a transaction that is rolled back.
"""

from __future__ import annotations

import cProfile
import functools
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks._child import peak_rss_kib

Step = Callable[[], dict[str, Any]]


def _publish(table: str) -> Step:
    from hudi_sync.manifest.snapshot import ManifestStore
    from hudi_sync.table import HudiTable

    def step() -> dict[str, Any]:
        t0 = time.perf_counter()
        opened = HudiTable.open(table)
        t1 = time.perf_counter()
        store = ManifestStore(opened)
        manifest = store.build()
        t2 = time.perf_counter()
        store.publish(manifest)
        t3 = time.perf_counter()
        return {
            "open_s": t1 - t0,
            "build_s": t2 - t1,
            "write_s": t3 - t2,
            "instant": manifest.instant,
            "files": len(manifest.files),
            "incremental": manifest.derived_incrementally,
            "full_listing_reason": manifest.full_listing_reason,
        }

    return step


def _write_manifest_files(out_dir: Path, table: str, rows: list[tuple[str, str]]) -> None:
    """The three files a publication writes, each to a temporary name then renamed."""
    names = "".join(f"{name}\n" for name in sorted(name for _, name in rows))
    relative = sorted(f"{partition}/{name}" for partition, name in rows)
    uris = "".join(f"{table}/{path}\n" for path in relative)
    out_dir.mkdir(parents=True, exist_ok=True)
    for file_name, text in (("files.csv", names), ("uris.csv", uris), ("latest.csv", names)):
        temporary = out_dir / f".tmp-{file_name}"
        temporary.write_text(text)
        os.replace(temporary, out_dir / file_name)


def _ref_full(table: str, out_dir: str) -> Step:
    def step() -> dict[str, Any]:
        t0 = time.perf_counter()
        rows: list[tuple[str, str]] = []
        with os.scandir(table) as top:
            partitions = [e.name for e in top if e.is_dir() and not e.name.startswith(".")]
        for partition in partitions:
            with os.scandir(os.path.join(table, partition)) as entries:
                rows += [(partition, e.name) for e in entries if e.name.endswith(".parquet")]
        t1 = time.perf_counter()
        _write_manifest_files(Path(out_dir), table, rows)
        t2 = time.perf_counter()
        return {"list_s": t1 - t0, "write_s": t2 - t1, "files": len(rows)}

    return step


def _ref_incremental(table: str, previous_uris: str, commit_file: str, out_dir: str) -> Step:
    def step() -> dict[str, Any]:
        t0 = time.perf_counter()
        prefix = table.rstrip("/") + "/"
        files: dict[tuple[str, str], str] = {}
        with open(previous_uris, encoding="utf-8") as lines:
            for line in lines:
                partition, _, name = line.rstrip("\n")[len(prefix) :].rpartition("/")
                files[(partition, name.split("_", 1)[0])] = name
        with open(commit_file, "rb") as handle:
            commit = json.load(handle)
        for stats in commit["partitionToWriteStats"].values():
            for stat in stats:
                files[(stat["partitionPath"], stat["fileId"])] = stat["path"].rsplit("/", 1)[1]
        t1 = time.perf_counter()
        _write_manifest_files(Path(out_dir), table, [(p, n) for (p, _), n in files.items()])
        t2 = time.perf_counter()
        return {"read_s": t1 - t0, "write_s": t2 - t1, "files": len(files)}

    return step


def _ref_physical(
    previous_uris: str, previous_files: str, out_dir: str, durable: bool = False
) -> Step:
    import pyarrow.csv as pacsv

    def publish(path: Path, write: Callable[[Path], object]) -> None:
        """``write`` a temporary file then rename it; with ``durable`` fsync it first."""
        temporary = path.with_name(f".tmp-{path.name}")
        write(temporary)
        if durable:
            fd = os.open(temporary, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        os.replace(temporary, path)

    def step() -> dict[str, Any]:
        t0 = time.perf_counter()
        read = pacsv.ReadOptions(column_names=["line"])
        parse = pacsv.ParseOptions(quote_char=False, escape_char=False)
        tables = [pacsv.read_csv(p, read, parse) for p in (previous_uris, previous_files)]
        t1 = time.perf_counter()
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        write = pacsv.WriteOptions(include_header=False, quoting_style="none")
        for name, rows in zip(("uris.csv", "files.csv"), tables, strict=True):
            publish(out / name, functools.partial(pacsv.write_csv, rows, write_options=write))
        if durable:  # a publication's other two files: snapshot meta, then the pointer
            meta = json.dumps({"files": tables[0].num_rows}).encode()
            for name in ("snapshot.json", "latest.json"):
                publish(out / name, lambda t: t.write_bytes(meta))
        t2 = time.perf_counter()
        return {"read_s": t1 - t0, "write_s": t2 - t1, "files": tables[0].num_rows}

    return step


def _sync(table: str, database: str, delta_commits: str = "0") -> Step:
    from hudi_sync.warehouse.duckdb import DuckDBTarget

    class TimedDuckDBTarget(DuckDBTarget):
        """The DuckDB target, recording how long its ``sync`` took."""

        target_seconds = 0.0

        def sync(self, *args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return super().sync(*args, **kwargs)
            finally:
                self.target_seconds += time.perf_counter() - t0

    def step() -> dict[str, Any]:
        target = TimedDuckDBTarget(database, "t")
        return _timed_sync(table, target, delta_commits)

    return step


def _timed_sync(table: str, target: Any, delta_commits: str) -> dict[str, Any]:
    """One ``sync_table`` into ``target`` (which records its ``target_seconds``): the
    target's share, the rest (the publication) and what the sync reported."""
    from hudi_sync.sync.job import sync_table

    t0 = time.perf_counter()
    report = sync_table(table, [target], delta_commits=int(delta_commits))
    total = time.perf_counter() - t0
    return {
        "target_s": target.target_seconds,
        "publish_s": total - target.target_seconds,
        "instant": report.instant,
        "files": report.manifest_files,
        "incremental": report.incremental,
        "actions": [r.action for r in report.results],
        "errors": dict(report.errors),
    }


def _timed_bigquery_target(options: dict[str, str], endpoint: str) -> Any:
    """A BigQuery target on ``endpoint`` that records how long its ``sync`` took
    (``target_seconds``), its client already made."""
    from hudi_sync.warehouse.bigquery import BigQuerySyncConfig, BigQueryTarget

    class TimedBigQueryTarget(BigQueryTarget):
        target_seconds = 0.0

        def sync(self, *args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return super().sync(*args, **kwargs)
            finally:
                self.target_seconds += time.perf_counter() - t0

    target = TimedBigQueryTarget(BigQuerySyncConfig.from_options(options), api_endpoint=endpoint)
    _ = target.client
    return target


def _sync_bigquery(table: str, endpoint: str, dataset: str, delta_commits: str = "0") -> Step:
    options = {
        "project_id": "test-project",
        "dataset_name": dataset,
        "table_name": "t",
        "source_uri_prefix": f"gs://bench/{Path(table).name}",
    }
    target = _timed_bigquery_target(options, endpoint)

    def step() -> dict[str, Any]:
        return _timed_sync(table, target, delta_commits)

    return step


def serve_gs_locally(root: str) -> None:
    """Make ``gs://BUCKET/KEY`` the local file ``ROOT/BUCKET/KEY`` in this process: an
    fsspec ``DirFileSystem`` (not a ``LocalFileSystem``, so hudi_sync takes its
    object-store paths and keeps the ``gs://`` URI) registered for the ``gs``
    protocol."""
    import fsspec
    from fsspec.implementations.dirfs import DirFileSystem
    from fsspec.implementations.local import LocalFileSystem

    class LocalGcs(DirFileSystem):  # type: ignore[misc]
        protocol = "gs"

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(path=root, fs=LocalFileSystem(auto_mkdir=True))

    fsspec.register_implementation("gs", LocalGcs, clobber=True)


def _sync_bigquery_manifest(gcs_root: str, table_uri: str, endpoint: str, dataset: str) -> Step:
    serve_gs_locally(gcs_root)
    options = {
        "project_id": "test-project",
        "dataset_name": dataset,
        "table_name": "t",
        "use_bq_manifest_file": "true",
    }
    target = _timed_bigquery_target(options, endpoint)

    def step() -> dict[str, Any]:
        return _timed_sync(table_uri, target, "0")

    return step


def _statements(table: str, database: str) -> Step:
    import duckdb

    from hudi_sync.manifest.snapshot import ManifestStore, PublishedManifest
    from hudi_sync.table import HudiTable
    from hudi_sync.warehouse.duckdb import DuckDBTarget

    def step() -> dict[str, Any]:
        opened = HudiTable.open(table)
        store = ManifestStore(opened)
        manifest = store.latest()
        if manifest is None or manifest.instant is None:
            raise RuntimeError(f"{table}: no published manifest")
        files_uri, uris_uri = store.snapshot_uris(manifest.instant)
        published = PublishedManifest(manifest, files_uri, uris_uri)
        plan = DuckDBTarget(database, "t").plan(opened, published, force=True)
        timings = []
        with duckdb.connect(database) as con:
            con.execute("BEGIN TRANSACTION")
            try:
                for statement in plan.steps:
                    t0 = time.perf_counter()
                    con.execute(statement)
                    timings.append([time.perf_counter() - t0, statement])
            finally:
                con.execute("ROLLBACK")
        return {"statements": timings}

    return step


MODES: dict[str, Callable[..., Step]] = {
    "publish": _publish,
    "ref-full": _ref_full,
    "ref-incremental": _ref_incremental,
    "ref-physical": _ref_physical,
    "ref-physical-durable": functools.partial(_ref_physical, durable=True),
    "sync": _sync,
    "sync-bigquery": _sync_bigquery,
    "sync-bigquery-manifest": _sync_bigquery_manifest,
    "statements": _statements,
}


def main(argv: list[str]) -> int:
    """Run one step; see the module docstring for arguments."""
    profile_out = None
    if "--profile" in argv:
        at = argv.index("--profile")
        profile_out = argv[at + 1]
        argv = argv[:at] + argv[at + 2 :]
    mode, *args = argv
    step = MODES[mode](*args)
    rss_after_imports = peak_rss_kib()
    profiler = cProfile.Profile() if profile_out else None

    cpu0, t0 = time.process_time(), time.perf_counter()
    if profiler is not None:
        profiler.enable()
    details = step()
    if profiler is not None:
        profiler.disable()
    seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - cpu0
    peak = peak_rss_kib()

    if profiler is not None and profile_out:
        profiler.dump_stats(profile_out)
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
