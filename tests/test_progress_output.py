"""Progress an operator can follow: ``backfill`` streams a JSON line per table as it
completes (a progress bar on a terminal), ``watch --json`` lines carry a timestamp and a
duration and no SQL unless ``--verbose``, and a sync waiting on another process's DuckDB
lock says so, once, naming the file.

Each lock is a real DuckDB write connection held by another process than the syncing
one. Nothing sleeps: each step awaits a line (or the exit) with a deadline."""

from __future__ import annotations

import json
import logging
import os
import pty
import queue
import select
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

import duckdb
import pytest
from typer.testing import CliRunner

from hudi_sync.cli.app import app
from hudi_sync.errors import HudiSyncError
from hudi_sync.sync.hook import DUCKDB_DATABASE, SYNC_TOOLS
from hudi_sync.sync.job import sync_table
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.duckdb import DuckDBTarget
from tests.fixture_tables import fixture_tables

REPO = Path(__file__).resolve().parents[1]
DEADLINE = 120.0  # seconds any one awaited step may take on a busy machine
TABLE = "cow/v6_nonpartitioned"
LOCK_WAIT = "is locked by another writer: waiting up to"


def _lake(
    unpack_table: Callable[..., Path], root: Path, good: list[str], broken: list[str]
) -> None:
    """Copies of one fixture table under ``root``; the ``broken`` ones claim table version 3
    (refused when opened, before any warehouse is touched)."""
    fixture = next(t for t in fixture_tables() if t.name.endswith(TABLE))
    for name in [*good, *broken]:
        shutil.copytree(unpack_table(fixture), root / name)
    for name in broken:
        props = root / name / ".hoodie" / "hoodie.properties"
        props.write_text(
            props.read_text().replace("hoodie.table.version=6", "hoodie.table.version=3")
        )


def _duckdb_conf(database: Path) -> list[str]:
    return ["-c", f"{SYNC_TOOLS}=duckdb", "-c", f"{DUCKDB_DATABASE}={database}"]


def _views(database: Path) -> set[str]:
    with duckdb.connect(str(database), read_only=True) as con:
        rows = con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
    return {str(name) for (name,) in rows}


class Lines:
    """A child process's stream read line by line by a thread, awaited with a deadline."""

    def __init__(self, stream: IO[str]) -> None:
        self.seen: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line)
        self._queue.put(None)

    def next(self, what: str) -> str | None:
        """The next line (``None`` at the end of the stream); fail at the deadline."""
        try:
            line = self._queue.get(timeout=DEADLINE)
        except queue.Empty:
            raise AssertionError(f"no {what} within {DEADLINE} s: {self.seen}") from None
        if line is not None:
            self.seen.append(line)
        return line

    def until(self, wanted: Callable[[str], bool], what: str) -> str:
        while (line := self.next(what)) is not None:
            if wanted(line):
                return line
        raise AssertionError(f"the stream ended before {what}: {self.seen}")

    def rest(self) -> list[str]:
        self._thread.join(timeout=DEADLINE)
        lines = []
        while (line := self._queue.get_nowait()) is not None:
            lines.append(line)
            self.seen.append(line)
        return lines


def _cli(args: list[str], **popen: Any) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "hudi_sync.cli.app", *args]
    env = {**os.environ, "PYTHONPATH": str(REPO), "TERM": "xterm", "COLUMNS": "150"}
    env.pop("PYTHONUNBUFFERED", None)  # a pipe is block-buffered, as under a scheduler
    return subprocess.Popen(command, text=True, env=env, **popen)


@contextmanager
def _other_process_holding(database: Path) -> Iterator[subprocess.Popen[str]]:
    """A second process with a DuckDB write connection to ``database`` until the block ends."""
    code = (
        "import sys, duckdb\n"
        f"con = duckdb.connect({str(database)!r})\n"
        "print('held', flush=True)\n"
        "sys.stdin.read()\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield holder
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=DEADLINE)


