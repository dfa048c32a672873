"""``ingest``: Debezium topics into a Hudi table, batch by batch; ``ingest_tables``: one
table per topic under a base path.

One batch: read up to ``max_events`` messages from the checkpointed offsets, decode
them (``events``), reduce them to one row per key in log order (``batch``),
and commit rows and deletes in one upsert whose commit records the next offsets and
the tombstones (``state``). Then offsets go to Kafka (monitoring only) and the
post-commit hook syncs the warehouse. A run killed anywhere resumes from the last
commit: a batch is applied with its offsets or not at all, and the sync hook runs
again at start.

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
lives in the deltacommits, so a compaction never moves it.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_sync import config as cfg
from hudi_sync.debezium.batch import Reduced, reduce_events, to_table
from hudi_sync.debezium.events import (
    OP,
    ORDER,
    UNAVAILABLE,
    ChangeEvent,
    EventError,
    EventReader,
    EventSettings,
    Position,
)
from hudi_sync.debezium.kafka_source import KafkaSettings, KafkaSource, Message, lag
from hudi_sync.debezium.masking import mask_value, masked_repr
from hudi_sync.debezium.registry import SchemaRegistry
from hudi_sync.debezium.state import (
    IngestState,
    Offsets,
    TombstoneStore,
    format_checkpoint,
    load_state,
)
from hudi_sync.errors import BadInputError, HudiSyncError, TableNotFoundError, first_line
from hudi_sync.gc_pause import cycle_collection_paused
from hudi_sync.spark.reading.reader import read
from hudi_sync.spark.writing import options as opt
from hudi_sync.spark.writing.compaction import spark_executor
from hudi_sync.spark.writing.options import WriteOptions
from hudi_sync.spark.writing.writer import write, write_arrow
from hudi_sync.sync.hook import run_post_commit_hook
from hudi_sync.table import HudiTable
from hudi_sync.table.schema import META_FIELDS
from hudi_sync.table.snapshot_read import table_data_fields
from hudi_sync.table.write.compaction import compact, pending_compactions
from hudi_sync.table.write.lock import TableLock

UNAVAILABLE_COLUMNS = "__hudi_sync_unavailable"
ON_ERROR = cfg.ON_ERROR.choices

# Option names: Hudi's streamer / Kafka's / Debezium's where they have one (declared,
# with the older hoodie.deltastreamer.* spellings, in hudi_sync.config).
TOPIC = cfg.TOPIC.key
MAX_EVENTS = cfg.MAX_EVENTS.key
REGISTRY_URL = cfg.REGISTRY_URL.key
TRUNCATE_POLICY = cfg.TRUNCATE_POLICY.key
ON_ERROR_OPTION = cfg.ON_ERROR.key
DEAD_LETTER = cfg.DEAD_LETTER.key
PLACEHOLDER = cfg.PLACEHOLDER.key  # Debezium's connector option
BINARY_MODE = cfg.BINARY_MODE.key  # Debezium's connector option
# The schema registry's basic auth by Confluent's client names (also with the
# schema.registry. prefix Confluent's serializers accept).
USER_INFO = cfg.REGISTRY_USER_INFO.key
CREDENTIALS_SOURCE = cfg.REGISTRY_CREDENTIALS_SOURCE.key
_REGISTRY_PREFIXES = ("schema.registry.", "basic.auth.")
# Not hoodie.* yet not Kafka client settings: the consumer's named fields, Debezium's.
_NOT_CLIENT = {
    cfg.BOOTSTRAP_SERVERS.key,
    cfg.GROUP_ID.key,
    cfg.AUTO_OFFSET_RESET.key,
    PLACEHOLDER,
    BINARY_MODE,
}
# The CLI's flags (keyword overrides) that are options: read by the same rules.
_OPTION_OVERRIDES: dict[str, cfg.OptionSpec[Any]] = {
    "max_events": cfg.MAX_EVENTS,
    "truncate_policy": cfg.TRUNCATE_POLICY,
    "on_error": cfg.ON_ERROR,
    "dead_letter_path": cfg.DEAD_LETTER,
}


@dataclass(frozen=True, repr=False)
class IngestConfig:
    """Everything one ingest needs; ``from_options`` reads it from Hudi's names.
    Its repr masks credentials (Kafka client secrets, registry passwords)."""

    table_path: str
    kafka: KafkaSettings
    write_options: Mapping[str, str] = field(default_factory=dict)
    record_key_fields: tuple[str, ...] | None = None
    max_events: int = 100_000
    truncate_policy: str = "fail"
    on_error: str = "stop"
    dead_letter_path: str = "debezium-dead-letter.jsonl"
    registry_url: str | None = None  # may hold user:password@
    registry_user_info: str | None = None  # user:password for the registry's basic auth
    unavailable_values: tuple[str, ...] = (UNAVAILABLE,)
    binary_handling_mode: str = "bytes"
    continuous: bool = False
    poll_interval_s: float = 5.0
    storage_options: Mapping[str, Any] | None = None

    def __repr__(self) -> str:
        return masked_repr(self)

    @classmethod
    def from_options(
        cls, table_path: str, options: Mapping[str, Any], **overrides: Any
    ) -> IngestConfig:
        """Options by Hudi's names (``hoodie.deltastreamer.*`` spellings too); keyword
        overrides (the CLI's flags) win. As in HoodieStreamer, every option that is not
        ``hoodie.*`` (nor the registry's or Debezium's) is a Kafka consumer setting."""
        o = {str(k): str(v) for k, v in options.items()}
        _apply_table_type(o, overrides.pop("table_type", None))
        for name, spec in _OPTION_OVERRIDES.items():
            value = overrides.pop(name, None)
            if value is not None:  # a flag wins: the key is read before its alternates
                o[spec.key] = str(value)
        placeholder = cfg.PLACEHOLDER.text(o)  # compared with data: as given
        cfg.META_SYNC.read(o)  # a bad value fails now, not after the first commit
        kafka = KafkaSettings(
            bootstrap_servers=cfg.BOOTSTRAP_SERVERS.read(o),
            topics=cfg.TOPIC.read(o),
            auto_offset_reset=cfg.AUTO_OFFSET_RESET.read(o),
            group_id=cfg.GROUP_ID.read(o),
            client_options={
                k: v
                for k, v in o.items()
                if not k.startswith((cfg.HOODIE_PREFIX, *_REGISTRY_PREFIXES))
                and k not in _NOT_CLIENT
            },
        )
        values: dict[str, Any] = {
            "table_path": table_path,
            "kafka": kafka,
            "write_options": {k: v for k, v in o.items() if k.startswith(cfg.HOODIE_PREFIX)},
            "record_key_fields": cfg.RECORD_KEY.read(o) or None,
            "max_events": cfg.MAX_EVENTS.read(o),
            "truncate_policy": cfg.TRUNCATE_POLICY.read(o),
            "on_error": cfg.ON_ERROR.read(o),
            "dead_letter_path": cfg.DEAD_LETTER.read(o),
            "registry_url": cfg.REGISTRY_URL.read(o),
            "registry_user_info": _registry_user_info(o),
            "unavailable_values": (UNAVAILABLE, placeholder) if placeholder else (UNAVAILABLE,),
            "binary_handling_mode": cfg.BINARY_MODE.read(o),
        }
        kafka_keys = ("bootstrap_servers", "topics", "topic_pattern", "auto_offset_reset")
        kafka_overrides = {k: overrides.pop(k, None) for k in kafka_keys}
        kafka_overrides = {k: v for k, v in kafka_overrides.items() if v not in (None, ())}
        values["kafka"] = KafkaSettings(**{**kafka.__dict__, **kafka_overrides})
        values.update({k: v for k, v in overrides.items() if v is not None})
        config = cls(**values)
        config.check()
        return config

    def check(self) -> None:
        if "://" in self.dead_letter_path and not self.dead_letter_path.startswith("file://"):
            raise BadInputError(
                f"{DEAD_LETTER}={self.dead_letter_path}: the dead-letter file is appended to "
                "after each bad event, and object stores cannot append; give a local path"
            )


def _apply_table_type(options: dict[str, str], flag: str | None) -> None:
    """``--table-type`` into the options: it and ``hoodie.datasource.write.table.type``
    must agree when both are given."""
    spec = cfg.WRITE_TABLE_TYPE
    asked = spec.read(options) if spec.given(options) else None  # a bad value fails now
    if flag is None:
        return
    chosen = spec.read({spec.key: flag})
    if asked is not None and asked != chosen:
        raise BadInputError(
            f"--table-type {chosen} disagrees with {spec.key}={asked} (give one, or the same)"
        )
    for name in spec.alternates:
        options.pop(name, None)
    options[spec.key] = chosen


def _registry_user_info(options: Mapping[str, str]) -> str | None:
    """The registry's ``user:password`` from Confluent's settings: ``basic.auth.user.info``
    unless ``basic.auth.credentials.source=URL`` (then the URL's own, read by the
    registry client). Never echoes a value."""

    source = (cfg.REGISTRY_CREDENTIALS_SOURCE.read(options) or "").upper()
    user_info = cfg.REGISTRY_USER_INFO.text(options)  # a secret: never stripped nor echoed
    if source not in ("", "USER_INFO", "URL"):
        raise BadInputError(
            f"{CREDENTIALS_SOURCE}={source} is not supported (USER_INFO, or URL for "
            "user:password@ in the registry URL)"
        )
    if source == "URL":
        return None
    if source == "USER_INFO" and not user_info:
        raise BadInputError(f"{CREDENTIALS_SOURCE}=USER_INFO needs {USER_INFO} (user:password)")
    if user_info and ":" not in user_info:
        raise BadInputError(f"{USER_INFO} must be user:password (it has no ':')")
    return user_info or None


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


def ingest(
    spark: SparkSession,
    config: IngestConfig,
    progress: ProgressCallback | None = None,
    stop: threading.Event | None = None,
) -> IngestSummary:
    """Ingest until the topics are read to their end (or, ``continuous``, until
    ``stop`` is set); each batch is one commit."""
    return _Ingest(spark, config, progress, stop or threading.Event()).run()


class _Ingest:
    def __init__(
        self,
        spark: SparkSession,
        config: IngestConfig,
        progress: ProgressCallback | None,
        stop: threading.Event,
    ) -> None:
        self.spark = spark
        self.config = config
        self.path = config.table_path
        self.progress = progress or (lambda summary: None)
        self.stop = stop
        self.summary = IngestSummary(config.table_path)
        self.reader = EventReader(
            EventSettings(config.record_key_fields, config.unavailable_values),
            SchemaRegistry(config.registry_url, user_info=config.registry_user_info),
        )
        self.store = TombstoneStore(self.path, config.storage_options)
        self.write_options: dict[str, str] = dict(config.write_options)
        self._table_buckets: bool | None = None  # the table is written with the bucket index

    def run(self) -> IngestSummary:
        self.write_options = self._prepare_table()
        state = load_state(self.path, self.config.storage_options)
        tombstones = self.store.load(state.tombstone_files)
        if state.instant is not None:
            self._sync()  # a run killed during its sync left the warehouse behind
        source = KafkaSource(self.config.kafka)
        # The next batch is read and decoded while Spark writes this one (the driver
        # mostly waits for the JVM then); it is reduced only after this commit, against
        # the tombstones the commit leaves.
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
                source.commit_offsets(batch.after)
                self.store.remove_unreferenced(state.tombstone_files)
                self.summary.keys_written += len(reduced.final)
                self.summary.events_dropped += reduced.dropped
                self._sync()
                self.progress(self.summary)
        finally:
            prefetch.shutdown(wait=True, cancel_futures=True)
            source.close()
        self.summary.checkpoint = format_checkpoint(state.offsets)
        return self.summary

    def _read(self, source: KafkaSource, position: Offsets) -> _Batch:
        messages, after, ends = source.read_batch(position, self.config.max_events)
        return _Batch(messages, after, ends, self._decode(messages))

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
        reduced: Reduced,
        state: IngestState,
        tombstones: dict[str, str],
        after: dict[str, dict[int, int]],
    ) -> IngestState:
        rows = list(reduced.final.values())
        if rows and not reduced.unresolved and not reduced.truncated_at and self._buckets():
            # The bucket index: Arrow rows appended in this process, no Spark job.
            with cycle_collection_paused():
                arrow = self._arrow_rows(rows)
            return self._commit_rows(arrow, reduced, state, tombstones, after)
        stored = self._stored()
        if not rows and not (reduced.truncated_at and stored is not None):
            if stored is None:
                return IngestState(after, state.tombstone_files, state.truncated_before)
            frame = stored.limit(0).drop(*META_FIELDS)
        else:
            frame = self._frame(rows, reduced, stored)
        return self._commit_rows(frame, reduced, state, tombstones, after)

    def _commit_rows(
        self,
        rows: DataFrame | pa.Table,
        reduced: Reduced,
        state: IngestState,
        tombstones: dict[str, str],
        after: dict[str, dict[int, int]],
    ) -> IngestState:
        """Commit the batch's rows (a DataFrame, or Arrow rows for the bucket index)
        with its checkpoint and tombstones."""
        files = self.store.add(state, tombstones, reduced.deletes, reduced.upserted_keys)
        new_state = IngestState(
            offsets=after,
            tombstone_files=files,
            truncated_before=reduced.truncated_at or state.truncated_before,
        )
        writes = write_arrow if isinstance(rows, pa.Table) else write
        result = writes(
            rows,
            self.path,
            self._write_options(),
            self.config.storage_options,
            extra_metadata=new_state.metadata(),
        )
        new_state.instant = result.instant
        for key in reduced.upserted_keys:
            tombstones.pop(key, None)
        tombstones.update(reduced.deletes)
        self.summary.batches_committed += 1
        self.summary.instants.append(result.instant)
        return new_state

    def _prepare_table(self) -> dict[str, str]:
        """The write options for this table's type: an existing table's own type (asking
        for the other one is refused here, before anything is read); Merge-on-Read gets
        inline compaction unless told otherwise, and a compaction a killed run left
        pending is finished now, so a run with nothing to read still converges."""
        options = dict(self.config.write_options)
        spec = cfg.WRITE_TABLE_TYPE
        try:
            table = HudiTable.open(self.path, self.config.storage_options)
        except TableNotFoundError:
            table = None
        if table is None:
            table_type = spec.read(options)
        else:
            table_type = table.config.table_type.value
            if spec.given(options) and spec.read(options) != table_type:
                raise BadInputError(
                    f"{table.uri}: {spec.key}={spec.read(options)} but the table is "
                    f"{table_type} (a table's type is fixed when it is created)"
                )
        if table_type == "MERGE_ON_READ":
            if not cfg.COMPACT_INLINE.given(options):
                options[cfg.COMPACT_INLINE.key] = "true"
            if table is None and not cfg.INDEX_TYPE.given(options):
                # No key lookup on the hot path: a new MOR table hashes keys to buckets.
                options[cfg.INDEX_TYPE.key] = "BUCKET"
            if table is not None:
                self._finish_compactions(table, options)
        return options

    def _finish_compactions(self, table: HudiTable, options: Mapping[str, str]) -> None:
        if not pending_compactions(table):
            return
        lock = TableLock(
            table.location,
            table.location.join(".hoodie"),
            wait_ms=cfg.LOCK_WAIT_MS.read(options),
            expire_minutes=cfg.LOCK_EXPIRE_MINUTES.read(options),
        )
        compact(table, lock, schedule=False, executor=spark_executor(self.spark))

    def _write_options(self) -> dict[str, str]:
        options = dict(self.write_options)
        key_fields = self.reader.key_fields or ()
        options.setdefault(opt.TABLE_NAME, _default_table_name(self.config.kafka))
        options.update(
            {
                opt.RECORD_KEY: ",".join(key_fields),
                opt.ORDERING: ORDER,
                opt.OPERATION: "upsert",
                opt.DELETE_FIELD: OP,
                opt.DELETE_MARKER: "d",
                opt.META_SYNC: "false",  # the ingest runs the hook after its bookkeeping
            }
        )
        return options

    def _buckets(self) -> bool:
        """The table is written through the bucket index (a Merge-on-Read table the
        ingest creates is, unless ``hoodie.index.type`` says otherwise)."""
        if self._table_buckets is not None:  # a table's index is fixed once it exists
            return self._table_buckets
        options = WriteOptions.parse({**self._write_options(), opt.TABLE_NAME: "t"})
        try:
            table = HudiTable.open(self.path, self.config.storage_options)
        except TableNotFoundError:
            return options.index_type == "BUCKET"
        self._table_buckets = options.for_table(table.config).index_type == "BUCKET"
        return self._table_buckets

    def _arrow_rows(self, rows: list[ChangeEvent]) -> pa.Table:
        """The batch's rows as Arrow, with the table's columns it lacks as nulls and
        shared columns in the table's types (``_align_to_table`` without Spark)."""
        self._check_partition_values(rows)
        arrow = _zoned_timestamps(to_table(rows, self.config.binary_handling_mode))
        try:
            table = HudiTable.open(self.path, self.config.storage_options)
        except TableNotFoundError:
            return arrow
        if not table.timeline.completed_writes:
            return arrow
        stored = {f.name: f.type for f in table_data_fields(table)}
        columns, names = [], []
        for name, kind in stored.items():
            if name not in arrow.column_names:
                columns.append(pa.nulls(arrow.num_rows, kind))
            elif arrow.schema.field(name).type != kind:
                columns.append(arrow.column(name).cast(kind))
            else:
                columns.append(arrow.column(name))
            names.append(name)
        for name in arrow.column_names:
            if name not in stored:
                columns.append(arrow.column(name))
                names.append(name)
        return pa.table(columns, names=names)

    def _stored(self) -> DataFrame | None:
        try:
            return read(self.spark, self.path, storage_options=self.config.storage_options)
        except TableNotFoundError:
            return None

    def _frame(
        self, rows: list[ChangeEvent], reduced: Reduced, stored: DataFrame | None
    ) -> DataFrame:
        self._check_partition_values(rows)
        missing = [sorted(reduced.unresolved.get(e.key or "", ())) or None for e in rows]
        arrow = to_table(rows, self.config.binary_handling_mode)
        arrow = arrow.append_column(UNAVAILABLE_COLUMNS, pa.array(missing, pa.list_(pa.string())))
        frame = self.spark.createDataFrame(arrow)
        key_fields = list(self.reader.key_fields or ())
        if stored is not None:
            frame = _fill_from_stored(frame, stored, key_fields, reduced)
            frame = _align_to_table(frame, stored)
            if reduced.truncated_at:
                frame = _with_truncate_deletes(frame, stored, key_fields, reduced.truncated_at)
        return frame.drop(UNAVAILABLE_COLUMNS)

    def _check_partition_values(self, rows: list[ChangeEvent]) -> None:
        fields = cfg.PARTITION_PATH.read(self.config.write_options)
        for event in rows:
            if event.op == "d" and any(event.row.get(f) is None for f in fields):
                raise EventError(
                    f"{event.position}: the delete has no value for partition field "
                    f"{','.join(fields)} (set REPLICA IDENTITY FULL on the source table, or "
                    "partition by key columns)"
                )

    def _sync(self) -> None:
        options = self.write_options
        if not cfg.META_SYNC.read(options):
            return
        report = run_post_commit_hook(self.path, options, self.config.storage_options)
        if report is not None and not report.ok:
            self.summary.sync_errors.append(report.error_summary())


def _default_table_name(kafka: KafkaSettings) -> str:
    """The first topic's table name (``table_name_of``)."""
    return table_name_of((kafka.topics or ("debezium",))[0])


# -- one table per topic ---------------------------------------------------------------
_TABLE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def table_name_of(topic: str) -> str:
    """A topic's table: its last dot-separated part (``dbserver1.inventory.customers``
    -> ``customers``), as Debezium names topics ``<prefix>.<schema>.<table>``."""
    return topic.rsplit(".", 1)[-1]


def parse_table_options(pairs: list[str] | None) -> dict[str, dict[str, str]]:
    """``TABLE:KEY=VALUE`` pairs (``--table-conf``) as options per table; TABLE is the
    table's name as its topic gives it (the topic's last part) or the whole topic."""
    tables: dict[str, dict[str, str]] = {}
    for pair in pairs or []:
        table, colon, setting = pair.partition(":")
        key, equals, value = setting.partition("=")
        if not colon or not table.strip() or not equals or not key.strip():
            raise BadInputError(
                f"--table-conf {pair!r} is not TABLE:KEY=VALUE "
                f"(e.g. customers:{cfg.RECORD_KEY.key}=id)"
            )
        tables.setdefault(table.strip(), {})[key.strip()] = value
    return tables


@dataclass(frozen=True, repr=False)
class TablesConfig:
    """Multi-table ingest: one table per topic (``topics``, and every topic matching
    ``topic_pattern``), at ``<base_path>/<table name>``. ``options`` and ``overrides``
    (``IngestConfig.from_options``' keywords: the CLI's flags) apply to every table;
    ``table_options`` (by table name or topic) to one table, over both. Each table is
    an ingest of its own: its own checkpoint, key (from its events' Kafka key unless
    ``hoodie.datasource.write.recordkey.field`` is set for it) and failures."""

    base_path: str
    options: Mapping[str, str]
    table_options: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    overrides: Mapping[str, Any] = field(default_factory=dict)
    continuous: bool = False
    poll_interval_s: float = 5.0

    def __repr__(self) -> str:
        """Secrets masked, in nested settings too (per-table options, storage options)."""
        fields = {name: _masked_deep(name, value) for name, value in self.__dict__.items()}
        return f"TablesConfig({', '.join(f'{k}={v!r}' for k, v in fields.items())})"

    @classmethod
    def from_options(
        cls,
        base_path: str,
        options: Mapping[str, Any],
        table_options: Mapping[str, Mapping[str, str]] | None = None,
        **overrides: Any,
    ) -> TablesConfig:
        """As ``IngestConfig.from_options``, plus per-table options; the shared
        settings are checked now."""
        continuous = bool(overrides.pop("continuous", False))
        poll = overrides.pop("poll_interval_s", None)
        config = cls(
            base_path=base_path.rstrip("/") or base_path,
            options={str(k): str(v) for k, v in options.items()},
            table_options={t: dict(o) for t, o in (table_options or {}).items()},
            overrides={k: v for k, v in overrides.items() if v is not None},
            continuous=continuous,
            poll_interval_s=5.0 if poll is None else float(poll),
        )
        shared = config.shared()
        if not shared.kafka.topics and not shared.kafka.topic_pattern:
            raise BadInputError(f"no topic to read (--topic-pattern, --topic or {cfg.TOPIC.key})")
        if cfg.TABLE_NAME.given(config.options):
            raise BadInputError(
                f"{cfg.TABLE_NAME.key} names one table: with --base-path each table is named "
                f"after its topic (per table: --table-conf TABLE:{cfg.TABLE_NAME.key}=NAME)"
            )
        return config

    def shared(self) -> IngestConfig:
        """The settings every table shares (checked; its path is the base path)."""
        return IngestConfig.from_options(self.base_path, self.options, **dict(self.overrides))

    def topics(self) -> list[str]:
        """The topics to ingest, as the broker lists them now."""
        kafka = self.shared().kafka
        source = KafkaSource(kafka)
        try:
            return source.topics
        finally:
            source.close()

    def own_options(self, topic: str) -> dict[str, str]:
        """The options given for this topic's table: by its default name, then by topic."""
        return {
            **self.table_options.get(table_name_of(topic), {}),
            **self.table_options.get(topic, {}),
        }

    def table_name(self, topic: str) -> str:
        return cfg.TABLE_NAME.read(self.own_options(topic)) or table_name_of(topic)

    def unknown_tables(self, topics: list[str]) -> list[str]:
        """``table_options`` selectors that name none of ``topics``' tables."""
        known = {*topics, *(table_name_of(t) for t in topics)}
        return sorted(set(self.table_options) - known)

    def table_config(self, topic: str) -> IngestConfig:
        """One table's ingest config: the shared settings, its own options over them."""
        own = self.own_options(topic)
        name = self.table_name(topic)
        if not _TABLE_NAME.fullmatch(name):
            raise BadInputError(
                f"table name {name!r} cannot be a folder name under {self.base_path} "
                f"(set {cfg.TABLE_NAME.key} for it with --table-conf)"
            )
        overrides = dict(self.overrides)
        overrides.pop("topic_pattern", None)
        overrides["topics"] = (topic,)
        overrides["continuous"] = False  # ingest_tables polls: one pass over every table
        for flag, spec in _OPTION_OVERRIDES.items():
            if spec.given(own):
                overrides.pop(flag, None)  # the table's own setting wins over a flag
        if cfg.WRITE_TABLE_TYPE.given(own):
            overrides.pop("table_type", None)
        options = {**self.options, **own, cfg.TABLE_NAME.key: name}
        return IngestConfig.from_options(f"{self.base_path}/{name}", options, **overrides)


@dataclass
class TablesSummary:
    """A multi-table run: each table's summary (by table name, totals over polls) and
    each failed table's one-line error."""

    base_path: str
    tables: dict[str, IngestSummary] = field(default_factory=dict)
    topics: dict[str, str] = field(default_factory=dict)  # table name -> topic
    failures: dict[str, str] = field(default_factory=dict)

    def rows(self) -> list[dict[str, Any]]:
        """One record per table, for people and for ``--json``."""
        rows = []
        for name, topic in sorted(self.topics.items()):
            summary = self.tables.get(name, IngestSummary(f"{self.base_path}/{name}"))
            values = summary.as_dict()
            rows.append(
                {"table": name, "topic": topic, "path": values.pop("table")}
                | values
                | {"error": self.failures.get(name, "")}
            )
        return rows


FailureCallback = Callable[[str, str, str], None]  # table name, topic, one-line error


def ingest_tables(
    spark: SparkSession,
    config: TablesConfig,
    progress: ProgressCallback | None = None,
    stop: threading.Event | None = None,
    on_failure: FailureCallback | None = None,
) -> TablesSummary:
    """Ingest every topic into its own table, one table after the other, each read to
    its end; ``continuous``: again every poll interval (new matching topics join) until
    ``stop`` is set. A table that fails is reported (``on_failure``, and in the
    summary) and left alone for the rest of the run; the others go on."""
    stop = stop or threading.Event()
    result = TablesSummary(config.base_path)
    checked = False
    while not stop.is_set():
        topics = config.topics()
        if not checked:
            unknown = config.unknown_tables(topics)
            if unknown:
                raise BadInputError(
                    f"--table-conf names no table of the topics read: {', '.join(unknown)} "
                    f"(tables: {', '.join(sorted({config.table_name(t) for t in topics}))})"
                )
            checked = True
        committed = 0
        for topic in topics:
            if stop.is_set():
                break
            table = name = config.table_name(topic)
            holder = result.topics.setdefault(name, topic)
            if holder != topic:  # the first topic to take a name keeps it
                name = f"{table} ({topic})"
                result.topics[name] = topic
                if name not in result.failures:
                    _failed(
                        result,
                        name,
                        topic,
                        f"topic {topic} would share table {table} with topic "
                        f"{holder} (name one of them with --table-conf "
                        f"{topic}:{cfg.TABLE_NAME.key}=NAME)",
                        on_failure,
                    )
                continue
            if name in result.failures:
                continue
            try:
                summary = ingest(spark, config.table_config(topic), progress, stop)
            except Exception as exc:  # one table's failure stops that table only
                _failed(result, name, topic, _one_line(exc), on_failure)
                continue
            committed += summary.batches_committed
            _add_summary(result.tables, name, summary)
        if not config.continuous:
            break
        if not committed:
            stop.wait(config.poll_interval_s)
    return result


def _masked_deep(name: str, value: Any) -> Any:
    """A setting as it may be shown; mappings masked at every level."""
    if isinstance(value, Mapping):
        return {k: _masked_deep(str(k), v) for k, v in value.items()}
    return mask_value(name, value)


def _failed(
    result: TablesSummary,
    name: str,
    topic: str,
    error: str,
    on_failure: FailureCallback | None,
) -> None:
    result.failures[name] = error
    if on_failure is not None:
        on_failure(name, topic, error)


def _one_line(exc: BaseException) -> str:
    line = first_line(exc)
    return line if isinstance(exc, HudiSyncError) else f"{type(exc).__name__}: {line}"


def _add_summary(tables: dict[str, IngestSummary], name: str, summary: IngestSummary) -> None:
    total = tables.get(name)
    if total is None:
        tables[name] = summary
        return
    for counter in (
        "events_read",
        "keys_written",
        "events_dropped",
        "events_skipped",
        "batches_committed",
    ):
        setattr(total, counter, getattr(total, counter) + getattr(summary, counter))
    total.instants += summary.instants
    total.sync_errors += summary.sync_errors
    total.lag, total.checkpoint = summary.lag, summary.checkpoint


def _zoned_timestamps(rows: pa.Table) -> pa.Table:
    """Timestamps without a zone as UTC, as the Spark path stores them (its sessions
    run in UTC): the same table either way, and one hudi-rs reads (it does not read
    Avro's ``local-timestamp-*``)."""
    for index, column in enumerate(rows.schema):
        if pa.types.is_timestamp(column.type) and column.type.tz is None:
            zoned = pa.timestamp(column.type.unit, "UTC")
            rows = rows.set_column(index, column.name, rows.column(index).cast(zoned))
    return rows


def _fill_from_stored(
    frame: DataFrame, stored: DataFrame, key_fields: list[str], reduced: Reduced
) -> DataFrame:
    """TOAST columns no event of the batch had: the stored row's value."""
    columns = sorted({c for missing in reduced.unresolved.values() for c in missing})
    columns = [c for c in columns if c in stored.columns]
    if not columns:
        return frame
    prior = stored.select(
        *[F.col(k).alias(f"__key_{k}") for k in key_fields],
        *[F.col(c).alias(f"__stored_{c}") for c in columns],
    )
    condition = [frame[k] == prior[f"__key_{k}"] for k in key_fields]
    joined = frame.join(prior, condition, "left")
    for c in columns:
        unavailable = F.coalesce(F.array_contains(F.col(UNAVAILABLE_COLUMNS), c), F.lit(False))
        joined = joined.withColumn(
            c, F.when(unavailable, F.col(f"__stored_{c}")).otherwise(F.col(c))
        )
    return joined.select(*frame.columns)


def _align_to_table(frame: DataFrame, stored: DataFrame) -> DataFrame:
    """The table's columns the batch lacks become nulls of their type; shared columns
    take the table's type (schema-less events carry only JSON types)."""
    types = {f.name: f.dataType for f in stored.schema.fields if f.name not in META_FIELDS}
    columns = []
    for name, data_type in types.items():
        if name not in frame.columns:
            columns.append(F.lit(None).cast(data_type).alias(name))
        elif frame.schema[name].dataType != data_type:
            columns.append(F.col(name).cast(data_type).alias(name))
        else:
            columns.append(F.col(name))
    columns += [F.col(c) for c in frame.columns if c not in types]
    return frame.select(*columns)


def _with_truncate_deletes(
    frame: DataFrame, stored: DataFrame, key_fields: list[str], order: str
) -> DataFrame:
    """A truncate deletes every stored row the batch does not write again."""
    survivors = frame.select(*[F.col(k).alias(f"__key_{k}") for k in key_fields])
    condition = [stored[k] == survivors[f"__key_{k}"] for k in key_fields]
    gone = stored.join(survivors, condition, "left_anti").drop(*META_FIELDS)
    gone = gone.withColumn(OP, F.lit("d")).withColumn(ORDER, F.lit(order))
    return frame.unionByName(
        gone.select(*[c for c in gone.columns if c in frame.columns]), allowMissingColumns=True
    )
