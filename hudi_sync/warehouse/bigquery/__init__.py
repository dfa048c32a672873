"""BigQuery target: external tables over a table's files, and a view, in a dataset."""

from hudi_sync.warehouse.bigquery.target import (
    API_ENDPOINT,
    MANIFEST_FILE_SET,
    PREFIX,
    BigQuerySyncConfig,
    BigQueryTarget,
    bigquery_client,
    snapshot_select,
)

__all__ = [
    "API_ENDPOINT",
    "MANIFEST_FILE_SET",
    "PREFIX",
    "BigQuerySyncConfig",
    "BigQueryTarget",
    "bigquery_client",
    "snapshot_select",
]
