"""Smoke test of the real CDC services: PostgreSQL -> Debezium (embedded) -> Tansu broker.

Checks the test infrastructure itself (tests/postgres_server.py, tests/kafka_broker.py,
tests/debezium_capture.py), so that ingestion tests built on it can trust what it delivers.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections import defaultdict
from typing import Any

from tests.debezium_capture import DebeziumCapture
from tests.kafka_broker import KafkaBroker
from tests.postgres_server import PostgresServer

TOPIC = "dbz.public.customers"


def _key_id(key: bytes | None) -> int:
    assert key is not None
    parsed = json.loads(key)
    return int(parsed["payload"]["id"])


def test_snapshot_then_insert_update_delete_reach_the_broker_in_order_per_key() -> None:
    with PostgresServer() as pg, KafkaBroker() as broker:
        with pg.connect() as conn:
            conn.execute("CREATE TABLE customers (id int PRIMARY KEY, name text, note text)")
            conn.execute("INSERT INTO customers VALUES (1, 'Ada', 'first'), (2, 'Bob', NULL)")
        with DebeziumCapture(pg, broker, topic_prefix="dbz", schemas_enable=True) as capture:
            capture.wait_for(TOPIC, 2)  # the snapshot: the slot exists, changes stream now
            with pg.connect() as conn:
                conn.execute("INSERT INTO customers VALUES (3, 'Cy', 'new')")
                conn.execute("UPDATE customers SET note = 'changed' WHERE id = 1")
                conn.execute("DELETE FROM customers WHERE id = 2")
            capture.wait_for(TOPIC, 6)  # + c, u, d and the delete's tombstone

        assert broker.partitions(TOPIC) == [0, 1, 2]
        records = broker.consume(TOPIC)
        assert len(records) == 6
        by_key: dict[int, list[dict[str, Any] | None]] = defaultdict(list)
        for record in records:  # by partition then offset: each key's order is kept
            by_key[_key_id(record.key)].append(
                None if record.value is None else json.loads(record.value)
            )

    ops = {k: [None if v is None else v["payload"]["op"] for v in vs] for k, vs in by_key.items()}
    assert ops == {1: ["r", "u"], 2: ["r", "d", None], 3: ["c"]}

    snapshot_1, update_1 = by_key[1]
    assert snapshot_1 is not None and update_1 is not None
    assert snapshot_1["payload"]["after"] == {"id": 1, "name": "Ada", "note": "first"}
    assert update_1["payload"]["after"] == {"id": 1, "name": "Ada", "note": "changed"}
    assert update_1["schema"]["name"] == "dbz.public.customers.Envelope"
    delete_2 = by_key[2][1]
    assert delete_2 is not None
    # REPLICA IDENTITY DEFAULT: a delete's before image holds the key only.
    assert delete_2["payload"]["before"] == {"id": 2, "name": None, "note": None}
    assert delete_2["payload"]["after"] is None
    insert_3 = by_key[3][0]
    assert insert_3 is not None
    assert insert_3["payload"]["after"] == {"id": 3, "name": "Cy", "note": "new"}


def test_producing_to_several_topics_leaves_no_producer_running(broker) -> None:  # type: ignore[no-untyped-def]
    """A kafka-python 3.0.12 producer kept after sending to a second topic busy-loops on a
    metadata update (one CPU for the rest of the run): produce() must close its own."""
    topics = [f"helper.{n}.{uuid.uuid4().hex[:6]}" for n in (1, 2)]
    for n, topic in enumerate(topics):
        broker.create_topic(topic, partitions=2)
        broker.produce(topic, [(f"k{n}".encode(), f"v{n}".encode())])
    assert [[r.value for r in broker.consume(t)] for t in topics] == [[b"v0"], [b"v1"]]
    producers = [t.name for t in threading.enumerate() if "producer" in t.name]
    assert producers == []


def test_a_stop_while_a_batch_is_forwarded_lets_it_commit_first(broker, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Closing the engine interrupts, at once, the thread that hands batches over: a stop
    that caught a batch between forwarding and ``committer.markBatchFinished()`` failed with
    ``InterruptedException`` ("the Debezium engine failed", a flaky test). The batch in
    hand is held here until that interrupt arrives (or 2 s, far more than it takes): the
    stop must wait for it, and it must be both forwarded and committed to the offsets."""
    import jpype

    topic = "held.public.items"
    held = threading.Event()

    def topic_for(destination: str) -> str:
        if destination == topic and not held.is_set():
            held.set()
            this = jpype.JClass("java.lang.Thread").currentThread()
            deadline = time.monotonic() + 2
            while not this.isInterrupted() and time.monotonic() < deadline:
                time.sleep(0.01)
        return destination

    with PostgresServer() as pg:
        with pg.connect() as conn:
            conn.execute("CREATE TABLE items (id int PRIMARY KEY)")
        capture = DebeziumCapture(pg, broker, "held", topic_for=topic_for, work_dir=tmp_path)
        with capture:
            capture.wait_for_slot()
            with pg.connect() as conn:
                conn.execute("INSERT INTO items VALUES (1)")
            assert held.wait(60)
        # Leaving the block stopped the capture with the batch in hand: no error raised.
    assert capture.forwarded() == {topic: 1}
    [event] = broker.consume(topic)
    lsn = json.loads(event.value)["payload"]["source"]["lsn"]
    committed = re.findall(rb'"lsn":(\d+)', capture.offsets_file.read_bytes())
    assert [int(n) for n in committed] == [lsn]
