"""The writer and reader on a real multi-process Spark cluster (``local-cluster``: two
executor JVMs with their own Python workers), writing to moto S3 and fake-gcs-server:
the driver and the executors share nothing but the object store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest

from tests.cluster_job import STEPS

REPO = Path(__file__).resolve().parents[1]


def model_rows() -> list[tuple[Any, ...]]:
    """The table the steps leave, by Hudi's semantics: upserts keep the row with the
    larger ordering value, deletes remove keys, insert_overwrite replaces the partitions
    it writes."""
    table: dict[int, tuple[int, str, str, int]] = {}
    for operation, rows in STEPS:
        if operation == "delete":
            for key, *_ in rows:
                table.pop(key, None)
            continue
        if operation == "insert_overwrite":
            written = {row[1] for row in rows}
            table = {k: v for k, v in table.items() if v[1] not in written}
        for row in rows:
            stored = table.get(row[0])
            if stored is None or row[3] >= stored[3]:
                table[row[0]] = row
    return sorted(table.values())


@pytest.mark.parametrize(
    ("store_name", "connect"),
    [("s3_server", False), ("gcs_server", False), ("s3_server", True)],
    ids=["s3-local-cluster", "gcs-local-cluster", "s3-spark-connect"],
)
def test_write_sequence_on_a_multi_process_cluster(  # type: ignore[no-untyped-def]
    store_name: str, connect: bool, request, tmp_path: Path
) -> None:
    """On ``local-cluster`` (separate executor JVMs), and as a Spark Connect client."""
    store = request.getfixturevalue(store_name)
    uri = f"{store.scheme}://{store.make_bucket()}/lake/cluster_t"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "tests.cluster_job", uri, json.dumps(store.storage_options)]
    result = subprocess.run(
        command + (["--connect"] if connect else []),
        capture_output=True, text=True, check=False, env=env, cwd=tmp_path, timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    if not connect:  # two executors, neither of them the driver
        assert len(report["worker_pids"]) == 2
        assert report["driver_pid"] not in report["worker_pids"]
    expected = model_rows()
    assert [tuple(r) for r in report["rows"]] == expected

    theirs = hudi.HudiTableBuilder.from_base_uri(uri)
    theirs = theirs.with_storage_options(store.object_store_options).build()
    batches = theirs.read(hudi.HudiReadOptions())
    rows = pa.Table.from_batches(batches).to_pylist() if batches else []
    assert sorted((r["id"], r["p"], r["name"], r["ts"]) for r in rows) == expected
    timeline = theirs.get_timeline()
    completed = timeline.get_completed_commits() + timeline.get_completed_replacecommits()
    assert sorted(i.timestamp for i in completed) == sorted(report["instants"])
    assert not any(tmp_path.iterdir())  # nothing written to the driver's working folder
