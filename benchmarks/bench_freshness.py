"""Freshness: how long after a commit a query through each target sees it, and the
post-commit hook's share of a large write.

``python -m benchmarks.bench_freshness [--preset small|full] [--only latency|hook-share]
[--targets duckdb,bigquery,snowflake] [--paths hook,watch]``

1. **Commit-to-queryable latency**, per path (the post-commit hook in the writer;
   ``watch`` in a thread, its poll interval ``--watch-interval``) and target:

   - DuckDB: a local table, a DuckDB file; the probe selects the new key from the view.
   - BigQuery: the table in fake-gcs-server (``gs://``, read and written through gcsfs),
     local-bigquery over it, both started here on 127.0.0.1 and stopped. The emulator's
     external tables read no file (``tests/test_bigquery_emulator.py``), so its probe is
     the API call a reader's query depends on: ``tables.get`` of the view, whose marker
     names the instant the view shows (stamped last, after the manifest table switched).
   - Snowflake: the table in moto S3 (on 127.0.0.1, its own process), fakesnow with the test
     suite's external-table emulation (``tests/snowflake_emulation.py``; fakesnow runs in
     this process, its server mode cannot carry the emulation); the probe selects the new
     key from the view (the emulated ``REFRESH`` loads the files' rows).

   Each path x target gets a fresh table (the preset's ``base_rows``, one partition),
   synced once, then the preset's ``commits`` upserts, one at a time, through the Arrow
   writer (``write_arrow``): one new key and nine updated ones each. Latency runs from
   the commit's completion (the moment ``WriteTransaction.complete`` returns: the
   completed instant file written) to the moment the probe, polled every
   ``--poll-step`` seconds (or as long as its last query took, if longer), first sees
   the new row (or instant). The reference, in the
   same run and storage, interleaved commit by commit: the same upsert into a twin
   table without the hook, then the bare manifest sync of that commit
   (``publish_manifest``); its latency runs from the completion to the manifest
   published. Reported: p50 and p95 per path x target and their ratios to the
   reference's p50.

2. **The hook's share of a write**: ``bench_writer``'s full upsert (1,000,000 rows into
   10,000,000; ``--preset small``: its small preset), its generator and cached table,
   the Spark engine as there, each run in a fresh process on a hard-linked copy,
   alternated: without the hook, and with the hook syncing to a DuckDB file
   (``hoodie.datasource.meta.sync.enable``). The copy's manifest and DuckDB view are
   synced before the timer in both (the steady state of a table synced at every
   commit). The hook's own time is timed inside the write; share =
   hook time / write time (target <= 5 %). After a hooked write the DuckDB view must
   show the upsert's new day, else the benchmark fails.

Results: stdout and ``benchmarks/results/freshness.json`` (with ``uptime`` before and
after each part).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import logging
import operator
import shutil
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks.bench_table_core import environment

RESULTS_DIR = Path(__file__).resolve().parent / "results"
HOOK_SHARE_TARGET = 0.05
TARGETS = ("duckdb", "bigquery", "snowflake")
PATHS = ("hook", "watch")
KEY, PARTITION, ORDERING = "key", "day", "ts"


@dataclass(frozen=True)
class Preset:
    commits: int  # per path x target
    base_rows: int
    hook_repeat: int  # writes per mode of the hook-share part
    writer_preset: str  # bench_writer's preset for the hook-share part


PRESETS = {
    "small": Preset(commits=5, base_rows=100, hook_repeat=1, writer_preset="small"),
    "full": Preset(commits=20, base_rows=100, hook_repeat=3, writer_preset="full"),
}


class BenchmarkError(RuntimeError):
    """A sync failed, or a probe never saw the commit."""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile, linear between the two nearest ranks."""
    ordered = sorted(values)
    at = (len(ordered) - 1) * q
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


