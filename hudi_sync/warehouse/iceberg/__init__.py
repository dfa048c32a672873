"""Iceberg target: the table's snapshots as Iceberg v2 metadata in its own storage,
committed to a SQL catalog (pyiceberg's and Java's JDBC catalog tables, on SQLite)."""

from hudi_sync.warehouse.iceberg.sql_catalog import (
    CatalogConflictError,
    SqlCatalog,
    TableId,
    catalog_path,
)
from hudi_sync.warehouse.iceberg.target import IcebergTarget

__all__ = ["CatalogConflictError", "IcebergTarget", "SqlCatalog", "TableId", "catalog_path"]
