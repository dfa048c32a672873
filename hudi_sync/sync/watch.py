"""``hudi-sync watch``: a long-running service that polls tables' timelines and runs the
post-commit hook whenever a table's latest completed instant changes, for tables written
by engines that cannot call the hook themselves.

A service must outlive the faults of what it watches: an error opening, listing or
syncing a table (a storage hiccup, ``hoodie.properties`` briefly absent, a warehouse
down) is reported as an event and that table alone is retried with exponential backoff;
nothing but a stop request ends the loop. The waits between polls wait on a
``threading.Event``, so a stop request (a signal's handler sets it) wakes them at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hudi_sync.errors import BadInputError, HudiSyncError, first_line
from hudi_sync.extras import missing_extra
from hudi_sync.storage import open_location
from hudi_sync.sync.backfill import discover_tables, sync_discovered
from hudi_sync.sync.hook import run_post_commit_hook
from hudi_sync.sync.job import SyncReport
from hudi_sync.sync.names import NameClaims, shown
from hudi_sync.table import HudiTable

DEFAULT_INTERVAL = 10.0
DEFAULT_MAX_BACKOFF = 300.0


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class WatchEvent:
    """One thing the watcher did: ``sync`` (a table synced), ``error`` (opening, listing
    or syncing failed; retried in ``retry_in`` seconds), ``discovered`` (a new table
    under a root) or ``stopped`` (the loop ended; ``reason`` says why). ``at``: when it
    happened; ``duration``: the seconds the table's poll and sync (or failed attempt) took."""

    event: str
    table: str | None = None
    instant: str | None = None
    error: str | None = None
    retry_in: float | None = None
    reason: str | None = None
    syncs: int | None = None
    report: SyncReport | None = None
    duration: float | None = None
    at: datetime = field(default_factory=_now)

    def to_json(self, verbose: bool = False) -> dict[str, Any]:
        """The event as one JSON object: ``event``, ``timestamp`` (ISO-8601, UTC),
        ``table``, ``instant``, ``error``, ``retry_in`` and ``duration_s`` always (null when
        they do not apply), plus a sync's report fields. The SQL statements of the report's
        plans (``plans[].steps``, kilobytes a sync) only when ``verbose``: a log line per
        event should stay small."""
        record: dict[str, Any] = {
            "event": self.event,
            "timestamp": self.at.astimezone(UTC).isoformat(timespec="milliseconds"),
            "table": self.table,
            "instant": self.instant,
            "error": self.error,
            "retry_in": self.retry_in,
            "duration_s": None if self.duration is None else round(self.duration, 3),
        }
        if self.reason is not None:
            record["reason"] = self.reason
        if self.syncs is not None:
            record["syncs"] = self.syncs
        if self.report is not None:
            report = self.report.to_json()
            report.pop("table")
            report.pop("instant")
            if not verbose:
                for plan in report["plans"]:
                    plan.pop("steps")
            record.update(report)
        return record

    def line(self) -> str:
        """The event as one line of text (a table path holding a control character, which
        cannot be synced, shown quoted)."""
        where = shown(self.table or "")
        if self.event == "sync":
            return f"sync {where} {self.instant}: ok"
        if self.event == "error":
            at = f" {self.instant}" if self.instant else ""
            return f"error {where}{at}: {self.error} (retry in {self.retry_in:g} s)"
        if self.event == "stopped":
            return f"stopped ({self.reason}) after {self.syncs} syncs"
        return f"{self.event} {where}".rstrip()


@dataclass
class _Watched:
    """A table (or a root) the loop polls: what it last synced and its backoff state."""

    uri: str
    options: Mapping[str, Any]
    root: str | None = None  # the root a discovered table was found under
    synced: str | None = None
    failures: int = 0
    due: float = field(default=0.0)


def backoff(interval: float, failures: int, max_backoff: float) -> float:
    """The wait after ``failures`` consecutive failures: the interval doubled per failure,
    capped at ``max_backoff`` (never below the interval)."""
    return max(interval, min(interval * 2.0 ** min(failures, 64), max_backoff))


