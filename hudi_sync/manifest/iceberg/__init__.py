"""A table's synced snapshots published as Apache Iceberg v2 metadata (``store``), so
warehouses read a Hudi table, Merge-on-Read merged, through their native Iceberg
readers."""

from hudi_sync.manifest.iceberg.published import PublishedIceberg
from hudi_sync.manifest.iceberg.store import IcebergStore

__all__ = ["IcebergStore", "PublishedIceberg"]
