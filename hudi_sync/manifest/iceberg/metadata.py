"""Iceberg v2 table metadata: the JSON file a reader opens first, read back and evolved.

Each publication writes a new metadata file (never changes one): the previous
metadata plus one snapshot (``with_snapshot``), minus the snapshots that expired
(``expired``). Reading it back is bounded and strict: the file is ours, so anything
unexpected (a wrong type, a count past the bounds, nesting too deep) is a one-line
CorruptTableError naming it, and the store starts no publication on top of it.

Schemas, partition specs and snapshots keep their ids across files: a schema or spec
equal to a known one reuses its id (``next_schema``, ``next_plan``), so the same
columns are never added twice.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from hudi_sync.errors import CorruptTableError
from hudi_sync.manifest.iceberg.partitioning import FIRST_FIELD_ID, PartitionPlan
from hudi_sync.manifest.iceberg.schema import (
    NAME_MAPPING_PROPERTY,
    IcebergSchema,
    iceberg_schema,
    merged_name_mapping,
)
from hudi_sync.table.avro.bounded import load_json
from hudi_sync.table.table import HudiTable

FORMAT_VERSION = 2
MAX_METADATA_BYTES = 128 * 1024 * 1024
MAX_SNAPSHOTS = 100_000
MAX_SCHEMAS = 10_000
MAX_SPECS = 1_000
MAX_LOG = 100_000
MAX_PROPERTIES = 10_000
MAX_SUMMARY = 1_000
# Metadata files named in ``metadata-log`` (Iceberg's write.metadata.previous-versions-max).
PREVIOUS_VERSIONS = 100
MAIN_BRANCH = "main"
# The current schema's file-only columns (``schema.file_only_columns``), as schema fields.
FILE_ONLY_PROPERTY = "hudi.schema.file-only-columns"
_INT64 = (-(2**63), 2**63 - 1)
_PARTITION_FIELD_KEYS = ("source-id", "field-id", "name", "transform")


def hudi_properties(table: HudiTable) -> dict[str, str]:
    """The table properties that say which Hudi table the metadata publishes."""
    config = table.config
    return {
        "hudi.table.name": config.name,
        "hudi.table.type": config.table_type.value,
        "hudi.table.version": str(config.version),
    }


@dataclass(frozen=True)
class Snapshot:
    """One published Hudi instant: its id is the instant's digits."""

    snapshot_id: int
    parent_id: int | None
    sequence: int
    timestamp_ms: int
    manifest_list: str
    summary: dict[str, str]
    schema_id: int

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"snapshot-id": self.snapshot_id}
        if self.parent_id is not None:
            doc["parent-snapshot-id"] = self.parent_id
        doc.update(
            {
                "sequence-number": self.sequence,
                "timestamp-ms": self.timestamp_ms,
                "manifest-list": self.manifest_list,
                "summary": dict(self.summary),
                "schema-id": self.schema_id,
            }
        )
        return doc


