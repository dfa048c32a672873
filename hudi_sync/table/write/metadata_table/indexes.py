"""The index records Hudi 1.x keeps in its metadata table for the data files a write produced.

``record_index`` maps each record key to its location; ``column_stats`` holds per-file column
ranges and ``partition_stats`` per-partition ones (``column_stats.py``); each
``secondary_index_<name>`` maps a source field's value to the record keys holding it. Facts:
apache/hudi ``HoodieMetadataPayload.createRecordIndexUpdate`` / ``createSecondaryIndexRecord``,
``HoodieTableMetadataUtil.getColumnsToIndex``, the fixtures' ``.hoodie/.index_defs/index.json``.
"""

from __future__ import annotations

import datetime as dt
import io
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.parquet as pq

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError
from hudi_sync.storage import Location
from hudi_sync.table.avro.bounded import load_json
from hudi_sync.table.metadata_table import column_stats, index_keys
from hudi_sync.table.metadata_table.records import MetadataRecord, MetadataType, RecordIndexInfo

RECORD_KEY_FIELD = "_hoodie_record_key"
# Always indexed first when the table keeps meta fields (Hudi's META_COLS_TO_ALWAYS_INDEX, in
# the sorted order of its TreeMap).
META_COLUMNS_TO_INDEX = ("_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_record_key")
META_COLUMNS = frozenset(
    {*META_COLUMNS_TO_INDEX, "_hoodie_commit_seqno", "_hoodie_file_name", "_hoodie_operation"}
)
DEFAULT_INDEX_DEFINITIONS = ".hoodie/.index_defs/index.json"
DEFAULT_MAX_COLUMNS_TO_INDEX = 32  # hoodie.metadata.index.column.stats.max.columns.to.index
_DECIMAL_MAX_PRECISION, _DECIMAL_MAX_SCALE = 30, 15
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class SecondaryIndex:
    """A ``secondary_index_*`` definition of ``index.json``."""

    name: str
    source_field: str
    version: int


@dataclass(frozen=True)
class IndexDefinitions:
    """What ``<table>/.hoodie/.index_defs/index.json`` defines (the parts computed here)."""

    column_stats_fields: tuple[str, ...] | None
    column_stats_version: int
    secondary_indexes: tuple[SecondaryIndex, ...]
    others: tuple[str, ...]
    # Hudi 1.1's partitioned record index (``indexOptions.isPartitioned``): file groups
    # per data partition, keys unique only within one.
    record_index_partitioned: bool = False


def _version(text: str, where: str) -> int:
    if not (text.startswith("V") and text[1:].isdigit()):
        raise BadInputError(f"{where}: index version {text!r} is not V<number>")
    return int(text[1:])


def index_definitions_path(props: Mapping[str, str]) -> str:
    """Where a table keeps its index definitions, relative to its base path
    (``hoodie.table.index.defs.path``, Hudi's default when unset)."""
    return props.get(cfg.INDEX_DEFS_PATH.key) or DEFAULT_INDEX_DEFINITIONS


def read_index_definitions(location: Location, props: Mapping[str, str]) -> IndexDefinitions | None:
    """The table's index definitions (``None`` when it has no definitions file)."""
    relative = index_definitions_path(props)
    path = location.inside(relative, location.uri_of(f".hoodie/{cfg.PROPERTIES_FILE}"))
    try:
        data = location.read_file(path)
    except FileNotFoundError:
        return None
    return parse_index_definitions(data, location.uri_of(relative))


