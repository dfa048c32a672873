"""A snapshot's Arrow schema as an Iceberg schema, with field ids that stay stable.

Iceberg readers resolve columns by field id, and Hudi's Parquet files carry none: the
ids assigned here, kept across schema versions by name path, and the name mapping
(``schema.name-mapping.default``) that tells readers which Parquet column is which id
are what make every data file of every snapshot readable by the current schema.

Ids of a new schema follow Iceberg's own fresh-id order: a struct's fields take the
next ids first, then each field's nested types in turn (a list's element, a map's key
then value). A later schema keeps the id of every name path it shares with the
previous one (a list element's path segment is ``element``, a map's ``key`` and
``value``); new paths take ids above ``last_column_id``, which never decreases, so a
dropped column's id is never reused. A type change keeps its id only when Iceberg can
promote it (int to long, float to double, a decimal's precision widened at the same
scale); any other change is refused.

Every field is optional (a Hudi column may be null in older files or missing from
them), except map keys, which Iceberg requires.

Columns a data file holds and the snapshot does not show (``file_only``: the meta
columns of a table written without meta fields, whose files still carry them) take
ids too and are named in the name mapping, never in the schema: pyiceberg refuses a
file with a column the name mapping does not name.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from hudi_sync.errors import CorruptTableError, UnsupportedTableError
from hudi_sync.table.config.schema import META_FIELDS
from hudi_sync.table.table import HudiTable

IcebergType = str | dict[str, Any]
NAME_MAPPING_PROPERTY = "schema.name-mapping.default"
# Bounds of a schema read back from our own metadata (a snapshot's schema has far fewer).
MAX_FIELDS = 100_000
MAX_DEPTH = 100
MAX_DECIMAL_PRECISION = 38
MAX_ID = 2**31 - 1  # Iceberg's ids are ints

_PRIMITIVE_NAMES = frozenset(
    (
        "boolean",
        "int",
        "long",
        "float",
        "double",
        "date",
        "time",
        "timestamp",
        "timestamptz",
        "string",
        "binary",
    )
)
_DECIMAL = re.compile(r"decimal\((\d{1,2}),\s*(\d{1,2})\)")
_FIXED = re.compile(r"fixed\[(\d{1,10})\]")
# The path prefix of file-only columns (a column name is never empty).
_FILE_ONLY = ""
# Paths of nested fields: a list's element and a map's key and value have these names.
ELEMENT, KEY, VALUE = "element", "key", "value"


@dataclass(frozen=True)
class IcebergSchema:
    """One version of the table's Iceberg schema: its id, its fields (the ``fields``
    of the schema JSON) and the highest field id any version ever assigned."""

    schema_id: int
    fields_json: list[dict[str, Any]]
    last_column_id: int
    # Columns only data files hold (module docstring), shaped as ``fields_json``.
    file_only_json: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"type": "struct", "schema-id": self.schema_id, "fields": self.fields_json}

    def field_ids(self) -> dict[str, int]:
        """Top-level column name -> field id."""
        return {str(f["name"]): int(f["id"]) for f in self.fields_json}

    def ids(self) -> set[int]:
        """Every field id of the schema, nested ones included (not file-only ones)."""
        return {field_id for _, field_id, _ in _walk_json(self.fields_json, ())}

    def field_types(self) -> dict[str, IcebergType]:
        """Top-level column name -> Iceberg type (a string for a primitive)."""
        return {str(f["name"]): f["type"] for f in self.fields_json}

    def name_mapping(self) -> list[dict[str, Any]]:
        """The ``schema.name-mapping.default`` entries of every field, nested ones
        included, so that a reader maps Parquet columns (which have no ids) by name."""
        fields = [*self.fields_json, *self.file_only_json]
        return [_mapped(f["id"], f["name"], f["type"]) for f in fields]

    @classmethod
    def from_json(cls, doc: Any, last_column_id: int, where: str) -> IcebergSchema:
        """A schema read back from our own metadata, checked: well-formed types, unique
        ids no greater than ``last_column_id``, bounded depth and size (one-line
        CorruptTableError naming ``where``)."""
        if not isinstance(doc, dict) or doc.get("type") != "struct":
            raise CorruptTableError(f"{where}: a schema is not a struct")
        schema_id = doc.get("schema-id")
        if not isinstance(schema_id, int) or isinstance(schema_id, bool):
            raise CorruptTableError(f"{where}: a schema has no valid schema-id")
        if not 0 <= schema_id <= MAX_ID:
            raise CorruptTableError(f"{where}: a schema has no valid schema-id")
        seen: set[int] = set()
        _check_struct(doc, where, 0, seen, last_column_id)
        return cls(schema_id, list(doc["fields"]), last_column_id)


def iceberg_schema(
    arrow: pa.Schema,
    previous: IcebergSchema | None,
    where: str,
    file_only: Sequence[pa.Field] = (),
) -> IcebergSchema:
    """The Iceberg schema of a snapshot's Arrow schema, ids kept from ``previous`` by
    name path (module docstring); ``previous`` itself when nothing changed.
    ``file_only``: columns data files hold that the snapshot does not show.
    UnsupportedTableError (one line naming ``where``, the column and both types) for a
    type Iceberg cannot hold or a change it cannot promote."""
    old: dict[tuple[str, ...], tuple[int, IcebergType]] = {}
    if previous is not None:
        for path, field_id, kind in _walk_json(previous.fields_json, ()):
            old[path] = (field_id, kind)
        # A file-only column's path is its name behind a marker no column name has.
        for path, field_id, kind in _walk_json(previous.file_only_json, (_FILE_ONLY,)):
            old[path] = (field_id, kind)
    last = previous.last_column_id if previous is not None else 0
    counter = _Ids(old, last)
    fields = counter.struct_fields(list(arrow), (), where)
    shown = set(arrow.names)
    hidden = [f for f in file_only if f.name not in shown]
    hidden_json = counter.struct_fields(hidden, (_FILE_ONLY,), where)
    if (
        previous is not None
        and fields == previous.fields_json
        and hidden_json == previous.file_only_json
    ):
        return previous
    schema_id = previous.schema_id + 1 if previous is not None else 0
    return IcebergSchema(schema_id, fields, max(last, counter.last), hidden_json)


def file_only_columns(table: HudiTable) -> list[pa.Field]:
    """The columns ``table``'s data files may hold that its snapshot does not show: a
    table written without meta fields still writes the meta columns (mostly null)."""
    if table.config.populate_meta_fields:
        return []
    return [pa.field(name, pa.string()) for name in META_FIELDS]


def iceberg_type(arrow_type: pa.DataType, column: str, where: str) -> IcebergType:
    """The Iceberg type of one column's Arrow type, nested ids counted from 1 (what a
    new schema with this column alone would get). Unmappable types are refused in one
    line naming ``where`` and the column."""
    return _Ids({}, 0).type_of(arrow_type, (column,), where)


def primitive_type(arrow_type: pa.DataType, column: str, where: str) -> str:
    """The Iceberg primitive type of a non-nested Arrow type (refused in one line)."""
    t = arrow_type
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        return "int"
    if pa.types.is_uint8(t) or pa.types.is_uint16(t):
        return "int"
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return "long"
    if pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "binary"
    if pa.types.is_fixed_size_binary(t):
        return f"fixed[{t.byte_width}]"
    if pa.types.is_date32(t):
        return "date"
    if pa.types.is_decimal(t) and t.precision <= MAX_DECIMAL_PRECISION:
        return f"decimal({t.precision}, {t.scale})"
    # Iceberg v2 keeps timestamps in microseconds; millisecond (and second) Arrow
    # timestamps map to the same types, and readers widen them when they read the
    # Parquet column (pyiceberg does). Nanoseconds would be truncated: refused. A
    # millisecond time is refused too: pyiceberg reads no Parquet TIME(MILLIS) column.
    if pa.types.is_time(t) and t.unit == "us":
        return "time"
    if pa.types.is_timestamp(t) and t.unit in ("s", "ms", "us"):
        return "timestamptz" if t.tz is not None else "timestamp"
    raise UnsupportedTableError(
        f"{where}: column {column} has type {t}, which Iceberg v2 cannot hold"
    )


def promotable(old: IcebergType, new: IcebergType) -> bool:
    """Whether Iceberg lets a column of type ``old`` be read as ``new`` (same type, or
    int->long, float->double, decimal precision widened at the same scale)."""
    if old == new:
        return True
    if (old, new) in (("int", "long"), ("float", "double")):
        return True
    if isinstance(old, str) and isinstance(new, str):
        a, b = _DECIMAL.fullmatch(old), _DECIMAL.fullmatch(new)
        if a and b:
            return a.group(2) == b.group(2) and int(b.group(1)) >= int(a.group(1))
    return False


class _Ids:
    """Assigns field ids while converting: kept ones from ``old`` by path, new ones
    counted up from ``last``."""

    def __init__(self, old: dict[tuple[str, ...], tuple[int, IcebergType]], last: int) -> None:
        self.old = old
        self.last = last

    def _id(self, path: tuple[str, ...], new_type: pa.DataType, where: str) -> int:
        kept = self.old.get(path)
        if kept is None:
            self.last += 1
            return self.last
        field_id, old_kind = kept
        new_kind = _kind_of(new_type, path, where)
        if not promotable(old_kind, new_kind):
            raise UnsupportedTableError(
                f"{where}: column {_shown(path)} changed from {_describe(old_kind)} to "
                f"{_describe(new_kind)}, which Iceberg cannot promote"
            )
        return field_id

    def struct_fields(
        self, fields: list[pa.Field], path: tuple[str, ...], where: str
    ) -> list[dict[str, Any]]:
        names = [f.name for f in fields]
        if "" in names:
            raise UnsupportedTableError(
                f"{where}: a column of {_shown(path) or 'the table'} has an empty name"
            )
        if len(set(names)) != len(names):
            duplicate = next(n for n in names if names.count(n) > 1)
            raise UnsupportedTableError(
                f"{where}: column {_shown((*path, duplicate))} appears twice"
            )
        ids = [self._id((*path, f.name), f.type, where) for f in fields]
        return [
            {
                "id": field_id,
                "name": f.name,
                "required": False,
                "type": self.type_of(f.type, (*path, f.name), where),
            }
            for field_id, f in zip(ids, fields, strict=True)
        ]

    def type_of(self, t: pa.DataType, path: tuple[str, ...], where: str) -> IcebergType:
        if pa.types.is_struct(t):
            fields = [t.field(i) for i in range(t.num_fields)]
            return {"type": "struct", "fields": self.struct_fields(fields, path, where)}
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            element = (*path, ELEMENT)
            element_id = self._id(element, t.value_type, where)
            return {
                "type": "list",
                "element-id": element_id,
                "element": self.type_of(t.value_type, element, where),
                "element-required": False,
            }
        if pa.types.is_map(t):
            key, value = (*path, KEY), (*path, VALUE)
            key_id = self._id(key, t.key_type, where)
            value_id = self._id(value, t.item_type, where)
            return {
                "type": "map",
                "key-id": key_id,
                "key": self.type_of(t.key_type, key, where),
                "value-id": value_id,
                "value": self.type_of(t.item_type, value, where),
                "value-required": False,
            }
        return primitive_type(t, _shown(path), where)


def _kind_of(t: pa.DataType, path: tuple[str, ...], where: str) -> IcebergType:
    """What ``promotable`` compares: a primitive's Iceberg type, else the nested kind."""
    if pa.types.is_struct(t):
        return "struct"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return "list"
    if pa.types.is_map(t):
        return "map"
    return primitive_type(t, _shown(path), where)


