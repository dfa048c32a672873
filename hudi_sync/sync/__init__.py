"""Warehouse sync: publish a table's manifest, then bring each warehouse target to it.

``job`` (the sync itself), ``hook`` (after every commit of the Spark writer),
``watch`` (sync on every new commit), ``backfill`` (every table under a root),
``verify`` (each target's objects against the table, and their repair).
"""

from hudi_sync.sync.backfill import backfill, discover_tables
from hudi_sync.sync.hook import build_target, run_post_commit_hook
from hudi_sync.sync.job import SyncReport, publish_manifest, sync_table
from hudi_sync.sync.verify import VerifyReport, repair_table, verify_table
from hudi_sync.sync.watch import watch

__all__ = [
    "SyncReport",
    "VerifyReport",
    "backfill",
    "build_target",
    "discover_tables",
    "publish_manifest",
    "repair_table",
    "run_post_commit_hook",
    "sync_table",
    "verify_table",
    "watch",
]
