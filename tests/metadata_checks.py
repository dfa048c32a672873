"""Checks of the metadata table against the data table, shared by the write tests.

``files`` against a direct storage listing; the readers (our core, hudi-rs) against a
model of rows; ``record_index`` / ``secondary_index_*`` against a model moved forward
write by write (``IndexModel``); ``column_stats`` / ``partition_stats`` against the
records recomputed from the files (``StatsModel``).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from hudi_sync.table import HudiTable
from hudi_sync.table.metadata_table import column_stats, index_keys
from hudi_sync.table.metadata_table.column_stats import ColumnRange
from hudi_sync.table.metadata_table.hfile_reader import read_hfile
from hudi_sync.table.metadata_table.reader import MetadataTableReader
from hudi_sync.table.metadata_table.records import (
    ALL_PARTITIONS_KEY,
    MetadataRecord,
    decode_records,
)
from hudi_sync.table.read.slice_reader import read_file_slice
from hudi_sync.table.read.snapshot import read_snapshot, slice_merge_rules, snapshot_schema
from hudi_sync.table.records.logfile import BlockType, read_blocks
from hudi_sync.table.write.metadata_table import indexes
from hudi_sync.table.write.metadata_table.indexes import columns_to_index, parse_index_definitions
from tests.warehouse_rows import hudi_rs_rows

MDT_FIXTURES = [
    "mor/avro/v8_trips_8i3u1d",
    "cow/v9_txns_simple_meta",
    "mor/avro/v9_txns_simple_meta",
]


def mdt_files(path: Path) -> tuple[list[str], dict[str, list[str]]]:
    """The metadata table's partition list and ``partition -> files`` (merged, valid)."""
    records = MetadataTableReader.of(HudiTable.open(str(path))).read_partition("files")
    partitions = sorted(records.pop(ALL_PARTITIONS_KEY).live_files())
    return partitions, {k: sorted(r.live_files()) for k, r in records.items() if r.live_files()}


def listed_files(path: Path, skip_instant: str | None = None) -> dict[str, list[str]]:
    """A direct listing: ``partition -> data files`` (``.`` for a non-partitioned
    table), without the files of ``skip_instant`` (a failed write's)."""
    found: dict[str, list[str]] = {}
    for file in path.rglob("*"):
        relative = file.relative_to(path)
        if file.is_dir() or relative.parts[0] == ".hoodie":
            continue
        if file.name == ".hoodie_partition_metadata":
            continue
        if skip_instant and f"_{skip_instant}." in file.name:
            continue
        partition = "/".join(relative.parts[:-1]) or "."
        found.setdefault(partition, []).append(file.name)
    return {p: sorted(names) for p, names in found.items()}


def rows_by_key(source: pa.Table, key: str) -> dict[str, dict[str, Any]]:
    return {
        r[key]: {c: v for c, v in r.items() if not c.startswith("_hoodie_")}
        for r in source.to_pylist()
    }


def assert_readers_agree(path: Path, key: str, model: dict[str, dict[str, Any]]) -> None:
    ours = rows_by_key(read_snapshot(HudiTable.open(str(path))), key)
    theirs = rows_by_key(hudi_rs_rows(str(path)), key)
    assert sorted(ours) == sorted(model) == sorted(theirs)
    for k, row in model.items():
        assert {c: ours[k][c] for c in row} == row
        assert {c: theirs[k][c] for c in row} == row


def check_files_step(path: Path, key: str, model: dict[str, dict[str, Any]], instant: str) -> None:
    """After the write ``instant``: the readers equal ``model`` and ``files`` the listing."""
    assert_readers_agree(path, key, model)
    assert_files_partition(path, instant)


