"""Debezium change events: one Kafka message to one ``ChangeEvent``.

Three shapes are read: the Debezium envelope (``before``, ``after``, ``source``, ``op``,
``ts_ms``) with or without the JSON converter's ``schema``/``payload`` wrapper, the
same envelope in Avro (Confluent wire format), and rows already flattened by
``ExtractNewRecordState`` (``__op``, ``__deleted``, ``__lsn``, ``__source_ts_ms``...).

Each event carries the columns Hudi's Debezium sources add, by their names
(``DebeziumConstants``): ``_change_operation_type``, ``_upstream_event_processed_ts_ms``,
``db_shard_source_partition``, ``_event_origin_ts_ms``, then ``db_schema_source_partition``,
``_event_tx_id``, ``_event_lsn``, ``_event_xmin`` for PostgreSQL or ``_event_bin_file``,
``_event_pos``, ``_event_row``, ``_event_seq`` for MySQL (plus ``_event_gtid``). The
ordering column ``_event_order`` is ours: the event's position in the database log as
a fixed-width string, so that comparing strings compares log positions (PostgreSQL:
commit LSN of ``source.sequence``, then the change's LSN; MySQL: binlog file number,
position, row). Hudi's own ordering fields (``_event_lsn``; ``_event_seq`` as
``file.pos``) cannot order interleaved PostgreSQL transactions or rows of one binlog
event.
"""

from __future__ import annotations

import base64
import decimal
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from hudi_sync import config as cfg
from hudi_sync.debezium.registry import RegistryError, SchemaRegistry, is_wire_format
from hudi_sync.debezium.types import ColumnType, avro_row_columns, connect_row_columns
from hudi_sync.errors import BadInputError, first_line

OP = "_change_operation_type"
ORDER = "_event_order"
OPS = ("c", "u", "d", "r", "t")
POSTGRES, MYSQL = "postgresql", "mysql"
UNAVAILABLE = "__debezium_unavailable_value"

# (column, type) of the meta columns per database, in Hudi's order.
_COMMON_META = [
    (OP, "string"),
    ("_upstream_event_processed_ts_ms", "int64"),
    ("db_shard_source_partition", "string"),
    ("_event_origin_ts_ms", "int64"),
]
META_COLUMNS: dict[str, list[tuple[str, str]]] = {
    POSTGRES: [
        *_COMMON_META,
        ("db_schema_source_partition", "string"),
        ("_event_tx_id", "int64"),
        ("_event_lsn", "int64"),
        ("_event_xmin", "int64"),
        (ORDER, "string"),
    ],
    MYSQL: [
        *_COMMON_META,
        ("_event_bin_file", "string"),
        ("_event_pos", "int64"),
        ("_event_row", "int32"),
        ("_event_seq", "string"),
        ("_event_gtid", "string"),
        (ORDER, "string"),
    ],
}


RECORD_KEY_HINT = f"{cfg.RECORD_KEY.key}, --record-key"
_SCHEMA_HEAD = b'{"schema":'
_PAYLOAD_SEPARATOR = b',"payload":'


class EventError(BadInputError):
    """An event that cannot be read; the message names its topic, partition and offset."""


@dataclass(frozen=True)
class Position:
    topic: str
    partition: int
    offset: int

    def __str__(self) -> str:
        return f"topic {self.topic} partition {self.partition} offset {self.offset}"


@dataclass
class ChangeEvent:
    """One row change: ``row`` holds the raw column values (``after``; ``before`` for a
    delete), ``unavailable`` the columns whose value Debezium left out (TOAST)."""

    op: str
    key: str | None  # the record key values as a JSON list
    row: dict[str, Any]
    meta: dict[str, Any]
    order: str
    database: str
    columns: Mapping[str, ColumnType] | None
    position: Position
    unavailable: frozenset[str] = frozenset()


@dataclass(frozen=True)
class EventSettings:
    """How events are read: key fields (None: the message key's), TOAST placeholders.

    With key fields the key comes from the row (``after``; ``before`` for a delete) and
    the Kafka key is never parsed: topics keyed by plain strings or opaque bytes are read
    as Hudi's Debezium sources read them."""

    record_key_fields: tuple[str, ...] | None = None
    unavailable_values: tuple[str, ...] = (UNAVAILABLE,)


