"""Snowflake target: a stage, external tables over a table's files, and a view."""

from hudi_sync.warehouse.snowflake.target import (
    BASE_FILE_PATTERN,
    PREFIX,
    SnowflakeSyncConfig,
    SnowflakeTarget,
    base_file_pattern,
    snapshot_select,
)

__all__ = [
    "BASE_FILE_PATTERN",
    "PREFIX",
    "SnowflakeSyncConfig",
    "SnowflakeTarget",
    "base_file_pattern",
    "snapshot_select",
]
