"""BigQuery target: external tables over a table's files, and a view, in a dataset."""

from hudi_sync.warehouse.bigquery.client import MANIFEST_FILE_SET, bigquery_client
from hudi_sync.warehouse.bigquery.config import API_ENDPOINT, PREFIX, BigQuerySyncConfig
from hudi_sync.warehouse.bigquery.objects import snapshot_select
from hudi_sync.warehouse.bigquery.target import BigQueryTarget

__all__ = [
    "API_ENDPOINT",
    "MANIFEST_FILE_SET",
    "PREFIX",
    "BigQuerySyncConfig",
    "BigQueryTarget",
    "bigquery_client",
    "snapshot_select",
]