class EventReader:
    """Decodes messages; keeps the Avro schemas and the key fields it learned."""

    def __init__(self, settings: EventSettings, registry: SchemaRegistry | None = None) -> None:
        self.settings = settings
        self.registry = registry or SchemaRegistry(None)
        self.key_fields: tuple[str, ...] | None = settings.record_key_fields
        self._check_placeholders = True
        self._connect_columns: dict[bytes, dict[str, ColumnType]] = {}
        self._avro_columns: dict[int, dict[str, ColumnType]] = {}
        # Decimal columns by id of a cached column mapping (the mappings live as long).
        self._decimal_names: dict[int, tuple[str, ...]] = {}
        placeholders: set[Any] = set(settings.unavailable_values)
        placeholders |= {base64.b64encode(v.encode()).decode() for v in settings.unavailable_values}
        placeholders |= {v.encode() for v in settings.unavailable_values}
        self._placeholders = placeholders
        # Placeholders as they appear in message bytes (text, or base64 for binary
        # columns): a message without any needs no per-column check.
        self.raw_placeholders = [p.encode() if isinstance(p, str) else p for p in placeholders]

    def read(
        self, position: Position, key: bytes | None, value: bytes | None
    ) -> ChangeEvent | None:
        """The message's event; None for a Kafka tombstone (the null value after a delete)."""
        if value is None:
            return None
        try:
            return self._read(position, key, value)
        except RegistryError:
            raise  # the registry's settings or service are at fault, not this event
        except BadInputError as exc:
            raise EventError(f"{position}: {exc}") from None

    def _read(self, position: Position, key: bytes | None, value: bytes) -> ChangeEvent:
        self._check_placeholders = any(p in value for p in self.raw_placeholders)
        payload, columns = self._decode(value, "value")
        if not isinstance(payload, dict):
            raise BadInputError("the value is not a Debezium event (not an object)")
        key_payload = None
        if key and self.settings.record_key_fields is None:
            key_payload = self._decode(key, "key")[0]
        if "op" in payload or "source" in payload:
            return self._envelope(position, payload, key_payload, columns)
        if "__op" in payload or "__deleted" in payload:
            return self._flattened(position, payload, key_payload, columns)
        raise BadInputError("the event has no op (neither a Debezium envelope nor __op/__deleted)")

    # -- decoding ------------------------------------------------------------------------
    def _decode(self, raw: bytes, what: str) -> tuple[Any, Mapping[str, ColumnType] | None]:
        if is_wire_format(raw):
            if what != "value":
                return self._wire_format_key(raw), None
            record, writer = self.registry.decode(raw)
            schema_id = int.from_bytes(raw[1:5], "big")
            if schema_id not in self._avro_columns:
                self._avro_columns[schema_id] = avro_row_columns(writer)
            return record, self._avro_columns[schema_id]
        if what == "value":
            split = self._split_envelope(raw)
            if split is not None:
                return split
        try:
            document = orjson.loads(raw)
        except orjson.JSONDecodeError:
            try:  # orjson refuses NaN, Infinity, a lone surrogate escape
                document = _json(raw)
            except BadInputError:
                hint = f" (set {RECORD_KEY_HINT} to take the key from the row)"
                raise BadInputError(
                    f"the {what} is neither JSON nor Avro in Confluent wire format"
                    + (hint if what == "key" else "")
                ) from None
        if isinstance(document, dict) and "payload" in document and "schema" in document:
            schema = document["schema"]
            columns: Mapping[str, ColumnType] | None = None
            if what == "value" and isinstance(schema, dict):
                columns = self._columns(orjson.dumps(schema), schema)
            payload = document["payload"]
            if columns is not None and self._numeric_decimals(payload, columns):
                exact = _json(raw, decimal.Decimal)
                payload = self._exact_decimals(payload, exact.get("payload"), columns)
            return payload, columns
        return document, None

    def _split_envelope(self, raw: bytes) -> tuple[Any, Mapping[str, ColumnType] | None] | None:
        """The JSON converter writes ``{"schema":...,"payload":...}``: parse the payload
        alone and each distinct schema once (it is most of the bytes). None when the
        message is not in that exact shape."""
        if not raw.startswith(_SCHEMA_HEAD):
            return None
        cut = raw.find(_PAYLOAD_SEPARATOR)
        if cut < 0 or not raw.endswith(b"}"):
            return None
        schema_bytes = raw[len(_SCHEMA_HEAD) : cut]
        payload_bytes = raw[cut + len(_PAYLOAD_SEPARATOR) : -1]
        try:
            payload = orjson.loads(payload_bytes)
            columns = self._columns(schema_bytes, None)
        except orjson.JSONDecodeError:
            return None  # the separator was inside a value: parse the whole document
        if columns is not None and self._numeric_decimals(payload, columns):
            exact = _json(payload_bytes, decimal.Decimal)
            payload = self._exact_decimals(payload, exact, columns)
        return payload, columns

    def _decimals(self, columns: Mapping[str, ColumnType]) -> tuple[str, ...]:
        """The decimal columns of a (cached) column mapping."""
        names = self._decimal_names.get(id(columns))
        if names is None:
            names = tuple(name for name, column in columns.items() if column.is_decimal)
            self._decimal_names[id(columns)] = names
        return names

    def _numeric_decimals(self, payload: Any, columns: Mapping[str, ColumnType]) -> bool:
        """Whether a decimal column of the row images holds a JSON number (not the
        JSON converter's default base64 bytes): then its values are read again exactly
        (:meth:`_exact_decimals`), since a float keeps only 15-17 digits."""
        names = self._decimals(columns)
        if not names or not isinstance(payload, dict):
            return False
        return any(
            isinstance(image, dict) and isinstance(image.get(name), float)
            for image in _row_images(payload)
            for name in names
        )

    def _exact_decimals(
        self, payload: dict[str, Any], exact: Any, columns: Mapping[str, ColumnType]
    ) -> dict[str, Any]:
        """``payload`` with its decimal columns' values taken from ``exact`` (the same
        payload parsed with ``decimal.Decimal`` for every fraction). Only decimal columns
        take the exact path: every other number stays as parsed (a FLOAT/DOUBLE column
        cannot hold a ``Decimal``)."""
        if not isinstance(exact, dict):
            return payload
        names = self._decimals(columns)
        for image, exact_image in zip(_row_images(payload), _row_images(exact), strict=True):
            if isinstance(image, dict) and isinstance(exact_image, dict):
                for name in names:
                    if name in image and name in exact_image:
                        image[name] = exact_image[name]
        return payload

    def _columns(self, schema_bytes: bytes, schema: Any) -> Mapping[str, ColumnType] | None:
        """The row columns of a Connect schema, cached by its bytes."""
        if schema_bytes not in self._connect_columns:
            if schema is None:
                schema = orjson.loads(schema_bytes)
            if not isinstance(schema, dict):
                return None
            try:
                self._connect_columns[schema_bytes] = connect_row_columns(schema)
            except (KeyError, TypeError, AttributeError, ValueError) as exc:
                raise BadInputError(
                    f"the event's schema has an unexpected shape ({type(exc).__name__}: {exc})"
                ) from None
        return self._connect_columns[schema_bytes]

    # -- shapes --------------------------------------------------------------------------
    def _envelope(
        self,
        position: Position,
        payload: dict[str, Any],
        key_payload: Any,
        columns: Mapping[str, ColumnType] | None,
    ) -> ChangeEvent:
        op = payload.get("op")
        if op is None:
            raise BadInputError("the event has no op")
        if op not in OPS:
            raise BadInputError(f"unknown op {op!r} (expected one of {', '.join(OPS)})")
        source = payload.get("source") or {}
        database = _database(source.get("connector"), source)
        image = payload.get("before") if op == "d" else payload.get("after")
        row = dict(image) if isinstance(image, dict) else {}
        if op in ("c", "u", "r") and not row:
            raise BadInputError(f"a {op!r} event has no 'after' row")
        meta = _meta(database, op, payload.get("ts_ms"), source, position)
        return self._event(position, op, row, key_payload, meta, database, columns)

    def _flattened(
        self,
        position: Position,
        payload: dict[str, Any],
        key_payload: Any,
        columns: Mapping[str, ColumnType] | None,
    ) -> ChangeEvent:
        added = {k[2:]: v for k, v in payload.items() if k.startswith("__")}
        row = {k: v for k, v in payload.items() if not k.startswith("__")}
        deleted = str(added.get("deleted", "false")).lower() == "true"
        op = "d" if deleted else str(added.get("op") or "u")
        if op not in OPS:
            raise BadInputError(f"unknown op {op!r} (expected one of {', '.join(OPS)})")
        source = {
            "ts_ms": added.get("source_ts_ms"),
            "name": added.get("name"),
            "schema": added.get("schema"),
            "txId": added.get("txId"),
            "lsn": added.get("lsn"),
            "xmin": added.get("xmin"),
            "sequence": added.get("sequence"),
            "file": added.get("file"),
            "pos": added.get("pos"),
            "row": added.get("row"),
            "gtid": added.get("gtid"),
        }
        if "lsn" in added:
            database = POSTGRES
        elif "file" in added:
            database = MYSQL
        else:
            raise BadInputError(
                "a flattened event needs its log position: add lsn (PostgreSQL) or "
                "file,pos,row (MySQL) to the SMT's add.fields"
            )
        meta = _meta(database, op, added.get("ts_ms"), source, position)
        return self._event(position, op, row, key_payload, meta, database, columns)

    def _event(
        self,
        position: Position,
        op: str,
        row: dict[str, Any],
        key_payload: Any,
        meta: dict[str, Any],
        database: str,
        columns: Mapping[str, ColumnType] | None,
    ) -> ChangeEvent:
        order = meta[ORDER]
        if op == "t":
            return ChangeEvent(op, None, {}, meta, order, database, columns, position)
        if op == "d" and isinstance(key_payload, dict):
            for name, value in key_payload.items():  # a delete's before image may be empty
                row.setdefault(name, value)
        key = self._key(row, key_payload)
        unavailable: frozenset[str] = frozenset()
        if self._check_placeholders:
            unavailable = frozenset(
                name for name, v in row.items() if _is_placeholder(v, self._placeholders)
            )
            for name in unavailable:
                row[name] = None
        return ChangeEvent(op, key, row, meta, order, database, columns, position, unavailable)

    def _wire_format_key(self, raw: bytes) -> Any:
        """A key shaped like Avro in Confluent wire format, decoded; when it cannot be
        (no registry, an unknown schema), the error says that the key can come from the
        row instead: an opaque key may only look like that format."""
        try:
            return self.registry.decode(raw)[0]
        except RegistryError:  # the registry at fault, not the key: stays as it is
            raise
        except BadInputError as exc:
            raise BadInputError(
                f"the key: {exc} (or set {RECORD_KEY_HINT} to take the key from the row)"
            ) from None

    def _key(self, row: Mapping[str, Any], key_payload: Any) -> str:
        if self.key_fields is None:
            if key_payload is None:
                raise BadInputError(
                    f"the message has no key to take the record key from (set {RECORD_KEY_HINT})"
                )
            if not isinstance(key_payload, dict) or not key_payload:
                raise BadInputError(
                    "the Kafka key is not a record of key fields (set "
                    f"{RECORD_KEY_HINT} to take the key from the row)"
                )
            self.key_fields = tuple(key_payload)
        key_source = key_payload if isinstance(key_payload, dict) else {}
        values = []
        for name in self.key_fields:
            value = row.get(name)
            if value is None:
                value = key_source.get(name)
            if value is None:
                raise BadInputError(f"the event has no value for record key field {name}")
            values.append(value)
        return orjson.dumps(values).decode()


