"""Opt-in: the BigQuery target against real BigQuery.

Runs when ``HUDI_SYNC_BIGQUERY_PROJECT`` and ``HUDI_SYNC_BIGQUERY_TABLE`` (a ``gs://``
Hudi table the credentials can read and whose ``.hoodie/manifest/`` they can write) are
set, with application-default credentials (``HUDI_SYNC_BIGQUERY_LOCATION``: the
dataset's location, default ``US``); skipped otherwise, with the reason naming them.
Real BigQuery reads the external tables itself, so this checks the view's rows directly
against hudi-rs. The cloud clients are imported in the test, so collecting it needs
neither them nor credentials.
"""

from __future__ import annotations

import os
import uuid

import pyarrow as pa

from hudi_sync.sync.job import sync_table
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.bigquery import BigQuerySyncConfig, BigQueryTarget
from tests.real_services import needs_environment
from tests.warehouse_rows import canonical, same_columns

pytestmark = needs_environment(
    "real BigQuery",
    ["HUDI_SYNC_BIGQUERY_PROJECT", "HUDI_SYNC_BIGQUERY_TABLE"],
    "(a gs:// Hudi table) with application-default credentials",
)


def test_view_and_manifest_modes_on_real_bigquery() -> None:
    import gcsfs  # noqa: F401  (the table is read through fsspec's gs://)
    import hudi
    from google.cloud import bigquery

    project = os.environ["HUDI_SYNC_BIGQUERY_PROJECT"]
    uri = os.environ["HUDI_SYNC_BIGQUERY_TABLE"]
    location = os.environ.get("HUDI_SYNC_BIGQUERY_LOCATION", "US")
    dataset = f"hudi_sync_test_{uuid.uuid4().hex[:8]}"
    client = bigquery.Client(project=project)
    table = HudiTable.open(uri)
    expected = pa.Table.from_batches(hudi.HudiTable(uri).read(hudi.HudiReadOptions()))
    try:
        for mode in ("false", "true"):
            config = BigQuerySyncConfig.from_options(
                {
                    "project_id": project,
                    "dataset_name": dataset,
                    "dataset_location": location,
                    "table_name": "t",
                    "use_bq_manifest_file": mode,
                }
            )
            report = sync_table(table, [BigQueryTarget(config, client)])
            assert report.results[0].action in ("create", "recreate")
            rows = client.query_and_wait(f"SELECT * FROM `{project}.{dataset}.t`").to_arrow()
            ours, theirs = same_columns(rows, expected)
            assert canonical(ours) == canonical(theirs)
    finally:
        client.delete_dataset(dataset, delete_contents=True, not_found_ok=True)