def assert_files_partition(
    path: Path, instant: str | None, skip_instant: str | None = None
) -> None:
    """``files`` (partition list and files) equals a direct listing (without the files of
    ``skip_instant``, a write that did not complete); the metadata deltacommit of the
    data instant ``instant`` has its time and completed first."""
    partitions, files = mdt_files(path)
    assert files == listed_files(path, skip_instant)
    created = [
        "/".join(p.parent.relative_to(path).parts) or "."
        for p in path.rglob(".hoodie_partition_metadata")
        if ".hoodie" not in p.parent.relative_to(path).parts
    ]
    assert partitions == sorted(created)
    if instant is None:
        return
    table = HudiTable.open(str(path))
    data = next(i for i in table.timeline.completed_writes if i.requested_time == instant)
    mdt = MetadataTableReader.of(table).timeline
    (delta,) = [i for i in mdt.instants if i.requested_time == instant and i.is_completed]
    assert delta.action == "deltacommit" and delta.completion_time < data.completion_time


def write_options(table: HudiTable, operation: str, **extra: str) -> dict[str, str]:
    """The Spark writer's options for ``table`` (its own key, partition and ordering
    fields), every metadata partition kept unless ``extra`` disables it."""
    config = table.config
    return {
        "hoodie.table.name": config.name,
        "hoodie.datasource.write.recordkey.field": ",".join(config.record_key_fields),
        "hoodie.datasource.write.partitionpath.field": ",".join(config.partition_fields),
        "hoodie.datasource.write.hive_style_partitioning": str(
            config.hive_style_partitioning
        ).lower(),
        "hoodie.datasource.write.precombine.field": config.ordering_fields[0],
        "hoodie.datasource.write.table.type": config.table_type.value,
        "hoodie.datasource.write.operation": operation,
        **extra,
    }


def index_definitions(path: Path) -> indexes.IndexDefinitions:
    where = path / ".hoodie" / ".index_defs" / "index.json"
    return indexes.parse_index_definitions(where.read_text(), str(where))


def _snapshot(path: Path) -> tuple[dict[str, tuple[str, str]], set[str], list[Any]]:
    """The snapshot's key -> (partition, file id), and each slice's merged rows."""
    table = HudiTable.open(str(path))
    slices = table.view.slices_as_of(None)
    rules = slice_merge_rules(table, slices)
    schema = snapshot_schema(table, slices)
    locations: dict[str, tuple[str, str]] = {}
    all_rows = []
    for s in slices:
        rows = read_file_slice(table.location, s, rules, table.view.is_committed, None, schema)
        all_rows.append(rows)
        for key in rows.column("_hoodie_record_key").to_pylist():
            assert key not in locations, f"{key} in two file groups"
            locations[key] = (s.partition_path, s.file_id)
    return locations, set(locations), all_rows


def _assert_in_hashed_groups(mdt: MetadataTableReader, partition: str, version: int) -> None:
    slices = mdt.partition_slices(partition)
    for position, file_slice in enumerate(slices):
        for key in mdt._read_slice(file_slice, None):
            if partition == "record_index":
                assert index_keys.file_group_index(key, len(slices)) == position, key
            else:
                hashed = index_keys.secondary_file_group_index(key, len(slices), version)
                assert hashed == position, key


class IndexModel:
    """The record index we expect: key -> record, moved forward write by write."""

    def __init__(self, path: Path) -> None:
        self.path = path
        table = HudiTable.open(str(path))
        self.records: dict[str, MetadataRecord] = MetadataTableReader.of(table).read_partition(
            "record_index"
        )
        self.locations, keys, _ = _snapshot(path)
        assert set(self.records) == keys  # Hudi's index to start from is whole

    def check(self, instant: str) -> None:
        """After the write ``instant``: the model moved forward equals what is stored."""
        locations, keys, rows = _snapshot(self.path)
        for key in set(self.records) - keys:
            del self.records[key]
        for key, (partition, file_id) in locations.items():
            if self.locations.get(key) != (partition, file_id):
                (self.records[key],) = indexes.record_index_records(
                    [key], partition, file_id, instant, dt.UTC
                )
        self.locations = locations
        table = HudiTable.open(str(self.path))
        mdt = MetadataTableReader.of(table)
        stored = mdt.read_partition("record_index")
        assert stored == self.records
        _assert_in_hashed_groups(mdt, "record_index", 0)
        for index in index_definitions(self.path).secondary_indexes:
            expected = {
                r.key
                for table_rows in rows
                for r in indexes.secondary_index_records(table_rows, index)
            }
            assert set(mdt.read_partition(index.name)) == expected, index.name
            _assert_in_hashed_groups(mdt, index.name, index.version)
        # hudi-rs (listing through the metadata table) reads the rows our table core reads.
        ours = read_snapshot(table).column("_hoodie_record_key").to_pylist()
        theirs = hudi_rs_rows(str(self.path)).column("_hoodie_record_key").to_pylist()
        assert sorted(ours) == sorted(theirs) == sorted(keys)


