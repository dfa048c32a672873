"""Warehouse targets: objects that show a Hudi table's published snapshot."""

from hudi_sync.warehouse.common import SyncPlan, SyncResult

__all__ = ["SyncPlan", "SyncResult"]
