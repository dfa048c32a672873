"""The Debezium ingest into a table that takes Arrow rows (today: a bucket-index
Merge-on-Read table) starts no Spark session: every batch, a batch whose events are all
dropped too, is written by ``write_arrow``; the session is started only by a batch that
needs Spark."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

from pyspark.sql import SparkSession

from hudi_sync.debezium.ingest import IngestConfig, ingest
from hudi_sync.debezium.state import load_state
from hudi_sync.table import HudiTable
from tests.debezium_events import PostgresLog
from tests.kafka_broker import KafkaBroker
from tests.warehouse_rows import hudi_rs_rows

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ("id", "name", "note", "qty")


def _no_spark() -> SparkSession:
    raise AssertionError("the ingest started a Spark session")


def _rows(path: Path) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = (
        hudi_rs_rows(str(path)).select(list(COLUMNS)).sort_by("id").to_pylist()
    )
    return rows


def _topic(broker: KafkaBroker) -> str:
    topic = f"pg.public.items_{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, partitions=1)
    return topic


def test_a_bucket_index_mor_ingest_starts_no_spark(broker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    topic, path, log = _topic(broker), tmp_path / "items", PostgresLog()
    rows = [{"id": i, "name": f"n{i}", "note": None, "qty": i} for i in range(1, 4)]
    inserts = [log.change("c", None, row) for row in rows]
    update = log.change("u", rows[1], {**rows[1], "qty": 20})
    delete = log.change("d", rows[2], None)
    # Batches of two: inserts; insert, update; delete, its tombstone; then only a late
    # copy of the deleted row's insert, dropped: a batch that only moves the checkpoint.
    broker.produce(topic, [*inserts, update, delete, (delete[0], None), inserts[2]])
    config = IngestConfig.from_options(
        str(path),
        {"hoodie.table.name": "items"},
        bootstrap_servers=broker.bootstrap_servers,
        topics=(topic,),
        table_type="MERGE_ON_READ",
        max_events=2,
    )
    summary = ingest(_no_spark, config)
    assert summary.batches_committed == 4 and summary.events_dropped == 1
    table = HudiTable.open(str(path))
    assert table.config.raw["hoodie.index.type"] == "BUCKET"
    assert len(table.completed_commits()) == 4
    assert load_state(str(path)).offsets == {topic: broker.end_offsets(topic)}
    assert _rows(path) == [
        {"id": 1, "name": "n1", "note": None, "qty": 1},
        {"id": 2, "name": "n2", "note": None, "qty": 20},
    ]


def test_the_cli_ingest_into_a_bucket_index_mor_table_starts_no_jvm(  # type: ignore[no-untyped-def]
    broker, tmp_path: Path
) -> None:
    topic, path, log = _topic(broker), tmp_path / "items", PostgresLog()
    broker.produce(topic, [log.change("c", None, {"id": 7, "name": "a", "note": "x", "qty": 1})])
    env = dict(os.environ, JAVA_HOME=str(tmp_path / "no-java"), PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "hudi_sync.cli.app", "ingest", "debezium"]
    command += ["--table-path", str(path), "--bootstrap-servers", broker.bootstrap_servers]
    command += ["--topic", topic, "--table-type", "MERGE_ON_READ", "--json"]
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr  # a JVM launch fails: Java is missing
    assert _rows(path) == [{"id": 7, "name": "a", "note": "x", "qty": 1}]
