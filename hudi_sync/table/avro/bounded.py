"""Avro read from storage, bounded before fastavro sees it.

fastavro trusts its input: it recurses on the C stack once per nesting level of the
data (a recursive record ~5,000 levels deep kills the process), and it loops once per
item an array block claims, even when the items take no bytes (``array<null>`` claiming
2^62 items spins forever). So every schema read from storage (an instant file's, a log
block's header, a metadata HFile's writer schema) goes through ``schema_from_text`` or
``schema_from_json`` first, which refuse recursive schemas, schemas nested more than
``MAX_DEPTH`` levels or with more than ``MAX_NODES`` types once named types are expanded
(the work one datum can cost). Hudi writes none of these: its model schemas and the
Avro form of a Spark schema are small trees.

A datum of a schema with an array of items that take no bytes is walked here first
(``read_datum``), and refused when its arrays claim more than ``MAX_ITEMS`` items or
any count, length or size the bytes left cannot hold; in every other schema each item
takes at least a byte, so fastavro stops at the end of the data by itself.
"""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import fastavro
import fastavro.read

from hudi_sync.errors import CorruptTableError

MAX_DEPTH = 100  # nesting levels of a schema, named types expanded
MAX_NODES = 100_000  # types of a schema, named types expanded
MAX_ITEMS = 1_000_000  # items that take no bytes, in all arrays of one datum
MAX_SCHEMA_TEXT = 16 * 1024 * 1024  # bytes of a schema's JSON

_PRIMITIVE_SIZES = {
    "null": 0,
    "boolean": 1,
    "int": 1,
    "long": 1,
    "float": 4,
    "double": 8,
    "string": 1,
    "bytes": 1,
}
_NAMED = ("record", "error", "enum", "fixed")


class AvroBoundError(ValueError):
    """A schema or datum past the bounds (callers add the file's name)."""


@dataclass(frozen=True)
class AvroSchema:
    """A schema read from storage that passed the bounds: its JSON, fastavro's parse,
    and whether its datums must be walked before decoding."""

    schema: Any
    parsed: Any
    names: Mapping[str, Any]  # full name -> definition
    walk_datums: bool  # some array's items take no bytes


