"""``hudi-sync watch`` as a service: a real CLI subprocess that outlives a table's
``hoodie.properties`` going away and a BigQuery emulator being stopped, picks up tables
appearing under a root, and stops on a real SIGTERM with exit 0; bad options are refused
with one line and exit 2 before the first poll.

Nothing here sleeps: each step awaits an event line (or the exit) with a deadline."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

from hudi_sync.cli.app import app
from hudi_sync.sync.hook import DUCKDB_DATABASE, SYNC_TOOLS
from hudi_sync.sync.job import SyncReport
from hudi_sync.sync.watch import WatchEvent, watch
from hudi_sync.table import HudiTable
from tests.bigquery_emulator import PROJECT, emulator_env, ensure_venv
from tests.fixture_tables import fixture_tables
from tests.objectstores import _free_port, _stop_process, wait_for_http
from tests.timeline_files import HeldBackCommits
from tests.warehouse_rows import canonical, hudi_rs_rows, same_columns

REPO = Path(__file__).resolve().parents[1]
DEADLINE = 180.0  # seconds any one awaited step may take on a busy machine
Event = dict[str, Any]


class WatchProcess:
    """``hudi-sync watch --json ARGS`` as a child process; its stdout events are read by a
    thread into a queue, so the test awaits them with a deadline."""

    def __init__(self, args: list[str]) -> None:
        command = [sys.executable, "-m", "hudi_sync.cli.app", "watch", "--json", *args]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        self.events: list[Event] = []  # every event read so far
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr: list[str] = []
        assert self.process.stdout is not None and self.process.stderr is not None
        self._readers = [
            threading.Thread(target=self._read, args=(self.process.stdout, self._lines.put)),
            threading.Thread(target=self._read, args=(self.process.stderr, self._stderr.append)),
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream: Any, put: Callable[[Any], None]) -> None:
        for line in stream:
            put(line)
        put(None)

    def await_event(self, wanted: Callable[[Event], bool], what: str) -> Event:
        """The next event (in order) for which ``wanted`` is true; fail at the deadline."""
        deadline = time.monotonic() + DEADLINE
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {what} within {DEADLINE} s: {self.events}") from None
            if line is None:
                raise AssertionError(f"watch exited before {what}: {self.events} {self.stderr}")
            event = json.loads(line)
            self.events.append(event)
            if wanted(event):
                return event

    def terminate(self) -> int:
        """Send SIGTERM; return the exit code, reading the events printed until the exit."""
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=DEADLINE)
        for reader in self._readers:
            reader.join(timeout=DEADLINE)
        while (line := self._lines.get_nowait()) is not None:
            self.events.append(json.loads(line))
        return code

    @property
    def stderr(self) -> str:
        return "".join(line for line in self._stderr if line is not None)

    def __enter__(self) -> WatchProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def _is(kind: str, table: str | None = None, instant: str | None = None) -> Callable[[Event], bool]:
    def wanted(event: Event) -> bool:
        return (
            event["event"] == kind
            and (table is None or event["table"] == table)
            and (instant is None or event["instant"] == instant)
        )

    return wanted


def _duckdb_args(database: Path) -> list[str]:
    return ["-c", f"{SYNC_TOOLS}=duckdb", "-c", f"{DUCKDB_DATABASE}={database}"]


def _assert_view_is_the_table(database: Path, view: str, table: Path) -> None:
    with duckdb.connect(str(database), read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        shown = con.sql(f'SELECT * FROM "{view}"').to_arrow_table()
    ours, theirs = same_columns(shown, hudi_rs_rows(str(table)))
    assert canonical(ours) == canonical(theirs), view
    assert theirs.num_rows > 0


def _stopped_cleanly(proc: WatchProcess) -> None:
    assert proc.terminate() == 0, proc.stderr
    assert proc.events[-1]["event"] == "stopped", proc.events
    assert proc.events[-1]["reason"] == "stop requested"


def test_properties_renamed_away_and_back(fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A table briefly without ``hoodie.properties`` is an error reported each retry,
    the wait doubling up to --max-backoff; once it is back the new commit is synced and a
    success resets the backoff."""
    path = fixture_copy("cow/v8_simplekeygen_nonhivestyle")
    held = HeldBackCommits(path, keep=1)
    database = tmp_path / "w.duckdb"
    props = path / ".hoodie" / "hoodie.properties"
    away = path / ".hoodie" / "hoodie.properties.away"
    args = [str(path), *_duckdb_args(database), "--interval", "0.1", "--max-backoff", "0.4"]
    with WatchProcess(args) as proc:
        proc.await_event(_is("sync", str(path), held.commits[0]), "the first sync")
        props.rename(away)
        errors = [proc.await_event(_is("error", str(path)), "an error")]
        held.complete_next()  # the table gains a commit while its properties are away
        errors += [proc.await_event(_is("error", str(path)), "an error") for _ in range(2)]
        assert all("hoodie.properties" in e["error"] for e in errors), errors
        assert [e["retry_in"] for e in errors] == [0.2, 0.4, 0.4]
        away.rename(props)
        proc.await_event(_is("sync", str(path), held.commits[1]), "the sync after")
        props.rename(away)  # a success reset the backoff: it starts at 2 x interval again
        assert proc.await_event(_is("error", str(path)), "an error")["retry_in"] == 0.2
        away.rename(props)
        _stopped_cleanly(proc)
    assert not [e for e in proc.events if e["event"] == "sync" and e["errors"]]
    _assert_view_is_the_table(database, "v8_simplekeygen_nonhivestyle", path)