Slices = dict[str, dict[str, list[str]]]  # partition -> file id -> file names


def indexed_columns(path: Path) -> tuple[list[str], int]:
    """The indexed columns (index.json's source fields over the latest schema), index version."""
    definitions = path / ".hoodie/.index_defs/index.json"
    parsed = parse_index_definitions(definitions.read_text(), str(definitions))
    assert parsed.column_stats_fields is not None
    schema = HudiTable.open(str(path)).avro_schema
    return columns_to_index(schema, True, parsed.column_stats_fields), parsed.column_stats_version


def _log_rows(file: Path) -> pa.Table:
    tables = []
    for block in read_blocks(file.read_bytes(), str(file)):
        if block.block_type == BlockType.AVRO_DATA:
            columns = block.avro_columns()
            assert columns is not None
            tables.append(pa.Table.from_struct_array(columns))
    return pa.concat_tables(tables) if tables else pa.table({})


def file_ranges(path: Path, partition: str, name: str, columns: list[str]) -> list[ColumnRange]:
    """One file's ranges recomputed from the file itself."""
    file = path / partition / name if partition and partition != "." else path / name
    if name.endswith(".parquet"):
        return column_stats.parquet_column_ranges(name, pq.ParquetFile(file).metadata, columns)
    return column_stats.table_column_ranges(name, _log_rows(file), columns)


def _latest_slices(path: Path) -> Slices:
    slices: Slices = {}
    for s in HudiTable.open(str(path)).view.slices_as_of(None):
        names = [s.base_file.name] if s.base_file is not None else []
        slices.setdefault(s.partition_path, {})[s.file_id] = names + [
            log.name for log in s.log_files
        ]
    return slices


def _file_id(name: str) -> str:
    return name[1:].split("_", 1)[0] if name.startswith(".") else name.split("_", 1)[0]


def _check_column_stats(path: Path, columns: list[str], version: int) -> dict[str, Any]:
    """Stored column_stats (tombstones aside) equal the records of every file on storage,
    recomputed."""
    merged = MetadataTableReader.of(HudiTable.open(str(path))).read_partition("column_stats")
    stored = {
        k: r for k, r in merged.items() if r.column_stats is None or not r.column_stats.is_deleted
    }
    computed = {}
    for partition, names in listed_files(path).items():
        data_partition = "" if partition == "." else partition
        for name in names:
            for item in file_ranges(path, data_partition, name, columns):
                record = column_stats.column_stats_record(data_partition, item, version=version)
                computed[record.key] = record
    assert sorted(computed) == sorted(stored)
    for key, record in computed.items():
        assert stored[key] == record, key
    return stored


def _partition_aggregate(partition: str, ranges: list[ColumnRange]) -> list[ColumnRange]:
    typed = {r.column for r in ranges if r.value_type != "NULL"}
    return column_stats.partition_ranges(
        partition, [r for r in ranges if r.value_type != "NULL" or r.column not in typed]
    )


