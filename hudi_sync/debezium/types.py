"""Debezium column types: Kafka Connect schemas (JSON envelope or Avro) to Arrow types,
and each raw event value to the Python value of that type.

Debezium encodes a column as a Connect type plus a logical name
(``io.debezium.time.MicroTimestamp`` over int64, ``...Decimal`` over bytes, ...). The
mapping to Arrow (and so to Spark and parquet) follows what the value means:

=====================================================  ====================================
Connect logical name                                   Arrow type
=====================================================  ====================================
``io.debezium.time.Date``, connect ``Date``            ``date32``
``io.debezium.time.Timestamp`` / ``MicroTimestamp`` /  ``timestamp[us]`` (zone-less: the
``NanoTimestamp``, connect ``Timestamp``               wall time, Spark reads it as UTC)
``io.debezium.time.ZonedTimestamp`` (ISO string)       ``timestamp[us, UTC]``
``io.debezium.time.Time`` / ``MicroTime`` /            ``string`` ``HH:MM:SS.ffffff``
``NanoTime``, connect ``Time``                         (Spark 4.0 has no TIME type)
connect ``Decimal`` (bytes + ``scale``, or a JSON      ``decimal128(precision, scale)``
number: ``decimal.format=NUMERIC``)
``io.debezium.data.VariableScaleDecimal``              ``decimal128(38, 18)``
``io.debezium.data.Json`` / ``Uuid`` / ``Enum`` ...    ``string``
bytes (base64 in JSON); a string column whose          ``binary``
propagated source type is a binary type (bytea in
``binary.handling.mode`` base64 / hex)
arrays                                                 ``list<item>``
maps, structs (geometry, ...)                          ``string`` (JSON)
=====================================================  ====================================

Events without schemas (``schemas.enable=false``) have their types inferred from the
values (integers, floats, booleans, strings, lists); the writer then casts to the
table's stored types.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import decimal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa

from hudi_sync.errors import BadInputError

Converter = Callable[[Any], Any]

_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DATE = dt.date(1970, 1, 1)
_BINARY_SOURCE_TYPES = {"BYTEA", "BLOB", "BINARY", "VARBINARY", "TINYBLOB", "MEDIUMBLOB"}
_BINARY_SOURCE_TYPES |= {"LONGBLOB", "RAW", "IMAGE"}
VARIABLE_SCALE = 18  # fraction digits kept for io.debezium.data.VariableScaleDecimal

_PRIMITIVE_ARROW = {
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float": pa.float32(),  # Connect's JSON schemas say float and double
    "double": pa.float64(),
    "float32": pa.float32(),
    "float64": pa.float64(),
    "boolean": pa.bool_(),
    "string": pa.string(),
    "bytes": pa.binary(),
}
_TIMESTAMP_UNITS = {  # logical name -> divisor to microseconds (negative: multiplier)
    "io.debezium.time.Timestamp": -1000,
    "org.apache.kafka.connect.data.Timestamp": -1000,
    "io.debezium.time.MicroTimestamp": 1,
    "io.debezium.time.NanoTimestamp": 1000,
}
_TIME_UNITS = {
    "io.debezium.time.Time": -1000,
    "org.apache.kafka.connect.data.Time": -1000,
    "io.debezium.time.MicroTime": 1,
    "io.debezium.time.NanoTime": 1000,
}
_DATES = {"io.debezium.time.Date", "org.apache.kafka.connect.data.Date"}
DECIMAL = "org.apache.kafka.connect.data.Decimal"
VARIABLE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
ZONED_TIMESTAMP = "io.debezium.time.ZonedTimestamp"


@dataclass(frozen=True)
class ColumnType:
    """A column's Connect type: base type, logical name, parameters, array item type."""

    kind: str
    logical: str | None = None
    parameters: Mapping[str, str] = field(default_factory=dict)
    items: ColumnType | None = None

    @property
    def is_decimal(self) -> bool:
        """A Connect ``Decimal`` or Debezium ``VariableScaleDecimal`` column."""
        return self.logical in (DECIMAL, VARIABLE_DECIMAL)

    @property
    def is_binary_text(self) -> bool:
        """A string column that holds binary data (bytea with binary.handling.mode)."""
        source = str(self.parameters.get("__debezium.source.column.type", "")).upper()
        return self.kind == "string" and source in _BINARY_SOURCE_TYPES

    def arrow_type(self) -> pa.DataType:
        logical = self.logical
        if logical in _DATES:
            return pa.date32()
        if logical in _TIMESTAMP_UNITS:
            return pa.timestamp("us")
        if logical == ZONED_TIMESTAMP:
            return pa.timestamp("us", tz="UTC")
        if logical in _TIME_UNITS:
            return pa.string()
        if logical == DECIMAL:
            precision = int(self.parameters.get("connect.decimal.precision", 38))
            if precision > 38:
                return pa.string()
            return pa.decimal128(precision, int(self.parameters.get("scale", 0)))
        if logical == VARIABLE_DECIMAL:
            return pa.decimal128(38, VARIABLE_SCALE)
        if self.is_binary_text:
            return pa.binary()
        if self.kind == "array" and self.items is not None:
            return pa.list_(self.items.arrow_type())
        return _PRIMITIVE_ARROW.get(self.kind, pa.string())  # map, struct: JSON text

    def converter(self, binary_mode: str = "bytes") -> Converter | None:
        """Raw JSON / Avro value -> the Arrow type's Python value (None: no change)."""
        logical = self.logical
        if logical in _DATES:
            return _date
        if logical in _TIMESTAMP_UNITS:
            return _timestamp(_TIMESTAMP_UNITS[logical])
        if logical == ZONED_TIMESTAMP:
            return _zoned_timestamp
        if logical in _TIME_UNITS:
            return _time_of_day(_TIME_UNITS[logical])
        if logical == DECIMAL:
            scale = int(self.parameters.get("scale", 0))
            exact = _decimal(scale)
            return exact if self.arrow_type() != pa.string() else lambda v: str(exact(v))
        if logical == VARIABLE_DECIMAL:
            return _variable_decimal
        if self.kind == "bytes":
            return _bytes
        if self.is_binary_text:
            return _binary_text(binary_mode)
        if self.kind == "array" and self.items is not None:
            inner = self.items.converter(binary_mode)
            return None if inner is None else _array(inner)
        if self.kind in ("map", "struct"):
            return _json_text
        return None


