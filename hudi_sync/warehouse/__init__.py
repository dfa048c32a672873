"""Warehouse targets: objects that show a Hudi table's published snapshot.

A package per warehouse (``duckdb``, ``bigquery``, ``snowflake``), each split by part,
and what all three share in ``common``.
"""

from hudi_sync.warehouse.common import SyncPlan, SyncResult

__all__ = ["SyncPlan", "SyncResult"]