# -- commit completion -------------------------------------------------------------------
class CompletionClock:
    """The monotonic time each commit of this process completed: the real
    ``WriteTransaction.complete`` runs, and the time is taken when it returns (the
    completed instant file is written). Wrapped once, while the benchmark runs."""

    def __init__(self) -> None:
        self.times: dict[str, float] = {}

    @contextlib.contextmanager
    def installed(self) -> Iterator[CompletionClock]:
        from hudi_sync.table.write.commit import WriteTransaction

        original = WriteTransaction.complete
        times = self.times

        def complete(transaction: Any, commit: Any) -> None:
            original(transaction, commit)
            times[transaction.instant] = time.monotonic()

        WriteTransaction.complete = complete  # type: ignore[method-assign,assignment]
        try:
            yield self
        finally:
            WriteTransaction.complete = original  # type: ignore[method-assign]


# -- rows ----------------------------------------------------------------------------------
def base_rows(count: int) -> Any:
    import pyarrow as pa

    return pa.table(
        {
            KEY: [f"k{i:06d}" for i in range(count)],
            PARTITION: ["01"] * count,
            ORDERING: pa.array([1] * count, pa.int64()),
            "amount": [float(i) for i in range(count)],
            "rider": [f"rider-{i % 10}" for i in range(count)],
        }
    )


def upsert_rows(commit: int, existing: int) -> tuple[Any, str]:
    """One new key and nine updated ones; returns the rows and the new key."""
    import pyarrow as pa

    new_key = f"n{commit:06d}"
    updated = [f"k{(commit * 7 + j) % existing:06d}" for j in range(9)]
    keys = [new_key, *updated]
    rows = pa.table(
        {
            KEY: keys,
            PARTITION: ["01"] * len(keys),
            ORDERING: pa.array([commit + 2] * len(keys), pa.int64()),
            "amount": [float(commit)] * len(keys),
            "rider": ["rider-new"] * len(keys),
        }
    )
    return rows, new_key


def writer_options() -> dict[str, str]:
    return {
        "hoodie.table.name": "fresh",
        "hoodie.datasource.write.recordkey.field": KEY,
        "hoodie.datasource.write.precombine.field": ORDERING,
        "hoodie.datasource.write.partitionpath.field": PARTITION,
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.operation": "upsert",
    }


# -- targets -------------------------------------------------------------------------------
@dataclass
class Site:
    """Where one path x target's tables live and how a reader sees them."""

    target: str
    uri: Callable[[str], str]  # a table name -> its URI
    storage_options: dict[str, Any]
    sync_options: Callable[[str], dict[str, str]]  # a table name -> the hook's options
    probe: Callable[[str, str, str], bool]  # (table name, new key, instant) -> visible


def duckdb_site(work: Path) -> Iterator[Site]:
    import duckdb

    database = work / "fresh.duckdb"
    connection = duckdb.connect(str(database))  # one instance shared with the target's

    def options(name: str) -> dict[str, str]:
        return {
            "hoodie.meta.sync.client.tool.class": "duckdb",
            "hoodie.duckdb.sync.database": str(database),
            "hoodie.duckdb.sync.table_name": name,
        }

    def probe(name: str, key: str, instant: str) -> bool:
        cursor = connection.cursor()
        try:
            query = f'SELECT count(*) FROM "{name}" WHERE "{KEY}" = ?'
            found = cursor.execute(query, [key]).fetchone()
        except duckdb.CatalogException:  # the view is not there yet
            return False
        finally:
            cursor.close()
        return found is not None and found[0] == 1

    try:
        yield Site("duckdb", lambda name: str(work / name), {}, options, probe)
    finally:
        connection.close()


def bigquery_site(work: Path) -> Iterator[Site]:
    from hudi_sync.warehouse.common.marker import SyncMarker
    from tests.bigquery_emulator import running_bigquery_emulator
    from tests.objectstores import running_gcs_server

    (work / "gcs").mkdir(parents=True, exist_ok=True)
    (work / "bigquery").mkdir(parents=True, exist_ok=True)
    with (
        running_gcs_server(work / "gcs") as gcs,
        running_bigquery_emulator(gcs, work / "bigquery") as emulator,
    ):
        bucket = gcs.make_bucket("fresh")
        client = emulator.client()
        dataset = f"fresh_{uuid.uuid4().hex[:8]}"

        def options(name: str) -> dict[str, str]:
            prefix = "hoodie.gcp.bigquery.sync."
            return {
                "hoodie.meta.sync.client.tool.class": "bigquery",
                prefix + "project_id": emulator.project,
                prefix + "dataset_name": dataset,
                prefix + "table_name": name,
                prefix + "api_endpoint": emulator.endpoint_url,
            }

        def probe(name: str, key: str, instant: str) -> bool:
            from google.api_core.exceptions import NotFound

            try:
                view = client.get_table(f"{emulator.project}.{dataset}.{name}")
            except NotFound:
                return False
            marker = SyncMarker.parse(view.description)
            return marker is not None and marker.instant == instant

        yield Site(
            "bigquery", lambda name: f"gs://{bucket}/{name}", gcs.storage_options, options, probe
        )