def _reason(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def load_json(data: str | bytes, where: str, what: str) -> Any:
    """A JSON document read from storage; nesting past the interpreter's recursion limit,
    bad UTF-8 and bad JSON are one ``CorruptTableError`` naming ``where``."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        return json.loads(text)
    except RecursionError:
        raise CorruptTableError(f"{where}: corrupt {what} (nested too deeply)") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise CorruptTableError(f"{where}: corrupt {what} ({_reason(exc)})") from None


def schema_from_text(text: str | bytes, where: str, what: str = "Avro schema") -> AvroSchema:
    """The bounded schema whose JSON is ``text`` (cached by text)."""
    if len(text) > MAX_SCHEMA_TEXT:
        raise CorruptTableError(f"{where}: {what} is {len(text)} bytes long")
    raw = text.decode("utf-8", "surrogateescape") if isinstance(text, bytes) else text
    try:
        return _cached_schema(raw)
    except _NotJson:
        load_json(raw, where, what)  # raises the precise error
        raise CorruptTableError(f"{where}: corrupt {what}") from None
    except AvroBoundError as exc:
        raise CorruptTableError(f"{where}: {what} {exc}") from None


class _NotJson(Exception):
    pass


@lru_cache(maxsize=256)
def _cached_schema(text: str) -> AvroSchema:
    try:
        schema = json.loads(text)
    except (RecursionError, ValueError):
        raise _NotJson from None
    return _bounded(schema)


def checked_schema_text(text: str | bytes, where: str, what: str = "Avro schema") -> Any:
    """The JSON of a schema read from storage that is not decoded with (a table's
    schema, turned into Arrow types): bounded and checked as ``schema_from_text`` does,
    without fastavro's parse."""
    if len(text) > MAX_SCHEMA_TEXT:
        raise CorruptTableError(f"{where}: {what} is {len(text)} bytes long")
    schema = load_json(text, where, what)
    try:
        _SchemaWalk().type_of(schema, None, 0)
    except AvroBoundError as exc:
        raise CorruptTableError(f"{where}: {what} {exc}") from None
    return schema


def schema_from_json(schema: Any, where: str, what: str = "Avro schema") -> AvroSchema:
    """The bounded form of a schema already read as JSON."""
    try:
        return _bounded(schema)
    except AvroBoundError as exc:
        raise CorruptTableError(f"{where}: {what} {exc}") from None


def _bounded(schema: Any) -> AvroSchema:
    walk = _SchemaWalk()
    walk.type_of(schema, None, 0)
    try:
        parsed = fastavro.parse_schema(schema)
    except Exception as exc:  # fastavro raises many types on a bad schema
        raise AvroBoundError(f"is not a valid Avro schema ({_reason(exc)})") from None
    return AvroSchema(schema, parsed, walk.names, walk.zero_width_arrays)


@dataclass
class _Shape:
    min_size: int  # bytes a datum takes at least (0: always none)
    nodes: int
    height: int


class _SchemaWalk:
    """One pass over a schema's JSON: its named types, and the shape of each type."""

    def __init__(self) -> None:
        self.names: dict[str, Any] = {}
        self.shapes: dict[str, _Shape] = {}
        self.in_progress: set[str] = set()
        self.zero_width_arrays = False

    def type_of(self, avro_type: Any, namespace: str | None, depth: int) -> _Shape:
        if depth > MAX_DEPTH:
            raise AvroBoundError(f"is nested more than {MAX_DEPTH} levels")
        shape = self._shape(avro_type, namespace, depth)
        if depth + shape.height > MAX_DEPTH:
            raise AvroBoundError(f"is nested more than {MAX_DEPTH} levels")
        if shape.nodes > MAX_NODES:
            raise AvroBoundError(f"has more than {MAX_NODES} types once its named types expand")
        return shape

    def _shape(self, avro_type: Any, namespace: str | None, depth: int) -> _Shape:
        if isinstance(avro_type, str):
            if avro_type in _PRIMITIVE_SIZES:
                return _Shape(_PRIMITIVE_SIZES[avro_type], 1, 0)
            return self._reference(avro_type, namespace)
        if isinstance(avro_type, list):
            if not avro_type:
                raise AvroBoundError("has an empty union")
            branches = [self.type_of(b, namespace, depth + 1) for b in avro_type]
            return _Shape(
                1 + min(b.min_size for b in branches),
                1 + sum(b.nodes for b in branches),
                1 + max(b.height for b in branches),
            )
        if not isinstance(avro_type, dict):
            raise AvroBoundError(f"has a type that is a JSON {type(avro_type).__name__}")
        kind = avro_type.get("type")
        if kind in _NAMED:
            return self._named(avro_type, str(kind), namespace, depth)
        if kind == "array":
            items = self.type_of(avro_type.get("items"), namespace, depth + 1)
            if items.min_size == 0:
                self.zero_width_arrays = True
            return _Shape(1, 1 + items.nodes, 1 + items.height)
        if kind == "map":
            values = self.type_of(avro_type.get("values"), namespace, depth + 1)
            return _Shape(1, 1 + values.nodes, 1 + values.height)
        if isinstance(kind, str | list | dict):
            return self.type_of(kind, namespace, depth + 1)
        raise AvroBoundError(f"has a type without a valid 'type' ({_reason(ValueError(kind))})")

    def _full_name(self, name: Any, namespace: str | None) -> tuple[str, str | None]:
        if not isinstance(name, str) or not name:
            raise AvroBoundError("has a named type without a name")
        if "." in name:
            return name, name.rsplit(".", 1)[0]
        return (f"{namespace}.{name}" if namespace else name), namespace

    def _reference(self, name: str, namespace: str | None) -> _Shape:
        for candidate in (f"{namespace}.{name}" if namespace else name, name):
            if candidate in self.in_progress:
                raise AvroBoundError(f"is recursive ({candidate} holds itself)")
            if candidate in self.shapes:
                return self.shapes[candidate]
        raise AvroBoundError(f"refers to an undefined type {name!r}")

    def _named(
        self, definition: dict[str, Any], kind: str, namespace: str | None, depth: int
    ) -> _Shape:
        space = definition.get("namespace", namespace)
        if space is not None and not isinstance(space, str):
            raise AvroBoundError("has a namespace that is not a string")
        full, space = self._full_name(definition.get("name"), space or None)
        if full in self.names:
            raise AvroBoundError(f"defines {full} twice")
        self.names[full] = definition
        if kind == "fixed":
            size = definition.get("size")
            if not isinstance(size, int) or size < 0:
                raise AvroBoundError(f"has a fixed {full} without a valid size")
            shape = _Shape(size, 1, 0)
        elif kind == "enum":
            symbols = definition.get("symbols")
            if not isinstance(symbols, list) or not symbols:
                raise AvroBoundError(f"has an enum {full} without symbols")
            shape = _Shape(1, 1, 0)
        else:
            fields = definition.get("fields")
            if not isinstance(fields, list):
                raise AvroBoundError(f"has a record {full} without a field list")
            self.in_progress.add(full)
            shapes = []
            seen: set[Any] = set()
            for field in fields:
                if not isinstance(field, dict) or "type" not in field:
                    raise AvroBoundError(f"has a record {full} with a field without a type")
                if field.get("name") in seen:
                    raise AvroBoundError(f"has a record {full} with two fields {field['name']!r}")
                seen.add(field.get("name"))
                shapes.append(self.type_of(field["type"], space, depth + 1))
            self.in_progress.discard(full)
            shape = _Shape(
                sum(s.min_size for s in shapes),
                1 + sum(s.nodes for s in shapes),
                1 + max((s.height for s in shapes), default=0),
            )
        self.shapes[full] = shape
        return shape


def read_datum(
    data: bytes,
    writer: AvroSchema,
    where: str,
    reader: Any = None,
    return_record_name: bool = False,
) -> tuple[Any, int]:
    """One Avro datum at the start of ``data`` in ``writer``'s schema (projected onto
    the parsed ``reader`` schema when given), and the bytes it took; a datum that does
    not decode is one ``CorruptTableError`` naming ``where``."""
    if writer.walk_datums:
        check_datum(data, writer, where)
    stream = io.BytesIO(data)
    try:
        value = fastavro.schemaless_reader(
            stream, writer.parsed, reader, return_record_name=return_record_name
        )
    except Exception as exc:  # fastavro raises many types on corrupt input
        raise CorruptTableError(f"{where}: Avro datum does not decode ({_reason(exc)})") from None
    return value, stream.tell()


def check_datum(data: bytes, writer: AvroSchema, where: str) -> int:
    """Walk one datum of ``writer`` (one with arrays of items that take no bytes) without
    building it: every count, length and size must fit the bytes left, and the items of
    its arrays may not exceed ``MAX_ITEMS``. Returns the bytes the datum takes."""
    try:
        return _DatumWalk(data, writer.names).skip(writer.schema, None)
    except AvroBoundError as exc:
        raise CorruptTableError(f"{where}: Avro datum cannot be decoded ({exc})") from None


class _DatumWalk:
    def __init__(self, data: bytes, names: Mapping[str, Any]) -> None:
        self.data = data
        self.position = 0
        self.names = names
        self.items = 0
        self.sizes: dict[tuple[int, str | None], int] = {}

    def skip(self, avro_type: Any, namespace: str | None) -> int:
        self._skip(avro_type, namespace)
        return self.position

    def _long(self) -> int:
        data, position, shift, result = self.data, self.position, 0, 0
        while True:
            if position >= len(data) or shift > 63:
                raise AvroBoundError("a number runs past the end of the data")
            byte = data[position]
            position += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                break
            shift += 7
        self.position = position
        return (result >> 1) ^ -(result & 1)

    def _take(self, size: int) -> None:
        if size < 0 or self.position + size > len(self.data):
            raise AvroBoundError(f"a length of {size} bytes is more than the bytes left")
        self.position += size

    def _resolve(self, name: str, namespace: str | None) -> tuple[Any, str | None]:
        for candidate in (f"{namespace}.{name}" if namespace else name, name):
            if candidate in self.names:
                return self.names[candidate], candidate.rsplit(".", 1)[
                    0
                ] if "." in candidate else None
        raise AvroBoundError(f"undefined type {name!r}")

    def _min_size(self, avro_type: Any, namespace: str | None) -> int:
        key = (id(avro_type), namespace)
        if key not in self.sizes:
            self.sizes[key] = _min_size_of(avro_type, namespace, self.names)
        return self.sizes[key]

    def _skip(self, avro_type: Any, namespace: str | None) -> None:
        if isinstance(avro_type, str):
            if avro_type in ("null",):
                return
            if avro_type == "boolean":
                self._take(1)
            elif avro_type in ("int", "long"):
                self._long()
            elif avro_type == "float":
                self._take(4)
            elif avro_type == "double":
                self._take(8)
            elif avro_type in ("string", "bytes"):
                self._take(self._long())
            else:
                definition, space = self._resolve(avro_type, namespace)
                self._skip(definition, space)
            return
        if isinstance(avro_type, list):
            branch = self._long()
            if not 0 <= branch < len(avro_type):
                raise AvroBoundError(f"union branch {branch} of {len(avro_type)}")
            self._skip(avro_type[branch], namespace)
            return
        kind = avro_type["type"]
        if kind in _NAMED:
            name = str(avro_type["name"])
            space = avro_type.get("namespace", namespace) or None
            if "." in name:
                space = name.rsplit(".", 1)[0]
            if kind == "fixed":
                self._take(int(avro_type["size"]))
            elif kind == "enum":
                index = self._long()
                if not 0 <= index < len(avro_type["symbols"]):
                    raise AvroBoundError(f"enum index {index} of {len(avro_type['symbols'])}")
            else:
                for field in avro_type["fields"]:
                    self._skip(field["type"], space)
            return
        if kind in ("array", "map"):
            self._blocks(avro_type, str(kind), namespace)
            return
        self._skip(kind, namespace)

    def _blocks(self, avro_type: Mapping[str, Any], kind: str, namespace: str | None) -> None:
        inner = avro_type["items"] if kind == "array" else avro_type["values"]
        item_size = self._min_size(inner, namespace) + (1 if kind == "map" else 0)
        while True:
            count = self._long()
            if count == 0:
                return
            if count < 0:
                count = -count
                size = self._long()
                if size < 0 or self.position + size > len(self.data):
                    raise AvroBoundError(f"a block of {size} bytes is more than the bytes left")
            if count * item_size > len(self.data) - self.position:
                raise AvroBoundError(f"{count} items are more than the bytes left can hold")
            if item_size == 0:
                self.items += count
                if self.items > MAX_ITEMS:
                    raise AvroBoundError(f"its arrays claim more than {MAX_ITEMS} items")
                continue
            for _ in range(count):
                if kind == "map":
                    self._take(self._long())
                self._skip(inner, namespace)


def _min_size_of(avro_type: Any, namespace: str | None, names: Mapping[str, Any]) -> int:
    """Bytes a datum of a bounded schema's type takes at least."""
    if isinstance(avro_type, str):
        if avro_type in _PRIMITIVE_SIZES:
            return _PRIMITIVE_SIZES[avro_type]
        for candidate in (f"{namespace}.{avro_type}" if namespace else avro_type, avro_type):
            if candidate in names:
                space = candidate.rsplit(".", 1)[0] if "." in candidate else None
                return _min_size_of(names[candidate], space, names)
        raise AvroBoundError(f"undefined type {avro_type!r}")
    if isinstance(avro_type, list):
        return 1 + min(_min_size_of(b, namespace, names) for b in avro_type)
    kind = avro_type["type"]
    if kind == "fixed":
        return int(avro_type["size"])
    if kind in ("enum", "array", "map"):
        return 1
    if kind in ("record", "error"):
        name = str(avro_type["name"])
        space = avro_type.get("namespace", namespace) or None
        if "." in name:
            space = name.rsplit(".", 1)[0]
        return sum(_min_size_of(f["type"], space, names) for f in avro_type["fields"])
    return _min_size_of(kind, namespace, names)


def read_container(data: bytes, where: str, limit: int, what: str = "Avro container") -> list[Any]:
    """At most ``limit`` records of an Avro object-container file (Hudi's Avro instant
    files and plans), its header's schema bounded first. A schema whose arrays can hold
    items that take no bytes is refused: Hudi's container schemas have none."""
    try:
        header = fastavro.schemaless_reader(io.BytesIO(data), fastavro.read.HEADER_SCHEMA, None)
        if not isinstance(header, dict) or header.get("magic") != b"Obj\x01":
            raise ValueError("no Avro container magic")
        schema_bytes = header["meta"]["avro.schema"]
        codec = header["meta"].get("avro.codec", b"null")
    except Exception as exc:  # fastavro raises many types on a corrupt header
        raise CorruptTableError(f"{where}: corrupt {what} ({_reason(exc)})") from None
    if codec != b"null":
        # Inflating a block has no bound in fastavro; Hudi writes these files uncompressed.
        raise CorruptTableError(f"{where}: corrupt {what} (codec {codec!r}; Hudi writes none)")
    schema = schema_from_text(schema_bytes, where, f"{what}'s schema")
    if schema.walk_datums:
        raise CorruptTableError(f"{where}: {what}'s schema has an array of items of no bytes")
    try:
        return list(itertools.islice(fastavro.reader(io.BytesIO(data)), limit))
    except Exception as exc:  # fastavro raises many types on corrupt input
        raise CorruptTableError(f"{where}: corrupt {what} ({_reason(exc)})") from None
