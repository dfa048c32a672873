"""Opt-in: the Snowflake target against a real Snowflake account.

Runs when ``HUDI_SYNC_SNOWFLAKE_TABLE`` (an ``s3://`` Hudi table that the storage
integration ``HUDI_SYNC_SNOWFLAKE_INTEGRATION`` can read and whose ``.hoodie/manifest/``
this machine's AWS credentials can write) is set with the integration, and the
connection's ``SNOWFLAKE_*`` variables (account, user, password or private key, role,
warehouse, database, schema); skipped otherwise, with the reason naming them. Real
Snowflake reads the external tables itself, so the view's rows are checked directly
against hudi-rs. The connector is imported in the test, so collecting it needs neither
it nor credentials.
"""

from __future__ import annotations

import os
import uuid

import pyarrow as pa

from hudi_sync.sync.job import sync_table
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.snowflake import PREFIX, SnowflakeTarget
from hudi_sync.warehouse.snowflake.schema import sql_name
from tests.real_services import needs_environment
from tests.warehouse_rows import canonical

pytestmark = needs_environment(
    "real Snowflake",
    ["HUDI_SYNC_SNOWFLAKE_TABLE", "HUDI_SYNC_SNOWFLAKE_INTEGRATION"],
    "and the SNOWFLAKE_* connection variables (ACCOUNT, USER, PASSWORD or "
    "PRIVATE_KEY_FILE, ROLE, WAREHOUSE, DATABASE, SCHEMA)",
)


def test_view_equals_hudi_rs_on_real_snowflake() -> None:
    import hudi
    import snowflake.connector

    uri = os.environ["HUDI_SYNC_SNOWFLAKE_TABLE"]
    integration = os.environ["HUDI_SYNC_SNOWFLAKE_INTEGRATION"]
    name = f"hudi_sync_test_{uuid.uuid4().hex[:8]}"
    target = SnowflakeTarget.from_options(
        {PREFIX + "table_name": name, PREFIX + "storage_integration": integration}
    )
    table = HudiTable.open(uri)
    expected = pa.Table.from_batches(hudi.HudiTable(uri).read(hudi.HudiReadOptions()))
    connection = snowflake.connector.connect(**target.config.connection)
    cursor = connection.cursor()
    qualified = ".".join(sql_name(n) for n in (target.config.database, target.config.schema))
    try:
        report = sync_table(table, [target])
        assert report.ok and report.results[0].action == "create"
        assert sync_table(table, [target]).results[0].action == "noop"
        cursor.execute(f"SELECT * FROM {qualified}.{sql_name(name)}")
        columns = [d[0].lower() for d in cursor.description]
        ours = pa.Table.from_pylist([dict(zip(columns, r, strict=True)) for r in cursor])
        shared = [c for c in expected.column_names if c.lower() in columns]
        assert canonical(ours.select([c.lower() for c in shared])) == canonical(
            expected.select(shared).rename_columns([c.lower() for c in shared])
        )
    finally:
        for kind, suffix in (
            ("VIEW", ""),
            ("EXTERNAL TABLE", "_manifest"),
            ("EXTERNAL TABLE", "_history"),
            ("STAGE", "_stage"),
        ):
            cursor.execute(f"DROP {kind} IF EXISTS {qualified}.{sql_name(name + suffix)}")
        connection.close()
