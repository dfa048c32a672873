"""``hudi-sync watch``: poll a table's timeline and run the post-commit hook on each new
commit, for tables written by engines that cannot call the hook themselves."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from hudi_sync.sync.hook import run_post_commit_hook
from hudi_sync.sync.job import SyncReport
from hudi_sync.table import HudiTable


def watch(
    base_path: str,
    options: Mapping[str, Any],
    storage_options: Mapping[str, Any] | None = None,
    interval: float = 10.0,
    max_syncs: int | None = None,
    on_report: Callable[[SyncReport], None] = lambda report: None,
    should_stop: Callable[[], bool] = lambda: False,
) -> int:
    """Sync whenever the latest completed commit changes; return the number of syncs.

    A failed sync is retried at the next poll (the instant is not marked as synced).
    """
    synced: str | None = None
    syncs = 0
    while not should_stop() and (max_syncs is None or syncs < max_syncs):
        latest = HudiTable.open(base_path, storage_options).latest_instant()
        if latest is not None and latest != synced:
            report = run_post_commit_hook(base_path, options, storage_options)
            on_report(report)
            syncs += 1
            if report.ok:
                synced = report.instant
        if max_syncs is not None and syncs >= max_syncs:
            break
        time.sleep(interval)
    return syncs
