"""The main job as production runs it: the sample table is written by PySpark to an S3
bucket (moto's S3 server on 127.0.0.1, started and stopped here), the post-commit hook
syncs it from there into a local DuckDB file, and the view is queried through the same
storage layer. Credentials come from the environment, as on a real cluster; only the
endpoint is an option. Run through ``scripts/demo.sh --object-store [--verbose]``.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "scripts" / "sample"
HUDI_SYNC = str(REPO / ".venv" / "bin" / "hudi-sync")
BUCKET = "demo-lake"


def step(message: str, command: list[str], env: dict[str, str], verbose: bool) -> None:
    """Run one CLI step; its logs are shown with --verbose or when it fails."""
    started = time.monotonic()
    result = subprocess.run(command, env=env, text=True, capture_output=not verbose, check=False)
    if result.returncode != 0:
        sys.stderr.write(f"FAILED: {message} (exit {result.returncode})\n")
        sys.stderr.write((result.stderr or "")[-3000:])
        raise SystemExit(result.returncode)
    print(f"ok  {message} ({time.monotonic() - started:.0f} s)", flush=True)


def main(work: str, verbose: bool) -> None:
    import boto3
    import duckdb
    from moto.server import ThreadedMotoServer

    from hudi_sync.table import HudiTable

    if not verbose:
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        env = {
            **os.environ,
            "AWS_ACCESS_KEY_ID": "demo",
            "AWS_SECRET_ACCESS_KEY": "demo-secret",
            "AWS_DEFAULT_REGION": "us-east-1",
        }
        os.environ.update({k: env[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")})
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(
            Bucket=BUCKET
        )
        uri = f"s3://{BUCKET}/trips"
        storage = ["-o", f"client_kwargs.endpoint_url={endpoint}"]
        database = str(Path(work) / "warehouse.duckdb")
        props = ["--props", str(SAMPLE / "trips.properties")]
        step(
            f"day 1: PySpark inserts the sample trips into {uri} (moto S3 at {endpoint})",
            [HUDI_SYNC, "write", uri, str(SAMPLE / "trips_day1.jsonl"), *props, *storage,
             "-c", "hoodie.datasource.write.operation=insert"],
            env,
            verbose,
        )  # fmt: skip
        step(
            "day 2: PySpark upserts day 2; the post-commit hook syncs the S3 table into DuckDB",
            [HUDI_SYNC, "write", uri, str(SAMPLE / "trips_day2.jsonl"), *props, *storage,
             "-c", "hoodie.datasource.write.operation=upsert",
             "-c", "hoodie.datasource.meta.sync.enable=true",
             "-c", "hoodie.meta.sync.client.tool.class=duckdb",
             "-c", f"hoodie.duckdb.sync.database={database}"],
            env,
            verbose,
        )  # fmt: skip
        print(flush=True)
        subprocess.run([HUDI_SYNC, "show", "instants", uri, *storage], env=env, check=True)
        table = HudiTable.open(uri, {"client_kwargs": {"endpoint_url": endpoint}})
        with duckdb.connect(database, read_only=True) as con:
            con.register_filesystem(table.location.fs)  # the views read the bucket
            view = "SELECT * EXCLUDE (_hoodie_commit_seqno, _hoodie_file_name) FROM trips"
            con.sql(f"{view} ORDER BY _hoodie_record_key").show(max_width=250)
        keys = sorted(table.location.fs.find(f"{BUCKET}/trips"))
        print("What the demo did:")
        print(f"  wrote the Hudi table   {uri} ({len(keys)} objects; nothing on local disk)")
        print(f"  synced it into DuckDB  {database}: view trips, trips_history, trips_manifest")
        print(f"  manifest               {uri}/.hoodie/manifest/latest_snapshot_files.csv")
        print("  the S3 server is stopped now, and its data gone")
    finally:
        server.stop()


if __name__ == "__main__":
    main(sys.argv[1], "--verbose" in sys.argv[2:])