def parse_index_definitions(text: str | bytes, where: str) -> IndexDefinitions:
    """The index definitions file; unknown index types are listed in ``others``."""
    try:
        definitions = load_json(text, where, "index definitions file")["indexDefinitions"]
    except (KeyError, TypeError) as exc:
        raise BadInputError(f"{where}: not an index definitions file ({exc})") from None
    stats_fields: tuple[str, ...] | None = None
    stats_version = 1
    secondary, others = [], []
    partitioned = False
    for name, definition in definitions.items():
        kind = definition.get("indexType")
        fields = tuple(definition.get("sourceFields") or ())
        version = _version(str(definition.get("version", "V1")), where)
        if kind == "column_stats":
            stats_fields, stats_version = fields, version
        elif kind == "secondary_index":
            if len(fields) != 1 or definition.get("indexFunction", "identity") != "identity":
                raise BadInputError(
                    f"{where}: secondary index {name!r} on {list(fields)} with function "
                    f"{definition.get('indexFunction')!r} is not one identity field"
                )
            secondary.append(SecondaryIndex(name, fields[0], version))
        elif kind == "record_index":
            options = definition.get("indexOptions") or {}
            flag = options.get("isPartitioned", "false") if isinstance(options, dict) else ""
            partitioned = str(flag).lower() == "true"
        else:
            others.append(name)
    return IndexDefinitions(
        stats_fields, stats_version, tuple(secondary), tuple(others), partitioned
    )


def refuse_partitioned_record_index(location: Location, props: Mapping[str, str]) -> None:
    """Hudi 1.1's partitioned record index keeps file groups per data partition (a key
    is unique only within one) and adds them as partitions appear; hudi_sync routes keys
    over one global set of file groups, so it refuses to update it."""
    definitions = read_index_definitions(location, props)
    if definitions is not None and definitions.record_index_partitioned:
        raise BadInputError(
            f"{location.uri_of(index_definitions_path(props))}: record_index is Hudi's "
            "partitioned record index (isPartitioned=true), which hudi_sync does not update; "
            f"disable it with {cfg.METADATA_RECORD_INDEX.key}=false"
        )


def _supported(avro_type: Any) -> bool:
    """Hudi's ``isColumnTypeSupported`` for Avro records: no record, array, map or enum, and no
    decimal wider than the ``DecimalWrapper`` (precision 30, scale 15) holds."""
    if isinstance(avro_type, list):
        branches = [t for t in avro_type if t != "null"]
        return len(branches) == 1 and _supported(branches[0])
    if isinstance(avro_type, dict):
        if avro_type.get("logicalType") == "decimal":
            precision, scale = int(avro_type["precision"]), int(avro_type.get("scale", 0))
            return (
                precision + (_DECIMAL_MAX_SCALE - scale) <= _DECIMAL_MAX_PRECISION
                and scale <= _DECIMAL_MAX_SCALE
            )
        return avro_type.get("type") not in ("record", "array", "map", "enum")
    return avro_type not in ("record", "array", "map", "enum")


def columns_to_index(
    table_schema: Mapping[str, Any],
    populate_meta_fields: bool = True,
    column_list: Sequence[str] = (),
    max_columns: int = DEFAULT_MAX_COLUMNS_TO_INDEX,
) -> list[str]:
    """The columns Hudi keeps column (and partition) stats for: the three meta columns (when the
    table keeps meta fields), then ``hoodie.metadata.index.column.stats.column.list`` or, when it
    is empty, the first ``max_columns`` supported data columns of the table schema."""
    fields = {f["name"]: f["type"] for f in table_schema["fields"]}
    if column_list:
        missing = [c for c in column_list if c not in fields and c not in META_COLUMNS]
        if missing:
            raise BadInputError(f"column stats columns {missing} are not in the table schema")
        chosen = [
            c for c in column_list if c not in META_COLUMNS_TO_INDEX and _supported(fields[c])
        ]
    else:
        chosen = [n for n, t in fields.items() if n not in META_COLUMNS and _supported(t)]
        chosen = chosen[:max_columns]
    return [*META_COLUMNS_TO_INDEX, *chosen] if populate_meta_fields else chosen


