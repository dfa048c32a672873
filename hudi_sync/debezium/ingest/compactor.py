"""Asynchronous compaction for ``--continuous`` ingests into Merge-on-Read tables, as
Hudi's streamer runs it: a plan is scheduled inline, between two commits (so every
later deltacommit's instant is newer than the plan's), and executed in a background
thread while the ingest goes on committing deltacommits. It runs in this process, as
the bucket index's writes and inline compactions do (``run_in_process``): a Spark job
beside the ingest was measured to stall it more (its workers' start-up on the same
CPUs) than the in-process merge does. The table
lock is held to schedule, start and complete the compaction, not while its files are
written; the writes leave the pending plan alone
(``hoodie.datasource.compaction.async.enable``) and append their logs to the slice the
compaction creates. One compaction runs at a time; stopping waits for it, and a run
killed meanwhile leaves a pending plan the next run finishes first."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from hudi_sync.table import HudiTable
from hudi_sync.table.write.compaction import (
    delta_commits_since_compaction,
    run_compaction,
    run_in_process,
    schedule_compaction,
)
from hudi_sync.table.write.lock import TableLock


class AsyncCompactor:
    """Schedules a compaction after a commit once ``max_delta_commits`` deltacommits
    piled up since the last one, and runs it in the background."""

    def __init__(
        self,
        path: str,
        storage_options: Any,
        max_delta_commits: int,
        lock: Callable[[HudiTable], TableLock],
    ) -> None:
        self.path = path
        self.storage_options = storage_options
        self.max_delta_commits = max_delta_commits
        self.lock = lock
        self.scheduled: list[str] = []
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="debezium-compact")
        self._running: Future[None] | None = None

    def after_commit(self) -> str | None:
        """Called between commits: schedules and starts a compaction when one is due
        and none runs (a failed one raises here); its instant, or None."""
        if self._running is not None:
            if not self._running.done():
                return None
            running, self._running = self._running, None
            running.result()
        table = HudiTable.open(self.path, self.storage_options)
        if delta_commits_since_compaction(table) < self.max_delta_commits:
            return None
        instant = schedule_compaction(table, self.lock(table))
        if instant is None:
            return None
        self.scheduled.append(instant)
        self._running = self._pool.submit(
            run_compaction, table, self.lock(table), instant, run_in_process
        )
        return instant

    def close(self) -> None:
        """Waits for the running compaction (its error raises)."""
        try:
            if self._running is not None:
                self._running.result()
        finally:
            self._running = None
            self._pool.shutdown(wait=True)
