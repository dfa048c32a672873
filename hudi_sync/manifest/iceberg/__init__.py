"""Hudi snapshots published as Iceberg v2 table metadata under
``<table>/.hoodie/manifest/iceberg/``."""