def instant_millis(instant: str, zone: dt.tzinfo) -> int:
    """An instant time (``yyyyMMddHHmmss[SSS]``) as epoch milliseconds read in the timeline's
    time zone (Hudi's ``parseDateFromInstantTime``: the JVM's zone unless the table says UTC)."""
    text = instant if len(instant) == 17 else instant + "000"
    try:
        moment = dt.datetime.strptime(text, "%Y%m%d%H%M%S%f").replace(tzinfo=zone)
    except ValueError:
        raise BadInputError(f"instant time {instant!r} is not yyyyMMddHHmmssSSS") from None
    return (moment - _EPOCH) // dt.timedelta(milliseconds=1)


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def record_location(
    partition_path: str, file_id: str, instant: str, zone: dt.tzinfo
) -> RecordIndexInfo:
    """A ``HoodieRecordIndexInfo``: a UUID file id ``<uuid>-<n>`` is stored as its two 64-bit
    halves and the index ``n`` (encoding 0; a bare UUID gets index -1); any other file id as
    text (encoding 1)."""
    millis = instant_millis(instant, zone)
    head, _, tail = file_id.rpartition("-")
    parsed = _uuid(file_id) if len(file_id) == 36 else _uuid(head)
    if parsed is None or (len(file_id) != 36 and not tail.isdigit()):
        return RecordIndexInfo(partition_path, -1, -1, -1, file_id, millis, 1, None)
    return RecordIndexInfo(
        partition_name=partition_path,
        file_id_high_bits=_signed64(parsed.int >> 64),
        file_id_low_bits=_signed64(parsed.int & ((1 << 64) - 1)),
        file_index=-1 if len(file_id) == 36 else int(tail),
        file_id="",
        instant_time=millis,
        file_id_encoding=0,
        position=None,
    )


def _uuid(text: str) -> uuid.UUID | None:
    """A UUID in its canonical 36-character form (what Java's ``UUID.fromString`` of a Hudi
    file id reads back to the same text)."""
    try:
        parsed = uuid.UUID(text)
    except ValueError:
        return None
    return parsed if len(text) == 36 and str(parsed) == text.lower() else None


def record_index_records(
    record_keys: Iterable[str], partition_path: str, file_id: str, instant: str, zone: dt.tzinfo
) -> list[MetadataRecord]:
    """``record_index`` records placing ``record_keys`` in one file group."""
    location = record_location(partition_path, file_id, instant, zone)
    return [
        MetadataRecord(key, MetadataType.RECORD_INDEX, record_index=location) for key in record_keys
    ]


