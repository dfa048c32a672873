"""Keeping the metadata table's ``column_stats`` and ``partition_stats`` current on writes.

What Hudi 1.x writes (``HoodieTableMetadataUtil``, ``HoodieBackedTableMetadataWriter``):
- a commit (any action, a compaction's too): ``column_stats`` records of every file it
  wrote, for the indexed columns (``getColumnsToIndex`` over the index definition's source
  fields): a base file's from its Parquet footer, a log file's from its data records;
- ``partition_stats`` (``convertMetadataToPartitionStatRecords``): for each partition the
  commit touches, one tight-bound record per column recomputed over the ``column_stats``
  the metadata table holds for the files of the partition's latest file slices (the
  snapshot before the commit; a file group the commit rewrites starts a new slice) plus the
  commit's own files; replaced file groups still count until a later write. A
  ``delete_partition`` tombstones the dropped partitions' records (a stub per column);
- a clean (``convertMetadataToColumnStatsRecords`` of clean metadata): a deleted stub per
  indexed column for every file it deleted; partition stats are left as they are.
A rolled-back write needs nothing here: its metadata deltacommit is rolled back with it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError
from hudi_sync.storage import Location
from hudi_sync.table.config.schema import parse_avro_schema
from hudi_sync.table.metadata_table import column_stats, index_keys
from hudi_sync.table.metadata_table.column_stats import VALUE_TYPES, ColumnRange
from hudi_sync.table.metadata_table.reader import MetadataTableReader
from hudi_sync.table.metadata_table.records import ColumnStats, MetadataRecord, MetadataType
from hudi_sync.table.records.logfile import BlockType, read_blocks
from hudi_sync.table.table import HudiTable
from hudi_sync.table.write.metadata_table.codec import HudiRecordCodec
from hudi_sync.table.write.metadata_table.indexes import (
    columns_to_index,
    index_definitions_path,
    read_index_definitions,
)
from hudi_sync.table.write.metadata_table.writer import FileGroupRecords
from hudi_sync.table.write.timeline import CommitRecord

COLUMN_STATS = "column_stats"
PARTITION_STATS = "partition_stats"
STATS_PARTITIONS = frozenset({COLUMN_STATS, PARTITION_STATS})
DELETE_PARTITION = "delete_partition"
# Index version 1 records carry no value type: the wrapper names it.
_V1_TYPES = {
    "BooleanWrapper": "BOOLEAN", "IntWrapper": "INT", "LongWrapper": "LONG",
    "FloatWrapper": "FLOAT", "DoubleWrapper": "DOUBLE", "StringWrapper": "STRING",
    "DateWrapper": "DATE",
}  # fmt: skip


def stats_indexes(location: Location, metadata_partitions: Sequence[str]) -> list[StatsIndex]:
    """The provider keeping the table's stats partitions current (none when it has none)."""
    kept = STATS_PARTITIONS.intersection(metadata_partitions)
    if not kept:
        return []
    if COLUMN_STATS not in kept:
        raise BadInputError(
            f"{location.uri}: the metadata table keeps {PARTITION_STATS} without "
            f"{COLUMN_STATS}, which Hudi computes it from; disable it with "
            f"{cfg.METADATA_PARTITION_STATS.key}=false"
        )
    return [StatsIndex(location, frozenset(kept))]