def snowflake_site(work: Path) -> Iterator[Site]:
    import snowflake.connector

    from hudi_sync.warehouse.snowflake.schema import sql_name
    from tests.snowflake_emulation import EmulatedSnowflake

    with running_s3() as s3:
        bucket = s3.make_bucket("fresh")
        emulation = EmulatedSnowflake(s3.storage_options)
        with emulation.patched():
            connection = snowflake.connector.connect(database="hudi", schema="lake")

            def options(name: str) -> dict[str, str]:
                prefix = "hoodie.snowflake.sync."
                return {
                    "hoodie.meta.sync.client.tool.class": "snowflake",
                    prefix + "database": "hudi",
                    prefix + "schema": "lake",
                    prefix + "table_name": name,
                    prefix + "storage_integration": "lake_s3",
                }

            def probe(name: str, key: str, instant: str) -> bool:
                import snowflake.connector.errors

                cursor = connection.cursor()
                view = f"HUDI.LAKE.{sql_name(name)}"
                try:
                    cursor.execute(
                        f"SELECT COUNT(*) FROM {view} WHERE {sql_name(KEY)} = %s", (key,)
                    )
                    found = cursor.fetchall()
                except snowflake.connector.errors.ProgrammingError:  # no view yet
                    return False
                finally:
                    cursor.close()
                return bool(found) and found[0][0] == 1

            try:
                yield Site(
                    "snowflake",
                    lambda name: f"s3://{bucket}/{name}",
                    s3.storage_options,
                    options,
                    probe,
                )
            finally:
                connection.close()


@contextlib.contextmanager
def running_s3() -> Iterator[Any]:
    """moto's S3 server on 127.0.0.1, as the test suite runs it but in a process of its
    own (``--serve-s3``), so its work does not take this process's GIL."""
    from tests.objectstores import S3Store, _stop_process

    command = [sys.executable, "-m", "benchmarks.bench_freshness", "--serve-s3"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        yield S3Store(f"http://127.0.0.1:{port}")
    finally:
        _stop_process(process)  # type: ignore[arg-type]


def serve_s3() -> None:
    """The S3 server of ``running_s3``: prints its port, then serves until killed."""
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    from tests.objectstores import _PreconditionsInOneStep

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    app = _PreconditionsInOneStep(DomainDispatcherApplication(create_backend_app))
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler)
    print(server.server_port, flush=True)
    server.serve_forever()


SITES = {
    "duckdb": contextlib.contextmanager(duckdb_site),
    "bigquery": contextlib.contextmanager(bigquery_site),
    "snowflake": contextlib.contextmanager(snowflake_site),
}


# -- part 1: latency -------------------------------------------------------------------------
@dataclass(frozen=True)
class Polling:
    step: float  # the probe's wait between queries
    watch_interval: float  # watch's own poll interval
    timeout: float  # a commit not visible by then fails the benchmark


def wait_visible(probe: Callable[[], bool], polling: Polling, what: str) -> tuple[float, float]:
    """Poll until ``probe()`` is true; the monotonic time it first was, and the duration
    of that last (successful) probe. Between probes it waits the poll step, or as long
    as the last probe took if that was longer: the probe never keeps the target (an
    emulator serving the sync it waits for) busy more than half the time."""
    deadline = time.monotonic() + polling.timeout
    while True:
        started = time.monotonic()
        if probe():
            done = time.monotonic()
            return done, done - started
        took = time.monotonic() - started
        if time.monotonic() > deadline:
            raise BenchmarkError(f"{what}: not visible after {polling.timeout:g} s")
        time.sleep(max(polling.step, took))


