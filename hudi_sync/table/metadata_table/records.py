"""The records of Hudi's metadata table (``HoodieMetadataRecord``) and how they merge.

Every MDT partition stores the same Avro record: ``key``, ``type`` and one payload field
per record type (``HoodieMetadata.avsc``). HFile values (base files and HFILE_DATA log
blocks) are Avro binary datums of the writer's schema, which Hudi 1.x writes with the
five ``_hoodie_*`` meta fields in front (always null: the MDT keeps no meta fields) and
stores in the HFile's file info under ``schema``. Table version 9 (Hudi 1.1) added
``ArrayWrapper`` to the column-stats value union and ``valueType`` to the column stats;
``metadata_schema(8)`` is the Hudi 1.0 schema.

Merging (``HoodieMetadataPayload.preCombine``, newer record onto older, same key):
- partition list / file list: the union of both maps; a file the newer record marks
  deleted is dropped if the older one listed it (else the tombstone is kept, so that a
  later merge with an older base record still drops it); sizes of a file in both take
  the larger (files only grow);
- column stats / partition stats: a tombstone on either side gives the newer record;
  else min of mins, max of maxes, sums of the counts and sizes;
- record index, secondary index, bloom filter: the newer record wins.
A record is deleted (dropped from the merged view) when a delete block names its key,
or it is a secondary-index or bloom-filter record with ``isDeleted``.
"""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any

import fastavro

from hudi_sync.errors import CorruptTableError
from hudi_sync.storage import contained_name, contained_partition
from hudi_sync.table.avro.bounded import AvroSchema, read_datum, schema_from_text

NAMESPACE = "org.apache.hudi.avro.model"
SCHEMA_FILE_INFO_KEY = b"schema"  # where an MDT HFile keeps its writer schema
ALL_PARTITIONS_KEY = "__all_partitions__"
NON_PARTITIONED_KEY = "."  # the files-partition key of a non-partitioned table's files
META_FIELDS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)


class MetadataType(IntEnum):
    """``HoodieMetadataRecord.type`` (MetadataPartitionType's record types)."""

    PARTITION_LIST = 1
    FILE_LIST = 2
    COLUMN_STATS = 3
    BLOOM_FILTER = 4
    RECORD_INDEX = 5
    PARTITION_STATS = 6
    SECONDARY_INDEX = 7


# The value wrappers of column stats, in their union order: (name, Avro type).
_WRAPPERS: tuple[tuple[str, Any], ...] = (
    ("BooleanWrapper", "boolean"),
    ("IntWrapper", "int"),
    ("LongWrapper", "long"),
    ("FloatWrapper", "float"),
    ("DoubleWrapper", "double"),
    ("BytesWrapper", "bytes"),
    ("StringWrapper", {"type": "string", "avro.java.string": "String"}),
    ("DateWrapper", "int"),
    ("DecimalWrapper", {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15}),
    ("TimeMicrosWrapper", {"type": "long", "logicalType": "time-micros"}),
    ("TimestampMicrosWrapper", "long"),
    ("LocalDateWrapper", "int"),
)
_JSTRING: dict[str, Any] = {"type": "string", "avro.java.string": "String"}


def _opt(avro_type: Any) -> dict[str, Any]:
    return {"type": ["null", avro_type], "default": None}


