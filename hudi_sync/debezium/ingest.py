"""``ingest``: Debezium topics into a Copy-on-Write Hudi table, batch by batch.

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
"""

from __future__ import annotations

import json
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
from hudi_sync.debezium.masking import masked_repr
from hudi_sync.debezium.registry import SchemaRegistry
from hudi_sync.debezium.state import (
    IngestState,
    Offsets,
    TombstoneStore,
    format_checkpoint,
    load_state,
)
from hudi_sync.errors import BadInputError, TableNotFoundError
from hudi_sync.spark import options as opt
from hudi_sync.spark.reader import read
from hudi_sync.spark.writer import write
from hudi_sync.sync.hook import run_post_commit_hook
from hudi_sync.table.schema import META_FIELDS

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

    def run(self) -> IngestSummary:
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
                reduced = reduce_events(
                    batch.events, tombstones, state.truncated_before, self.config.truncate_policy
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
        stored = self._stored()
        rows = list(reduced.final.values())
        if not rows and not (reduced.truncated_at and stored is not None):
            if stored is None:
                return IngestState(after, state.tombstone_files, state.truncated_before)
            frame = stored.limit(0).drop(*META_FIELDS)
        else:
            frame = self._frame(rows, reduced, stored)
        files = self.store.add(state, tombstones, reduced.deletes, reduced.upserted_keys)
        new_state = IngestState(
            offsets=after,
            tombstone_files=files,
            truncated_before=reduced.truncated_at or state.truncated_before,
        )
        result = write(
            frame,
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

    def _write_options(self) -> dict[str, str]:
        options = dict(self.config.write_options)
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
        options = self.config.write_options
        if not cfg.META_SYNC.read(options):
            return
        report = run_post_commit_hook(self.path, options, self.config.storage_options)
        if report is not None and not report.ok:
            self.summary.sync_errors.append(report.error_summary())


def _default_table_name(kafka: KafkaSettings) -> str:
    """The topic's last part (``server.schema.table`` -> ``table``)."""
    topic = (kafka.topics or ("debezium",))[0]
    return topic.rsplit(".", 1)[-1]


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
