"""Debezium topics into Hudi tables: ``ingest`` (one table, ``loop``), ``ingest_tables``
(one table per topic, ``tables``), their settings (``options``), the write paths of a
batch (``writes``) and the asynchronous compaction of ``--continuous`` (``compactor``)."""

from hudi_sync.debezium.ingest.loop import IngestSummary, ProgressCallback, ingest
from hudi_sync.debezium.ingest.options import IngestConfig
from hudi_sync.debezium.ingest.tables import (
    TablesConfig,
    TablesSummary,
    ingest_tables,
    parse_table_options,
)
from hudi_sync.debezium.ingest.writes import UNAVAILABLE_COLUMNS, table_name_of

__all__ = [
    "UNAVAILABLE_COLUMNS",
    "IngestConfig",
    "IngestSummary",
    "ProgressCallback",
    "TablesConfig",
    "TablesSummary",
    "ingest",
    "ingest_tables",
    "parse_table_options",
    "table_name_of",
]
