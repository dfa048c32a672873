"""Reading Debezium topics from Kafka in batches, from offsets the table remembers.

The consumer assigns itself every partition of the topics (no group rebalancing: the
offsets come from the table's last commit, so one ingest per table), seeks each to its
checkpointed offset or, for partitions never read, by ``auto.offset.reset``, and reads
at most ``max_events`` messages up to the end offsets seen when the batch started.
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
    """A batch reader over the partitions of the ingest's topics."""

    def __init__(self, settings: KafkaSettings) -> None:
        from kafka import KafkaConsumer
        from kafka.errors import KafkaError, KafkaTimeoutError

        if settings.auto_offset_reset not in ("earliest", "latest"):
            raise BadInputError(
                f"auto.offset.reset={settings.auto_offset_reset!r} must be earliest or latest"
            )
        if not settings.topics and not settings.topic_pattern:
            raise BadInputError("no topic to read (--topic or hoodie.streamer.source.kafka.topic)")
        self.settings = settings
        try:
            self.consumer = KafkaConsumer(
                bootstrap_servers=settings.bootstrap_servers.split(","),
                group_id=settings.group_id,
                enable_auto_commit=False,
                auto_offset_reset=settings.auto_offset_reset,
                **{"bootstrap_timeout_ms": 10_000, **dict(settings.client_options or {})},
            )
        except KafkaTimeoutError:
            raise BadInputError(
                f"cannot reach a Kafka broker at {settings.bootstrap_servers}"
            ) from None
        except KafkaError as exc:
            raise BadInputError(f"Kafka at {settings.bootstrap_servers}: {exc}") from None
        self.partitions = self._assign()

    def _assign(self) -> list[Any]:
        from kafka import TopicPartition

        names = list(self.settings.topics)
        if self.settings.topic_pattern:
            pattern = re.compile(self.settings.topic_pattern)
            names += sorted(t for t in self.consumer.topics() if pattern.fullmatch(t))
            if not names:
                raise BadInputError(
                    f"no topic on {self.settings.bootstrap_servers} matches "
                    f"{self.settings.topic_pattern!r}"
                )
        partitions = []
        for topic in names:
            found = self.consumer.partitions_for_topic(topic)
            if not found:
                raise BadInputError(
                    f"topic {topic} does not exist on {self.settings.bootstrap_servers}"
                )
            partitions += [TopicPartition(topic, p) for p in sorted(found)]
        self.consumer.assign(partitions)
        return partitions

    @property
    def topics(self) -> list[str]:
        return sorted({tp.topic for tp in self.partitions})

    def seek(self, offsets: Offsets) -> Offsets:
        """Position every partition; returns where each one starts."""
        starts: Offsets = {}
        beginning = self.consumer.beginning_offsets(self.partitions)
        end = self.consumer.end_offsets(self.partitions)
        for tp in self.partitions:
            known = offsets.get(tp.topic, {}).get(tp.partition)
            if known is None:
                known = beginning[tp] if self.settings.auto_offset_reset == "earliest" else end[tp]
            self.consumer.seek(tp, known)
            starts.setdefault(tp.topic, {})[tp.partition] = known
        return starts

    def end_offsets(self) -> Offsets:
        ends: Offsets = {}
        for tp, offset in self.consumer.end_offsets(self.partitions).items():
            ends.setdefault(tp.topic, {})[tp.partition] = offset
        return ends

    def read_batch(self, start: Offsets, max_events: int) -> tuple[list[Message], Offsets, Offsets]:
        """Up to ``max_events`` messages from ``start``; returns them, the offsets after
        them, and the end offsets (for the lag)."""
        position = {t: dict(p) for t, p in start.items()}
        messages: list[Message] = []
        # Until a poll comes back empty: some brokers' end offsets lag behind batched
        # records, so the end offsets only report the lag.
        while len(messages) < max_events:
            polled = self.consumer.poll(
                timeout_ms=self.settings.poll_timeout_ms, max_records=max_events - len(messages)
            )
            if not polled:
                break
            for tp, records in polled.items():
                for record in records:
                    if record.offset < position[tp.topic][tp.partition]:
                        continue  # already read (a re-fetch after a seek)
                    messages.append(
                        Message(tp.topic, tp.partition, record.offset, record.key, record.value)
                    )
                    position[tp.topic][tp.partition] = record.offset + 1
        ends = self.end_offsets()
        for topic, parts in position.items():
            for partition, offset in parts.items():
                ends.setdefault(topic, {})[partition] = max(ends[topic].get(partition, 0), offset)
        return messages, position, ends

    def commit_offsets(self, offsets: Offsets) -> None:
        """Tell Kafka (monitoring only) how far the table has read."""
        if self.settings.group_id is None:
            return
        from kafka import OffsetAndMetadata, TopicPartition

        self.consumer.commit(
            {
                TopicPartition(t, p): OffsetAndMetadata(o, "", -1)
                for t, parts in offsets.items()
                for p, o in parts.items()
            }
        )

    def close(self) -> None:
        self.consumer.close()


def lag(position: Offsets, ends: Offsets) -> int:
    """Messages not yet read."""
    return sum(
        max(0, end - position.get(topic, {}).get(p, 0))
        for topic, parts in ends.items()
        for p, end in parts.items()
    )


def split_topics(value: str | Sequence[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else value
    return tuple(t.strip() for t in items if t.strip())