def _is_placeholder(value: Any, placeholders: set[Any]) -> bool:
    if isinstance(value, str | bytes):
        return value in placeholders
    if isinstance(value, list) and len(value) == 1:
        return _is_placeholder(value[0], placeholders)
    return False


def _database(connector: Any, source: Mapping[str, Any]) -> str:
    if connector in (POSTGRES, MYSQL):
        return str(connector)
    if source.get("lsn") is not None or source.get("sequence") is not None:
        return POSTGRES
    if source.get("file") is not None:
        return MYSQL
    raise BadInputError(
        f"source connector {connector!r} is not supported (postgresql, mysql), and the "
        "event has no lsn or binlog position"
    )


def _int(value: Any, name: str) -> int | None:
    if value is None or value.__class__ is int:
        return value
    try:
        return int(value)
    except (TypeError, ValueError):
        raise BadInputError(f"{name}={value!r} is not a number") from None


def _meta(
    database: str, op: str, ts_ms: Any, source: Mapping[str, Any], position: Position
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        OP: op,
        "_upstream_event_processed_ts_ms": _int(ts_ms, "ts_ms"),
        "db_shard_source_partition": source.get("name"),
        "_event_origin_ts_ms": _int(source.get("ts_ms"), "source.ts_ms"),
    }
    if database == POSTGRES:
        lsn = _int(source.get("lsn"), "source.lsn")
        commit, change = _pg_sequence(source.get("sequence"), lsn)
        meta |= {
            "db_schema_source_partition": source.get("schema"),
            "_event_tx_id": _int(source.get("txId"), "source.txId"),
            "_event_lsn": lsn,
            "_event_xmin": _int(source.get("xmin"), "source.xmin"),
            ORDER: f"{commit:020d}:{change:020d}",
        }
        return meta
    file = source.get("file")
    pos = _int(source.get("pos"), "source.pos")
    row = _int(source.get("row"), "source.row") or 0
    if not file and op == "r":
        return meta | _unpositioned_snapshot(source, position)
    if not file or pos is None:
        raise BadInputError(
            f"a MySQL {op!r} event has no binlog file and position (source.file, source.pos); "
            "only snapshot reads (op r) may lack them"
        )
    number = _int(str(file).rsplit(".", 1)[-1], "source.file's number")
    meta |= {
        "_event_bin_file": file,
        "_event_pos": pos,
        "_event_row": row,
        "_event_seq": f"{number}.{pos}",
        "_event_gtid": source.get("gtid"),
        ORDER: f"{number:010d}:{pos:020d}:{row:010d}",
    }
    return meta