class StatsModel:
    """What the stats partitions must hold, updated write by write from the files."""

    def __init__(self, path: Path) -> None:
        self.path = path
        table = HudiTable.open(str(path))
        self.partition_stats = dict(MetadataTableReader.of(table).read_partition("partition_stats"))
        self.columns, self.version = indexed_columns(path)

    def before_write(self) -> None:
        self.slices = _latest_slices(self.path)
        self.slice_ranges = {
            (p, name): file_ranges(self.path, p, name, self.columns)
            for p, groups in self.slices.items()
            for names in groups.values()
            for name in names
        }
        self.files = listed_files(self.path)

    def after_write(self, instant: str, clean: str | None) -> None:
        table = HudiTable.open(str(self.path))
        (done,) = [i for i in table.timeline.completed_writes if i.requested_time == instant]
        metadata = table.timeline.commit_metadata(done)
        stats = metadata.write_stats
        if (metadata.operation_type or "").lower() == "delete_partition":
            self._tombstone_partitions(table, list(metadata.partition_to_replace_file_ids))
        written: dict[str, set[str]] = {}
        for stat in stats:
            if stat.path:
                written.setdefault(stat.partition_path, set()).add(stat.path.rsplit("/", 1)[-1])
        self.columns, self.version = indexed_columns(self.path)
        stored = _check_column_stats(self.path, self.columns, self.version)
        for partition, names in written.items():  # each written file has its stats
            for name in names:
                keys = {
                    index_keys.column_stats_key(partition, name, r.column)
                    for r in file_ranges(self.path, partition, name, self.columns)
                }
                assert keys and keys <= stored.keys(), name
        for partition, names in written.items():
            groups = {f: list(n) for f, n in self.slices.get(partition, {}).items()}
            for name in sorted(names):
                if name.endswith(".parquet"):
                    groups[_file_id(name)] = [name]
                else:
                    groups.setdefault(_file_id(name), []).append(name)
            ranges = [
                item
                for group in groups.values()
                for name in group
                for item in (
                    file_ranges(self.path, partition, name, self.columns)
                    if name in names
                    else self.slice_ranges[(partition, name)]
                )
            ]
            for item in _partition_aggregate(partition, ranges):
                record = column_stats.partition_stats_record(item, version=self.version)
                self.partition_stats[record.key] = record
        stored_partitions = MetadataTableReader.of(table).read_partition("partition_stats")
        assert sorted(stored_partitions) == sorted(self.partition_stats)
        for key, record in self.partition_stats.items():
            assert stored_partitions[key] == record, (key, stored_partitions[key], record)
        if clean is not None:
            self._check_tombstones(clean)

    def _tombstone_partitions(self, table: HudiTable, dropped: list[str]) -> None:
        """A ``delete_partition``: Hudi's stub (deleted, no bounds, counts -1) for each
        column of each dropped partition stands in its partition stats."""
        stored = MetadataTableReader.of(table).read_partition("partition_stats")
        for partition in dropped:
            for column in self.columns:
                key = index_keys.partition_stats_key(partition, column)
                stats = stored[key].column_stats
                assert stats is not None and stats.is_deleted, key
                assert stats.value_count == -1 and stats.min_value is None, key
                assert stats.max_value is None and stats.file_name == "", key
                self.partition_stats[key] = stored[key]

    def check_unchanged(self) -> None:
        """After a write that did not complete: column_stats still equal the committed
        files' records and partition_stats are as they were."""
        stored_files = listed_files(self.path)
        assert stored_files == self.files, "a failed write left files behind"
        _check_column_stats(self.path, self.columns, self.version)
        table = HudiTable.open(str(self.path))
        stored = MetadataTableReader.of(table).read_partition("partition_stats")
        assert stored == self.partition_stats

    def _check_tombstones(self, clean: str) -> None:
        """The clean's metadata deltacommit holds Hudi's stub for each column of each file
        it deleted, and only those."""
        after = listed_files(self.path)
        deleted = {
            (partition, name)
            for partition, names in self.files.items()
            for name in names
            if name not in after.get(partition, [])
        }
        assert deleted, "the clean deleted no file"
        records: list[MetadataRecord] = []
        for log in (self.path / ".hoodie/metadata/column_stats").glob(f".*_{clean}.log.*"):
            for block in read_blocks(log.read_bytes(), str(log)):
                records += decode_records(read_hfile(block.content, str(log)), str(log))
        expected = {
            index_keys.column_stats_key("" if p == "." else p, name, column)
            for p, name in deleted
            for column in self.columns
        }
        assert {r.key for r in records} == expected
        for record in records:
            assert record.column_stats is not None and record.column_stats.is_deleted
            assert record.column_stats.value_count == -1 and record.column_stats.min_value is None
