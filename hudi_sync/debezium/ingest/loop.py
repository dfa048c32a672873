"""``ingest``: Debezium topics into a Hudi table, batch by batch.

One batch: read up to ``max_events`` messages from the checkpointed offsets, decode
them (in columns, ``columns``, or row by row, ``events``, when the columnar decoder
cannot express the batch), reduce them to one row per key in log order (``batch``),
and commit rows and deletes in one upsert whose commit records the next offsets and
the tombstones (``state``; the write paths: ``writes``). Then offsets go to Kafka
(monitoring only) and the post-commit hook syncs the warehouse. A run killed anywhere
resumes from the last commit: a batch is applied with its offsets or not at all, and
the sync hook runs again at start.

Deletes are rows whose ``_change_operation_type`` is ``d`` (``hoodie.payload.delete.field``
/ ``hoodie.payload.delete.marker``); the ordering field is ``_event_order``, so the
writer keeps whichever of the stored and incoming rows is newer in the database log.

Table type: ``hoodie.datasource.write.table.type`` names a new table's type
(COPY_ON_WRITE by default); an existing table keeps its own, and asking for the other
one is refused before anything is read. On a MERGE_ON_READ table each batch is a
deltacommit (updates and deletes appended to log files) and inline compaction is on
unless ``hoodie.compact.inline`` says otherwise (every
``hoodie.compact.inline.max.delta.commits`` deltacommits, 5 by default). A compaction
left pending by a killed run is finished when the next run starts; the checkpoint
lives in the deltacommits, so a compaction never moves it. With ``continuous``, a
bucket-index MOR table is compacted asynchronously (``compactor``): the ingest keeps
committing while a compaction runs.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from hudi_sync import config as cfg
from hudi_sync.debezium.batch import Reduced, reduce_events
from hudi_sync.debezium.columns import ColumnEvents, ColumnReduced, decode_columns, reduce_columns
from hudi_sync.debezium.events import ChangeEvent, EventError, EventReader, EventSettings, Position
from hudi_sync.debezium.ingest.compactor import AsyncCompactor
from hudi_sync.debezium.ingest.options import IngestConfig
from hudi_sync.debezium.ingest.writes import BatchWriter, SparkSource
from hudi_sync.debezium.kafka_source import KafkaSource, Message, lag
from hudi_sync.debezium.registry import SchemaRegistry
from hudi_sync.debezium.state import IngestState, Offsets, format_checkpoint, load_state
from hudi_sync.gc_pause import cycle_collection_paused


@dataclass
class IngestSummary:
    """What a run did, for people and for ``--json``."""

    table: str
    events_read: int = 0
    keys_written: int = 0  # rows upserted or deleted (one per key and batch)
    events_dropped: int = 0  # older than a tombstone or a truncate
    events_skipped: int = 0  # unreadable, sent to the dead-letter file
    batches_committed: int = 0
    instants: list[str] = field(default_factory=list)
    lag: int = 0
    checkpoint: str = ""
    sync_errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


ProgressCallback = Callable[[IngestSummary], None]


@dataclass(frozen=True)
class _Batch:
    """Messages read from Kafka, decoded; ``after``: the offsets that follow them."""

    messages: list[Message]
    after: Offsets
    ends: Offsets
    events: list[ChangeEvent]
    columns: ColumnEvents | None = None  # the batch decoded in columns (then no events)


def ingest(
    spark: SparkSource,
    config: IngestConfig,
    progress: ProgressCallback | None = None,
    stop: threading.Event | None = None,
) -> IngestSummary:
    """Ingest until the topics are read to their end (or, ``continuous``, until
    ``stop`` is set); each batch is one commit. ``spark``: a session, or what starts
    one, called on the first batch that needs Spark (``writes``)."""
    return _Ingest(spark, config, progress, stop or threading.Event()).run()


class _Ingest:
    def __init__(
        self,
        spark: SparkSource,
        config: IngestConfig,
        progress: ProgressCallback | None,
        stop: threading.Event,
    ) -> None:
        self.config = config
        self.path = config.table_path
        self.progress = progress or (lambda summary: None)
        self.stop = stop
        self.summary = IngestSummary(config.table_path)
        self.reader = EventReader(
            EventSettings(config.record_key_fields, config.unavailable_values),
            SchemaRegistry(config.registry_url, user_info=config.registry_user_info),
        )
        self.writer = BatchWriter(spark, config, lambda: self.reader.key_fields or ())
        self.compactor: AsyncCompactor | None = None  # --continuous into MOR: beside the ingest

    def run(self) -> IngestSummary:
        self.writer.prepare_table()
        state = load_state(self.path, self.config.storage_options)
        tombstones = self.writer.store.load(state.tombstone_files)
        if state.instant is not None:
            self._sync()  # a run killed during its sync left the warehouse behind
        source = KafkaSource(self.config.kafka)
        # The next batch is read and decoded while this one is written (the driver
        # mostly waits for the JVM or for storage then); it is reduced only after this
        # commit, against the tombstones the commit leaves.
        prefetch = ThreadPoolExecutor(max_workers=1, thread_name_prefix="debezium-read")
        try:
            pending = prefetch.submit(self._read, source, source.seek(state.offsets))
            while not self.stop.is_set():
                batch = pending.result()
                self.summary.lag = lag(batch.after, batch.ends)
                if not batch.messages:
                    if not self.config.continuous:
                        break
                    self.stop.wait(self.config.poll_interval_s)
                    pending = prefetch.submit(self._read, source, batch.after)
                    continue
                pending = prefetch.submit(self._read, source, batch.after)
                self.summary.events_read += len(batch.messages)
                reduced: Reduced | ColumnReduced
                if batch.columns is not None:
                    reduced = reduce_columns(batch.columns, tombstones, state.truncated_before)
                else:
                    with cycle_collection_paused():
                        reduced = reduce_events(
                            batch.events,
                            tombstones,
                            state.truncated_before,
                            self.config.truncate_policy,
                        )
                if self.stop.is_set():
                    break  # abandon the batch: nothing was written, its offsets are not saved
                state = self._commit(reduced, state, tombstones, batch.after)
                if self.compactor is not None:
                    self.compactor.after_commit()
                source.commit_offsets(batch.after)
                self.writer.store.remove_unreferenced(state.tombstone_files)
                self.summary.keys_written += reduced.size
                self.summary.events_dropped += reduced.dropped
                self._sync()
                self.progress(self.summary)
        finally:
            prefetch.shutdown(wait=True, cancel_futures=True)
            if self.compactor is not None:
                self.compactor.close()
            source.close()
        self.summary.checkpoint = format_checkpoint(state.offsets)
        return self.summary

    def _read(self, source: KafkaSource, position: Offsets) -> _Batch:
        messages, after, ends = source.read_batch(position, self.config.max_events)
        columns = self._decode_columns(messages)
        if columns is not None:
            return _Batch(messages, after, ends, [], columns)
        return _Batch(messages, after, ends, self._decode(messages))

    def _decode_columns(self, messages: list[Message]) -> ColumnEvents | None:
        """The batch in columns, when the columnar decoder can express every event;
        None: decode row by row."""
        if not messages or not self.reader.key_fields:
            return None  # key fields are learned from the first batch's messages
        return decode_columns(
            [m.value for m in messages],
            [m.key for m in messages],
            self.reader.key_fields,
            self.config.record_key_fields is not None,
            self.writer.stored_types(),
            self.reader.raw_placeholders,
            self.writer.partition_fields(),
        )

    # -- decoding --------------------------------------------------------------------------
    def _decode(self, messages: list[Message]) -> list[ChangeEvent]:
        with cycle_collection_paused():
            return self._decode_all(messages)

    def _decode_all(self, messages: list[Message]) -> list[ChangeEvent]:
        events = []
        for message in messages:
            position = Position(message.topic, message.partition, message.offset)
            try:
                event = self.reader.read(position, message.key, message.value)
            except EventError as exc:
                if self.config.on_error == "stop":
                    raise
                self._dead_letter(message, str(exc))
                continue
            if event is not None:
                events.append(event)
        return events

    def _dead_letter(self, message: Message, error: str) -> None:
        """Log a skipped message (with its bytes, as latin-1 text) and go on."""
        self.summary.events_skipped += 1
        record = {
            "topic": message.topic,
            "partition": message.partition,
            "offset": message.offset,
            "error": error,
            "key": message.key.decode("latin-1") if message.key is not None else None,
            "value": message.value.decode("latin-1") if message.value is not None else None,
        }
        path = self.config.dead_letter_path.removeprefix("file://")
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")

    # -- one commit ------------------------------------------------------------------------

    def _commit(
        self,
        reduced: Reduced | ColumnReduced,
        state: IngestState,
        tombstones: dict[str, str],
        after: dict[str, dict[int, int]],
    ) -> IngestState:
        if self.compactor is None and self.writer.compacts_async():
            self.compactor = AsyncCompactor(
                self.path,
                self.config.storage_options,
                cfg.COMPACT_MAX_DELTA_COMMITS.read(self.writer.options),
                self.writer.lock,
            )
        new_state = self.writer.commit(reduced, state, tombstones, after)
        if new_state.instant is not None:
            self.summary.batches_committed += 1
            self.summary.instants.append(new_state.instant)
        return new_state

    def _sync(self) -> None:
        error = self.writer.sync()
        if error is not None:
            self.summary.sync_errors.append(error)
