"""Snowflake target: a stage, external tables over a table's files, and a view."""

from hudi_sync.warehouse.snowflake.config import PREFIX, SnowflakeSyncConfig
from hudi_sync.warehouse.snowflake.objects import (
    BASE_FILE_PATTERN,
    base_file_pattern,
    snapshot_select,
)
from hudi_sync.warehouse.snowflake.target import SnowflakeTarget

__all__ = [
    "BASE_FILE_PATTERN",
    "PREFIX",
    "SnowflakeSyncConfig",
    "SnowflakeTarget",
    "base_file_pattern",
    "snapshot_select",
]