def _named(name: str, fields: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": fields}


def _value_union(table_version: int) -> list[Any]:
    wrappers: list[Any] = [_named(n, [{"name": "value", "type": t}]) for n, t in _WRAPPERS]
    if table_version >= 9:
        items = ["null", *(name for name, _ in _WRAPPERS)]
        array_field = {"name": "wrappedValues", **_opt({"type": "array", "items": items})}
        wrappers.append(_named("ArrayWrapper", [array_field]))
    return ["null", *wrappers]


def metadata_schema(table_version: int = 9, meta_fields: bool = True) -> dict[str, Any]:
    """``HoodieMetadataRecord`` as Hudi writes it for a table version (8: Hudi 1.0,
    9: Hudi 1.1), with the meta fields in front as in Hudi's MDT files."""
    names = [name for name, _ in _WRAPPERS] + (["ArrayWrapper"] if table_version >= 9 else [])
    column_stats_fields: list[dict[str, Any]] = [
        {"name": "fileName", **_opt(_JSTRING)},
        {"name": "columnName", **_opt(_JSTRING)},
        {"name": "minValue", "type": _value_union(table_version), "default": None},
        {"name": "maxValue", "type": ["null", *names], "default": None},
        {"name": "valueCount", **_opt("long")},
        {"name": "nullCount", **_opt("long")},
        {"name": "totalSize", **_opt("long")},
        {"name": "totalUncompressedSize", **_opt("long")},
        {"name": "isDeleted", "type": "boolean"},
        {"name": "isTightBound", "type": "boolean", "default": False},
    ]
    if table_version >= 9:
        value_type = _named(
            "HoodieValueTypeInfo",
            [{"name": "typeOrdinal", "type": "int"}, {"name": "additionalInfo", **_opt(_JSTRING)}],
        )
        column_stats_fields.append({"name": "valueType", **_opt(value_type)})
    file_info = _named(
        "HoodieMetadataFileInfo",
        [{"name": "size", "type": "long"}, {"name": "isDeleted", "type": "boolean"}],
    )
    bloom = _named(
        "HoodieMetadataBloomFilter",
        [
            {"name": "type", "type": _JSTRING},
            {"name": "timestamp", "type": _JSTRING},
            {"name": "bloomFilter", "type": "bytes"},
            {"name": "isDeleted", "type": "boolean"},
        ],
    )
    record_index = _named(
        "HoodieRecordIndexInfo",
        [
            {"name": "partitionName", **_opt(_JSTRING)},
            {"name": "fileIdHighBits", **_opt("long")},
            {"name": "fileIdLowBits", **_opt("long")},
            {"name": "fileIndex", **_opt("int")},
            {"name": "fileId", **_opt(_JSTRING)},
            {"name": "instantTime", **_opt("long")},
            {"name": "fileIdEncoding", "type": "int", "default": 0},
            {"name": "position", **_opt("long")},
        ],
    )
    fields: list[dict[str, Any]] = []
    if meta_fields:
        fields.extend({"name": name, **_opt("string")} for name in META_FIELDS)
    fields += [
        {"name": "key", "type": _JSTRING},
        {"name": "type", "type": "int"},
        {
            "name": "filesystemMetadata",
            "type": ["null", {"type": "map", "values": file_info, "avro.java.string": "String"}],
        },
        {"name": "BloomFilterMetadata", **_opt(bloom)},
        {
            "name": "ColumnStatsMetadata",
            **_opt(_named("HoodieMetadataColumnStats", column_stats_fields)),
        },
        {"name": "recordIndexMetadata", **_opt(record_index)},
        {
            "name": "SecondaryIndexMetadata",
            **_opt(_named("HoodieSecondaryIndexInfo", [{"name": "isDeleted", "type": "boolean"}])),
        },
    ]
    return {
        "type": "record",
        "name": "HoodieMetadataRecord",
        "namespace": NAMESPACE,
        "fields": fields,
    }


@dataclass(frozen=True)
class FileInfo:
    size: int
    is_deleted: bool = False


@dataclass(frozen=True)
class WrappedValue:
    """A column-stats bound: its wrapper (``IntWrapper``...) and raw value (dates as days,
    timestamps as micros, decimals as unscaled big-endian bytes at scale 15, arrays as a
    tuple of wrapped values or None)."""

    wrapper: str
    value: Any

    def sort_key(self) -> Any:
        if self.wrapper == "DecimalWrapper":
            return int.from_bytes(self.value, "big", signed=True)
        return self.value


@dataclass(frozen=True)
class ColumnStats:
    """``HoodieMetadataColumnStats`` (column_stats and partition_stats records)."""

    file_name: str | None
    column_name: str | None
    min_value: WrappedValue | None
    max_value: WrappedValue | None
    value_count: int | None
    null_count: int | None
    total_size: int | None
    total_uncompressed_size: int | None
    is_deleted: bool
    is_tight_bound: bool = False
    value_type: tuple[int, str | None] | None = None


@dataclass(frozen=True)
class RecordIndexInfo:
    partition_name: str | None
    file_id_high_bits: int | None
    file_id_low_bits: int | None
    file_index: int | None
    file_id: str | None
    instant_time: int | None
    file_id_encoding: int = 0
    position: int | None = None


@dataclass(frozen=True)
class BloomFilterInfo:
    filter_type: str
    timestamp: str
    bloom_filter: bytes
    is_deleted: bool


@dataclass(frozen=True)
class MetadataRecord:
    """One ``HoodieMetadataRecord``; the payload field of its ``type`` is set."""

    key: str
    type: MetadataType
    files: Mapping[str, FileInfo] | None = None
    column_stats: ColumnStats | None = None
    record_index: RecordIndexInfo | None = None
    bloom_filter: BloomFilterInfo | None = None
    secondary_index_deleted: bool | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def is_deleted(self) -> bool:
        """A tombstone of the whole record (the merged view drops it)."""
        if self.type == MetadataType.SECONDARY_INDEX:
            return bool(self.secondary_index_deleted)
        if self.type == MetadataType.BLOOM_FILTER and self.bloom_filter is not None:
            return self.bloom_filter.is_deleted
        return False

    def live_files(self) -> dict[str, int]:
        """Files (or, for the partition list, partitions) not marked deleted, with sizes."""
        return {n: i.size for n, i in (self.files or {}).items() if not i.is_deleted}


_RECORD_SCHEMAS: dict[int, Any] = {}


def parsed_schema(table_version: int = 9) -> Any:
    """The parsed (fastavro) schema of ``metadata_schema(table_version)``, cached."""
    version = 9 if table_version >= 9 else 8
    if version not in _RECORD_SCHEMAS:
        _RECORD_SCHEMAS[version] = fastavro.parse_schema(metadata_schema(version))
    return _RECORD_SCHEMAS[version]


def _wrapped(decoded: Any) -> WrappedValue | None:
    if decoded is None:
        return None
    name, body = decoded
    short = name.rsplit(".", 1)[-1]
    if short == "ArrayWrapper":
        values = body["wrappedValues"]
        return WrappedValue(short, None if values is None else tuple(_wrapped(v) for v in values))
    return WrappedValue(short, body["value"])


def _unwrapped(value: WrappedValue | None) -> Any:
    if value is None:
        return None
    if value.wrapper == "ArrayWrapper":
        inner = value.value
        body = None if inner is None else [_unwrapped(v) for v in inner]
        return (f"{NAMESPACE}.ArrayWrapper", {"wrappedValues": body})
    return (f"{NAMESPACE}.{value.wrapper}", {"value": value.value})


def record_from_datum(datum: Mapping[str, Any], where: str) -> MetadataRecord:
    """A decoded ``HoodieMetadataRecord`` datum (unions of records as ``(name, body)``)."""
    try:
        kind = MetadataType(datum["type"])
    except ValueError:
        raise CorruptTableError(f"{where}: unknown metadata record type {datum['type']}") from None
    key = datum["key"]
    files = datum.get("filesystemMetadata")
    bloom = _body(datum.get("BloomFilterMetadata"))
    stats = _body(datum.get("ColumnStatsMetadata"))
    index = _body(datum.get("recordIndexMetadata"))
    secondary = _body(datum.get("SecondaryIndexMetadata"))
    return MetadataRecord(
        key=key,
        type=kind,
        files=None
        if files is None
        else {n: FileInfo(i["size"], i["isDeleted"]) for n, i in files.items()},
        column_stats=None if stats is None else _column_stats(stats),
        record_index=None
        if index is None
        else RecordIndexInfo(
            index["partitionName"],
            index["fileIdHighBits"],
            index["fileIdLowBits"],
            index["fileIndex"],
            index["fileId"],
            index["instantTime"],
            index.get("fileIdEncoding", 0),
            index.get("position"),
        ),
        bloom_filter=None
        if bloom is None
        else BloomFilterInfo(
            bloom["type"], bloom["timestamp"], bloom["bloomFilter"], bloom["isDeleted"]
        ),
        secondary_index_deleted=None if secondary is None else secondary["isDeleted"],
        extra={n: datum.get(n) for n in META_FIELDS if datum.get(n) is not None},
    )


def _body(value: Any) -> Any:
    """A union-of-record value, returned by fastavro as ``(name, body)``."""
    return value[1] if isinstance(value, tuple) else value


def _column_stats(stats: Mapping[str, Any]) -> ColumnStats:
    value_type = _body(stats.get("valueType"))
    return ColumnStats(
        file_name=stats["fileName"],
        column_name=stats["columnName"],
        min_value=_wrapped(stats["minValue"]),
        max_value=_wrapped(stats["maxValue"]),
        value_count=stats["valueCount"],
        null_count=stats["nullCount"],
        total_size=stats["totalSize"],
        total_uncompressed_size=stats["totalUncompressedSize"],
        is_deleted=stats["isDeleted"],
        is_tight_bound=stats.get("isTightBound", False),
        value_type=None
        if value_type is None
        else (value_type["typeOrdinal"], value_type["additionalInfo"]),
    )


def record_to_datum(record: MetadataRecord, table_version: int = 9) -> dict[str, Any]:
    """The Avro datum of a record for ``metadata_schema(version)``; meta fields from
    ``extra`` (Hudi's MDT compaction sets ``_hoodie_file_name``), else null."""
    datum: dict[str, Any] = {name: record.extra.get(name) for name in META_FIELDS}
    datum.update(
        key=record.key,
        type=int(record.type),
        filesystemMetadata=None
        if record.files is None
        else {n: {"size": i.size, "isDeleted": i.is_deleted} for n, i in record.files.items()},
        BloomFilterMetadata=None,
        ColumnStatsMetadata=None,
        recordIndexMetadata=None,
        SecondaryIndexMetadata=None,
    )
    if record.bloom_filter is not None:
        b = record.bloom_filter
        datum["BloomFilterMetadata"] = {
            "type": b.filter_type,
            "timestamp": b.timestamp,
            "bloomFilter": b.bloom_filter,
            "isDeleted": b.is_deleted,
        }
    if record.column_stats is not None:
        s = record.column_stats
        stats: dict[str, Any] = {
            "fileName": s.file_name,
            "columnName": s.column_name,
            "minValue": _unwrapped(s.min_value),
            "maxValue": _unwrapped(s.max_value),
            "valueCount": s.value_count,
            "nullCount": s.null_count,
            "totalSize": s.total_size,
            "totalUncompressedSize": s.total_uncompressed_size,
            "isDeleted": s.is_deleted,
            "isTightBound": s.is_tight_bound,
        }
        if table_version >= 9:
            stats["valueType"] = (
                None
                if s.value_type is None
                else {"typeOrdinal": s.value_type[0], "additionalInfo": s.value_type[1]}
            )
        datum["ColumnStatsMetadata"] = stats
    if record.record_index is not None:
        r = record.record_index
        datum["recordIndexMetadata"] = {
            "partitionName": r.partition_name,
            "fileIdHighBits": r.file_id_high_bits,
            "fileIdLowBits": r.file_id_low_bits,
            "fileIndex": r.file_index,
            "fileId": r.file_id,
            "instantTime": r.instant_time,
            "fileIdEncoding": r.file_id_encoding,
            "position": r.position,
        }
    if record.secondary_index_deleted is not None:
        datum["SecondaryIndexMetadata"] = {"isDeleted": record.secondary_index_deleted}
    return datum


def writer_schema_of(file_info: Mapping[bytes, bytes], where: str) -> Any:
    """The parsed writer schema an MDT HFile carries in its file info."""
    text = file_info.get(SCHEMA_FILE_INFO_KEY)
    if text is None:
        raise CorruptTableError(f"{where}: metadata HFile has no writer schema in its file info")
    return parse_writer_schema(text, where)


def parse_writer_schema(text: str | bytes, where: str) -> AvroSchema:
    """A metadata record writer schema read from storage, bounded (``bounded_avro``)."""
    schema = schema_from_text(text, where, "metadata record schema")
    if not isinstance(schema.schema, dict) or schema.schema.get("type") != "record":
        raise CorruptTableError(f"{where}: metadata record schema is not a record")
    return schema


def decode_value(value: bytes, writer_schema: AvroSchema, where: str) -> MetadataRecord:
    """One HFile value: an Avro datum in ``writer_schema``, read into our schema."""
    datum, size = read_datum(
        value, writer_schema, f"{where}: metadata record", parsed_schema(9), True
    )
    if size != len(value) or not isinstance(datum, dict):
        raise CorruptTableError(f"{where}: metadata record does not fill its HFile value")
    try:
        return record_from_datum(datum, where)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CorruptTableError(
            f"{where}: metadata record has an unexpected shape ({exc!r})"
        ) from None


def decode_records(content: Any, where: str) -> list[MetadataRecord]:
    """The records of an MDT HFile (``HFileContent``: ``entries``, ``file_info``), in key
    order. Hudi's HFile writer empties each value's ``key`` (the row key holds it); a
    non-empty one must equal the row key."""
    schema = writer_schema_of(content.file_info, where)
    records: list[MetadataRecord] = []
    for key, value in content.entries:
        record = decode_value(value, schema, where)
        if record.key == "":  # Hudi's HFile writer leaves the key to the HFile's row key
            try:
                record = replace(record, key=key.decode("utf-8"))
            except UnicodeDecodeError:
                raise CorruptTableError(f"{where}: HFile key {key!r} is not UTF-8") from None
        elif record.key.encode("utf-8") != key:
            raise CorruptTableError(
                f"{where}: HFile key {key!r} holds the metadata record of {record.key!r}"
            )
        check_listed_names(record, where)
        records.append(record)
    return records


def check_listed_names(record: MetadataRecord, where: str) -> None:
    """Refuse a ``files`` record naming a partition or file outside the table: every
    reader, cleaner and fold joins these names to the table's base, so a partition
    ``../other`` or a file name holding ``/`` would reach another table's files. Hudi's
    partitions have no empty, ``.`` or ``..`` segment (``.`` alone is the non-partitioned
    table's) and its file names are one segment."""
    if record.type == MetadataType.PARTITION_LIST:
        for partition in record.files or {}:
            _check_partition(partition, where)
    elif record.type == MetadataType.FILE_LIST:
        _check_partition(record.key, where)
        for name in record.files or {}:
            contained_name(name, where)


def _check_partition(partition: str, where: str) -> None:
    if partition != NON_PARTITIONED_KEY:
        contained_partition(partition, where)


def encode_value(record: MetadataRecord, table_version: int = 9) -> bytes:
    stream = io.BytesIO()
    fastavro.schemaless_writer(
        stream, parsed_schema(table_version), record_to_datum(record, table_version)
    )
    return stream.getvalue()


def encode_records(
    records: Iterable[MetadataRecord], table_version: int = 9
) -> tuple[list[tuple[bytes, bytes]], dict[bytes, bytes]]:
    """HFile entries (sorted by key; keys must be distinct) and the file info holding the
    writer schema, ready for ``write_hfile``."""
    entries = sorted((r.key.encode("utf-8"), encode_value(r, table_version)) for r in records)
    for (a, _), (b, _) in itertools.pairwise(entries):
        if a == b:
            raise ValueError(f"two metadata records have the key {a.decode()!r}")
    schema_text = json.dumps(metadata_schema(table_version), separators=(",", ":"))
    return entries, {SCHEMA_FILE_INFO_KEY: schema_text.encode("utf-8")}


def combine(older: MetadataRecord, newer: MetadataRecord) -> MetadataRecord:
    """``newer`` merged onto ``older`` (same key), as HoodieMetadataPayload.preCombine."""
    if older.type != newer.type:
        raise CorruptTableError(
            f"metadata record {newer.key!r}: type {newer.type.name} cannot merge onto "
            f"{older.type.name}"
        )
    if newer.type in (MetadataType.PARTITION_LIST, MetadataType.FILE_LIST):
        merged = dict(older.files or {})
        for name, info in (newer.files or {}).items():
            before = merged.get(name)
            if before is None:
                merged[name] = info
            elif info.is_deleted:
                if before.is_deleted:
                    merged[name] = info
                else:
                    del merged[name]
            else:
                merged[name] = FileInfo(max(info.size, before.size), False)
        return replace(newer, files=merged)
    if newer.type in (MetadataType.COLUMN_STATS, MetadataType.PARTITION_STATS):
        if older.column_stats is None or newer.column_stats is None:
            return newer
        return replace(
            newer, column_stats=merge_column_stats(older.column_stats, newer.column_stats)
        )
    return newer


def merge_column_stats(older: ColumnStats, newer: ColumnStats) -> ColumnStats:
    """HoodieTableMetadataUtil.mergeColumnStatsRecords: a tombstone on either side, or a
    tight-bound newer record (partition stats recomputed from a partition's latest files),
    replaces the older one; else bounds widen and counts add up."""
    if older.is_deleted or newer.is_deleted or newer.is_tight_bound:
        return newer
    bounds = [v for v in (older.min_value, newer.min_value) if v is not None]
    tops = [v for v in (older.max_value, newer.max_value) if v is not None]
    return replace(
        newer,
        min_value=min(bounds, key=WrappedValue.sort_key) if bounds else None,
        max_value=max(tops, key=WrappedValue.sort_key) if tops else None,
        value_count=_sum(older.value_count, newer.value_count),
        null_count=_sum(older.null_count, newer.null_count),
        total_size=_sum(older.total_size, newer.total_size),
        total_uncompressed_size=_sum(older.total_uncompressed_size, newer.total_uncompressed_size),
    )


def _sum(a: int | None, b: int | None) -> int | None:
    if a is None and b is None:
        return None
    return (a or 0) + (b or 0)


def merge_into(
    merged: dict[str, MetadataRecord], records: Iterable[MetadataRecord]
) -> dict[str, MetadataRecord]:
    """Apply newer ``records`` (in order) onto ``merged`` (key -> record), in place."""
    for record in records:
        before = merged.get(record.key)
        merged[record.key] = record if before is None else combine(before, record)
    return merged


def live_records(merged: Mapping[str, MetadataRecord]) -> dict[str, MetadataRecord]:
    """The merged view without tombstoned records."""
    return {k: r for k, r in merged.items() if not r.is_deleted}