@contextlib.contextmanager
def watching(
    uri: str, options: Mapping[str, Any], site: Site, polling: Polling
) -> Iterator[dict[str, float]]:
    """``watch`` of ``uri`` in a thread, stopped (and checked for errors) on exit;
    yields the monotonic time of each instant's ``sync`` event."""
    from hudi_sync.sync.watch import WatchEvent, watch

    stop = threading.Event()
    errors: list[str] = []
    synced: dict[str, float] = {}

    def on_event(event: WatchEvent) -> None:
        if event.event == "error":
            errors.append(event.line())
        elif event.event == "sync" and event.instant is not None:
            synced[event.instant] = time.monotonic()

    thread = threading.Thread(
        target=watch,
        args=(uri, options, site.storage_options),
        kwargs={"interval": polling.watch_interval, "stop": stop, "on_event": on_event},
        name="watch",
        daemon=True,
    )
    thread.start()
    try:
        yield synced
    finally:
        stop.set()
        thread.join()
    if errors:
        raise BenchmarkError(f"watch reported errors: {errors[:3]}")


def measure_site(
    site: Site, path: str, preset: Preset, polling: Polling, clock: CompletionClock
) -> dict[str, Any]:
    """``preset.commits`` commits through ``path`` into a fresh table of ``site``, each
    followed by the same commit into the twin and its bare manifest sync."""
    from hudi_sync.spark.writing.writer import write_arrow
    from hudi_sync.sync.job import publish_manifest
    from hudi_sync.table import HudiTable

    name = f"{path}_{uuid.uuid4().hex[:6]}"
    uri, twin = site.uri(name), site.uri(f"{name}_ref")
    storage = site.storage_options
    plain = writer_options()
    hooked = {**plain, **site.sync_options(name), "hoodie.datasource.meta.sync.enable": "true"}
    sync_only = site.sync_options(name)
    first = base_rows(preset.base_rows)
    write_arrow(first, twin, plain, storage)
    publish_manifest(HudiTable.open(twin, storage))
    initial = write_arrow(first, uri, hooked if path == "hook" else plain, storage)
    if initial.sync is not None and not initial.sync.ok:
        raise BenchmarkError(f"{site.target} first sync: {initial.sync.error_summary()}")
    latencies: list[float] = []
    references: list[float] = []
    probes: list[float] = []
    returned: list[float] = []
    synced: list[float] = []
    watched = watching(uri, sync_only, site, polling) if path == "watch" else None
    with watched or contextlib.nullcontext({}) as sync_events:
        wait_visible(
            functools.partial(site.probe, name, first.column(KEY)[0].as_py(), initial.instant),
            polling,
            f"{site.target} {path} first sync",
        )
        for commit in range(preset.commits):
            rows, key = upsert_rows(commit, preset.base_rows)
            order = (True, False) if commit % 2 == 0 else (False, True)
            for through_path in order:
                if not through_path:  # the twin: the same commit, its bare manifest sync
                    written = write_arrow(rows, twin, plain, storage)
                    completed = clock.times[written.instant]
                    published = publish_manifest(HudiTable.open(twin, storage))
                    if published.manifest.instant != written.instant:
                        raise BenchmarkError(f"reference published {published.manifest.instant}")
                    references.append(time.monotonic() - completed)
                    continue
                written = write_arrow(rows, uri, hooked if path == "hook" else plain, storage)
                returned.append(time.monotonic() - clock.times[written.instant])
                if written.sync is not None and not written.sync.ok:
                    raise BenchmarkError(f"{site.target} hook: {written.sync.error_summary()}")
                seen, probe_s = wait_visible(
                    functools.partial(site.probe, name, key, written.instant),
                    polling,
                    f"{site.target} {path} commit {commit}",
                )
                completed = clock.times[written.instant]
                latencies.append(seen - completed)
                probes.append(probe_s)
                if path == "hook":  # the hook ran before the write returned
                    synced.append(returned[-1])
                else:  # the watch's event may follow the view's change by a moment
                    wait_visible(
                        functools.partial(operator.contains, sync_events, written.instant),
                        polling,
                        "watch's sync event",
                    )
                    synced.append(sync_events[written.instant] - completed)
    result = {
        "target": site.target,
        "path": path,
        "table": name,
        "commits": preset.commits,
        "latency_s": latencies,
        "reference_s": references,
        "write_returned_after_completion_s": returned,
        "synced_after_completion_s": synced,
        "last_probe_s": probes,
    }
    result["summary"] = latency_summary(result)
    return result


