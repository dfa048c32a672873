"""Avro events in Confluent wire format through a schema registry, and the
``hudi-sync ingest debezium`` command.

No real schema registry runs here (Confluent's needs a JVM build and Kafka-backed
storage), so the registry is tests/schema_registry.py's stand-in serving the Confluent
REST call the reader makes, ``GET /schemas/ids/<id>``; the broker, the events and the
table are real."""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import struct
import uuid
from collections.abc import Iterator
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from hudi_sync.cli.app import app
from hudi_sync.debezium.events import EventError
from hudi_sync.debezium.ingest import IngestConfig, ingest
from hudi_sync.spark import read
from hudi_sync.spark.compat import collect_arrow
from hudi_sync.table import HudiTable
from tests.debezium_events import PostgresLog
from tests.schema_registry import RegistryServer
from tests.warehouse_rows import hudi_rs_rows

VALUE = {
    "type": "record",
    "name": "Value",
    "namespace": "pg.public.prices",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "name", "type": ["null", "string"], "default": None},
        {
            "name": "price",
            "type": [
                "null",
                {
                    "type": "bytes",
                    "scale": 2,
                    "precision": 10,
                    "connect.version": 1,
                    "connect.parameters": {"scale": "2", "connect.decimal.precision": "10"},
                    "connect.name": "org.apache.kafka.connect.data.Decimal",
                    "logicalType": "decimal",
                },
            ],
            "default": None,
        },
        {
            "name": "day",
            "type": [
                "null",
                {"type": "int", "connect.version": 1, "connect.name": "io.debezium.time.Date"},
            ],
            "default": None,
        },
        {
            "name": "at",
            "type": [
                "null",
                {
                    "type": "long",
                    "connect.version": 1,
                    "connect.name": "io.debezium.time.MicroTimestamp",
                },
            ],
            "default": None,
        },
    ],
}
ENVELOPE = {
    "type": "record",
    "name": "Envelope",
    "namespace": "pg.public.prices",
    "fields": [
        {"name": "before", "type": ["null", VALUE], "default": None},
        {"name": "after", "type": ["null", "Value"], "default": None},
        {
            "name": "source",
            "type": {
                "type": "record",
                "name": "Source",
                "namespace": "io.debezium.connector.postgresql",
                "fields": [
                    {"name": "connector", "type": "string"},
                    {"name": "name", "type": "string"},
                    {"name": "ts_ms", "type": "long"},
                    {"name": "schema", "type": "string"},
                    {"name": "sequence", "type": ["null", "string"], "default": None},
                    {"name": "txId", "type": ["null", "long"], "default": None},
                    {"name": "lsn", "type": ["null", "long"], "default": None},
                    {"name": "xmin", "type": ["null", "long"], "default": None},
                ],
            },
        },
        {"name": "op", "type": "string"},
        {"name": "ts_ms", "type": ["null", "long"], "default": None},
    ],
}
KEY = {
    "type": "record",
    "name": "Key",
    "namespace": "pg.public.prices",
    "fields": [{"name": "id", "type": "int"}],
}
SCHEMAS = {1: KEY, 2: ENVELOPE}


@pytest.fixture(scope="module")
def registry() -> Iterator[str]:
    running = RegistryServer(SCHEMAS)
    yield running.url
    running.stop()


def wire(schema_id: int, record: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(SCHEMAS[schema_id]), record)
    return b"\x00" + struct.pack(">I", schema_id) + buffer.getvalue()


def avro_event(lsn: int, op: str, row: dict[str, Any]) -> tuple[bytes, bytes]:
    source = {
        "connector": "postgresql",
        "name": "pg",
        "ts_ms": 1,
        "schema": "public",
        "sequence": json.dumps(["100", str(lsn)]),
        "txId": 7,
        "lsn": lsn,
        "xmin": None,
    }
    value = {"before": row if op == "d" else None, "after": None if op == "d" else row}
    value |= {"source": source, "op": op, "ts_ms": 2}
    return wire(1, {"id": row["id"]}), wire(2, value)