class StatsIndex:
    """An ``IndexRecords`` provider for ``column_stats`` (and ``partition_stats``)."""

    def __init__(self, location: Location, partitions: frozenset[str]) -> None:
        self.location = location
        self._partitions = partitions

    @property
    def partitions(self) -> frozenset[str]:
        return self._partitions

    # -- what the table says ---------------------------------------------------------
    def _table(self) -> HudiTable:
        return HudiTable.open(self.location.uri, self.location.storage_options)

    def _definitions(self, table: HudiTable) -> tuple[tuple[str, ...], int]:
        """The column stats definition's source fields and index version."""
        relative = index_definitions_path(table.config.raw)
        parsed = read_index_definitions(self.location, table.config.raw)
        if parsed is None:
            raise BadInputError(
                f"{self.location.uri}: the metadata table keeps {COLUMN_STATS} but {relative} "
                "is missing (its indexed columns are unknown)"
            )
        if parsed.column_stats_fields is None:
            raise BadInputError(
                f"{self.location.uri_of(relative)}: no column_stats index definition"
            )
        return parsed.column_stats_fields, parsed.column_stats_version

    def _columns(self, table: HudiTable, schema: Mapping[str, Any]) -> tuple[list[str], int]:
        fields, version = self._definitions(table)
        chosen = columns_to_index(schema, table.config.populate_meta_fields, fields)
        return chosen, version

    def _file_groups(self, table: HudiTable, partition: str) -> list[str]:
        """The MDT partition's file group ids, sorted (a key's hash picks one)."""
        slices = MetadataTableReader.of(table).partition_slices(partition)
        ids = sorted({s.file_id for s in slices})
        if not ids:
            raise BadInputError(
                f"{self.location.uri}: metadata table partition {partition} has no file groups"
            )
        return ids

    def _grouped(
        self, table: HudiTable, partition: str, records: Sequence[MetadataRecord]
    ) -> list[FileGroupRecords]:
        if not records:
            return []
        ids = self._file_groups(table, partition)
        by_group: dict[str, dict[str, MetadataRecord]] = {}
        for record in records:
            group = ids[index_keys.file_group_index(record.key, len(ids))]
            by_group.setdefault(group, {})[record.key] = record
        codec = HudiRecordCodec(table.config.version)
        return [
            FileGroupRecords(partition, group, codec.encode(list(chosen.values())))
            for group, chosen in sorted(by_group.items())
        ]

    # -- one file's ranges -----------------------------------------------------------
    def _file_ranges(self, partition: str, name: str, columns: Sequence[str]) -> list[ColumnRange]:
        relative = posixpath.join(partition, name) if partition else name
        data = self.location.read_file(self.location.join(relative))
        if name.endswith(".parquet"):
            return column_stats.parquet_column_ranges(name, data, columns)
        if ".log." in name:
            rows = _log_rows(data, self.location.uri_of(relative))
            return column_stats.table_column_ranges(name, rows, columns)
        raise BadInputError(
            f"{self.location.uri_of(relative)}: no column statistics for this kind of file"
        )

    # -- IndexRecords ----------------------------------------------------------------
    def for_commit(self, instant: str, action: str, commit: CommitRecord) -> list[FileGroupRecords]:
        table = self._table()
        schema = (
            parse_avro_schema(commit.schema, f"{self.location.uri}: {instant}")
            if commit.schema
            else table.avro_schema
        )
        columns, version = self._columns(table, schema)
        written: dict[str, dict[str, list[ColumnRange]]] = {}
        for stat in commit.stats:
            files = written.setdefault(stat.partition_path, {})
            if stat.path:
                name = posixpath.basename(stat.path)
                if name not in files:
                    files[name] = self._file_ranges(stat.partition_path, name, columns)
        file_records = [
            column_stats.column_stats_record(partition, item, version=version)
            for partition, files in written.items()
            for ranges in files.values()
            for item in ranges
        ]
        groups = self._grouped(table, COLUMN_STATS, file_records)
        if PARTITION_STATS in self._partitions:
            if commit.operation.lower() == DELETE_PARTITION:
                records = _dropped_partition_records(commit.replaced_file_ids, columns, version)
            else:
                records = self._partition_records(table, instant, written, columns, version)
            groups += self._grouped(table, PARTITION_STATS, records)
        return groups

    def _partition_records(
        self,
        table: HudiTable,
        instant: str,
        written: Mapping[str, Mapping[str, list[ColumnRange]]],
        columns: Sequence[str],
        version: int,
    ) -> list[MetadataRecord]:
        """Each touched partition's stats over its latest slices with the commit's files."""
        touched = {p: files for p, files in written.items() if files}
        if not touched:
            return []
        slices: dict[str, dict[str, list[str]]] = {p: {} for p in touched}
        for s in table.view.slices_as_of(None):
            if s.partition_path in touched:
                names = [s.base_file.name] if s.base_file is not None else []
                names += [log.name for log in s.log_files if log.instant != instant]
                slices[s.partition_path][s.file_id] = names
        stored = MetadataTableReader.of(table).read_partition(COLUMN_STATS)
        records = []
        for partition, files in touched.items():
            groups = slices[partition]
            old_names = {n for names in groups.values() for n in names} - set(files)
            for name in files:  # a new base file starts its file group's slice
                if name.endswith(".parquet"):
                    old_names -= set(groups.get(_file_id(name), []))
            ranges = [column_stats.as_stored(r, version) for rs in files.values() for r in rs]
            for name in sorted(old_names):
                for column in columns:
                    key = index_keys.column_stats_key(partition, name, column)
                    record = stored.get(key)
                    stats = None if record is None else record.column_stats
                    if stats is not None and not stats.is_deleted:
                        ranges.append(_range_of(stats, key))
            for item in _partition_ranges(partition, ranges):
                records.append(column_stats.partition_stats_record(item, version=version))
        return records

    def for_clean(
        self, instant: str, deleted: Mapping[str, Sequence[str]]
    ) -> list[FileGroupRecords]:
        if not any(deleted.values()):
            return []
        table = self._table()
        columns, _ = self._columns(table, table.avro_schema)
        records = [
            record
            for partition, paths in deleted.items()
            for path in paths
            for record in column_stats.deleted_column_stats_records(
                partition, posixpath.basename(path), columns
            )
        ]
        return self._grouped(table, COLUMN_STATS, records)