def test_backfill_streams_each_table_as_it_completes(unpack_table, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``a`` fails at once; ``b`` waits on the DuckDB lock this test holds. The line of
    ``a`` arrives on the pipe while ``b`` is still waiting (it cannot finish while the lock
    is held), with the lock's message on stderr once; after the release ``b`` syncs."""
    root = tmp_path / "lake"
    _lake(unpack_table, root, good=["b"], broken=["a"])
    database = tmp_path / "w.duckdb"
    duckdb.connect(str(database)).close()
    held = duckdb.connect(str(database))  # this process holds the lock; the child waits
    child = _cli(
        ["backfill", str(root), *_duckdb_conf(database)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert child.stdout is not None and child.stderr is not None
        out, err = Lines(child.stdout), Lines(child.stderr)
        first = json.loads(out.until(lambda line: True, "the first table's line"))
        assert first["event"] == "table" and first["table"] == str(root / "a")
        assert "version 3" in first["errors"] and first["instant"] is None
        assert isinstance(first["duration_s"], float) and first["duration_s"] >= 0
        waiting = err.until(lambda line: LOCK_WAIT in line, "the lock message")
        assert f"DuckDB database {database} {LOCK_WAIT} 60 s" in waiting
        assert child.poll() is None  # b is in flight: its line cannot have been printed
        held.close()
        second = json.loads(out.until(lambda line: True, "the second table's line"))
        assert second["event"] == "table" and second["table"] == str(root / "b")
        assert second["errors"] == "" and second["instant"] is not None
        summary = json.loads(out.until(lambda line: True, "the summary"))
        assert summary == {
            "event": "summary",
            "root": str(root),
            "tables": 2,
            "synced": 1,
            "failed": 1,
            "duration_s": summary["duration_s"],
        }
        assert summary["duration_s"] >= second["duration_s"]
        assert child.wait(timeout=DEADLINE) == 1  # a table failed
        assert out.rest() == []
        assert [line for line in [*err.seen, *err.rest()] if LOCK_WAIT in line] == [waiting]
    finally:
        held.close()
        if child.poll() is None:
            child.kill()
            child.wait()
    assert _views(database) == {"b", "b_manifest", "b_history"}


def test_backfill_on_a_terminal_shows_the_table_in_flight(unpack_table, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """On a terminal (a pseudo-terminal here) the bar names the table being synced, while
    it waits on the lock, and the results table follows; no JSON line."""
    root = tmp_path / "lake"
    _lake(unpack_table, root, good=["first", "second"], broken=[])
    database = tmp_path / "w.duckdb"
    duckdb.connect(str(database)).close()
    held = duckdb.connect(str(database))
    leader, follower = pty.openpty()
    child = _cli(
        ["backfill", str(root), *_duckdb_conf(database)],
        stdin=follower,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    shown = b""

    def read_until(wanted: bytes) -> None:
        nonlocal shown
        deadline = time.monotonic() + DEADLINE
        while wanted not in shown:
            ready, _, _ = select.select([leader], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"no {wanted!r} within {DEADLINE} s: {shown!r}"
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the child exited and closed the terminal
                chunk = b""
            assert chunk, f"the output ended before {wanted!r}: {shown!r}"
            shown += chunk

    try:
        read_until(b"syncing first")
        read_until(b"0/2")
        held.close()
        read_until(b"backfill of")
        assert child.wait(timeout=DEADLINE) == 0
        read_until(str(root / "second").encode())
    finally:
        held.close()
        if child.poll() is None:
            child.kill()
            child.wait()
        os.close(leader)
    assert b'"event"' not in shown
    assert _views(database) >= {"first", "second"}


def test_a_sync_that_cannot_get_the_lock_says_so_once_then_fails_naming_the_file(  # type: ignore[no-untyped-def]
    unpack_table, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fixture = next(t for t in fixture_tables() if t.name.endswith(TABLE))
    path = tmp_path / "t"
    shutil.copytree(unpack_table(fixture), path)
    database = tmp_path / "w.duckdb"
    table = HudiTable.open(str(path))
    caplog.set_level(logging.WARNING, logger="hudi_sync")
    with _other_process_holding(database), pytest.raises(HudiSyncError) as refused:
        sync_table(table, [DuckDBTarget(str(database), "t", lock_wait=0.3)])
    error = str(refused.value)
    assert len(error.splitlines()) == 1
    assert error.startswith(f"DuckDB database {database} stayed locked for 0.3 s: ")
    waits = [r.getMessage() for r in caplog.records if LOCK_WAIT in r.getMessage()]
    assert len(waits) == 1 and waits[0].startswith(f"DuckDB database {database} {LOCK_WAIT} 0.3 s")
    assert not _views(database)  # nothing was written while locked
    # The lock released, the same sync succeeds and logs no wait.
    caplog.clear()
    again = sync_table(HudiTable.open(str(path)), [DuckDBTarget(str(database), "t")])
    assert again.ok, again.errors
    assert not [r for r in caplog.records if LOCK_WAIT in r.getMessage()]
    assert _views(database) == {"t", "t_manifest", "t_history"}


def _watch_lines(path: Path, database: Path, *flags: str) -> list[dict[str, Any]]:
    args = ["watch", str(path), *_duckdb_conf(database), "--json", "--max-syncs", "1", *flags]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_watch_json_lines_carry_a_timestamp_and_duration_and_sql_only_when_verbose(  # type: ignore[no-untyped-def]
    unpack_table, tmp_path: Path
) -> None:
    fixture = next(t for t in fixture_tables() if t.name.endswith(TABLE))
    path = tmp_path / "t"
    shutil.copytree(unpack_table(fixture), path)
    now = datetime.now(UTC)
    before = now.replace(microsecond=now.microsecond // 1000 * 1000)  # lines show milliseconds
    quiet = _watch_lines(path, tmp_path / "quiet.duckdb")
    after = datetime.now(UTC)
    assert [line["event"] for line in quiet] == ["sync", "stopped"]
    for line in quiet:
        stamp = datetime.fromisoformat(line["timestamp"])
        assert stamp.utcoffset() == timedelta(0) and before <= stamp <= after
        assert line["timestamp"].endswith("+00:00")
    sync, stopped = quiet
    # The fields of before keep their names.
    assert {"table", "instant", "error", "retry_in", "errors", "results", "plans"} <= set(sync)
    assert sync["table"] == str(path)
    assert sync["instant"] == HudiTable.open(str(path)).latest_instant()
    assert isinstance(sync["duration_s"], float) and sync["duration_s"] > 0
    assert sync["duration_s"] <= (after - before).total_seconds()
    assert stopped["duration_s"] is None and stopped["syncs"] == 1
    assert [p["action"] for p in sync["plans"]] == ["create"]
    assert all("steps" not in plan for plan in sync["plans"])
    assert "SELECT" not in json.dumps(sync).upper()  # no statement

    verbose = _watch_lines(path, tmp_path / "verbose.duckdb", "--verbose")
    steps = verbose[0]["plans"][0]["steps"]
    assert any(step.lstrip().upper().startswith("CREATE") for step in steps), steps
    assert len(json.dumps(verbose[0])) > 2 * len(json.dumps(sync))


def test_watch_refuses_verbose_without_json(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["watch", str(tmp_path), "--verbose"])
    assert result.exit_code == 2
    assert (
        result.stderr.strip()
        == "error: --verbose: only with --json (it adds each sync's statements)"
    )
