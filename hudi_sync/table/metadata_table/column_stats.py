"""Per-file column ranges as Hudi 1.x keeps them in ``column_stats`` and ``partition_stats``.

Facts (apache/hudi ``HoodieTableMetadataUtil``, ``ParquetUtils.readColumnStatsFromMetadata``,
``ValueType``, ``HoodieMetadataPayload``): a base file's ranges come from its Parquet footer, row
groups combined: min of the minimums, max of the maximums, null counts and value counts (nulls
included) summed, ``totalSize``/``totalUncompressedSize`` the column chunks' compressed and
uncompressed sizes summed. Index version 2 stores min/max in the primitive wrapper of the value's
type (``IntWrapper`` for dates, ``LongWrapper`` for timestamps, ``BytesWrapper`` holding the
unscaled two's-complement bytes for decimals, ...) with ``valueType`` = (ordinal of Hudi's
``ValueType``, ``"precision,scale"`` for decimals). A partition's stats are its files' ranges
combined the same way, marked tight-bound, with the partition path as ``fileName``.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from hudi_sync.errors import BadInputError
from hudi_sync.table.metadata_table import index_keys
from hudi_sync.table.metadata_table.records import (
    ColumnStats,
    MetadataRecord,
    MetadataType,
    WrappedValue,
)

# Hudi's ``ValueType`` enum, in declaration order (the ordinal is what the record stores).
VALUE_TYPES = (
    "V1",
    "NULL",
    "BOOLEAN",
    "INT",
    "LONG",
    "FLOAT",
    "DOUBLE",
    "STRING",
    "BYTES",
    "FIXED",
    "DECIMAL",
    "UUID",
    "DATE",
    "TIME_MILLIS",
    "TIME_MICROS",
    "TIMESTAMP_MILLIS",
    "TIMESTAMP_MICROS",
    "TIMESTAMP_NANOS",
    "LOCAL_TIMESTAMP_MILLIS",
    "LOCAL_TIMESTAMP_MICROS",
    "LOCAL_TIMESTAMP_NANOS",
)
_WRAPPER = {
    "BOOLEAN": "BooleanWrapper", "INT": "IntWrapper", "LONG": "LongWrapper",
    "FLOAT": "FloatWrapper", "DOUBLE": "DoubleWrapper", "STRING": "StringWrapper",
    "BYTES": "BytesWrapper", "FIXED": "BytesWrapper", "DECIMAL": "BytesWrapper",
    "UUID": "StringWrapper", "DATE": "IntWrapper", "TIME_MILLIS": "IntWrapper",
}  # fmt: skip
# Plain Parquet physical types without a logical annotation.
_PHYSICAL = {
    "INT64": "LONG", "INT32": "INT", "BOOLEAN": "BOOLEAN", "BYTE_ARRAY": "BYTES",
    "FLOAT": "FLOAT", "DOUBLE": "DOUBLE", "FIXED_LEN_BYTE_ARRAY": "FIXED",
}  # fmt: skip


@dataclass(frozen=True)
class ColumnRange:
    """One column's statistics over one file (or, for partition stats, one partition).

    ``min_value``/``max_value`` are the primitive values the wrapper holds (``None`` when the
    column holds only nulls)."""

    file_name: str
    column: str
    value_type: str
    type_info: str | None
    min_value: Any
    max_value: Any
    null_count: int
    value_count: int
    total_size: int
    total_uncompressed_size: int


def _value_type(column: Any) -> tuple[str, str | None]:
    """Hudi's ``ValueType`` of a Parquet column (``ValueType.fromParquetPrimitiveType``)."""
    logical = json.loads(column.logical_type.to_json()) if column.logical_type else {}
    kind = str(logical.get("Type", "None"))
    unit = {"milliseconds": "MILLIS", "microseconds": "MICROS", "nanoseconds": "NANOS"}
    if kind in ("String", "Enum", "Json"):
        return "STRING", None
    if kind == "Decimal":
        return "DECIMAL", f"{logical['precision']},{logical['scale']}"
    if kind == "Date":
        return "DATE", None
    if kind == "UUID":
        return "UUID", None
    if kind == "Int":
        return ("LONG" if logical.get("bitWidth") == 64 else "INT"), None
    if kind in ("Timestamp", "Time"):
        local = "" if logical.get("isAdjustedToUTC") else "LOCAL_"
        prefix = "TIME" if kind == "Time" else f"{local}TIMESTAMP"
        return f"{prefix}_{unit[logical['timeUnit']]}", None
    if kind == "None" and column.physical_type in _PHYSICAL:
        return _PHYSICAL[column.physical_type], None
    raise BadInputError(
        f"column {column.path!r}: Parquet type {column.physical_type}/{kind} has no column "
        "statistics in Hudi's metadata table"
    )


