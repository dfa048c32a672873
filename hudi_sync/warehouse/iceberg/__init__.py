"""Iceberg target: the table's snapshots as Iceberg v2 metadata in its own storage,
committed to a catalog: an Iceberg REST catalog, or a SQL catalog (pyiceberg's and
Java's JDBC catalog tables, on SQLite)."""

from hudi_sync.warehouse.iceberg.rest_catalog import RestCatalog, is_rest_uri, rest_base
from hudi_sync.warehouse.iceberg.sql_catalog import (
    CatalogConflictError,
    SqlCatalog,
    TableId,
    catalog_path,
)
from hudi_sync.warehouse.iceberg.target import IcebergTarget


def check_catalog_uri(uri: str, option: str) -> None:
    """Refuse, in one line naming ``option``, a catalog URI no catalog here can use."""
    if is_rest_uri(uri):
        rest_base(uri, option)
    else:
        catalog_path(uri, option)


__all__ = [
    "CatalogConflictError",
    "IcebergTarget",
    "RestCatalog",
    "SqlCatalog",
    "TableId",
    "catalog_path",
    "check_catalog_uri",
]
