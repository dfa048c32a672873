"""A batch of Debezium JSON events decoded and reduced in columns.

``decode_columns`` reads a batch's messages with Arrow's JSON reader against an explicit
schema: the envelope's Connect schema (``schemas.enable=true``, the same schema for
every message of the batch) or, without one, the table's stored column types. Types are
never inferred from values. The reduction (``reduce_columns``) applies the rules of
``batch.reduce_events`` with Arrow kernels: log order, the last event per key,
tombstones and the truncate mark.

It takes the common shape only: PostgreSQL envelopes (``op`` c, u, r, d) whose columns
are integers, doubles, booleans, strings, ``Timestamp`` / ``MicroTimestamp`` and ``Date``.
Anything else in a batch (Avro, flattened rows, MySQL, truncates, TOAST placeholders,
decimals, binary, single-precision floats (the row path refuses integers they
cannot hold exactly), other logical types, a schema change, a value of another JSON type
than its column's, a delete without its key or partition values) makes
``decode_columns`` return None, and the whole batch takes the row-by-row decoder
(``events.EventReader``), which reads or refuses it exactly as before. Both give the
same rows (``tests/test_debezium_columns.py``).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from hudi_sync.debezium.events import META_COLUMNS, OP, ORDER, POSTGRES
from hudi_sync.debezium.types import ColumnType, connect_row_columns

_SCHEMA_HEAD = b'{"schema":'
_PAYLOAD_SEPARATOR = b',"payload":'
# Parsed as JSON's own type, then cast as the row path casts the Python values.
_PARSED = {
    "int8": pa.int64(),
    "int16": pa.int64(),
    "int32": pa.int64(),
    "int64": pa.int64(),
    "double": pa.float64(),
    "float64": pa.float64(),
    "boolean": pa.bool_(),
    "string": pa.string(),
}
_MILLIS = {"io.debezium.time.Timestamp", "org.apache.kafka.connect.data.Timestamp"}
_MICROS = {"io.debezium.time.MicroTimestamp"}
_DATES = {"io.debezium.time.Date", "org.apache.kafka.connect.data.Date"}
# Connect logical names of string columns that stay strings in the row path.
_TEXT_LOGICAL = {"io.debezium.data.Json", "io.debezium.data.Uuid", "io.debezium.data.Enum"}
_SOURCE = pa.struct(
    [
        ("connector", pa.string()),
        ("name", pa.string()),
        ("ts_ms", pa.int64()),
        ("schema", pa.string()),
        ("txId", pa.int64()),
        ("lsn", pa.int64()),
        ("xmin", pa.int64()),
        ("sequence", pa.string()),
    ]
)
_SEQUENCE = r'^\[ *(?:"(?P<commit>[0-9]+)"|null) *, *(?:"(?P<change>[0-9]+)"|null) *\]$'
_META_TYPES = {"string": pa.string(), "int64": pa.int64(), "int32": pa.int32()}


@dataclass(frozen=True)
class _Column:
    """How one row column is parsed (``parsed``) and what it becomes (``target``)."""

    parsed: pa.DataType
    target: pa.DataType
    scale: int = 1  # multiplier before the cast (milliseconds to microseconds)
    via: pa.DataType | None = None  # cast to this first (days as int32 for a date)


@dataclass
class ColumnEvents:
    """A batch's events in columns: ``rows`` as ``batch.to_table`` gives them (row
    columns, then Hudi's Debezium columns), ``keys`` the record keys as JSON lists."""

    rows: pa.Table
    keys: pa.Array


@dataclass
class ColumnReduced:
    """``batch.Reduced`` for a columnar batch: the last row per key, in columns."""

    rows: pa.Table
    keys: list[str]
    dropped: int = 0
    deletes: dict[str, str] = field(default_factory=dict)
    upserted_keys: set[str] = field(default_factory=set)
    unresolved: dict[str, frozenset[str]] = field(default_factory=dict)  # never any
    truncated_at: str | None = None  # never: a truncate takes the row path

    @property
    def size(self) -> int:
        return len(self.keys)