def latency_summary(result: dict[str, Any]) -> dict[str, float]:
    latencies, references = result["latency_s"], result["reference_s"]
    p50, p95 = percentile(latencies, 0.5), percentile(latencies, 0.95)
    ref50, ref95 = percentile(references, 0.5), percentile(references, 0.95)
    return {
        "p50_s": p50,
        "p95_s": p95,
        "reference_p50_s": ref50,
        "reference_p95_s": ref95,
        "p50_over_reference": p50 / ref50,
        "p95_over_reference_p95": p95 / ref95,
        "probe_p50_s": statistics.median(result["last_probe_s"]),
        "write_returned_p50_s": statistics.median(result["write_returned_after_completion_s"]),
        "synced_p50_s": percentile(result["synced_after_completion_s"], 0.5),
        "synced_p95_s": percentile(result["synced_after_completion_s"], 0.95),
    }


def bench_latency(
    preset: Preset, targets: list[str], paths: list[str], polling: Polling, work: Path
) -> dict[str, Any]:
    clock = CompletionClock()
    runs: list[dict[str, Any]] = []
    load_before = uptime()
    with clock.installed():
        for target in targets:
            site_work = work / target
            site_work.mkdir(parents=True, exist_ok=True)
            with SITES[target](site_work) as site:
                for path in paths:
                    run = measure_site(site, path, preset, polling, clock)
                    s = run["summary"]
                    log(
                        f"  {path:<5} {target:<9} p50 {s['p50_s'] * 1000:7.1f} ms  "
                        f"p95 {s['p95_s'] * 1000:7.1f} ms  reference p50 "
                        f"{s['reference_p50_s'] * 1000:6.1f} ms"
                    )
                    runs.append(run)
    return {
        "polling": asdict(polling),
        "uptime_before": load_before,
        "uptime_after": uptime(),
        "runs": runs,
    }


def print_latency(result: dict[str, Any]) -> None:
    polling = result["polling"]
    print(
        f"\nCommit-to-queryable latency (probe every {polling['step'] * 1000:g} ms, "
        f"watch interval {polling['watch_interval'] * 1000:g} ms); reference: the bare "
        "manifest sync of the same commit"
    )
    print(
        f"{'path':<6}{'target':<10}{'p50':>10}{'p95':>10}{'ref p50':>10}{'ref p95':>10}"
        f"{'x':>7}{'synced p50':>12}"
    )
    for run in result["runs"]:
        s = run["summary"]
        print(
            f"{run['path']:<6}{run['target']:<10}{s['p50_s'] * 1000:8.1f}ms"
            f"{s['p95_s'] * 1000:8.1f}ms{s['reference_p50_s'] * 1000:8.1f}ms"
            f"{s['reference_p95_s'] * 1000:8.1f}ms{s['p50_over_reference']:6.1f}x"
            f"{s['synced_p50_s'] * 1000:10.1f}ms"
        )
    print("  synced: from the completion to the hook's return / watch's sync event")
    print(f"load: before {result['uptime_before']}\n      after  {result['uptime_after']}")


