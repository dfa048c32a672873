"""``ingest_tables``: one table per topic under a base path, each an ingest of its own
(its checkpoint, key and failures), with per-table options over the shared ones."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hudi_sync import config as cfg
from hudi_sync.debezium.ingest.loop import IngestSummary, ProgressCallback, ingest
from hudi_sync.debezium.ingest.options import _OPTION_OVERRIDES, IngestConfig
from hudi_sync.debezium.ingest.writes import SparkSource, table_name_of
from hudi_sync.debezium.kafka_source import KafkaSource
from hudi_sync.debezium.masking import mask_value
from hudi_sync.errors import BadInputError, HudiSyncError, first_line

_TABLE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


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
    spark: SparkSource,
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