def decode_columns(
    values: Sequence[bytes | None],
    keys: Sequence[bytes | None],
    key_fields: tuple[str, ...] | None,
    key_from_row: bool,
    table_types: Mapping[str, pa.DataType] | None,
    placeholders: Sequence[bytes],
    partition_fields: Sequence[str] = (),
) -> ColumnEvents | None:
    """The messages' events in columns, or None when the row decoder must read them.
    ``values``/``keys``: the messages' bytes (a None value is a Kafka tombstone);
    ``key_fields``: the record key fields (known, or learned from an earlier batch);
    ``key_from_row``: they are configured (else every message must have a Kafka key);
    ``table_types``: the table's stored columns (None before its first commit)."""
    present = [v for v in values if v is not None]
    if not present or not key_fields:
        return None
    if not key_from_row and any(k is None for k, v in zip(keys, values, strict=True) if v):
        return None
    if any(not v for v in present):
        return None
    payloads, columns = _payloads(present, table_types)
    if payloads is None or columns is None:
        return None
    joined = b"\n".join(payloads)
    if joined.count(b"\n") != len(payloads) - 1:
        return None  # a value spans lines
    if any(p in joined for p in placeholders):
        return None  # TOAST: the row path fills unavailable values
    image = pa.struct([(name, c.parsed) for name, c in columns.items()])
    envelope = [("before", image), ("after", image), ("source", _SOURCE)]
    schema = pa.schema([*envelope, ("op", pa.string()), ("ts_ms", pa.int64())])
    options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="infer")
    try:
        parsed = pj.read_json(
            io.BytesIO(joined),
            read_options=pj.ReadOptions(block_size=4 << 20),
            parse_options=options,
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    if parsed.num_rows != len(payloads):
        return None
    for name in ("before", "after"):
        if parsed.schema.field(name).type != image:
            return None  # a column the schema does not know: the row path reads it
    try:
        return _events(parsed, columns, key_fields, partition_fields)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None


def _payloads(
    values: list[bytes], table_types: Mapping[str, pa.DataType] | None
) -> tuple[list[bytes] | None, dict[str, _Column] | None]:
    """The envelopes' bytes and how each row column is read: from the one Connect schema
    every message carries, or from the table's types when no message carries one."""
    if not values[0].startswith(_SCHEMA_HEAD):
        if table_types is None or any(v.startswith(_SCHEMA_HEAD) for v in values):
            return None, None
        return values, _table_columns(table_types)
    cut = values[0].find(_PAYLOAD_SEPARATOR)
    if cut < 0:
        return None, None
    schema_bytes = values[0][len(_SCHEMA_HEAD) : cut]
    head = values[0][: cut + len(_PAYLOAD_SEPARATOR)]
    start = len(head)
    payloads = []
    for value in values:
        if not value.startswith(head) or not value.endswith(b"}"):
            return None, None  # another schema (a schema change) or shape
        payloads.append(value[start:-1])
    try:
        schema = orjson.loads(schema_bytes)
    except orjson.JSONDecodeError:
        return None, None
    if not isinstance(schema, dict):
        return None, None
    return payloads, _connect_columns(connect_row_columns(schema))


def _connect_columns(columns: Mapping[str, ColumnType]) -> dict[str, _Column] | None:
    result = {}
    for name, column in columns.items():
        read = _connect_column(column)
        if read is None:
            return None
        result[name] = read
    return result or None


def _connect_column(column: ColumnType) -> _Column | None:
    logical = column.logical
    if logical in _MILLIS and column.kind == "int64":
        return _Column(pa.int64(), pa.timestamp("us"), 1000)
    if logical in _MICROS and column.kind == "int64":
        return _Column(pa.int64(), pa.timestamp("us"))
    if logical in _DATES and column.kind == "int32":
        return _Column(pa.int64(), pa.date32(), via=pa.int32())
    if logical is not None and logical not in _TEXT_LOGICAL:
        return None
    if column.is_binary_text or column.kind not in _PARSED:
        return None
    return _Column(_PARSED[column.kind], column.arrow_type())


def _table_columns(types: Mapping[str, pa.DataType]) -> dict[str, _Column] | None:
    """Schema-less events against the table's types: each column parsed as the JSON
    type the row path infers from its values, then cast to the table's type by the same
    cast (integers for integer, timestamp and date columns); other types go there."""
    result = {}
    for name, kind in types.items():
        if pa.types.is_integer(kind) or pa.types.is_timestamp(kind) or kind == pa.date32():
            result[name] = _Column(pa.int64(), kind)
        elif kind == pa.float64() or pa.types.is_boolean(kind) or pa.types.is_string(kind):
            result[name] = _Column(kind, kind)
        else:
            return None
    return result or None


def _events(
    parsed: pa.Table,
    columns: Mapping[str, _Column],
    key_fields: tuple[str, ...],
    partition_fields: Sequence[str],
) -> ColumnEvents | None:
    op = parsed.column("op").combine_chunks()
    if op.null_count or not pc.all(pc.is_in(op, pa.array(["c", "u", "r", "d"]))).as_py():
        return None
    deleted = pc.equal(op, "d")
    source = parsed.column("source").combine_chunks()
    if source.null_count:
        return None
    connector = source.field("connector")
    if connector.null_count or not pc.all(pc.equal(connector, POSTGRES)).as_py():
        return None
    before = parsed.column("before").combine_chunks()
    after = parsed.column("after").combine_chunks()
    # c, u, r need an after image, d its before image (the row path names the fault).
    if pc.any(pc.and_(pc.invert(deleted), after.is_null())).as_py():
        return None
    if pc.any(pc.and_(deleted, before.is_null())).as_py():
        return None
    arrays: dict[str, pa.Array] = {}
    for name, column in columns.items():
        values = pc.if_else(deleted, before.field(name), after.field(name))
        if column.scale != 1:
            values = pc.multiply_checked(values, column.scale)
        if column.via is not None:
            values = values.cast(column.via)
        arrays[name] = values.cast(column.target)
    for name in (*key_fields, *partition_fields):
        if name not in arrays:
            return None
    if any(arrays[name].null_count for name in key_fields):
        return None
    for name in partition_fields:
        if pc.any(pc.and_(deleted, arrays[name].is_null())).as_py():
            return None  # the row path refuses such a delete, naming it
    order = _order(source)
    if order is None:
        return None
    meta = {
        OP: op,
        "_upstream_event_processed_ts_ms": parsed.column("ts_ms").combine_chunks(),
        "db_shard_source_partition": source.field("name"),
        "_event_origin_ts_ms": source.field("ts_ms"),
        "db_schema_source_partition": source.field("schema"),
        "_event_tx_id": source.field("txId"),
        "_event_lsn": source.field("lsn"),
        "_event_xmin": source.field("xmin"),
        ORDER: order,
    }
    for name, kind in META_COLUMNS[POSTGRES]:
        arrays[name] = meta[name].cast(_META_TYPES[kind])
    return ColumnEvents(pa.table(arrays), _keys([arrays[name] for name in key_fields]))


def _order(source: pa.StructArray) -> pa.Array | None:
    """``_event_order`` (``events._meta``): the commit LSN of ``source.sequence``, then
    the change's LSN (``source.lsn`` when the sequence has none), 20 digits each."""
    sequence = source.field("sequence")
    lsn = source.field("lsn")
    text = pc.fill_null(sequence, "[null,null]")
    if not pc.all(pc.match_substring_regex(text, _SEQUENCE)).as_py():
        return None
    parts = pc.extract_regex(text, _SEQUENCE)
    commit = _digits(parts.field("commit"))
    change = _digits(parts.field("change"))
    commit = pc.fill_null(commit, 0)
    change = pc.coalesce(change, lsn)
    if change.null_count:
        return None  # no lsn: the row path refuses the event
    return pc.binary_join_element_wise(_padded(commit), _padded(change), ":")


def _digits(text: pa.Array) -> pa.Array:
    """A captured number (empty when the sequence had null) as int64."""
    return pc.if_else(pc.equal(text, ""), pa.scalar(None, pa.string()), text).cast(pa.int64())


def _padded(numbers: pa.Array) -> pa.Array:
    return pc.utf8_lpad(numbers.cast(pa.string()), 20, "0")


def _keys(columns: list[pa.Array]) -> pa.Array:
    """The record keys as ``events.EventReader._key`` writes them: a JSON list."""
    if all(pa.types.is_integer(c.type) for c in columns):
        texts = [c.cast(pa.string()) for c in columns]
        joined = texts[0] if len(texts) == 1 else pc.binary_join_element_wise(*texts, ",")
        return pc.binary_join_element_wise("[", joined, "]", "")
    rows = zip(*(c.to_pylist() for c in columns), strict=True)
    return pa.array([orjson.dumps(list(row)).decode() for row in rows], pa.string())


def reduce_columns(
    events: ColumnEvents, tombstones: Mapping[str, str], truncated_before: str | None
) -> ColumnReduced:
    """``batch.reduce_events`` in columns: events in log order (a stable sort: equal
    positions keep their delivery order, and the later one wins as in the row path),
    those at or before their key's tombstone or the truncate mark dropped, then the
    last event per key, the keys in the order of their first kept event."""
    rows, keys = events.rows, events.keys
    order = rows.column(ORDER).combine_chunks()
    sort = pc.sort_indices(order)
    rows, keys, order = rows.take(sort), keys.take(sort), order.take(sort)
    keep = pc.greater_equal(order, truncated_before or "")
    if tombstones:
        known = pa.array(list(tombstones), pa.string())
        stones = pa.array(list(tombstones.values()), pa.string())
        stone = stones.take(pc.index_in(keys, known))
        keep = pc.and_(keep, pc.invert(pc.fill_null(pc.less_equal(order, stone), False)))
    kept = int(pc.sum(keep).as_py() or 0)
    dropped = len(keys) - kept
    rows, keys = rows.filter(keep), keys.filter(keep)
    codes = keys.dictionary_encode().indices.to_numpy(zero_copy_only=False)
    _, first = np.unique(codes, return_index=True)
    _, last_reversed = np.unique(codes[::-1], return_index=True)
    last = len(codes) - 1 - last_reversed
    chosen = last[np.argsort(first, kind="stable")]
    rows, keys = rows.take(pa.array(chosen)), keys.take(pa.array(chosen))
    key_list = keys.to_pylist()
    deleted = pc.equal(rows.column(OP), "d").to_numpy(zero_copy_only=False)
    orders = rows.column(ORDER).to_pylist()
    deletes = {k: o for k, o, d in zip(key_list, orders, deleted, strict=True) if d}
    upserted = {k for k, d in zip(key_list, deleted, strict=True) if not d}
    return ColumnReduced(rows, key_list, dropped, deletes, upserted)
