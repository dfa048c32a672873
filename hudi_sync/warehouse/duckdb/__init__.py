"""DuckDB target: views over a table's files in a local DuckDB database file."""

from hudi_sync.warehouse.duckdb.target import (
    BUSY_TIMEOUT_SECONDS,
    SOURCE_FILE_COLUMN,
    DuckDBTarget,
    glob_literal,
    snapshot_select,
)

__all__ = [
    "BUSY_TIMEOUT_SECONDS",
    "SOURCE_FILE_COLUMN",
    "DuckDBTarget",
    "glob_literal",
    "snapshot_select",
]