def test_sigterm_wakes_the_wait_between_polls(fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """With an hour between polls, only a wait that wakes on the signal exits in time."""
    path = fixture_copy("cow/v6_nonpartitioned")
    database = tmp_path / "w.duckdb"
    instant = HudiTable.open(str(path)).latest_instant()
    with WatchProcess([str(path), *_duckdb_args(database), "--interval", "3600"]) as proc:
        proc.await_event(_is("sync", str(path), instant), "the sync")
        _stopped_cleanly(proc)
    assert proc.events[-1]["syncs"] == 1
    _assert_view_is_the_table(database, "v6_nonpartitioned", path)


def test_tables_and_a_root_where_a_new_table_appears(  # type: ignore[no-untyped-def]
    fixture_copy, unpack_table, tmp_path: Path
) -> None:
    """Two tables named on the command line and a root re-listed every poll: a table
    moved in under the root later is discovered and synced under its path's name."""
    first = fixture_copy("cow/v6_nonpartitioned")
    second = fixture_copy("cow/v8_nonpartitioned")
    sources = {t.name.split("/cow/")[-1]: t for t in fixture_tables() if "/cow/" in t.name}
    root = tmp_path / "lake"
    orders = root / "sales" / "orders"
    shutil.copytree(unpack_table(sources["v6_simplekeygen_nonhivestyle"]), orders)
    database = tmp_path / "w.duckdb"
    args = [str(first), str(second), "--root", str(root), *_duckdb_args(database)]
    with WatchProcess([*args, "--interval", "0.2"]) as proc:
        proc.await_event(_is("discovered", str(orders)), "the root's table")
        for table in (first, second, orders):
            proc.await_event(_is("sync", str(table)), f"the sync of {table}")
        returns = root / "sales" / "returns"
        incoming = root / ".incoming"  # hidden folders are not searched: a whole table appears
        shutil.copytree(unpack_table(sources["v8_complexkeygen_hivestyle"]), incoming)
        incoming.rename(returns)
        proc.await_event(_is("discovered", str(returns)), "the new table")
        proc.await_event(_is("sync", str(returns)), "the sync of the new table")
        _stopped_cleanly(proc)
    synced = [e["table"] for e in proc.events if e["event"] == "sync"]
    assert sorted(synced) == sorted(str(t) for t in (first, second, orders, returns))
    assert not [e for e in proc.events if e["event"] == "error"], proc.events
    for view, table in {
        "v6_nonpartitioned": first,
        "v8_nonpartitioned": second,
        "sales_orders": orders,
        "sales_returns": returns,
    }.items():
        _assert_view_is_the_table(database, view, table)


def test_a_failing_target_is_retried_until_it_recovers(fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A DuckDB file on a volume not mounted yet makes the target fail: reported with the
    failing target named, retried with backoff, synced once the folder exists."""
    path = fixture_copy("cow/v6_nonpartitioned")
    database = tmp_path / "mnt" / "w.duckdb"
    instant = HudiTable.open(str(path)).latest_instant()
    args = [str(path), *_duckdb_args(database), "--interval", "0.1", "--max-backoff", "0.2"]
    with WatchProcess(args) as proc:
        errors = [
            proc.await_event(_is("error", str(path), instant), "the target's error")
            for _ in range(2)
        ]
        assert [list(e["errors"]) for e in errors] == [[f"duckdb:{database}"]] * 2
        assert errors[0]["error"].startswith(f"duckdb:{database}: ")
        assert [e["retry_in"] for e in errors] == [0.2, 0.2]
        database.parent.mkdir()
        proc.await_event(_is("sync", str(path), instant), "the sync after")
        _stopped_cleanly(proc)
    _assert_view_is_the_table(database, "v6_nonpartitioned", path)


class PrivateEmulator:
    """A local-bigquery of this test alone, on a port and data folder that stay the same
    across a stop and a restart (the session's emulator is never stopped)."""

    def __init__(self, gcs_root: Path, base: Path) -> None:
        self.binary = ensure_venv()
        self.env = emulator_env(gcs_root)
        self.base = base
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        args = [
            str(self.binary), "serve", "--host", "127.0.0.1", "--port", str(self.port),
            "--grpc-port", str(_free_port()), "--project", PROJECT,
            "--data-dir", str(self.base / "data"),
        ]  # fmt: skip
        with open(self.base / "server.log", "ab") as log:
            self.process = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=self.env
            )
        datasets = f"{self.url}/bigquery/v2/projects/{PROJECT}/datasets"
        assert wait_for_http(self.process, datasets, "local-bigquery", DEADLINE, 10.0), (
            self.base / "server.log"
        ).read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        if self.process is not None:
            _stop_process(self.process)
            self.process = None


@pytest.fixture
def private_emulator(gcs_server, tmp_path: Path) -> Iterator[PrivateEmulator]:  # type: ignore[no-untyped-def]
    emulator = PrivateEmulator(gcs_server.root, tmp_path)
    emulator.start()
    try:
        yield emulator
    finally:
        emulator.stop()


def test_warehouse_stopped_and_restarted(  # type: ignore[no-untyped-def]
    fixture_copy, gcs_server, private_emulator: PrivateEmulator
) -> None:
    """A table on gs:// synced to BigQuery: the emulator stops, the table gains a commit,
    watch reports the warehouse down on one line, the emulator comes back; watch is still
    running and brings the view to that commit."""
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import bigquery

    path = fixture_copy("cow/v8_simplekeygen_nonhivestyle")
    held = HeldBackCommits(path, keep=1)
    bucket = gcs_server.make_bucket()
    uri = gcs_server.upload_dir(path, bucket, "lake/t")  # data files of every commit
    dataset = f"ds_{uuid.uuid4().hex[:10]}"
    bq = "hoodie.gcp.bigquery.sync."
    args = [uri, "-o", "token=anon", "-o", f"endpoint_url={gcs_server.endpoint_url}"]
    args += ["-c", f"{SYNC_TOOLS}=bigquery", "-c", f"{bq}project_id={PROJECT}"]
    args += ["-c", f"{bq}dataset_name={dataset}", "-c", f"{bq}table_name=t"]
    args += ["-c", f"{bq}api_endpoint={private_emulator.url}", "--interval", "0.2"]
    args += ["-c", f"{bq}retry_seconds=2"]  # each call's retries, before the sync fails

    def view_marker() -> str:
        client = bigquery.Client(
            project=PROJECT,
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options=ClientOptions(api_endpoint=private_emulator.url),
        )
        return client.get_table(f"{PROJECT}.{dataset}.t").description or ""

    with WatchProcess([*args, "--max-backoff", "1"]) as proc:
        proc.await_event(_is("sync", uri, held.commits[0]), "the first sync")
        assert f"instant={held.commits[0]} " in view_marker()
        private_emulator.stop()
        timeline = held.timeline
        before = set(timeline.iterdir())
        held.complete_next()
        fs = gcs_server.fs()
        order = {".requested": 0, ".inflight": 1}  # as a writer completes an instant
        for file in sorted(set(timeline.iterdir()) - before, key=lambda f: order.get(f.suffix, 2)):
            fs.put_file(str(file), f"{bucket}/lake/t/.hoodie/timeline/{file.name}")
        # The warehouse being down is reported (not a sync stuck in the client's retries).
        down = proc.await_event(_is("error", uri, held.commits[1]), "an error while it is down")
        assert "BigQuery" in down["error"] and down["retry_in"] > 0
        private_emulator.start()
        proc.await_event(_is("sync", uri, held.commits[1]), "the sync after the restart")
        assert f"instant={held.commits[1]} " in view_marker()
        _stopped_cleanly(proc)


runner = CliRunner()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "error: watch needs a table URI or --root"),
        (["T", "--interval", "0"], "error: --interval 0: must be a number of seconds above 0"),
        (
            ["T", "--interval", "5", "--max-backoff", "1"],
            "error: --max-backoff 1: must be a number of seconds not below --interval (5)",
        ),
        (["T", "--max-syncs", "0"], "error: --max-syncs 0: must be at least 1"),
        (
            ["T", "-c", f"{SYNC_TOOLS}=duckdb,hive"],
            f"error: {SYNC_TOOLS}: unknown sync tool 'hive' (bigquery, snowflake, duckdb, iceberg)",
        ),
        (["T", "--props", "MISSING"], "error: properties file MISSING: No such file or directory"),
        (["T", "-c", "novalue"], "error: option 'novalue' is not KEY=VALUE"),
    ],
)
def test_bad_options_exit_2_with_one_line_before_the_first_poll(
    tmp_path: Path, args: list[str], message: str
) -> None:
    table = tmp_path / "never-polled"  # no table: a poll would report it, not exit
    missing = tmp_path / "missing.properties"
    argv = [str(table) if a == "T" else str(missing) if a == "MISSING" else a for a in args]
    result = runner.invoke(app, ["watch", *argv])
    assert result.exit_code == 2, result.output
    expected = message.replace("MISSING", str(missing))
    assert result.stderr.strip() == expected
    assert result.stdout == ""


