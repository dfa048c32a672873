"""Hudi's Avro schema as a BigQuery table schema (REST ``TableFieldSchema`` dicts).

The map is precise where Hudi's own sync is not: decimals go to NUMERIC or BIGNUMERIC by
precision and scale, local timestamps to DATETIME (not INT64), nullability becomes the
field mode, arrays are REPEATED (parquet list inference on) and maps keep parquet's
``key_value`` shape, which is how BigQuery reads a parquet map.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from hudi_sync.errors import UnsupportedTableError
from hudi_sync.table.config.schema import META_FIELDS

Field = dict[str, Any]

_PRIMITIVES = {
    "boolean": "BOOLEAN",
    "int": "INTEGER",
    "long": "INTEGER",
    "float": "FLOAT",
    "double": "FLOAT",
    "string": "STRING",
    "bytes": "BYTES",
    "fixed": "BYTES",
    "enum": "STRING",
}
_LOGICAL = {
    "date": "DATE",
    "time-millis": "TIME",
    "time-micros": "TIME",
    "timestamp-millis": "TIMESTAMP",
    "timestamp-micros": "TIMESTAMP",
    "timestamp-nanos": "TIMESTAMP",
    "local-timestamp-millis": "DATETIME",
    "local-timestamp-micros": "DATETIME",
    "local-timestamp-nanos": "DATETIME",
    "uuid": "STRING",
}
# BigQuery NUMERIC holds 29 integer and 9 fractional digits; BIGNUMERIC 38 and 38.
_NUMERIC = (29, 9)
_BIGNUMERIC = (38, 38)
# Hive partition keys BigQuery can type; other partition types are read as STRING.
_PARTITION_KEY_TYPES = frozenset({"STRING", "INTEGER", "DATE", "TIMESTAMP"})


def decimal_type(precision: int, scale: int, column: str) -> str:
    """NUMERIC when it fits (≤ 29 integer digits, scale ≤ 9), else BIGNUMERIC."""
    integer_digits = precision - scale
    if integer_digits <= _NUMERIC[0] and scale <= _NUMERIC[1]:
        return "NUMERIC"
    if integer_digits <= _BIGNUMERIC[0] and scale <= _BIGNUMERIC[1]:
        return "BIGNUMERIC"
    raise UnsupportedTableError(
        f"column {column!r}: decimal({precision},{scale}) does not fit BigQuery's BIGNUMERIC"
    )


def _non_null(avro_type: Any) -> tuple[Any, bool]:
    """Strip ``null`` from a union: (the remaining type, whether null was allowed)."""
    if isinstance(avro_type, list):
        branches = [t for t in avro_type if t != "null"]
        nullable = len(branches) < len(avro_type)
        if len(branches) != 1:
            raise UnsupportedTableError(f"union {avro_type!r} has no single BigQuery type")
        return branches[0], nullable
    return avro_type, False


def scalar_type(avro_type: Any, column: str) -> str:
    """The BigQuery type of a non-nested Avro type (a union with null is unwrapped)."""
    inner, _ = _non_null(avro_type)
    field = _field(column, inner, "NULLABLE")
    if field["type"] == "RECORD":
        raise UnsupportedTableError(f"column {column!r}: a nested type cannot be a partition key")
    return str(field["type"])


def _field(name: str, avro_type: Any, mode: str) -> Field:
    if isinstance(avro_type, str):
        if avro_type not in _PRIMITIVES:
            raise UnsupportedTableError(f"column {name!r}: Avro type {avro_type!r} is not mapped")
        return {"name": name, "type": _PRIMITIVES[avro_type], "mode": mode}
    if not isinstance(avro_type, dict):
        raise UnsupportedTableError(f"column {name!r}: Avro type {avro_type!r} is not mapped")
    logical = avro_type.get("logicalType")
    if logical == "decimal":
        precision = int(avro_type["precision"])
        scale = int(avro_type.get("scale", 0))
        return {"name": name, "type": decimal_type(precision, scale, name), "mode": mode}
    if logical in _LOGICAL:
        return {"name": name, "type": _LOGICAL[logical], "mode": mode}
    kind = avro_type.get("type")
    if kind == "record":
        fields = [avro_field(f, name) for f in avro_type.get("fields", [])]
        return {"name": name, "type": "RECORD", "mode": mode, "fields": fields}
    if kind == "array":
        item, _ = _non_null(avro_type["items"])
        if isinstance(item, dict) and item.get("type") == "array":
            raise UnsupportedTableError(f"column {name!r}: BigQuery has no arrays of arrays")
        return _field(name, item, "REPEATED")
    if kind == "map":
        value, value_nullable = _non_null(avro_type["values"])
        entry = [
            {"name": "key", "type": "STRING", "mode": "REQUIRED"},
            _field("value", value, "NULLABLE" if value_nullable else "REQUIRED"),
        ]
        key_value = {"name": "key_value", "type": "RECORD", "mode": "REPEATED", "fields": entry}
        return {"name": name, "type": "RECORD", "mode": mode, "fields": [key_value]}
    if kind in _PRIMITIVES:
        return {"name": name, "type": _PRIMITIVES[kind], "mode": mode}
    raise UnsupportedTableError(f"column {name!r}: Avro type {avro_type!r} is not mapped")


def avro_field(avro: dict[str, Any], parent: str = "") -> Field:
    """One Avro record field as a BigQuery field; a union with null is NULLABLE."""
    name = str(avro["name"])
    inner, nullable = _non_null(avro["type"])
    mode = "NULLABLE" if nullable else "REQUIRED"
    return _field(f"{parent}.{name}" if parent else name, inner, mode) | {"name": name}


def table_schema(
    avro_schema: dict[str, Any], with_meta_fields: bool, exclude: frozenset[str] = frozenset()
) -> list[Field]:
    """The table's columns: Hudi's meta fields (when populated) then the data fields,
    minus ``exclude`` (partition columns that come from the path instead)."""
    fields: list[Field] = []
    if with_meta_fields:
        fields += [{"name": m, "type": "STRING", "mode": "NULLABLE"} for m in META_FIELDS]
    for avro in avro_schema.get("fields", []):
        if avro["name"] in META_FIELDS or avro["name"] in exclude:
            continue
        fields.append(avro_field(avro))
    return fields


def arrow_field(name: str, kind: pa.DataType) -> Field:
    """A nullable BigQuery field for a flat Arrow type (the change feed's typed columns,
    ``hudi_sync.manifest.change_feed.typed_columns``)."""
    if pa.types.is_integer(kind):
        bigquery_type = "INTEGER"
    elif pa.types.is_floating(kind):
        bigquery_type = "FLOAT"
    elif pa.types.is_boolean(kind):
        bigquery_type = "BOOLEAN"
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
        bigquery_type = "STRING"
    elif pa.types.is_date(kind):
        bigquery_type = "DATE"
    elif pa.types.is_timestamp(kind):
        bigquery_type = "TIMESTAMP" if kind.tz else "DATETIME"
    elif pa.types.is_decimal(kind):
        bigquery_type = decimal_type(kind.precision, kind.scale, name)
    else:
        raise UnsupportedTableError(f"column {name!r}: {kind} has no flat BigQuery type")
    return {"name": name, "type": bigquery_type, "mode": "NULLABLE"}


def partition_key_type(avro_type: Any, column: str) -> str:
    """The type of a hive partition key: STRING, INTEGER, DATE or TIMESTAMP."""
    bq_type = scalar_type(avro_type, column)
    return bq_type if bq_type in _PARTITION_KEY_TYPES else "STRING"


# Standard SQL's names of the legacy types BigQuery may answer with.
_SYNONYMS = {"STRUCT": "RECORD", "INT64": "INTEGER", "FLOAT64": "FLOAT", "BOOL": "BOOLEAN"}


def column_type(field: Field) -> str:
    """A field's type as one comparable text: the type (a record's with its fields'),
    ``REPEATED`` before an array's; nullability is left out (a parquet file decides it)."""
    kind = str(field.get("type", ""))
    kind = _SYNONYMS.get(kind, kind)
    if kind == "RECORD":
        inner = ", ".join(f"{f['name']} {column_type(f)}" for f in field.get("fields", []))
        kind = f"RECORD<{inner}>"
    return f"REPEATED {kind}" if field.get("mode") == "REPEATED" else kind