def _shown(path: tuple[str, ...]) -> str:
    """A column's path as messages name it (a file-only column's marker left out)."""
    return ".".join(path[1:] if path and path[0] == _FILE_ONLY else path)


def _describe(kind: IcebergType) -> str:
    return kind if isinstance(kind, str) else str(kind.get("type"))


def _walk_json(
    fields: list[dict[str, Any]], path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], int, IcebergType]]:
    """(name path, id, kind) of every field of a schema's JSON, nested ones included."""
    for f in fields:
        field_path = (*path, str(f["name"]))
        yield from _walk_type(f["type"], int(f["id"]), field_path)


def _walk_type(
    t: IcebergType, field_id: int, path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], int, IcebergType]]:
    if isinstance(t, str):
        yield path, field_id, t
        return
    kind = t["type"]
    yield path, field_id, kind
    if kind == "struct":
        yield from _walk_json(t["fields"], path)
    elif kind == "list":
        yield from _walk_type(t["element"], int(t["element-id"]), (*path, ELEMENT))
    elif kind == "map":
        yield from _walk_type(t["key"], int(t["key-id"]), (*path, KEY))
        yield from _walk_type(t["value"], int(t["value-id"]), (*path, VALUE))


def _mapped(field_id: int, name: str, t: IcebergType) -> dict[str, Any]:
    entry: dict[str, Any] = {"field-id": field_id, "names": [name]}
    nested = _nested_mapping(t)
    if nested:
        entry["fields"] = nested
    return entry