def _file_id(name: str) -> str:
    """A data file's file group: ``<id>_<token>_<instant>.parquet`` or ``.<id>_<instant>.log.*``."""
    return name[1:].split("_", 1)[0] if name.startswith(".") else name.split("_", 1)[0]


def _log_rows(data: bytes, where: str) -> pa.Table:
    """A log file's data records, unmerged (as Hudi reads a log file for column stats)."""
    tables = []
    for block in read_blocks(data, where):
        if block.block_type in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA):
            if block.block_type == BlockType.PARQUET_DATA:
                raise BadInputError(f"{where}: column stats of Parquet log blocks are not computed")
            columns = block.avro_columns()
            if columns is None:
                raise BadInputError(f"{where}: a data block whose types column stats cannot read")
            tables.append(pa.Table.from_struct_array(columns))
    return pa.concat_tables(tables, promote_options="default") if tables else pa.table({})


def _range_of(stats: ColumnStats, key: str) -> ColumnRange:
    """A stored column_stats record as the range ``partition_ranges`` combines."""
    low, high = stats.min_value, stats.max_value
    if stats.value_type is not None:
        value_type, type_info = VALUE_TYPES[stats.value_type[0]], stats.value_type[1]
    else:
        wrappers = {w.wrapper for w in (low, high) if w is not None}
        kinds = {_V1_TYPES.get(w, "") for w in wrappers}
        if "" in kinds or len(kinds) > 1:
            raise BadInputError(
                f"column_stats record {key!r}: index version 1 bounds of {sorted(wrappers)} "
                "are not combined into partition stats here"
            )
        value_type, type_info = (kinds.pop() if kinds else "NULL"), None
    return ColumnRange(
        stats.file_name or "",
        stats.column_name or "",
        value_type or "NULL",
        type_info,
        None if low is None else low.value,
        None if high is None else high.value,
        stats.null_count or 0,
        stats.value_count or 0,
        stats.total_size or 0,
        stats.total_uncompressed_size or 0,
    )


def _partition_ranges(partition: str, ranges: Sequence[ColumnRange]) -> list[ColumnRange]:
    """``partition_ranges``, where a range without a value type (a log file of deletes only,
    counts 0; an index version 1 record of a file whose values of the column are all null,
    which has no bounds to tell its type) adds its counts to the typed ranges of the column,
    as Hudi sums the counts of every file's range."""
    typed: dict[str, tuple[str, str | None]] = {}
    for item in ranges:
        if item.value_type != "NULL":
            typed.setdefault(item.column, (item.value_type, item.type_info))
    kept = [
        replace(r, value_type=typed[r.column][0], type_info=typed[r.column][1])
        if r.value_type == "NULL" and r.column in typed
        else r
        for r in ranges
    ]
    return column_stats.partition_ranges(partition, kept)


def _dropped_partition_records(
    replaced: Mapping[str, Sequence[str]], columns: Sequence[str], version: int
) -> list[MetadataRecord]:
    """A ``delete_partition``: a tight-bound deleted stub (no file name, no bounds, counts
    -1) per column of each dropped partition."""
    records = []
    for partition in replaced:
        for column in columns:
            stub = ColumnRange("", column, "NULL", None, None, None, -1, -1, -1, -1)
            stats = column_stats.column_stats_of(stub, True, True, version)
            key = index_keys.partition_stats_key(partition, column)
            records.append(MetadataRecord(key, MetadataType.PARTITION_STATS, column_stats=stats))
    return records