def test_avro_events_through_a_schema_registry(spark, broker, registry, tmp_path) -> None:  # type: ignore[no-untyped-def]
    topic = f"pg.public.prices_{uuid.uuid4().hex[:6]}"
    broker.create_topic(topic, partitions=2)
    at = dt.datetime(2025, 5, 6, 7, 8, 9, 10)
    micros = (at - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
    row = {"id": 1, "name": "a", "price": decimal.Decimal("12.34"), "day": 20000, "at": micros}
    gone = {"id": 2, "name": "b", "price": None, "day": None, "at": None}
    broker.produce(
        topic,
        [avro_event(10, "c", row), avro_event(11, "c", gone), avro_event(12, "d", gone)],
    )
    path = tmp_path / "prices"
    options = {"hoodie.streamer.schemaprovider.registry.url": registry}
    config = IngestConfig.from_options(
        str(path), options, bootstrap_servers=broker.bootstrap_servers, topics=(topic,)
    )
    assert ingest(spark, config).batches_committed == 1
    ours = collect_arrow(read(spark, str(path)))
    assert hudi_rs_rows(str(path)).column("price").to_pylist() == [decimal.Decimal("12.34")]
    stored = ours.to_pylist()
    assert len(stored) == 1 and stored[0]["price"] == decimal.Decimal("12.34")
    assert stored[0]["day"] == dt.date(1970, 1, 1) + dt.timedelta(days=20000)
    assert stored[0]["at"].replace(tzinfo=None) == at
    assert ours.schema.field("price").type == pa.decimal128(10, 2)
    # A schema id the registry does not know: one line naming the message; no commit.
    broker.produce(topic, [(wire(1, {"id": 3}), b"\x00" + struct.pack(">I", 99) + b"\x02")])
    with pytest.raises(EventError, match=rf"topic {topic} partition \d offset \d+: .*answered 404"):
        ingest(spark, config)
    assert len(HudiTable.open(str(path)).completed_commits()) == 1


def test_the_cli_ingests_and_reports_json(broker, tmp_path) -> None:  # type: ignore[no-untyped-def]
    topic = f"pg.public.items_{uuid.uuid4().hex[:6]}"
    broker.create_topic(topic, partitions=1)
    log = PostgresLog()
    rows = [{"id": i, "name": f"n{i}", "note": None, "qty": i} for i in range(4)]
    broker.produce(topic, [log.change("c", None, r) for r in rows])
    path = tmp_path / "items"
    runner = CliRunner()
    args = ["ingest", "debezium", "--table-path", str(path), "--bootstrap-servers"]
    args += [broker.bootstrap_servers, "--topic", topic, "--max-events", "3", "--json"]
    args += ["-c", "hoodie.meta.sync.client.tool.class=duckdb"]
    args += ["-c", f"hoodie.duckdb.sync.database={tmp_path / 'w.duckdb'}"]
    args += ["-c", "hoodie.datasource.meta.sync.enable=true"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["batches_committed"] == 2 and summary["events_read"] == 4
    assert summary["checkpoint"] == f"{topic},0:4" and summary["lag"] == 0
    assert HudiTable.open(str(path)).config.name == topic.rsplit(".", 1)[1]  # its last part
    bad = runner.invoke(
        app, [*args[:4], "--bootstrap-servers", broker.bootstrap_servers, "--topic", "nope"]
    )
    assert bad.exit_code == 2 and bad.stderr.strip() == (
        f"error: topic nope does not exist on {broker.bootstrap_servers}"
    )
    wrong = runner.invoke(app, [*args, "--on-truncate", "maybe"])
    assert wrong.exit_code == 2 and "truncate.policy='maybe'" in wrong.stderr


def test_continuous_ingest_stops_cleanly_on_sigterm(broker, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from hudi_sync.errors import TableNotFoundError

    topic = f"pg.public.items_{uuid.uuid4().hex[:6]}"
    broker.create_topic(topic, partitions=2)
    log = PostgresLog()
    path = tmp_path / "items"
    command = [sys.executable, "-m", "hudi_sync.cli.app", "ingest", "debezium"]
    command += ["--table-path", str(path), "--bootstrap-servers", broker.bootstrap_servers]
    command += ["--topic", topic, "--continuous", "--poll-interval", "0.2", "--json"]
    child = subprocess.Popen(
        command,
        cwd=Path(__file__).resolve().parents[1],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def commits() -> int:
        try:
            return len(HudiTable.open(str(path)).completed_commits())
        except TableNotFoundError:
            return 0

    def wait_for(count: int) -> None:
        deadline = time.monotonic() + 180
        while commits() < count:
            assert child.poll() is None, child.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "no commit"
            time.sleep(0.2)

    try:
        broker.produce(
            topic,
            [
                log.change("c", None, {"id": i, "name": "a", "note": None, "qty": i})
                for i in range(3)
            ],
        )
        wait_for(1)
        broker.produce(
            topic, [log.change("u", None, {"id": 1, "name": "b", "note": None, "qty": 9})]
        )
        wait_for(2)
        child.send_signal(signal.SIGTERM)
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, err[-2000:]
    summary = json.loads(out)
    assert summary["batches_committed"] == 2 and summary["events_read"] == 4
    assert commits() == 2