def _date(value: Any) -> dt.date:
    return value if isinstance(value, dt.date) else _EPOCH_DATE + dt.timedelta(days=value)


def _timestamp(divisor: int) -> Converter:
    def convert(value: Any) -> dt.datetime:
        if isinstance(value, dt.datetime):
            return value.replace(tzinfo=None) if value.tzinfo is None else value
        micros = value * -divisor if divisor < 0 else value // divisor
        return _EPOCH + dt.timedelta(microseconds=micros)

    return convert


def _zoned_timestamp(value: Any) -> dt.datetime:
    if isinstance(value, dt.datetime):
        return value
    parsed = dt.datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.astimezone(dt.UTC)


def _time_of_day(divisor: int) -> Converter:
    def convert(value: Any) -> str:
        if isinstance(value, dt.time):
            return value.isoformat(timespec="microseconds")
        micros = value * -divisor if divisor < 0 else value // divisor
        seconds, micro = divmod(micros, 1_000_000)
        hours, rest = divmod(seconds, 3600)
        return f"{hours:02d}:{rest // 60:02d}:{rest % 60:02d}.{micro:06d}"

    return convert


def _unscaled(value: Any) -> int:
    raw = value if isinstance(value, bytes) else base64.b64decode(value)
    return int.from_bytes(raw, "big", signed=True)


def _decimal(scale: int) -> Converter:
    def convert(value: Any) -> decimal.Decimal:
        number = _json_number(value)
        if number is not None:
            return number
        return decimal.Decimal(_unscaled(value)).scaleb(-scale)

    return convert


def _variable_decimal(value: Any) -> decimal.Decimal:
    number = _json_number(value)
    if number is not None:
        return number
    return decimal.Decimal(_unscaled(value["value"])).scaleb(-int(value["scale"]))


def _json_number(value: Any) -> decimal.Decimal | None:
    """A decimal written as a JSON number (the JSON converter's
    ``decimal.format=NUMERIC``, Flink CDC's debezium-json), read exactly: the events
    reader parses such payloads with ``decimal.Decimal`` for every fraction, so the
    number's text arrives whole; an integer is exact as it is. None for the encoded
    forms (base64 bytes, a ``VariableScaleDecimal`` struct)."""
    if isinstance(value, decimal.Decimal):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return decimal.Decimal(value)
    if isinstance(value, float):  # parsed as a float: digits may be lost already
        raise ValueError(f"{value!r} was read as a binary float")
    return None


def _bytes(value: Any) -> bytes:
    return value if isinstance(value, bytes) else base64.b64decode(value)


def _binary_text(mode: str) -> Converter:
    mode = mode.lower()
    if mode == "hex":
        return bytes.fromhex
    if mode in ("base64", "base64-url-safe"):
        return base64.urlsafe_b64decode if mode == "base64-url-safe" else base64.b64decode
    return lambda value: value.encode() if isinstance(value, str) else value


def _array(inner: Converter) -> Converter:
    return lambda value: [None if v is None else inner(v) for v in value]


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value, default=str).decode()


