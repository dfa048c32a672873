"""hudi_sync: read Apache Hudi tables and publish their snapshots to warehouses."""

from hudi_sync.errors import HudiSyncError

__all__ = ["HudiSyncError"]
__version__ = "0.1.0"