@dataclass(frozen=True)
class TableMetadata:
    """The content of one ``v<N>-<uuid>.metadata.json``."""

    uuid: str
    location: str
    last_sequence: int
    last_updated_ms: int
    schemas: tuple[IcebergSchema, ...]
    current_schema_id: int
    specs: tuple[dict[str, Any], ...]
    default_spec_id: int
    snapshots: tuple[Snapshot, ...]
    current_snapshot_id: int | None
    snapshot_log: tuple[tuple[int, int], ...]  # (timestamp-ms, snapshot id), oldest first
    metadata_log: tuple[tuple[int, str], ...]  # (timestamp-ms, metadata file), oldest first
    properties: dict[str, str] = field(default_factory=dict)

    # -- building ------------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        table_uuid: str,
        location: str,
        schema: IcebergSchema,
        plan: PartitionPlan,
        properties: dict[str, str],
        now_ms: int,
    ) -> TableMetadata:
        """The metadata of a table with no snapshot yet (the first publication adds
        one with ``with_snapshot``)."""
        metadata = cls(
            uuid=table_uuid,
            location=location,
            last_sequence=0,
            last_updated_ms=now_ms,
            schemas=(schema,),
            current_schema_id=schema.schema_id,
            specs=(plan.spec_json,),
            default_spec_id=plan.spec_id,
            snapshots=(),
            current_snapshot_id=None,
            snapshot_log=(),
            metadata_log=(),
            properties=dict(properties),
        )
        return metadata._with_name_mapping()

    @property
    def current_schema(self) -> IcebergSchema:
        return next(s for s in self.schemas if s.schema_id == self.current_schema_id)

    @property
    def spec(self) -> dict[str, Any]:
        """The default (current) partition spec."""
        return next(s for s in self.specs if s["spec-id"] == self.default_spec_id)

    @property
    def last_column_id(self) -> int:
        return max(s.last_column_id for s in self.schemas)

    @property
    def last_partition_id(self) -> int:
        ids = [int(f["field-id"]) for spec in self.specs for f in spec["fields"]]
        return max(ids, default=FIRST_FIELD_ID - 1)

    @property
    def current_snapshot(self) -> Snapshot | None:
        return self.snapshot(self.current_snapshot_id)

    def snapshot(self, snapshot_id: int | None) -> Snapshot | None:
        return next((s for s in self.snapshots if s.snapshot_id == snapshot_id), None)

    def next_schema(
        self, arrow: pa.Schema, where: str, file_only: Sequence[pa.Field] = ()
    ) -> IcebergSchema:
        """The schema of a snapshot whose rows have ``arrow``'s columns, ids kept from the
        current schema (``iceberg_schema``; ``file_only`` as there); a known schema with
        the same fields is reused, and a new one takes an id no schema has."""
        current = self.current_schema
        current = replace(current, last_column_id=self.last_column_id)
        schema = iceberg_schema(arrow, current, where, file_only)
        if schema is current:
            return current
        for known in self.schemas:
            if known.fields_json == schema.fields_json:
                return replace(
                    known,
                    last_column_id=schema.last_column_id,
                    file_only_json=schema.file_only_json,
                )
        fresh = max(s.schema_id for s in self.schemas) + 1
        return replace(schema, schema_id=fresh)

    def next_plan(self, plan: PartitionPlan) -> PartitionPlan:
        """``plan`` with the spec and field ids this metadata gives it: a known spec's
        with the same fields, else one no spec has."""
        # Partition field ids as Iceberg's v2 builder gives them: a field some spec has
        # (same source, transform and name) keeps its id, a new one takes the next.
        known_ids = {
            (f["source-id"], f["transform"], f["name"]): f["field-id"]
            for spec in self.specs
            for f in spec["fields"]
        }
        last = self.last_partition_id
        fields = []
        for f in plan.spec_json["fields"]:
            key = (f["source-id"], f["transform"], f["name"])
            if key not in known_ids:
                last += 1
                known_ids[key] = last
            fields.append({**f, "field-id": known_ids[key]})
        for known in self.specs:
            if known["fields"] == fields:
                return replace(plan, spec_json=known)
        fresh = max(int(s["spec-id"]) for s in self.specs) + 1
        return replace(plan, spec_json={"spec-id": fresh, "fields": fields})

    def with_snapshot(
        self,
        snapshot: Snapshot,
        schema: IcebergSchema,
        plan: PartitionPlan,
        now_ms: int,
        previous_file: str | None,
    ) -> TableMetadata:
        """This metadata with ``snapshot`` appended and made current, its schema and
        spec added when new (``next_schema``/``next_plan`` give their ids), the last
        sequence number moved to the snapshot's, and ``previous_file`` (the metadata
        file this one follows) logged. ValueError for a snapshot that does not follow:
        a known id, a sequence number not above the last, a schema id the snapshot does
        not name, or a schema or spec id taken by different fields."""
        if self.snapshot(snapshot.snapshot_id) is not None:
            raise ValueError(f"snapshot {snapshot.snapshot_id} is already in the metadata")
        if snapshot.sequence <= self.last_sequence:
            raise ValueError(
                f"snapshot sequence {snapshot.sequence} is not above {self.last_sequence}"
            )
        if snapshot.schema_id != schema.schema_id:
            raise ValueError(f"snapshot names schema {snapshot.schema_id}, not {schema.schema_id}")
        schemas = self._schemas_with(schema)
        specs = self._specs_with(plan)
        metadata_log = self.metadata_log
        if previous_file is not None:
            metadata_log = (*metadata_log, (self.last_updated_ms, previous_file))
            metadata_log = metadata_log[-PREVIOUS_VERSIONS:]
        snapshot_log = self._logged(snapshot.timestamp_ms, snapshot.snapshot_id)
        updated = replace(
            self,
            last_sequence=snapshot.sequence,
            # Never before the log's last entry (an instant's time ahead of this clock):
            # Iceberg's readers refuse metadata updated before its last snapshot.
            last_updated_ms=max(now_ms, self.last_updated_ms, snapshot_log[-1][0]),
            schemas=schemas,
            current_schema_id=schema.schema_id,
            specs=specs,
            default_spec_id=plan.spec_id,
            snapshots=(*self.snapshots, snapshot),
            current_snapshot_id=snapshot.snapshot_id,
            snapshot_log=snapshot_log,
            metadata_log=metadata_log,
        )
        return updated._with_name_mapping()

    def with_current(
        self, snapshot_id: int, now_ms: int, previous_file: str | None
    ) -> TableMetadata:
        """This metadata with a snapshot it holds made current (``--as-of`` an instant
        already published), logged as becoming current now. ValueError when it holds no
        such snapshot."""
        snapshot = self.snapshot(snapshot_id)
        if snapshot is None:
            raise ValueError(f"snapshot {snapshot_id} is not in the metadata")
        metadata_log = self.metadata_log
        if previous_file is not None:
            metadata_log = (*metadata_log, (self.last_updated_ms, previous_file))
            metadata_log = metadata_log[-PREVIOUS_VERSIONS:]
        snapshot_log = self._logged(now_ms, snapshot_id)
        updated = replace(
            self,
            last_updated_ms=max(now_ms, self.last_updated_ms, snapshot_log[-1][0]),
            current_schema_id=snapshot.schema_id,
            current_snapshot_id=snapshot_id,
            snapshot_log=snapshot_log,
            metadata_log=metadata_log,
        )
        return updated._with_name_mapping()

    def _logged(self, timestamp_ms: int, snapshot_id: int) -> tuple[tuple[int, int], ...]:
        """The snapshot log with ``snapshot_id`` becoming current at ``timestamp_ms``, or
        at the last entry's time when that is later: Iceberg's readers refuse a log out
        of time order (an older instant published after a newer one)."""
        last = self.snapshot_log[-1][0] if self.snapshot_log else timestamp_ms
        return (*self.snapshot_log, (max(timestamp_ms, last), snapshot_id))

    def _schemas_with(self, schema: IcebergSchema) -> tuple[IcebergSchema, ...]:
        last = max(self.last_column_id, schema.last_column_id)
        known = next((s for s in self.schemas if s.schema_id == schema.schema_id), None)
        if known is not None and known.fields_json != schema.fields_json:
            raise ValueError(f"schema id {schema.schema_id} is taken by other fields")
        kept = tuple(schema if s.schema_id == schema.schema_id else s for s in self.schemas)
        kept = tuple(replace(s, last_column_id=last) for s in kept)
        if known is not None:
            return kept
        if any(s.fields_json == schema.fields_json for s in self.schemas):
            raise ValueError("a schema with the same fields is already in the metadata")
        return (*kept, replace(schema, last_column_id=last))

    def _specs_with(self, plan: PartitionPlan) -> tuple[dict[str, Any], ...]:
        known = next((s for s in self.specs if s["spec-id"] == plan.spec_id), None)
        if known is not None:
            if known["fields"] != plan.spec_json["fields"]:
                raise ValueError(f"partition spec id {plan.spec_id} is taken by other fields")
            return self.specs
        return (*self.specs, plan.spec_json)

    def _with_name_mapping(self) -> TableMetadata:
        """The name mapping property of every schema, the current one's names first,
        and the current schema's file-only columns (kept in a property: a schema's JSON
        has no place for them) given to every schema."""
        file_only = self.current_schema.file_only_json
        schemas = tuple(replace(s, file_only_json=file_only) for s in self.schemas)
        current = next(s for s in schemas if s.schema_id == self.current_schema_id)
        older = [s for s in schemas if s.schema_id != self.current_schema_id]
        ordered = [current, *sorted(older, key=lambda s: -s.schema_id)]
        properties = {
            **self.properties,
            NAME_MAPPING_PROPERTY: json.dumps(merged_name_mapping(ordered), separators=(",", ":")),
        }
        properties.pop(FILE_ONLY_PROPERTY, None)
        if file_only:
            properties[FILE_ONLY_PROPERTY] = json.dumps(file_only, separators=(",", ":"))
        return replace(self, schemas=schemas, properties=properties)

    def expired(
        self, keep: int, still_valid: Callable[[Snapshot], bool]
    ) -> tuple[TableMetadata, list[Snapshot]]:
        """This metadata without the snapshots past the newest ``keep`` and those
        ``still_valid`` rejects (their instant rolled back, or their files cleaned); the
        current snapshot always stays. The snapshot log keeps only the entries after the
        last removed snapshot it names (Iceberg's rule: the log is an unbroken history
        of the current snapshot). Returns the metadata and the removed snapshots."""
        if keep < 1:
            raise ValueError(f"keep {keep}: at least the current snapshot is kept")
        newest_first = sorted(self.snapshots, key=lambda s: s.sequence, reverse=True)
        current = self.current_snapshot_id
        kept_ids: set[int] = {current} if current is not None else set()
        for snapshot in newest_first:
            if snapshot.snapshot_id == current:
                continue
            if len(kept_ids) < keep and still_valid(snapshot):
                kept_ids.add(snapshot.snapshot_id)
        removed = [s for s in self.snapshots if s.snapshot_id not in kept_ids]
        if not removed:
            return self, []
        removed_ids = {s.snapshot_id for s in removed}
        log: list[tuple[int, int]] = []
        for entry in self.snapshot_log:
            if entry[1] in removed_ids:
                log = []
            else:
                log.append(entry)
        metadata = replace(
            self,
            snapshots=tuple(s for s in self.snapshots if s.snapshot_id in kept_ids),
            snapshot_log=tuple(log),
        )
        return metadata, removed

    # -- JSON ----------------------------------------------------------------------------
    def to_json(self) -> bytes:
        current = self.current_snapshot_id
        doc: dict[str, Any] = {
            "format-version": FORMAT_VERSION,
            "table-uuid": self.uuid,
            "location": self.location,
            "last-sequence-number": self.last_sequence,
            "last-updated-ms": self.last_updated_ms,
            "last-column-id": self.last_column_id,
            "current-schema-id": self.current_schema_id,
            "schemas": [s.to_json() for s in self.schemas],
            "default-spec-id": self.default_spec_id,
            "partition-specs": list(self.specs),
            "last-partition-id": self.last_partition_id,
            "default-sort-order-id": 0,
            "sort-orders": [{"order-id": 0, "fields": []}],
            "properties": dict(self.properties),
            "current-snapshot-id": current if current is not None else -1,
            "refs": (
                {MAIN_BRANCH: {"snapshot-id": current, "type": "branch"}}
                if current is not None
                else {}
            ),
            "snapshots": [s.to_json() for s in self.snapshots],
            "statistics": [],
            "partition-statistics": [],
            "snapshot-log": [
                {"timestamp-ms": ts, "snapshot-id": sid} for ts, sid in self.snapshot_log
            ],
            "metadata-log": [
                {"timestamp-ms": ts, "metadata-file": path} for ts, path in self.metadata_log
            ],
        }
        return json.dumps(doc, indent=1).encode()

    @classmethod
    def read(cls, data: bytes, where: str) -> TableMetadata:
        """Metadata we wrote, read back bounded and checked (module docstring)."""
        if len(data) > MAX_METADATA_BYTES:
            raise CorruptTableError(
                f"{where}: Iceberg metadata is {len(data)} bytes (at most {MAX_METADATA_BYTES})"
            )
        doc = load_json(data, where, "Iceberg metadata")
        return _Reader(where).metadata(doc)


