"""Hudi snapshots published as Iceberg v2 table metadata beside the table's manifests."""
