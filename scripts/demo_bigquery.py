"""The main job against the local emulators: upload a Hudi table to fake-gcs-server, sync
it to the local-bigquery emulator with ``hudi-sync sync bigquery``, print the objects it
created and the view's rows.

The emulator stores external tables but reads no files from them, so after the sync the
demo materialises ``<t>_history`` and ``<t>_manifest`` with the emulator's load jobs
(same URIs, schema and hive options), exactly as the tests do, and then queries the
real view. Run through ``scripts/demo.sh --bigquery [TABLE_DIR]``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.bigquery_emulator import materialise, running_bigquery_emulator  # noqa: E402
from tests.objectstores import running_gcs_server  # noqa: E402


def main(table_dir: str) -> int:
    with tempfile.TemporaryDirectory() as work:
        base = Path(work)
        (base / "gcs").mkdir()
        (base / "bq").mkdir()
        with (
            running_gcs_server(base / "gcs") as gcs,
            running_bigquery_emulator(gcs, base / "bq") as emulator,
        ):
            uri = gcs.upload_dir(table_dir, gcs.make_bucket("demo-lake"), "trips")
            command = [
                str(REPO / ".venv" / "bin" / "hudi-sync"), "sync", "bigquery", uri,
                "--project-id", emulator.project, "--dataset-name", "lake",
                "--table-name", "trips", "--dataset-location", "US",
                "--api-endpoint", emulator.endpoint_url,
                "-o", f"endpoint_url={gcs.endpoint_url}", "-o", "token=anon",
            ]  # fmt: skip
            subprocess.run(command, check=True)
            client = emulator.client()
            prefix = f"{emulator.project}.lake.trips"
            for table_id in (f"{prefix}_manifest", f"{prefix}_history", prefix):
                table = client.get_table(table_id)
                print(f"\n{table_id}: {table.description}")
                if table.view_query:
                    print(f"  view: {table.view_query}")
                else:
                    external = table.external_data_configuration.to_api_repr()
                    print("  external:", json.dumps(external, indent=2).replace("\n", "\n  "))
            materialise(client, f"{prefix}_history")
            materialise(client, f"{prefix}_manifest")
            history = client.query_and_wait(f"SELECT count(*) FROM `{prefix}_history`")
            print(f"\nhistory rows: {next(iter(history))[0]}")
            rows = client.query_and_wait(
                f"SELECT * EXCEPT (_hoodie_commit_seqno) FROM `{prefix}` "
                "ORDER BY _hoodie_record_key"
            )
            names = [f.name for f in rows.schema]
            print(f"view rows: {rows.total_rows}\n" + " | ".join(names))
            for row in rows:
                print(" | ".join(str(value) for value in row.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