def _primitive(raw: Any, value_type: str) -> Any:
    """A Parquet statistic (physical value) as the primitive Hudi writes into the wrapper."""
    if value_type in ("STRING", "UUID"):
        return raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
    if value_type == "DECIMAL":
        unscaled = int.from_bytes(raw, "big", signed=True) if isinstance(raw, bytes) else raw
        return unscaled.to_bytes(unscaled.bit_length() // 8 + 1, "big", signed=True)
    return raw


def _java_key(value_type: str) -> Any:
    """Sort key matching Java's ``compareTo`` of the type Hudi holds the value in."""
    if value_type in ("STRING", "UUID"):
        return lambda value: value.encode("utf-16-be")  # String: UTF-16 code units
    if value_type == "DECIMAL":
        return lambda value: int.from_bytes(value, "big", signed=True)
    if value_type in ("BYTES", "FIXED"):
        return lambda value: [b - 256 if b > 127 else b for b in value]  # ByteBuffer: signed
    return lambda value: value


def parquet_column_ranges(
    file_name: str, parquet: bytes | pq.FileMetaData, columns: Sequence[str]
) -> list[ColumnRange]:
    """The ranges of ``columns`` (top-level names; absent ones skipped) of one Parquet file,
    from its footer as Hudi reads them."""
    if isinstance(parquet, pq.FileMetaData):
        metadata = parquet
    else:
        metadata = pq.ParquetFile(io.BytesIO(parquet)).metadata
    schema = metadata.schema
    positions = {schema.column(i).path: i for i in range(len(schema))}
    ranges = []
    for name in columns:
        if name not in positions:
            continue
        column = schema.column(positions[name])
        value_type, type_info = _value_type(column)
        mins, maxes = [], []
        nulls = values = size = uncompressed = 0
        for group in range(metadata.num_row_groups):
            chunk = metadata.row_group(group).column(positions[name])
            values += chunk.num_values
            size += chunk.total_compressed_size
            uncompressed += chunk.total_uncompressed_size
            stats = chunk.statistics
            if stats is not None:
                nulls += stats.null_count if stats.has_null_count else 0
                if stats.has_min_max:
                    mins.append(_primitive(stats.min_raw, value_type))
                    maxes.append(_primitive(stats.max_raw, value_type))
        key = _java_key(value_type)
        ranges.append(
            ColumnRange(
                file_name,
                name,
                value_type,
                type_info,
                min(mins, key=key) if mins else None,
                max(maxes, key=key) if maxes else None,
                nulls,
                values,
                size,
                uncompressed,
            )
        )
    return ranges


def partition_range(partition_path: str, ranges: Iterable[ColumnRange]) -> ColumnRange:
    """One column's ranges over a partition's files combined, as partition_stats keeps them."""
    items = list(ranges)
    if not items:
        raise BadInputError(f"partition {partition_path!r}: no column ranges to combine")
    first = items[0]
    if len({(r.column, r.value_type, r.type_info) for r in items}) != 1:
        raise BadInputError(
            f"partition {partition_path!r}: column ranges of different columns or types: "
            f"{sorted({(r.column, r.value_type) for r in items})}"
        )
    java = _java_key(first.value_type)
    mins = [r.min_value for r in items if r.min_value is not None]
    maxes = [r.max_value for r in items if r.max_value is not None]
    return replace(
        first,
        file_name=partition_path,
        min_value=min(mins, key=java) if mins else None,
        max_value=max(maxes, key=java) if maxes else None,
        null_count=sum(r.null_count for r in items),
        value_count=sum(r.value_count for r in items),
        total_size=sum(r.total_size for r in items),
        total_uncompressed_size=sum(r.total_uncompressed_size for r in items),
    )


def partition_ranges(partition_path: str, ranges: Iterable[ColumnRange]) -> list[ColumnRange]:
    """Every column's partition range from the ranges of a partition's (latest) files."""
    by_column: dict[str, list[ColumnRange]] = {}
    for item in ranges:
        by_column.setdefault(item.column, []).append(item)
    return [partition_range(partition_path, items) for items in by_column.values()]


# Index version 1 wraps the Java value Hudi read from the footer (its class picks the wrapper):
# Hudi 1.0 converts only decimals, dates and strings, so an INT64 time or timestamp stays the
# raw long of its unit (``LongWrapper``), as its log records' values do.
_LONGS = [t for t in VALUE_TYPES if "TIMESTAMP" in t] + ["TIME_MICROS"]
_V1_WRAPPER = {
    **_WRAPPER,
    **dict.fromkeys(_LONGS, "LongWrapper"),
    "DATE": "DateWrapper",
    "DECIMAL": "DecimalWrapper",
}
_V1_DECIMAL_SCALE = 15  # the DecimalWrapper's scale


def as_stored(item: ColumnRange, version: int) -> ColumnRange:
    """``item`` with the value type a record of index ``version`` keeps: version 1 holds an
    INT64 time or timestamp as a plain long, so it combines with stored ranges as one."""
    if version < 2 and item.value_type in _LONGS:
        return replace(item, value_type="LONG")
    return item


def _wrapped(item: ColumnRange, value: Any, version: int) -> WrappedValue | None:
    if value is None:
        return None
    if version >= 2:
        return WrappedValue(_WRAPPER.get(item.value_type, "LongWrapper"), value)
    if item.value_type == "DECIMAL":
        scale = int((item.type_info or "0,0").split(",")[1])
        unscaled = int.from_bytes(value, "big", signed=True) * 10 ** (_V1_DECIMAL_SCALE - scale)
        value = unscaled.to_bytes(unscaled.bit_length() // 8 + 1, "big", signed=True)
    elif item.value_type not in _V1_WRAPPER:
        raise BadInputError(
            f"column {item.column!r}: {item.value_type} statistics of index version 1 are not "
            "written here (index version 2 is)"
        )
    return WrappedValue(_V1_WRAPPER[item.value_type], value)


def column_stats_of(
    item: ColumnRange, is_deleted: bool = False, tight: bool = False, version: int = 2
) -> ColumnStats:
    """The ``HoodieMetadataColumnStats`` of a range in the value wrapping of index ``version``
    (1: the wrapper of the Java value, no ``valueType``; 2: the primitive wrapper of the value
    type, with ``valueType``)."""
    return ColumnStats(
        file_name=item.file_name,
        column_name=item.column,
        min_value=_wrapped(item, item.min_value, version),
        max_value=_wrapped(item, item.max_value, version),
        value_count=item.value_count,
        null_count=item.null_count,
        total_size=item.total_size,
        total_uncompressed_size=item.total_uncompressed_size,
        is_deleted=is_deleted,
        is_tight_bound=tight,
        value_type=(VALUE_TYPES.index(item.value_type), item.type_info) if version >= 2 else None,
    )


def column_stats_record(
    partition_path: str, item: ColumnRange, is_deleted: bool = False, version: int = 2
) -> MetadataRecord:
    """A ``column_stats`` record of one file's column."""
    key = index_keys.column_stats_key(partition_path, item.file_name, item.column)
    stats = column_stats_of(item, is_deleted, version=version)
    return MetadataRecord(key, MetadataType.COLUMN_STATS, column_stats=stats)


def partition_stats_record(
    item: ColumnRange, is_deleted: bool = False, version: int = 2
) -> MetadataRecord:
    """A ``partition_stats`` record of one partition's column (``item`` from
    ``partition_range``), tight-bound as Hudi writes them."""
    key = index_keys.partition_stats_key(item.file_name, item.column)
    return MetadataRecord(
        key,
        MetadataType.PARTITION_STATS,
        column_stats=column_stats_of(item, is_deleted, True, version),
    )


def deleted_column_stats_records(
    partition_path: str, file_name: str, columns: Iterable[str]
) -> list[MetadataRecord]:
    """Tombstones for a removed file: Hudi's stub range per indexed column (no bounds, counts
    -1, the empty value type of index version 2; not yet seen in a fixture)."""
    return [
        MetadataRecord(
            index_keys.column_stats_key(partition_path, file_name, column),
            MetadataType.COLUMN_STATS,
            column_stats=ColumnStats(
                file_name,
                column,
                None,
                None,
                -1,
                -1,
                -1,
                -1,
                True,
                False,
                (VALUE_TYPES.index("NULL"), None),
            ),
        )
        for column in columns
    ]


def _arrow_value_type(arrow_type: pa.DataType) -> tuple[str, str | None]:
    """Hudi's ``ValueType.fromSchema`` of the (Avro) type an Arrow column came from."""
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "STRING", None
    if pa.types.is_decimal(arrow_type):
        return "DECIMAL", f"{arrow_type.precision},{arrow_type.scale}"
    if pa.types.is_timestamp(arrow_type):
        local = "" if arrow_type.tz is not None else "LOCAL_"
        unit = {"ms": "MILLIS", "us": "MICROS", "ns": "NANOS"}.get(arrow_type.unit)
        if unit is not None:
            return f"{local}TIMESTAMP_{unit}", None
    simple = {
        pa.bool_(): "BOOLEAN", pa.int32(): "INT", pa.int64(): "LONG", pa.float32(): "FLOAT",
        pa.float64(): "DOUBLE", pa.binary(): "BYTES", pa.date32(): "DATE",
        pa.time32("ms"): "TIME_MILLIS", pa.time64("us"): "TIME_MICROS",
    }  # fmt: skip
    if arrow_type in simple:
        return simple[arrow_type], None
    if pa.types.is_fixed_size_binary(arrow_type):
        return "FIXED", None
    raise BadInputError(
        f"Arrow type {arrow_type} has no column statistics in Hudi's metadata table"
    )


def _physical(column: pa.ChunkedArray, value_type: str) -> list[Any]:
    """A column's values as the primitives Hudi's wrappers hold."""
    if value_type in ("DATE", "TIME_MILLIS"):
        column = column.cast(pa.int32())
    elif "TIMESTAMP" in value_type or value_type == "TIME_MICROS":
        column = column.cast(pa.int64())
    values: list[Any] = column.to_pylist()
    if value_type == "DECIMAL":
        scale = column.type.scale
        return [None if v is None else _primitive(int(v.scaleb(scale)), value_type) for v in values]
    return values


def table_column_ranges(
    file_name: str, rows: pa.Table, columns: Sequence[str]
) -> list[ColumnRange]:
    """The ranges of ``columns`` over records (a log file's data records, read without merging,
    as Hudi reads them for column stats): value count = records, sizes 0 (Hudi does not mix
    sizes of log blocks with Parquet's). A table without columns (a log file of delete blocks
    only) gives every column an empty range."""
    if rows.num_columns == 0:  # a log file without data blocks: no values in any column
        return [ColumnRange(file_name, c, "NULL", None, None, None, 0, 0, 0, 0) for c in columns]
    ranges = []
    for name in columns:
        if name not in rows.column_names:
            continue
        column = rows.column(name)
        value_type, type_info = _arrow_value_type(column.type)
        present = [v for v in _physical(column, value_type) if v is not None]
        key = _java_key(value_type)
        ranges.append(
            ColumnRange(
                file_name,
                name,
                value_type,
                type_info,
                min(present, key=key) if present else None,
                max(present, key=key) if present else None,
                rows.num_rows - len(present),
                rows.num_rows,
                0,
                0,
            )
        )
    return ranges
