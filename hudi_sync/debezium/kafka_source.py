"""Reading Debezium topics from Kafka in batches, from offsets the table remembers.

The consumer (confluent-kafka) assigns itself every partition of the topics (no group
rebalancing: the offsets come from the table's last commit, so one ingest per table),
seeks each to its checkpointed offset or, for partitions never read, by
``auto.offset.reset``, and reads at most ``max_events`` messages, until every partition
reports its end (or nothing comes for the poll timeout).
Every Kafka client setting given (``security.protocol``, ``sasl.*``, ``ssl.*``...) goes to
the consumer as HoodieStreamer passes its non-``hoodie.*`` properties to its
KafkaConsumer; the Java client's ``sasl.jaas.config`` (PLAIN, SCRAM) becomes librdkafka's
``sasl.username``/``sasl.password``. Errors and reprs never show a secret.
Offsets are committed to Kafka (with a ``group.id``) only after the Hudi commit, for
monitoring tools; the table's checkpoint is what a restart trusts.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hudi_sync import config as cfg
from hudi_sync.debezium.masking import masked_repr, scrub, secrets_of
from hudi_sync.debezium.state import Offsets
from hudi_sync.errors import BadInputError


@dataclass(frozen=True)
class Message:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


@dataclass(frozen=True, repr=False)
class KafkaSettings:
    bootstrap_servers: str
    topics: tuple[str, ...] = ()
    topic_pattern: str | None = None
    auto_offset_reset: str = "earliest"
    group_id: str | None = None
    # More consumer settings by Kafka's/librdkafka's names (security.protocol, sasl.*,
    # ssl.*, fetch.*...), passed to confluent-kafka as given.
    client_options: Mapping[str, Any] | None = None
    poll_timeout_ms: int = 1000

    def __repr__(self) -> str:
        return masked_repr(self)

    @property
    def connection(self) -> str:
        """How the consumer connects, for errors: the protocol and SASL mechanism."""
        options = self.client_options or {}
        protocol = str(options.get("security.protocol", "plaintext")).upper()
        if not protocol.startswith("SASL"):
            return protocol
        mechanism = options.get("sasl.mechanism") or options.get("sasl.mechanisms") or "GSSAPI"
        return f"{protocol} (sasl.mechanism {mechanism})"


class KafkaSource:
    """A batch reader over the partitions of the ingest's topics (confluent-kafka, on
    librdkafka: about ten times kafka-python's throughput in the benchmark)."""

    def __init__(self, settings: KafkaSettings) -> None:
        from confluent_kafka import Consumer, KafkaException

        if settings.auto_offset_reset not in ("earliest", "latest"):
            raise BadInputError(
                f"auto.offset.reset={settings.auto_offset_reset!r} must be earliest or latest"
            )
        if not settings.topics and not settings.topic_pattern:
            raise BadInputError(f"no topic to read (--topic or {cfg.TOPIC.key})")
        self.settings = settings
        client = consumer_settings(settings.client_options or {})
        self._secrets = secrets_of(settings.client_options) | secrets_of(client)
        self._errors: list[Any] = []  # librdkafka's errors (error_cb), newest last
        config = {
            **client,
            "bootstrap.servers": settings.bootstrap_servers,
            "group.id": settings.group_id or "hudi-sync-ingest",
            "auto.offset.reset": settings.auto_offset_reset,
            # Ours: offsets go to Kafka only after each Hudi commit; topics are never created.
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "allow.auto.create.topics": False,
            # A fetch that reaches a partition's high watermark reports it (read_batch
            # ends on it instead of waiting out an empty poll).
            "enable.partition.eof": True,
            "log_level": 0,
            "error_cb": self._on_error,
        }
        try:
            self.consumer = Consumer(config, logger=_SILENT)
        except KafkaException as exc:
            raise BadInputError(
                "the Kafka consumer refused its settings (non-hoodie.* options go to it): "
                + self._scrub(exc.args[0].str())
            ) from None
        try:
            self.partitions = self._assign()
        except BaseException:
            self.consumer.close()  # else librdkafka keeps reconnecting in the background
            raise

    def _on_error(self, error: Any) -> None:
        """librdkafka's asynchronous errors (served by poll): kept to explain a failure."""
        self._errors = [*self._errors[-9:], error]

    def _scrub(self, text: str) -> str:
        return scrub(text, self._secrets)

    def _failure(self) -> str | None:
        """The most telling error librdkafka reported: an authentication or TLS failure
        before a transport one; None when none was reported."""
        from confluent_kafka import KafkaError

        useful = [e for e in self._errors if e.code() != KafkaError._ALL_BROKERS_DOWN]
        if not useful:
            return None
        telling = (KafkaError._AUTHENTICATION, KafkaError._SSL)
        error = next((e for e in reversed(useful) if e.code() in telling), useful[-1])
        text = _BROKER_PREFIX.sub("", str(error.str()))
        return self._scrub(text)

    def _refused(self) -> bool:
        """Whether the broker refused the client (credentials, mechanism, TLS): asking
        again will not help."""
        from confluent_kafka import KafkaError

        refused = (KafkaError._AUTHENTICATION, KafkaError._SSL)
        return any(e.code() in refused or e.fatal() for e in self._errors)

    def _metadata(self, topic: str | None = None) -> Any:
        """Cluster (or one topic's) metadata; fails in one line naming the brokers, the
        protocol and the cause, at once when the broker refused the client."""
        from confluent_kafka import KafkaException

        deadline = time.monotonic() + METADATA_TIMEOUT_S
        while True:
            remaining = deadline - time.monotonic()
            try:
                return self.consumer.list_topics(topic, timeout=max(0.1, min(1.0, remaining)))
            except KafkaException:
                self.consumer.poll(0)  # serves error_cb
                if self._refused() or time.monotonic() >= deadline:
                    break
        cause = self._failure()
        raise BadInputError(
            f"cannot reach a Kafka broker at {self.settings.bootstrap_servers} over "
            f"{self.settings.connection}" + (f": {cause}" if cause else "")
        )

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

    def _fetched_end(self, tp: Any) -> int:
        """The partition's high watermark as the last fetch reported it; -1 before any."""
        high = self.consumer.get_watermark_offsets(tp, cached=True)
        return int(high[1]) if high and high[1] >= 0 else -1

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
        from confluent_kafka import KafkaError

        position = {t: dict(p) for t, p in start.items()}
        messages: list[Message] = []
        # Until every partition is at its end: reported by a fetch in this batch, or its
        # position at the high watermark of the last fetch (some brokers' listed end
        # offsets lag behind batched records, so those only report the lag); or until
        # nothing came for the poll timeout. A consume waits out its whole timeout unless
        # it fills its batch, so the wait goes in slices, the end checked after each.
        at_end = {
            (tp.topic, tp.partition)
            for tp in self.partitions
            if 0 <= self._fetched_end(tp) <= position[tp.topic][tp.partition]
        }
        wait = self.settings.poll_timeout_ms / 1000
        last_polled = time.monotonic()
        while len(messages) < max_events:
            ended = len(at_end) == len(self.partitions)
            polled = self.consumer.consume(
                num_messages=min(max_events - len(messages), 10_000),
                timeout=0 if ended else min(POLL_SLICE_S, wait),
            )
            if not polled:
                if ended or time.monotonic() - last_polled >= wait:
                    break
                continue
            last_polled = time.monotonic()
            for record in polled:
                error = record.error()
                if error is not None and error.code() == KafkaError._PARTITION_EOF:
                    at_end.add(_located(record)[:2])
                    continue
                if error is not None:
                    raise BadInputError(
                        f"topic {record.topic()} partition {record.partition()}: {error.str()}"
                    )
                topic, partition, offset = _located(record)
                at_end.discard((topic, partition))
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
    """A fetched record's (or end of partition event's) topic, partition and offset
    (always set on those)."""
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
POLL_SLICE_S = 0.05  # the longest a batch waits past the last partition's end
# librdkafka starts its errors with the broker's name (sasl_ssl://host:port/bootstrap: ...).
_BROKER_PREFIX = re.compile(r"^\S+/(?:bootstrap|-?\d+): ")
_JAAS_MODULES = ("PlainLoginModule", "ScramLoginModule")
_JAAS = re.compile(r"^\s*(\S+)\s+(?:required|requisite|sufficient|optional)\b(.*?);?\s*$", re.S)
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;]+))')