def test_a_bad_manifest_option_is_a_bad_option_not_a_transient_error(tmp_path: Path) -> None:
    args = ["watch", str(tmp_path), "-c", f"{SYNC_TOOLS}=duckdb"]
    result = runner.invoke(app, [*args, "-c", "hoodie.manifest.delta.commits=x"])
    assert result.exit_code == 2, result.output
    message = result.stderr.strip()
    assert message.startswith("error: hoodie.manifest.delta.commits") and "\n" not in message


def test_a_stop_finishes_the_sync_in_progress_not_the_rest_of_the_poll(  # type: ignore[no-untyped-def]
    fixture_copy, tmp_path: Path
) -> None:
    first = fixture_copy("cow/v6_nonpartitioned")
    second = fixture_copy("cow/v8_nonpartitioned")
    stop = threading.Event()
    reports: list[SyncReport] = []
    events: list[WatchEvent] = []

    def on_report(report: SyncReport) -> None:  # the stop arrives while a poll is under way
        reports.append(report)
        stop.set()

    options = {SYNC_TOOLS: "duckdb", DUCKDB_DATABASE: str(tmp_path / "w.duckdb")}
    syncs = watch(
        [str(first), str(second)], options, on_report=on_report, stop=stop, on_event=events.append
    )
    assert syncs == 1 and [r.table for r in reports] == [str(first)]
    assert [e.event for e in events] == ["sync", "stopped"]


def test_a_table_moved_back_is_synced_again(fixture_copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """An older latest instant than the one synced (a restore) runs the hook too."""
    path = fixture_copy("cow/v8_simplekeygen_nonhivestyle")
    held = HeldBackCommits(path, keep=len(HudiTable.open(str(path)).completed_commits()))
    assert held.commits[-2:] and held.remaining == []
    last = held.commits[-1]
    stop = threading.Event()
    reports: list[SyncReport] = []

    def on_report(report: SyncReport) -> None:
        reports.append(report)
        if len(reports) == 1:  # move the table back: its last commit leaves the timeline
            for file in held.timeline.iterdir():
                if file.is_file() and file.name.startswith(last):
                    file.rename(held.store / file.name)
        else:
            stop.set()

    options = {SYNC_TOOLS: "duckdb", DUCKDB_DATABASE: str(tmp_path / "w.duckdb")}
    watch(str(path), options, interval=0.05, max_backoff=0.05, on_report=on_report, stop=stop)
    assert [r.instant for r in reports] == [last, held.commits[-2]]