class _Reader:
    """Strict field readers naming the file and the key in every error."""

    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, what: str) -> CorruptTableError:
        return CorruptTableError(f"{self.where}: Iceberg metadata {what}")

    def int_(self, doc: dict[str, Any], key: str, minimum: int = _INT64[0]) -> int:
        value = doc.get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(f"has no integer {key}")
        if not minimum <= value <= _INT64[1]:
            raise self.fail(f"{key} {value} is out of range")
        return value

    def str_(self, doc: dict[str, Any], key: str) -> str:
        value = doc.get(key)
        if not isinstance(value, str):
            raise self.fail(f"has no text {key}")
        return value

    def list_(self, doc: dict[str, Any], key: str, limit: int) -> list[Any]:
        value = doc.get(key, [])
        if not isinstance(value, list):
            raise self.fail(f"{key} is not a list")
        if len(value) > limit:
            raise self.fail(f"has {len(value)} {key} (at most {limit})")
        return value

    def object_(self, value: Any, key: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(f"{key} is not an object")
        return value

    def text_map(self, value: Any, key: str, limit: int) -> dict[str, str]:
        mapping = self.object_(value, key)
        if len(mapping) > limit:
            raise self.fail(f"has {len(mapping)} {key} (at most {limit})")
        if not all(isinstance(v, str) for v in mapping.values()):
            raise self.fail(f"{key} holds a value that is not text")
        return dict(mapping)

    def metadata(self, raw: Any) -> TableMetadata:
        doc = self.object_(raw, "document")
        if doc.get("format-version") != FORMAT_VERSION:
            raise self.fail(f"is not format-version {FORMAT_VERSION}")
        last_column = self.int_(doc, "last-column-id", 0)
        schemas = tuple(
            IcebergSchema.from_json(s, last_column, self.where)
            for s in self.list_(doc, "schemas", MAX_SCHEMAS)
        )
        schema_ids = [s.schema_id for s in schemas]
        if len(set(schema_ids)) != len(schema_ids):
            raise self.fail("names a schema id twice")
        current_schema = self.int_(doc, "current-schema-id", 0)
        if current_schema not in schema_ids:
            raise self.fail(f"current-schema-id {current_schema} names no schema")
        specs = tuple(self.spec(s) for s in self.list_(doc, "partition-specs", MAX_SPECS))
        spec_ids = [s["spec-id"] for s in specs]
        if len(set(spec_ids)) != len(spec_ids):
            raise self.fail("names a partition spec id twice")
        default_spec = self.int_(doc, "default-spec-id", 0)
        if default_spec not in spec_ids:
            raise self.fail(f"default-spec-id {default_spec} names no partition spec")
        last_sequence = self.int_(doc, "last-sequence-number", 0)
        snapshots = tuple(
            self.snapshot(s, schema_ids, last_sequence)
            for s in self.list_(doc, "snapshots", MAX_SNAPSHOTS)
        )
        snapshot_ids = {s.snapshot_id for s in snapshots}
        if len(snapshot_ids) != len(snapshots):
            raise self.fail("names a snapshot id twice")
        current = doc.get("current-snapshot-id", -1)
        current = None if current in (-1, None) else self.int_(doc, "current-snapshot-id", 0)
        if current is not None and current not in snapshot_ids:
            raise self.fail(f"current-snapshot-id {current} names no snapshot")
        snapshot_log = tuple(
            (self.int_(e, "timestamp-ms"), self.int_(e, "snapshot-id"))
            for e in (
                self.object_(e, "snapshot-log") for e in self.list_(doc, "snapshot-log", MAX_LOG)
            )
        )
        if any(sid not in snapshot_ids for _, sid in snapshot_log):
            raise self.fail("snapshot-log names a snapshot it does not hold")
        metadata_log = tuple(
            (self.int_(e, "timestamp-ms"), self.str_(e, "metadata-file"))
            for e in (
                self.object_(e, "metadata-log") for e in self.list_(doc, "metadata-log", MAX_LOG)
            )
        )
        properties = self.text_map(doc.get("properties", {}), "properties", MAX_PROPERTIES)
        if FILE_ONLY_PROPERTY in properties:
            fields = load_json(properties[FILE_ONLY_PROPERTY], self.where, FILE_ONLY_PROPERTY)
            struct = {"type": "struct", "schema-id": 0, "fields": fields}
            file_only = IcebergSchema.from_json(struct, last_column, self.where).fields_json
            taken = {i for s in schemas for i in s.ids()}
            if any(i in taken for i in IcebergSchema(0, file_only, last_column).ids()):
                raise self.fail(f"{FILE_ONLY_PROPERTY} names a field id a schema has")
            schemas = tuple(replace(s, file_only_json=file_only) for s in schemas)
        return TableMetadata(
            uuid=self.str_(doc, "table-uuid"),
            location=self.str_(doc, "location"),
            last_sequence=last_sequence,
            last_updated_ms=self.int_(doc, "last-updated-ms", 0),
            schemas=schemas,
            current_schema_id=current_schema,
            specs=specs,
            default_spec_id=default_spec,
            snapshots=snapshots,
            current_snapshot_id=current,
            snapshot_log=snapshot_log,
            metadata_log=metadata_log,
            properties=properties,
        )

    def spec(self, raw: Any) -> dict[str, Any]:
        doc = self.object_(raw, "partition spec")
        spec_id = self.int_(doc, "spec-id", 0)
        fields = []
        for item in self.list_(doc, "fields", MAX_SPECS):
            entry = self.object_(item, "partition field")
            if set(entry) != set(_PARTITION_FIELD_KEYS) or entry["transform"] != "identity":
                raise self.fail("holds a partition field this writer does not write")
            fields.append(
                {
                    "source-id": self.int_(entry, "source-id", 1),
                    "field-id": self.int_(entry, "field-id", FIRST_FIELD_ID),
                    "name": self.str_(entry, "name"),
                    "transform": "identity",
                }
            )
        return {"spec-id": spec_id, "fields": fields}

    def snapshot(self, raw: Any, schema_ids: list[int], last_sequence: int) -> Snapshot:
        doc = self.object_(raw, "snapshot")
        parent = doc.get("parent-snapshot-id")
        sequence = self.int_(doc, "sequence-number", 0)
        if sequence > last_sequence:
            raise self.fail(f"snapshot sequence-number {sequence} is above the last")
        schema_id = self.int_(doc, "schema-id", 0)
        if schema_id not in schema_ids:
            raise self.fail(f"a snapshot names schema {schema_id}, which it does not hold")
        summary = self.text_map(doc.get("summary"), "summary", MAX_SUMMARY)
        if "operation" not in summary:
            raise self.fail("has a snapshot summary without an operation")
        return Snapshot(
            snapshot_id=self.int_(doc, "snapshot-id", 0),
            parent_id=None if parent is None else self.int_(doc, "parent-snapshot-id", 0),
            sequence=sequence,
            timestamp_ms=self.int_(doc, "timestamp-ms", 0),
            manifest_list=self.str_(doc, "manifest-list"),
            summary=summary,
            schema_id=schema_id,
        )
