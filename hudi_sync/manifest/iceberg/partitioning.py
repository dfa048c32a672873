"""The Iceberg partition spec of a Hudi table, and each partition path's values.

Iceberg readers prune files by their partition values and, for identity partitions,
may show a file's partition value in place of the column's stored values. So a value
is only given when the path holds the column's value exactly as Hudi printed it:
identity transforms on the table's partition fields when its key generator writes the
values themselves (simple, complex, and CUSTOM's SIMPLE parts), ``field=`` stripped when
hive-style, ``%XX`` escapes decoded when url-encoded. A path whose segments do not parse
back to the very same text gives no values (``values`` is None) and its caller falls
back to an unpartitioned spec. Tables whose path is a formatted string (timestamp-based
key generators) or whose partition columns cannot be recovered get an unpartitioned
spec with the reason, which the sync report states.

Hudi writes a null or empty value as its default partition (``__HIVE_DEFAULT_PARTITION__``,
``default`` from older writers, which Hudi's path parser still reads as null); for a
string column that segment could be null, empty or the text itself, so it gives no
values; for other types (which never print empty, nor as ``default``) it is a null.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from hudi_sync import config as cfg
from hudi_sync.manifest.iceberg.schema import IcebergSchema
from hudi_sync.table.keys.partition_encoding import escape_value
from hudi_sync.table.keys.partition_paths import TIMESTAMP, stored_kinds
from hudi_sync.table.keys.record_keys import DEFAULT_PARTITION
from hudi_sync.table.table import HudiTable

FIRST_FIELD_ID = 1000
UNPARTITIONED_SPEC: dict[str, Any] = {"spec-id": 0, "fields": []}
# Iceberg types whose values a partition path holds as Hudi prints them and parse back.
PARSED_TYPES = ("string", "int", "long", "boolean", "date")
_INT_RANGES = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
_INTEGER = re.compile(r"-?(0|[1-9][0-9]*)")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_HEX = re.compile(r"%([0-9A-F]{2})")
# Hudi's default partition, and the name its writers used before it (which Hudi's own
# path parser still reads as null).
_NULL_SEGMENTS = (DEFAULT_PARTITION, "default")

# Key generators (class or type names without package and ``Avro``) by their path.
_VALUE_PATHS = {"SimpleKeyGenerator", "SIMPLE", "ComplexKeyGenerator", "COMPLEX"}
_SINGLE_FIELD = {"SimpleKeyGenerator", "SIMPLE"}
_NO_PATH = {
    "NonpartitionedKeyGenerator",
    "NON_PARTITION",
    "GlobalDeleteKeyGenerator",
    "GLOBAL_DELETE",
}
_FORMATTED = {"TimestampBasedKeyGenerator", "TIMESTAMP"}
_CUSTOM = {"CustomKeyGenerator", "CUSTOM"}


@dataclass(frozen=True)
class PartitionPlan:
    """The partition spec published for a table and how its paths become values."""

    spec_json: dict[str, Any]
    fields: tuple[tuple[str, str], ...]  # (partition field name, Iceberg primitive type)
    reason: str | None  # why a partitioned table is published unpartitioned
    hive_style: bool = False
    url_encoded: bool = False

    @property
    def spec_id(self) -> int:
        return int(self.spec_json["spec-id"])

    def values(self, partition_path: str) -> tuple[Any, ...] | None:
        """The partition values of a Hudi partition path (Python ``str``, ``int``,
        ``bool``, ``datetime.date`` or None for Hudi's default partition), ``()`` for an
        unpartitioned spec, or None when the path does not parse back exactly."""
        if not self.fields:
            return ()
        segments = partition_path.split("/")
        if len(segments) != len(self.fields):
            return None
        values = []
        for segment, (name, kind) in zip(segments, self.fields, strict=True):
            if self.hive_style:
                if not segment.startswith(f"{name}="):
                    return None
                segment = segment[len(name) + 1 :]
            parsed = _parse(segment, kind, self.url_encoded)
            if parsed is _NO_VALUE:
                return None
            values.append(parsed)
        return tuple(values)


_NO_VALUE = object()


def partition_plan(table: HudiTable, schema: IcebergSchema) -> PartitionPlan:
    """Identity on the table's partition fields when its paths hold their values,
    else an unpartitioned spec with the reason (module docstring)."""
    config = table.config
    if not config.is_partitioned:
        return PartitionPlan(UNPARTITIONED_SPEC, (), None)
    names = config.partition_fields
    reason = _generator_reason(table, names)
    if reason is not None:
        return unpartitioned_plan(reason)
    ids, types = schema.field_ids(), schema.field_types()
    fields = []
    for name in names:
        if name not in ids:
            return unpartitioned_plan(
                f"partition field {name} is not a column of the table's schema"
                + (" (its partition columns are dropped)" if config.drop_partition_columns else "")
            )
        kind = types[name]
        if not isinstance(kind, str) or kind not in PARSED_TYPES:
            shown = kind if isinstance(kind, str) else kind.get("type")
            return unpartitioned_plan(
                f"partition field {name} is of type {shown}, whose printed values are not "
                f"read back from paths (only {', '.join(PARSED_TYPES)})"
            )
        fields.append((name, kind))
    spec = {
        "spec-id": 0,
        "fields": [
            {
                "source-id": ids[name],
                "field-id": FIRST_FIELD_ID + index,
                "name": name,
                "transform": "identity",
            }
            for index, name in enumerate(names)
        ],
    }
    return PartitionPlan(
        spec,
        tuple(fields),
        None,
        config.hive_style_partitioning,
        config.url_encode_partitions,
    )


def unpartitioned_plan(reason: str | None) -> PartitionPlan:
    """The unpartitioned spec, saying why (None: the table is not partitioned)."""
    return PartitionPlan(UNPARTITIONED_SPEC, (), reason)


def _generator_reason(table: HudiTable, names: tuple[str, ...]) -> str | None:
    """Why the key generator's paths do not hold the partition fields' values, or None."""
    raw = table.config.key_generator
    generator = _generator_name(raw)
    if generator is None or generator in _VALUE_PATHS:
        if generator in _SINGLE_FIELD and len(names) != 1:
            return (
                f"the simple key generator writes one path segment, and the table has "
                f"{len(names)} partition fields"
            )
        return None
    if generator in _FORMATTED:
        return "the timestamp-based key generator writes formatted dates, not column values"
    if generator in _CUSTOM:
        kinds = stored_kinds(cfg.PARTITION_FIELDS.read(table.config.raw))
        if len(kinds) != len(names):
            return "the CUSTOM key generator's field kinds are not kept by this table version"
        timestamped = [n for n, k in zip(names, kinds, strict=True) if k == TIMESTAMP]
        if timestamped:
            return (
                f"the CUSTOM key generator formats {', '.join(timestamped)} as dates "
                "(TIMESTAMP), not column values"
            )
        return None
    if generator in _NO_PATH:
        return f"the key generator {raw} writes no partition path, yet partition fields are set"
    return f"the key generator {raw} builds paths whose values are not known"


def _generator_name(raw: str | None) -> str | None:
    """A key generator's class or type name without package and ``Avro``."""
    if raw is None or not raw.strip():
        return None
    name = raw.strip().rsplit(".", 1)[-1]
    return name.removesuffix("_AVRO").replace("Avro", "")


def _parse(segment: str, kind: str, url_encoded: bool) -> Any:
    """A segment's value in the field's type, or ``_NO_VALUE`` unless it prints back the
    same (url-encoded: the decoded text escaped again gives the segment)."""
    if segment in _NULL_SEGMENTS:
        return _NO_VALUE if kind == "string" else None
    text = _HEX.sub(lambda m: chr(int(m.group(1), 16)), segment) if url_encoded else segment
    if url_encoded and escape_value(text) != segment:
        return _NO_VALUE
    if kind == "string":
        return text
    if kind in _INT_RANGES:
        low, high = _INT_RANGES[kind]
        if not _INTEGER.fullmatch(text) or str(int(text)) != text:
            return _NO_VALUE
        if not low <= int(text) <= high:
            return _NO_VALUE
        return int(text)
    if kind == "boolean":
        return {"true": True, "false": False}.get(text, _NO_VALUE)
    if kind == "date" and _DATE.fullmatch(text):
        try:
            return dt.date.fromisoformat(text)
        except ValueError:
            return _NO_VALUE
    return _NO_VALUE