def secondary_value(value: Any, field: str) -> str | None:
    """A source field's value as the secondary key text Hudi stores (the Avro value's
    ``toString``: dates as their day number, timestamps as their long)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dt.datetime):
        raise BadInputError(f"secondary index field {field!r}: pass timestamps as their long")
    if isinstance(value, dt.date):
        return str((value - dt.date(1970, 1, 1)).days)
    raise BadInputError(
        f"secondary index field {field!r}: values of type {type(value).__name__} are not "
        "supported in a secondary index (Java's text form is not reproduced)"
    )


def _physical_column(table: pa.Table, field: str) -> list[Any]:
    column = table.column(field)
    if pa.types.is_date32(column.type):
        column = column.cast(pa.int32())
    elif pa.types.is_timestamp(column.type) or pa.types.is_time(column.type):
        column = column.cast(pa.int64())
    values: list[Any] = column.to_pylist()
    return values


def secondary_index_records(
    table: pa.Table,
    index: SecondaryIndex,
    record_key_field: str = RECORD_KEY_FIELD,
    is_deleted: bool = False,
) -> list[MetadataRecord]:
    """``secondary_index_<name>`` records for the rows of ``table`` (secondary key, record
    key); ``is_deleted`` makes tombstones (for the old values of updated or deleted rows)."""
    return [
        MetadataRecord(key, MetadataType.SECONDARY_INDEX, secondary_index_deleted=is_deleted)
        for key in secondary_index_keys(table, index, record_key_field)
        if key is not None
    ]


def secondary_index_keys(
    table: pa.Table, index: SecondaryIndex, record_key_field: str = RECORD_KEY_FIELD
) -> list[str | None]:
    """Each row's ``secondary_index_<name>`` key, ``None`` for a row the index leaves out:
    a null value under index version 1 (Hudi 1.0 indexes only non-null values; version 2
    keeps nulls under the null marker)."""
    for needed in (record_key_field, index.source_field):
        if needed not in table.column_names:
            raise BadInputError(f"secondary index {index.name!r}: the rows lack {needed!r}")
    keys = table.column(record_key_field).to_pylist()
    values = _physical_column(table, index.source_field)
    return [
        None
        if value is None and index.version < 2
        else index_keys.secondary_index_key(secondary_value(value, index.source_field), key)
        for key, value in zip(keys, values, strict=True)
    ]


@dataclass(frozen=True)
class FileIndexRecords:
    """The index records of one written base file, by metadata partition name."""

    by_partition: dict[str, list[MetadataRecord]]
    column_ranges: list[column_stats.ColumnRange]


def base_file_index_records(
    partition_path: str,
    file_name: str,
    parquet: bytes,
    instant: str,
    file_id: str,
    stats_columns: Sequence[str],
    secondary_indexes: Sequence[SecondaryIndex],
    zone: dt.tzinfo,
    new_record_keys: Iterable[str] | None = None,
    stats_version: int = 2,
) -> FileIndexRecords:
    """The ``record_index``, ``column_stats`` and ``secondary_index_*`` records of one Parquet
    base file. ``new_record_keys`` limits ``record_index`` to keys whose location changed (Hudi
    writes none for updates in place); ``None`` indexes every key of the file."""
    table = pq.read_table(io.BytesIO(parquet))
    if RECORD_KEY_FIELD not in table.column_names:
        raise BadInputError(f"{file_name}: no {RECORD_KEY_FIELD} column to index")
    keys = table.column(RECORD_KEY_FIELD).to_pylist()
    chosen = keys if new_record_keys is None else list(new_record_keys)
    footer = pq.ParquetFile(io.BytesIO(parquet)).metadata
    ranges = column_stats.parquet_column_ranges(file_name, footer, stats_columns)
    by_partition: dict[str, list[MetadataRecord]] = {
        "record_index": record_index_records(chosen, partition_path, file_id, instant, zone),
        "column_stats": [
            column_stats.column_stats_record(partition_path, r, version=stats_version)
            for r in ranges
        ],
    }
    for index in secondary_indexes:
        by_partition[index.name] = secondary_index_records(table, index)
    return FileIndexRecords(by_partition, ranges)


def timeline_zone(properties: Mapping[str, str]) -> dt.tzinfo:
    """The zone instant times are read in: UTC when ``hoodie.table.timeline.timezone=UTC``,
    else the local zone (which the caller may override with the writer's zone)."""
    if properties.get(cfg.TIMELINE_TIMEZONE.key, "LOCAL").upper() == "UTC":
        return dt.UTC
    local = dt.datetime.now().astimezone().tzinfo
    return local if local is not None else ZoneInfo("UTC")


def log_file_index_records(
    partition_path: str,
    file_name: str,
    rows: pa.Table,
    instant: str,
    file_id: str,
    stats_columns: Sequence[str],
    secondary_indexes: Sequence[SecondaryIndex],
    zone: dt.tzinfo,
    new_record_keys: Iterable[str] = (),
    stats_version: int = 2,
) -> FileIndexRecords:
    """The index records of one written log file, from its data records (``rows``, with the
    meta columns): ``column_stats`` of the log file, ``record_index`` for ``new_record_keys``
    (inserts routed into the log; updates keep their location) and ``secondary_index_*`` for
    the rows. Removed keys are not records: they go into a delete block."""
    ranges = column_stats.table_column_ranges(file_name, rows, stats_columns)
    by_partition: dict[str, list[MetadataRecord]] = {
        "record_index": record_index_records(
            new_record_keys, partition_path, file_id, instant, zone
        ),
        "column_stats": [
            column_stats.column_stats_record(partition_path, r, version=stats_version)
            for r in ranges
        ],
    }
    for index in secondary_indexes:
        by_partition[index.name] = secondary_index_records(rows, index) if rows.num_rows else []
    return FileIndexRecords(by_partition, ranges)
