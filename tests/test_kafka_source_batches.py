"""How a batch read from Kafka ends: when every partition is at its end (a fetch's high
watermark), not after a poll that waits out its timeout and comes back empty. Records
produced after a batch ended are read by a later one."""

from __future__ import annotations

import time
import uuid

from hudi_sync.debezium.kafka_source import KafkaSettings, KafkaSource, Message
from tests.kafka_broker import KafkaBroker

POLL_TIMEOUT_MS = 60_000  # a batch that waited out one poll would take a minute


def _read(messages: list[Message]) -> list[tuple[int, int, bytes | None]]:
    return sorted((m.partition, m.offset, m.value) for m in messages)


def test_a_batch_ends_at_the_partitions_end_without_waiting_out_its_poll(  # type: ignore[no-untyped-def]
    broker: KafkaBroker,
) -> None:
    topic = f"batches_{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, partitions=2)
    broker.produce(topic, [(b"k", f"v{i}".encode(), i % 2) for i in range(6)])
    settings = KafkaSettings(broker.bootstrap_servers, (topic,), poll_timeout_ms=POLL_TIMEOUT_MS)
    source = KafkaSource(settings)
    started = time.monotonic()
    try:
        messages, after, ends = source.read_batch(source.seek({}), 100)
        assert _read(messages) == [(i % 2, i // 2, f"v{i}".encode()) for i in (0, 2, 4, 1, 3, 5)]
        assert after == ends == {topic: {0: 3, 1: 3}}
        # At the end already: nothing, at once.
        again, same, _ = source.read_batch(after, 100)
        assert again == [] and same == after
        # A batch bounded by max_events stops there; the next one reads the rest.
        broker.produce(topic, [(b"k", b"late0", 0), (b"k", b"late1", 1), (b"k", b"late2", 1)])
        later: list[Message] = []
        position = after
        while len(later) < 3 and time.monotonic() - started < POLL_TIMEOUT_MS / 2000:
            got, position, _ = source.read_batch(position, 2)
            assert len(got) <= 2
            later += got
            time.sleep(0.05)
        assert _read(later) == [(0, 3, b"late0"), (1, 3, b"late1"), (1, 4, b"late2")]
        assert position == {topic: {0: 4, 1: 5}}
    finally:
        source.close()
    assert time.monotonic() - started < POLL_TIMEOUT_MS / 2000
