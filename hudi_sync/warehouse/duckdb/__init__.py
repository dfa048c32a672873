"""DuckDB target: views over a table's files in a local DuckDB database file."""

from hudi_sync.warehouse.duckdb.files import SOURCE_FILE_COLUMN, glob_literal
from hudi_sync.warehouse.duckdb.objects import snapshot_select
from hudi_sync.warehouse.duckdb.target import BUSY_TIMEOUT_SECONDS, DuckDBTarget

__all__ = [
    "BUSY_TIMEOUT_SECONDS",
    "SOURCE_FILE_COLUMN",
    "DuckDBTarget",
    "glob_literal",
    "snapshot_select",
]
