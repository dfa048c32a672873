"""Opt-in: the BigQuery target against real BigQuery.

Collected only when ``HUDI_SYNC_BIGQUERY_PROJECT`` and ``HUDI_SYNC_BIGQUERY_TABLE`` (a
``gs://`` Hudi table the credentials can read and whose ``.hoodie/manifest/`` they can
write) are set, with application-default credentials (``tests/conftest.py`` leaves the
file out otherwise, so CI neither runs nor skips it). Real BigQuery reads the external
tables itself, so this checks the view's rows directly against hudi-rs.
"""

from __future__ import annotations

import os
import uuid

import gcsfs  # noqa: F401  (the table is read through fsspec's gs://)
import pyarrow as pa

from hudi_sync.sync import sync_table
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.bigquery_target import BigQuerySyncConfig, BigQueryTarget
from tests.warehouse_rows import canonical, same_columns

PROJECT = os.environ["HUDI_SYNC_BIGQUERY_PROJECT"]
TABLE = os.environ["HUDI_SYNC_BIGQUERY_TABLE"]
LOCATION = os.environ.get("HUDI_SYNC_BIGQUERY_LOCATION", "US")


def test_view_and_manifest_modes_on_real_bigquery() -> None:
    import hudi
    from google.cloud import bigquery

    dataset = f"hudi_sync_test_{uuid.uuid4().hex[:8]}"
    client = bigquery.Client(project=PROJECT)
    table = HudiTable.open(TABLE)
    expected = pa.Table.from_batches(hudi.HudiTable(TABLE).read(hudi.HudiReadOptions()))
    try:
        for mode in ("false", "true"):
            config = BigQuerySyncConfig.from_options(
                {
                    "project_id": PROJECT,
                    "dataset_name": dataset,
                    "dataset_location": LOCATION,
                    "table_name": "t",
                    "use_bq_manifest_file": mode,
                }
            )
            report = sync_table(table, [BigQueryTarget(config, client)])
            assert report.results[0].action in ("create", "recreate")
            rows = client.query_and_wait(f"SELECT * FROM `{PROJECT}.{dataset}.t`").to_arrow()
            ours, theirs = same_columns(rows, expected)
            assert canonical(ours) == canonical(theirs)
    finally:
        client.delete_dataset(dataset, delete_contents=True, not_found_ok=True)
