"""Hudi's compaction plan as Avro (``HoodieCompactionPlan.avsc``), for the data table's
compactions (``write.compaction``) and the metadata table's (``metadata_table.compaction``)."""

from __future__ import annotations

from typing import Any

import fastavro

JAVA_STRING = {"type": "string", "avro.java.string": "String"}


def nullable_field(name: str, avro_type: Any, default: bool = True) -> dict[str, Any]:
    """An Avro field of ``avro_type`` or null (null by default unless ``default`` is off)."""
    field: dict[str, Any] = {"name": name, "type": ["null", avro_type]}
    if default:
        field["default"] = None
    return field


# Hudi's ``HoodieCompactionPlan`` (the fields hudi_sync writes; the metadata table's plan adds
# Hudi 1.x's strategy fields, ``metadata_table.compaction``).
PLAN_RECORD: dict[str, Any] = {
    "type": "record",
    "name": "HoodieCompactionPlan",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        nullable_field(
            "operations",
            {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "HoodieCompactionOperation",
                    "fields": [
                        nullable_field("baseInstantTime", JAVA_STRING, default=False),
                        nullable_field("deltaFilePaths", {"type": "array", "items": JAVA_STRING}),
                        nullable_field("dataFilePath", JAVA_STRING),
                        nullable_field("fileId", JAVA_STRING, default=False),
                        nullable_field("partitionPath", JAVA_STRING),
                        nullable_field("metrics", {"type": "map", "values": "double"}),
                        nullable_field("bootstrapFilePath", JAVA_STRING),
                    ],
                },
            },
        ),
        nullable_field("extraMetadata", {"type": "map", "values": JAVA_STRING}),
        {"name": "version", "type": ["int", "null"], "default": 1},
    ],
}
PLAN_SCHEMA = fastavro.parse_schema(PLAN_RECORD)
