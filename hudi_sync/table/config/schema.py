"""The table's Avro schema and its partition fields."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow.parquet as pq

from hudi_sync.errors import CorruptTableError
from hudi_sync.table.avro.bounded import checked_schema_text

META_FIELDS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)


@dataclass(frozen=True)
class PartitionField:
    """A partition column and its Avro type (``string`` when the path is derived,
    e.g. by the timestamp key generator, or the field is not in the schema)."""

    name: str
    avro_type: Any
    formatted: bool = False  # the path holds a formatted value, not the field's own


def parse_avro_schema(text: str, where: str) -> dict[str, Any]:
    schema = checked_schema_text(text, where, "the Avro schema")
    if not isinstance(schema, dict) or schema.get("type") != "record":
        raise CorruptTableError(f"{where}: the Avro schema is not a record schema")
    return schema


def schema_from_parquet_footer(fs: Any, path: str) -> dict[str, Any]:
    """Last resort: the writer's Avro schema stored in a base file's footer, or one
    derived from the parquet schema."""
    with fs.open(path, "rb") as handle:
        parquet = pq.ParquetFile(handle)
        meta = parquet.schema_arrow.metadata or {}
        avro_text = meta.get(b"parquet.avro.schema")
        if avro_text:
            return parse_avro_schema(avro_text.decode(), path)
        arrow_schema = parquet.schema_arrow
    data_fields = [f for f in arrow_schema if f.name not in META_FIELDS]
    return arrow_to_avro_schema(data_fields, "hoodie_record", "hoodie")


def arrow_to_avro_schema(fields: Any, name: str, namespace: str) -> dict[str, Any]:
    """A Hudi-style Avro record schema for arrow fields: every field a ``["null", T]``
    union defaulting to null, nested records named by their path (Avro names must be
    unique), decimals as fixed, timestamps as micros (local- when zone-less)."""
    return {
        "type": "record",
        "name": name,
        "namespace": namespace,
        "fields": [
            {
                "name": f.name,
                "type": ["null", _arrow_to_avro(f.type, f"{namespace}.{name}", f.name)],
                "default": None,
            }
            for f in fields
        ],
    }


def _decimal_size(precision: int) -> int:
    """Bytes of the smallest two's-complement fixed that holds ``precision`` digits."""
    size = 1
    while 2 ** (8 * size - 1) <= 10**precision:
        size += 1
    return size


def _arrow_to_avro(arrow_type: Any, namespace: str, name: str) -> Any:
    import pyarrow as pa

    if pa.types.is_boolean(arrow_type):
        return "boolean"
    if (
        pa.types.is_int8(arrow_type)
        or pa.types.is_int16(arrow_type)
        or pa.types.is_int32(arrow_type)
    ):
        return "int"
    if pa.types.is_integer(arrow_type):
        return "long"
    if pa.types.is_float32(arrow_type):
        return "float"
    if pa.types.is_floating(arrow_type):
        return "double"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "string"
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return "bytes"
    if pa.types.is_date32(arrow_type):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_timestamp(arrow_type):
        logical = "timestamp-millis" if arrow_type.unit in ("s", "ms") else "timestamp-micros"
        if arrow_type.tz is None:
            logical = "local-" + logical
        return {"type": "long", "logicalType": logical}
    if pa.types.is_decimal(arrow_type):
        return {
            "type": "fixed",
            "name": "fixed",
            "namespace": f"{namespace}.{name}",
            "size": _decimal_size(arrow_type.precision),
            "logicalType": "decimal",
            "precision": arrow_type.precision,
            "scale": arrow_type.scale,
        }
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        items = _arrow_to_avro(arrow_type.value_type, namespace, name)
        return {"type": "array", "items": ["null", items]}
    if pa.types.is_map(arrow_type):
        values = _arrow_to_avro(arrow_type.item_type, namespace, name)
        return {"type": "map", "values": ["null", values]}
    if pa.types.is_struct(arrow_type):
        return arrow_to_avro_schema(list(arrow_type), name, namespace)
    return "string"


def partition_fields(
    schema: dict[str, Any],
    names: tuple[str, ...],
    key_generator: str | None,
    kinds: tuple[str, ...] = (),
) -> list[PartitionField]:
    """Partition fields with their types from the data schema. Timestamp-based key
    generators format the path, so their partition values are strings: every field of
    the TIMESTAMP key generator, a CUSTOM one's TIMESTAMP fields (``kinds``, as a table
    of version 8+ keeps them; unknown, every field)."""
    by_name = {f["name"]: f["type"] for f in schema.get("fields", [])}
    generator = (key_generator or "").upper()
    custom = "CUSTOM" in generator
    fields = []
    for index, name in enumerate(names):
        formatted = "TIMESTAMP" in generator or (
            custom and (kinds[index] == "TIMESTAMP" if len(kinds) == len(names) else True)
        )
        fields.append(
            PartitionField(
                name,
                "string" if formatted or name not in by_name else by_name[name],
                formatted and name in by_name,
            )
        )
    return fields