def _unpositioned_snapshot(source: Mapping[str, Any], position: Position) -> dict[str, Any]:
    """A MySQL snapshot read without a binlog position (``file: ""``, ``pos: 0``: Flink
    CDC's snapshot phase, incremental snapshots). It happened before the binlog events
    that follow it, so its order sorts before every binlog position (``-`` before any
    digit) and, among such reads, by Kafka offset: the later read of a key wins."""
    return {
        "_event_bin_file": None,
        "_event_pos": None,
        "_event_row": None,
        "_event_seq": None,
        "_event_gtid": source.get("gtid"),
        ORDER: f"-{position.offset:020d}:{position.partition:010d}",
    }


def _pg_sequence(sequence: Any, lsn: int | None) -> tuple[int, int]:
    """(commit LSN, change LSN) from ``source.sequence`` (a JSON text of two strings,
    either may be null), falling back to ``source.lsn``."""
    values: Sequence[Any] = []
    if isinstance(sequence, str) and sequence:
        try:
            values = orjson.loads(sequence)
        except orjson.JSONDecodeError:
            raise BadInputError(f"source.sequence={sequence!r} is not a JSON list") from None
    elif isinstance(sequence, list):
        values = sequence
    commit = _int(values[0], "source.sequence") if len(values) > 0 else None
    change = _int(values[1], "source.sequence") if len(values) > 1 else None
    change = change if change is not None else lsn
    if change is None:
        raise BadInputError("a PostgreSQL event has no lsn (source.lsn or source.sequence)")
    return commit or 0, change


def _row_images(payload: dict[str, Any]) -> tuple[Any, Any, Any]:
    """Where a payload's row columns are: the payload itself (a flattened row), its
    ``before`` and ``after`` images (an envelope)."""
    return payload, payload.get("before"), payload.get("after")


def _json(raw: bytes, parse_float: Callable[[str], Any] = float) -> Any:
    """JSON as Python's parser reads it (NaN and Infinity too); ``decimal.Decimal`` as
    ``parse_float`` keeps every fraction's text exactly (38-digit decimals survive)."""
    try:
        return json.loads(raw, parse_float=parse_float)
    except ValueError as exc:
        raise BadInputError(f"the value is not JSON: {first_line(exc)}") from None
    except RecursionError:
        raise BadInputError("the value is JSON nested too deeply") from None
