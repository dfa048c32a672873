"""Reading Debezium topics from Kafka in batches, from offsets the table remembers.

The consumer (confluent-kafka) assigns itself every partition of the topics (no group
rebalancing: the offsets come from the table's last commit, so one ingest per table),
seeks each to its checkpointed offset or, for partitions never read, by
``auto.offset.reset``, and reads at most ``max_events`` messages, until a poll finds
nothing more.
Offsets are committed to Kafka (with a ``group.id``) only after the Hudi commit, for
monitoring tools; the table's checkpoint is what a restart trusts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hudi_sync.debezium.state import Offsets
from hudi_sync.errors import BadInputError


@dataclass(frozen=True)
class Message:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


@dataclass(frozen=True)
class KafkaSettings:
    bootstrap_servers: str
    topics: tuple[str, ...] = ()
    topic_pattern: str | None = None
    auto_offset_reset: str = "earliest"
    group_id: str | None = None
    client_options: Mapping[str, Any] | None = None  # more kafka-python settings
    poll_timeout_ms: int = 1000


class KafkaSource:
    """A batch reader over the partitions of the ingest's topics (confluent-kafka, on
    librdkafka: about ten times kafka-python's throughput in the benchmark)."""

    def __init__(self, settings: KafkaSettings) -> None:
        from confluent_kafka import Consumer

        if settings.auto_offset_reset not in ("earliest", "latest"):
            raise BadInputError(
                f"auto.offset.reset={settings.auto_offset_reset!r} must be earliest or latest"
            )
        if not settings.topics and not settings.topic_pattern:
            raise BadInputError("no topic to read (--topic or hoodie.streamer.source.kafka.topic)")
        self.settings = settings
        config = {
            "bootstrap.servers": settings.bootstrap_servers,
            "group.id": settings.group_id or "hudi-sync-ingest",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": settings.auto_offset_reset,
            "allow.auto.create.topics": False,
            "log_level": 0,
            **dict(settings.client_options or {}),
        }
        self.consumer = Consumer(config, logger=_SILENT)
        self.partitions = self._assign()

    def _metadata(self, topic: str | None = None) -> Any:
        from confluent_kafka import KafkaException

        try:
            return self.consumer.list_topics(topic, timeout=METADATA_TIMEOUT_S)
        except KafkaException:
            raise BadInputError(
                f"cannot reach a Kafka broker at {self.settings.bootstrap_servers}"
            ) from None

    def _assign(self) -> list[Any]:
        from confluent_kafka import TopicPartition

        names = list(self.settings.topics)
        if self.settings.topic_pattern:
            pattern = re.compile(self.settings.topic_pattern)
            names += sorted(t for t in self._metadata().topics if pattern.fullmatch(t))
            if not names:
                raise BadInputError(
                    f"no topic on {self.settings.bootstrap_servers} matches "
                    f"{self.settings.topic_pattern!r}"
                )
        partitions = []
        for topic in names:
            found = self._metadata(topic).topics.get(topic)
            if found is None or found.error is not None or not found.partitions:
                raise BadInputError(
                    f"topic {topic} does not exist on {self.settings.bootstrap_servers}"
                )
            partitions += [TopicPartition(topic, p) for p in sorted(found.partitions)]
        return partitions

    @property
    def topics(self) -> list[str]:
        return sorted({tp.topic for tp in self.partitions})

    def seek(self, offsets: Offsets) -> Offsets:
        """Position every partition; returns where each one starts."""
        from confluent_kafka import TopicPartition

        starts: Offsets = {}
        assigned = []
        for tp in self.partitions:
            known = offsets.get(tp.topic, {}).get(tp.partition)
            if known is None:
                low, high = self._watermarks(tp)
                known = low if self.settings.auto_offset_reset == "earliest" else high
            assigned.append(TopicPartition(tp.topic, tp.partition, known))
            starts.setdefault(tp.topic, {})[tp.partition] = known
        self.consumer.assign(assigned)
        return starts

    def _watermarks(self, tp: Any) -> tuple[int, int]:
        from confluent_kafka import KafkaException

        try:
            low, high = self.consumer.get_watermark_offsets(tp, timeout=METADATA_TIMEOUT_S)
        except KafkaException as exc:
            raise BadInputError(f"topic {tp.topic} partition {tp.partition}: {exc}") from None
        return int(low), int(high)

    def end_offsets(self) -> Offsets:
        """The high watermarks the last fetches reported (no round trip); a partition
        not fetched yet is asked."""
        ends: Offsets = {}
        for tp in self.partitions:
            high = self.consumer.get_watermark_offsets(tp, cached=True)
            end = high[1] if high and high[1] >= 0 else self._watermarks(tp)[1]
            ends.setdefault(tp.topic, {})[tp.partition] = int(end)
        return ends

    def read_batch(self, start: Offsets, max_events: int) -> tuple[list[Message], Offsets, Offsets]:
        """Up to ``max_events`` messages from ``start``; returns them, the offsets after
        them, and the end offsets (for the lag)."""
        position = {t: dict(p) for t, p in start.items()}
        messages: list[Message] = []
        # Until a poll comes back empty: some brokers' end offsets lag behind batched
        # records, so the end offsets only report the lag.
        while len(messages) < max_events:
            polled = self.consumer.consume(
                num_messages=min(max_events - len(messages), 10_000),
                timeout=self.settings.poll_timeout_ms / 1000,
            )
            if not polled:
                break
            for record in polled:
                error = record.error()
                if error is not None:
                    raise BadInputError(
                        f"topic {record.topic()} partition {record.partition()}: {error.str()}"
                    )
                topic, partition, offset = _located(record)
                if offset < position[topic][partition]:
                    continue  # already read (a re-fetch after a seek)
                messages.append(Message(topic, partition, offset, record.key(), record.value()))
                position[topic][partition] = offset + 1
        ends = self.end_offsets()
        for topic, parts in position.items():
            for partition, offset in parts.items():
                ends.setdefault(topic, {})[partition] = max(ends[topic].get(partition, 0), offset)
        return messages, position, ends

    def commit_offsets(self, offsets: Offsets) -> None:
        """Tell Kafka (monitoring only) how far the table has read."""
        if self.settings.group_id is None:
            return
        from confluent_kafka import TopicPartition

        self.consumer.commit(
            offsets=[
                TopicPartition(t, p, o) for t, parts in offsets.items() for p, o in parts.items()
            ],
            asynchronous=False,
        )

    def close(self) -> None:
        self.consumer.close()


def _located(record: Any) -> tuple[str, int, int]:
    """A fetched record's topic, partition and offset (always set on fetched records)."""
    return str(record.topic()), int(record.partition()), int(record.offset())


class _Silent:
    """librdkafka's log lines (connection retries...) are not for users: errors surface
    as exceptions with one line."""

    def log(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        return self.log


_SILENT = _Silent()
METADATA_TIMEOUT_S = 10.0


def lag(position: Offsets, ends: Offsets) -> int:
    """Messages not yet read."""
    return sum(
        max(0, end - position.get(topic, {}).get(p, 0))
        for topic, parts in ends.items()
        for p, end in parts.items()
    )


def split_names(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """``a,b`` (or a sequence) as names, blanks dropped: topics, key or partition fields."""
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else value
    return tuple(t.strip() for t in items if t.strip())