# -- part 2: the hook's share of a write -----------------------------------------------------
def hook_child(mode: str, table: str, incoming: str, database: str) -> dict[str, Any]:
    """One 1M-row upsert (``mode`` ``hook`` or ``plain``) in this fresh process."""
    import duckdb
    from pyspark.sql import functions as F

    import hudi_sync.spark.writing.writer as writer_module
    from benchmarks.bench_writer import write_options
    from hudi_sync.spark import local_session, write
    from hudi_sync.sync.hook import run_post_commit_hook
    from hudi_sync.sync.job import SyncReport

    sync = {
        "hoodie.meta.sync.client.tool.class": "duckdb",
        "hoodie.duckdb.sync.database": database,
        "hoodie.duckdb.sync.table_name": "bench",
    }
    before = run_post_commit_hook(table, sync)  # the steady state: synced at every commit
    if not before.ok:
        raise BenchmarkError(f"pre-sync: {before.error_summary()}")
    hook_seconds: list[float] = []

    def timed_hook(*args: Any, **kwargs: Any) -> SyncReport:
        started = time.monotonic()
        try:
            return run_post_commit_hook(*args, **kwargs)
        finally:
            hook_seconds.append(time.monotonic() - started)

    writer_module.run_post_commit_hook = timed_hook  # type: ignore[attr-defined]
    spark = local_session(f"bench-freshness-{mode}")
    spark.range(1000).groupBy((F.col("id") % 3).alias("g")).count().collect()  # warm up
    rows = spark.read.parquet(incoming)
    options = write_options("upsert")
    if mode == "hook":
        options |= sync | {"hoodie.datasource.meta.sync.enable": "true"}
    clock = CompletionClock()
    with clock.installed():
        started = time.monotonic()
        written = write(rows, table, options)
        ended = time.monotonic()
    spark.stop()
    completed = clock.times[written.instant]
    result: dict[str, Any] = {
        "mode": mode,
        "seconds": ended - started,
        "to_completion_seconds": completed - started,  # the write up to its commit
        "after_completion_seconds": ended - completed,  # clean, archive and the hook
        "instant": written.instant,
    }
    if mode == "hook":
        if written.sync is None or not written.sync.ok or len(hook_seconds) != 1:
            raise BenchmarkError(f"hook: {written.sync and written.sync.error_summary()}")
        result["hook_seconds"] = hook_seconds[0]
        result["hook_action"] = [r.action for r in written.sync.results]
        with duckdb.connect(database, read_only=True) as connection:
            found = connection.execute(
                f"SELECT count(*), max(_hoodie_commit_time) FROM bench WHERE {PARTITION} = ?",
                [new_day(incoming)],
            ).fetchone()
        if found is None:
            raise BenchmarkError("the DuckDB view returned no row")
        result["new_day_rows"], result["new_day_commit"] = found
    elif hook_seconds:
        raise BenchmarkError("the hook ran on a write without meta sync")
    return result


def new_day(incoming: str) -> str:
    """The day only the upsert's new keys have: the largest ``day`` of the incoming rows."""
    import pyarrow.dataset as ds

    days = ds.dataset(incoming, format="parquet").to_table(columns=[PARTITION]).column(0)
    return str(max(days.unique().to_pylist()))


