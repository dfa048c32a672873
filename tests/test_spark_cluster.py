"""The writer and reader on a real multi-process Spark cluster (``local-cluster``: two
executor JVMs with their own Python workers), writing to moto S3 and fake-gcs-server:
the driver and the executors share nothing but the object store."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest

from tests.cluster_job import STEPS

REPO = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    return {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(REPO)}


class ClusterDriver:
    """``python -m tests.cluster_job --serve``: one local-cluster driver process (and its
    two executor JVMs) that runs the write sequence once per request."""

    def __init__(self, workdir: Path, log: Path) -> None:
        self.workdir, self.log = workdir, log
        with open(log, "wb") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.cluster_job", "--serve"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                text=True, env=_env(), cwd=workdir,
            )  # fmt: skip
        self.answers: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read_answers, daemon=True).start()

    def _read_answers(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith(("RESULT ", "FAILED ")):
                self.answers.put(line)
        self.answers.put(None)  # the driver exited

    def run(self, uri: str, storage_options: dict[str, Any], steps: int) -> dict[str, Any]:
        assert self.process.stdin is not None
        request = {"uri": uri, "storage_options": storage_options, "steps": steps}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer = self.answers.get(timeout=900)
        log = self.log.read_text(errors="replace")[-3000:]
        assert answer is not None, f"the driver exited ({self.process.poll()}):\n{log}"
        assert answer.startswith("RESULT "), json.loads(answer.removeprefix("FAILED "))
        return json.loads(answer.removeprefix("RESULT "))

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def local_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterDriver]:
    """One local-cluster for the module: starting a driver and two executor JVMs and
    warming them up takes several times as long as a write sequence."""
    driver = ClusterDriver(
        tmp_path_factory.mktemp("cluster-driver"),
        tmp_path_factory.mktemp("cluster-log") / "stderr.log",
    )
    yield driver
    driver.stop()


def model_rows(steps: int) -> list[tuple[Any, ...]]:
    """The table the first ``steps`` steps leave, by Hudi's semantics: upserts keep the
    row with the larger ordering value, deletes remove keys, insert_overwrite replaces
    the partitions it writes."""
    table: dict[int, tuple[int, str, str, int]] = {}
    for operation, rows in STEPS[:steps]:
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


# Every step kind on S3, through the cluster and through Connect. On GCS the cluster
# writes the first two steps: what GCS adds is the executors' own gcsfs clients creating
# and rewriting files from the storage options alone; every step kind's path through
# the cluster is store-neutral (proven on S3), and each step on GCS from Python workers
# is proven on local[*] (tests/test_spark_objectstores.py).
GCS_STEPS = 2  # insert, then an upsert that rewrites stored files


@pytest.mark.parametrize(
    ("store_name", "connect", "steps"),
    [
        pytest.param("s3_server", False, len(STEPS), id="s3-local-cluster"),
        pytest.param(
            "gcs_server", False, GCS_STEPS, id="gcs-local-cluster", marks=pytest.mark.spark_compat
        ),
        # PySpark 3.5's Connect client has no Arrow collect or Arrow createDataFrame.
        pytest.param(
            "s3_server",
            True,
            len(STEPS),
            id="s3-spark-connect",
            marks=[pytest.mark.spark4, pytest.mark.spark_compat],
        ),
    ],
)
def test_write_sequence_on_a_multi_process_cluster(  # type: ignore[no-untyped-def]
    store_name: str, connect: bool, steps: int, request, tmp_path: Path
) -> None:
    """On ``local-cluster`` (separate executor JVMs), and as a Spark Connect client.

    Over 30 s by nature: the first case starts the cluster's executor JVMs, the Connect
    case a Connect server of its own."""
    store = request.getfixturevalue(store_name)
    uri = f"{store.scheme}://{store.make_bucket()}/lake/cluster_t"
    if connect:  # its own process: a Connect server's session is not a local-cluster
        command = [sys.executable, "-m", "tests.cluster_job", uri]
        result = subprocess.run(
            [*command, json.dumps(store.storage_options), "--connect"],
            capture_output=True, text=True, check=False, env=_env(), cwd=tmp_path, timeout=900,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-3000:]
        report = json.loads(result.stdout.strip().splitlines()[-1])
        driver_folder = tmp_path
    else:
        cluster: ClusterDriver = request.getfixturevalue("local_cluster")
        report = cluster.run(uri, store.storage_options, steps)
        driver_folder = cluster.workdir
    if not connect:  # two executors, neither of them the driver
        assert len(report["worker_pids"]) == 2
        assert report["driver_pid"] not in report["worker_pids"]
    expected = model_rows(steps)
    assert [tuple(r) for r in report["rows"]] == expected

    theirs = hudi.HudiTableBuilder.from_base_uri(uri)
    theirs = theirs.with_storage_options(store.object_store_options).build()
    batches = theirs.read(hudi.HudiReadOptions())
    rows = pa.Table.from_batches(batches).to_pylist() if batches else []
    assert sorted((r["id"], r["p"], r["name"], r["ts"]) for r in rows) == expected
    timeline = theirs.get_timeline()
    completed = timeline.get_completed_commits() + timeline.get_completed_replacecommits()
    assert sorted(i.timestamp for i in completed) == sorted(report["instants"])
    assert not any(driver_folder.iterdir())  # nothing written to the driver's working folder