def consumer_settings(options: Mapping[str, Any]) -> dict[str, str]:
    """Kafka client settings as confluent-kafka takes them. The Java client's
    ``sasl.jaas.config`` (what HoodieStreamer's properties carry) is translated for the
    PLAIN and SCRAM login modules; explicit ``sasl.username``/``sasl.password`` win."""
    settings = {k: str(v) for k, v in options.items() if k != "sasl.jaas.config"}
    jaas = options.get("sasl.jaas.config")
    if jaas is None:
        return settings
    match = _JAAS.match(str(jaas))
    module = match.group(1) if match else ""
    if not module.endswith(_JAAS_MODULES):
        raise BadInputError(
            f"sasl.jaas.config: login module {module.rsplit('.', 1)[-1] or '(none)'} is not "
            "PlainLoginModule or ScramLoginModule; give librdkafka's sasl.* settings instead"
        )
    assert match is not None
    values = {
        m.group(1): re.sub(r"\\(.)", r"\1", m.group(2)) if m.group(2) is not None else m.group(3)
        for m in _JAAS_OPTION.finditer(match.group(2))
    }
    for name in ("username", "password"):
        if name not in values:
            raise BadInputError(f"sasl.jaas.config: {module.rsplit('.', 1)[-1]} has no {name}")
        settings.setdefault(f"sasl.{name}", values[name])
    return settings


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