def _message(exc: BaseException) -> str:
    """One line naming the failure; errors not raised on purpose carry their type."""
    known = exc if isinstance(exc, HudiSyncError) else missing_extra(exc)
    if known is not None:
        return first_line(known)
    return f"{type(exc).__name__}: {first_line(exc)}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def watch(
    base_path: str | Sequence[str] = (),
    options: Mapping[str, Any] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    interval: float = DEFAULT_INTERVAL,
    max_syncs: int | None = None,
    on_report: Callable[[SyncReport], None] = lambda report: None,
    should_stop: Callable[[], bool] = lambda: False,
    *,
    roots: Sequence[str] = (),
    max_backoff: float = DEFAULT_MAX_BACKOFF,
    stop: threading.Event | None = None,
    on_event: Callable[[WatchEvent], None] = lambda event: None,
    replace_other_table: bool = False,
) -> int:
    """Watch tables (``base_path``: one URI or several) and every table under ``roots``
    (re-listed each poll; warehouse names as ``backfill`` gives them); sync each table
    whose latest completed instant differs from the one it last synced (newer or older).
    Return the number of successful syncs.

    ``on_report`` gets every sync's report, ``on_event`` every event. The loop ends when
    ``stop`` is set (its waits wake at once), ``should_stop()`` is true (checked between
    tables) or after ``max_syncs`` successful syncs; a sync in progress always finishes.

    Two tables under the roots with one warehouse name: the first to sync holds it for
    the whole run, the other gets an error event at each of its polls (naming both).
    Objects another table's sync made (their marker names another base) are refused
    the same way unless ``replace_other_table`` (``--force``).
    """
    paths = [base_path] if isinstance(base_path, str) else list(base_path)
    if not paths and not roots:
        raise BadInputError("watch needs a table URI or a root to watch")
    hook_options: Mapping[str, Any] = options or {}
    stop_event = stop or threading.Event()
    tables = {uri: _Watched(uri, hook_options) for uri in paths}
    watched_roots = [_Watched(root, hook_options) for root in roots]
    claims = NameClaims()
    syncs = 0

    def stopping() -> bool:
        return stop_event.is_set() or should_stop()

    def done() -> bool:
        return max_syncs is not None and syncs >= max_syncs

    def failed(
        item: _Watched,
        instant: str | None,
        error: str,
        report: SyncReport | None = None,
        took: float | None = None,
    ) -> None:
        item.failures += 1
        retry_in = backoff(interval, item.failures, max_backoff)
        item.due = time.monotonic() + retry_in
        event = WatchEvent(
            "error", item.uri, instant, _one_line(error), retry_in, report=report, duration=took
        )
        on_event(event)

    def list_root(root: _Watched) -> None:
        try:
            found = discover_tables(root.uri, storage_options)
            root_uri = open_location(root.uri, storage_options).uri
        except Exception as exc:  # a service outlives any listing fault
            failed(root, None, _message(exc))
            return
        root.failures, root.due = 0, time.monotonic() + interval
        for uri in found:
            if uri not in tables:
                tables[uri] = _Watched(uri, hook_options, root=root_uri)
                on_event(WatchEvent("discovered", uri))

    def poll_table(item: _Watched) -> None:
        nonlocal syncs
        latest: str | None = None
        started = time.monotonic()
        try:
            latest = HudiTable.open(item.uri, storage_options).latest_instant()
            if latest is None or latest == item.synced:
                item.failures, item.due = 0, time.monotonic() + interval
                return
            if item.root is None:
                report = run_post_commit_hook(
                    item.uri, item.options, storage_options, replace_other_table
                )
            else:
                report = sync_discovered(
                    claims, item.root, item.uri, item.options, storage_options, replace_other_table
                )
        except Exception as exc:  # a service outlives any table's fault
            failed(item, latest, _message(exc), took=time.monotonic() - started)
            return
        took = time.monotonic() - started
        on_report(report)
        if not report.ok:
            failed(item, report.instant or latest, report.error_summary(), report, took)
            return
        item.synced, item.failures, item.due = report.instant, 0, time.monotonic() + interval
        syncs += 1
        on_event(WatchEvent("sync", item.uri, report.instant, report=report, duration=took))

    reason = "stop requested"
    while True:
        for root in watched_roots:
            if stopping():
                break
            if root.due <= time.monotonic():
                list_root(root)
        for item in list(tables.values()):
            if stopping() or done():
                break
            if item.due <= time.monotonic():
                poll_table(item)
        if done():
            reason = "max syncs"
            break
        if stopping():
            break
        next_due = min(w.due for w in [*watched_roots, *tables.values()]) if tables or roots else 0
        stop_event.wait(max(0.0, min(next_due - time.monotonic(), interval)))
        if stopping():
            break
    on_event(WatchEvent("stopped", reason=reason, syncs=syncs))
    return syncs
