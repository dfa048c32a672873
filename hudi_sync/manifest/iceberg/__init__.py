"""Hudi snapshots published as Iceberg v2 table metadata in the table's own storage."""