def _nested_mapping(t: IcebergType) -> list[dict[str, Any]]:
    if isinstance(t, str):
        return []
    if t["type"] == "struct":
        return [_mapped(f["id"], f["name"], f["type"]) for f in t["fields"]]
    if t["type"] == "list":
        return [_mapped(t["element-id"], ELEMENT, t["element"])]
    return [_mapped(t["key-id"], KEY, t["key"]), _mapped(t["value-id"], VALUE, t["value"])]


def merged_name_mapping(schemas: list[IcebergSchema]) -> list[dict[str, Any]]:
    """One name mapping for every schema version, newest first in ``schemas``: the
    newest version's names, plus the columns older versions had and it dropped, so
    that time travel to an older snapshot still maps its files' columns. A name a
    newer version gave to another id is left to the newer id."""
    merged: list[dict[str, Any]] = []
    for schema in schemas:
        merged = _merge_entries(merged, schema.name_mapping())
    return merged


def _merge_entries(kept: list[dict[str, Any]], older: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_id = {e["field-id"]: e for e in kept}
    names = {n for e in kept for n in e["names"]}
    result = [dict(e) for e in kept]
    index = {e["field-id"]: i for i, e in enumerate(result)}
    for entry in older:
        field_id = entry["field-id"]
        if field_id in by_id:
            inner = _merge_entries(by_id[field_id].get("fields", []), entry.get("fields", []))
            if inner:
                result[index[field_id]]["fields"] = inner
            continue
        if any(n in names for n in entry["names"]):
            continue
        result.append(entry)
        names.update(entry["names"])
    return result


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_struct(doc: Any, where: str, depth: int, seen: set[int], last: int) -> None:
    fields = doc.get("fields") if isinstance(doc, dict) else None
    if not isinstance(fields, list):
        raise CorruptTableError(f"{where}: a schema struct has no field list")
    names: set[str] = set()
    for f in fields:
        if not isinstance(f, dict) or not isinstance(f.get("name"), str):
            raise CorruptTableError(f"{where}: a schema field has no name")
        if f["name"] in names:
            raise CorruptTableError(f"{where}: schema field {f['name']!r} appears twice")
        names.add(f["name"])
        if not isinstance(f.get("required"), bool):
            raise CorruptTableError(f"{where}: schema field {f['name']!r} has no 'required'")
        _check_id(f.get("id"), where, seen, last)
        _check_type(f.get("type"), where, depth + 1, seen, last)


def _check_id(value: Any, where: str, seen: set[int], last: int) -> None:
    if not _is_int(value) or not 0 < value <= min(last, MAX_ID):
        raise CorruptTableError(f"{where}: a schema field id is not an id up to {last}")
    if value in seen:
        raise CorruptTableError(f"{where}: schema field id {value} appears twice")
    seen.add(value)
    if len(seen) > MAX_FIELDS:
        raise CorruptTableError(f"{where}: a schema has more than {MAX_FIELDS} fields")


def _check_type(t: Any, where: str, depth: int, seen: set[int], last: int) -> None:
    if depth > MAX_DEPTH:
        raise CorruptTableError(f"{where}: a schema is nested more than {MAX_DEPTH} levels")
    if isinstance(t, str):
        if t in _PRIMITIVE_NAMES or _FIXED.fullmatch(t):
            return
        decimal = _DECIMAL.fullmatch(t)
        if decimal and 0 <= int(decimal.group(2)) <= int(decimal.group(1)) <= MAX_DECIMAL_PRECISION:
            return
        raise CorruptTableError(f"{where}: unknown schema type {t[:100]!r}")
    if not isinstance(t, dict):
        raise CorruptTableError(f"{where}: a schema type is neither a name nor an object")
    kind = t.get("type")
    if kind == "struct":
        _check_struct(t, where, depth, seen, last)
    elif kind == "list":
        _check_id(t.get("element-id"), where, seen, last)
        if not isinstance(t.get("element-required"), bool):
            raise CorruptTableError(f"{where}: a list type has no 'element-required'")
        _check_type(t.get("element"), where, depth + 1, seen, last)
    elif kind == "map":
        _check_id(t.get("key-id"), where, seen, last)
        _check_id(t.get("value-id"), where, seen, last)
        if not isinstance(t.get("value-required"), bool):
            raise CorruptTableError(f"{where}: a map type has no 'value-required'")
        _check_type(t.get("key"), where, depth + 1, seen, last)
        _check_type(t.get("value"), where, depth + 1, seen, last)
    else:
        raise CorruptTableError(f"{where}: unknown schema type {str(kind)[:100]!r}")