# -- schemas --------------------------------------------------------------------------
def from_connect(schema: Mapping[str, Any]) -> ColumnType:
    """A field of a Connect JSON schema (``{"type": "int64", "name": ..., ...}``)."""
    items = schema.get("items")
    return ColumnType(
        kind=str(schema.get("type", "string")),
        logical=schema.get("name"),
        parameters={str(k): str(v) for k, v in (schema.get("parameters") or {}).items()},
        items=from_connect(items) if isinstance(items, Mapping) else None,
    )


def connect_row_columns(envelope_schema: Mapping[str, Any]) -> dict[str, ColumnType]:
    """The row's columns from a Debezium envelope schema (its ``after`` or ``before``
    struct), or from a flattened record's own struct."""
    fields = {f.get("field"): f for f in envelope_schema.get("fields") or []}
    row = fields.get("after") or fields.get("before")
    struct = row if row is not None else envelope_schema
    return {
        f["field"]: from_connect(f) for f in struct.get("fields") or [] if not _is_added(f["field"])
    }


_AVRO_KINDS = {"int": "int32", "long": "int64", "float": "float32", "double": "float64"}
_AVRO_KINDS |= {"boolean": "boolean", "string": "string", "bytes": "bytes", "enum": "string"}
_AVRO_KINDS |= {"fixed": "bytes", "record": "struct", "map": "map", "array": "array"}


def from_avro(schema: Any) -> ColumnType:
    """A field type of an Avro schema written by Debezium's AvroConverter (unions with
    null are optional values; ``connect.name`` / ``connect.parameters`` carry the
    logical type)."""
    if isinstance(schema, list):
        branches = [s for s in schema if s != "null"]
        return from_avro(branches[0]) if branches else ColumnType("string")
    if isinstance(schema, str):
        return ColumnType(_AVRO_KINDS.get(schema, "string"))
    kind = str(schema.get("connect.type") or _AVRO_KINDS.get(schema.get("type"), "string"))
    parameters = {str(k): str(v) for k, v in (schema.get("connect.parameters") or {}).items()}
    logical = schema.get("connect.name")
    if schema.get("logicalType") == "decimal":
        logical = DECIMAL
        parameters.setdefault("scale", str(schema.get("scale", 0)))
        parameters.setdefault("connect.decimal.precision", str(schema.get("precision", 38)))
    items = schema.get("items") if schema.get("type") == "array" else None
    return ColumnType(kind, logical, parameters, from_avro(items) if items else None)


def avro_row_columns(envelope_schema: Mapping[str, Any]) -> dict[str, ColumnType]:
    """The row's columns from a Debezium Avro envelope (or flattened) record schema;
    the row record is defined where first used (``before``), then named (``after``)."""
    fields = {f["name"]: f for f in envelope_schema.get("fields") or []}
    struct: Any = envelope_schema
    for image in ("before", "after"):
        if image in fields:
            kind = fields[image]["type"]
            branches = kind if isinstance(kind, list) else [kind]
            records = [b for b in branches if isinstance(b, dict) and b.get("type") == "record"]
            if records:
                struct = records[0]
                break
    return {
        f["name"]: from_avro(f["type"])
        for f in struct.get("fields") or []
        if not _is_added(f["name"])
    }


def _is_added(name: str) -> bool:
    """Fields ``ExtractNewRecordState`` adds (``__op``, ``__lsn``, ``__deleted``...)."""
    return name.startswith("__")


def infer(values: Sequence[Any]) -> ColumnType:
    """A column type from schema-less JSON values: booleans, whole numbers (floats when
    any value has a fraction), lists of these, strings; objects become JSON text."""
    kinds = {type(v) for v in values if v is not None}
    if not kinds:
        return ColumnType("string")
    if kinds == {bool}:
        return ColumnType("boolean")
    if kinds == {int}:
        return ColumnType("int64")
    if kinds <= {int, float}:
        return ColumnType("float64")
    if kinds == {list}:
        return ColumnType("array", items=infer([v for item in values if item for v in item]))
    if kinds == {str}:
        return ColumnType("string")
    return ColumnType("map")  # objects or mixed kinds: JSON text


def to_arrow(
    name: str, column: ColumnType, values: list[Any], binary_mode: str = "bytes"
) -> pa.Array:
    """The raw values of one column as an Arrow array of the column's type."""
    convert = column.converter(binary_mode)
    if convert is not None:
        try:
            values = [None if v is None else convert(v) for v in values]
        except (ValueError, TypeError, KeyError, binascii.Error, OverflowError) as exc:
            raise BadInputError(
                f"column {name}: a value is not a valid {column.logical or column.kind}: {exc}"
            ) from None
    try:
        return pa.array(values, column.arrow_type())
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        raise BadInputError(f"column {name}: {exc} (as {column.arrow_type()})") from None