def bench_hook_share(preset: Preset, cache: Path) -> dict[str, Any]:
    import pyarrow.dataset as ds

    from benchmarks.bench_writer import PRESETS as WRITER_PRESETS
    from benchmarks.bench_writer import generate, link_copy, run_benchmark_child

    writer_preset = WRITER_PRESETS[preset.writer_preset]
    table, incoming, _touched = generate(writer_preset, cache)
    expected_new = ds.dataset(str(incoming), format="parquet").count_rows(
        filter=ds.field(PARTITION) == new_day(str(incoming))
    )
    work = cache / "freshness_work"
    runs: dict[str, list[dict[str, Any]]] = {"plain": [], "hook": []}
    load_before = uptime()
    for attempt in range(preset.hook_repeat):
        for mode in ("plain", "hook") if attempt % 2 == 0 else ("hook", "plain"):
            shutil.rmtree(work, ignore_errors=True)
            link_copy(table, work / "table")
            args = [mode, str(work / "table"), str(incoming), str(work / "sync.duckdb")]
            run = run_benchmark_child("benchmarks.bench_freshness", args)
            if mode == "hook" and (
                run["new_day_rows"] != expected_new or run["new_day_commit"] != run["instant"]
            ):
                raise BenchmarkError(f"the hooked sync shows {run}, not {expected_new} new rows")
            runs[mode].append(run)
            extra = f", hook {run['hook_seconds']:.3f} s" if mode == "hook" else ""
            extra += f", after the commit {run['after_completion_seconds']:.3f} s"
            log(f"  run {attempt + 1} {mode}: {run['seconds']:.1f} s{extra}")
    shutil.rmtree(work, ignore_errors=True)
    hooked, plain = runs["hook"], runs["plain"]
    hook_s = statistics.median(r["hook_seconds"] for r in hooked)
    write_s = statistics.median(r["seconds"] for r in hooked)
    plain_s = statistics.median(r["seconds"] for r in plain)
    shares = [r["hook_seconds"] / r["seconds"] for r in hooked]
    return {
        "writer_preset": asdict(writer_preset),
        "uptime_before": load_before,
        "uptime_after": uptime(),
        "runs": runs,
        "summary": {
            "hook_median_s": hook_s,
            "write_with_hook_median_s": write_s,
            "write_without_hook_median_s": plain_s,
            "share": statistics.median(shares),
            "with_over_without": write_s / plain_s,
            # the hook runs after the commit: what it adds is there, the rest is noise
            "after_commit_with_hook_median_s": statistics.median(
                r["after_completion_seconds"] for r in hooked
            ),
            "after_commit_without_hook_median_s": statistics.median(
                r["after_completion_seconds"] for r in plain
            ),
            "target_share": HOOK_SHARE_TARGET,
            "meets_target": statistics.median(shares) <= HOOK_SHARE_TARGET,
        },
    }


def print_hook_share(result: dict[str, Any]) -> None:
    s, p = result["summary"], result["writer_preset"]
    print(
        f"\nThe hook's share of an upsert of {p['upsert_rows']:,} rows into "
        f"{p['base_rows']:,} (DuckDB target; medians of {len(result['runs']['hook'])})"
    )
    print(
        f"  write with the hook {s['write_with_hook_median_s']:.2f} s (hook "
        f"{s['hook_median_s']:.3f} s: share {s['share']:.2%}, target <= "
        f"{s['target_share']:.0%}); without {s['write_without_hook_median_s']:.2f} s "
        f"({s['with_over_without']:.3f}x)"
    )
    print(
        f"  after the commit: {s['after_commit_with_hook_median_s']:.3f} s with the hook, "
        f"{s['after_commit_without_hook_median_s']:.3f} s without"
    )
    print(f"load: before {result['uptime_before']}\n      after  {result['uptime_after']}")


# -- main ------------------------------------------------------------------------------------
def _names(text: str, known: tuple[str, ...], parser: argparse.ArgumentParser) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names or set(names) - set(known):
        parser.error(f"of {', '.join(known)}: got {text!r}")
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="small")
    parser.add_argument("--only", choices=("latency", "hook-share"))
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--paths", default=",".join(PATHS))
    parser.add_argument("--poll-step", type=float, default=0.01, help="seconds")
    parser.add_argument("--watch-interval", type=float, default=0.1, help="seconds")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds a commit may take")
    parser.add_argument("--cache", type=Path, default=RESULTS_DIR / "tables")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "freshness.json")
    parser.add_argument("--child", nargs=4, metavar=("MODE", "TABLE", "INCOMING", "DATABASE"))
    parser.add_argument("--serve-s3", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_s3:
        serve_s3()
        return 0
    if args.child:
        print(json.dumps(hook_child(*args.child)))
        return 0
    preset = PRESETS[args.preset]
    targets = _names(args.targets, TARGETS, parser)
    paths = _names(args.paths, PATHS, parser)
    polling = Polling(args.poll_step, args.watch_interval, args.timeout)
    report: dict[str, Any] = {
        "preset": args.preset,
        "environment": environment(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if args.only in (None, "latency"):
        work = args.cache / f"freshness-{uuid.uuid4().hex[:8]}"
        try:
            report["latency"] = bench_latency(preset, targets, paths, polling, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print_latency(report["latency"])
    if args.only in (None, "hook-share"):
        report["hook_share"] = bench_hook_share(preset, args.cache)
        print_hook_share(report["hook_share"])
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
