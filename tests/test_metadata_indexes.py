"""Index records of Hudi's metadata table recomputed from the fixtures' Hudi-written data files
equal what Hudi stored (record_index, column_stats, partition_stats, secondary_index_*)."""

from __future__ import annotations

import json
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_sync.errors import BadInputError
from hudi_sync.table.metadata_table import column_stats, index_keys, indexes
from hudi_sync.table.metadata_table.reader import MetadataTableReader
from hudi_sync.table.slice_reader import read_file_slice
from hudi_sync.table.snapshot_read import slice_merge_rules, snapshot_schema
from hudi_sync.table.metadata_table.records import (
    MetadataRecord,
    decode_value,
    encode_value,
    parsed_schema,
)
from hudi_sync.table.table import HudiTable
from tests.fixture_tables import FixtureTable, fixture_tables

# record_index stores instant times as epoch millis read in the writer JVM's zone, which the
# second comment line of hoodie.properties names (Java's Date.toString: "#Sat Mar 07 16:24:59
# CST 2026").
_ZONES = {"CST": "America/Chicago", "CDT": "America/Chicago", "UTC": "UTC"}


def _writer_zone(base: Path) -> ZoneInfo:
    stamp = (base / ".hoodie" / "hoodie.properties").read_text().splitlines()[1]
    return ZoneInfo(_ZONES[stamp.split()[-2]])


def _has_mdt(table: FixtureTable) -> bool:
    with zipfile.ZipFile(table.zip_path) as archive:
        return any("/.hoodie/metadata/.hoodie/" in name for name in archive.namelist())


def _has_secondary_index(table: FixtureTable) -> bool:
    with zipfile.ZipFile(table.zip_path) as archive:
        return any("/.hoodie/metadata/secondary_index_" in name for name in archive.namelist())


MDT_FIXTURES = [t for t in fixture_tables() if _has_mdt(t)]
SECONDARY_FIXTURES = [t for t in MDT_FIXTURES if _has_secondary_index(t)]


def _properties(base: Path) -> dict[str, str]:
    pairs = {}
    for line in (base / ".hoodie" / "hoodie.properties").read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            pairs[key] = value.replace("\\:", ":").replace("\\=", "=")
    return pairs


def _partitions(base: Path) -> list[str]:
    return _properties(base).get("hoodie.table.metadata.partitions", "").split(",")


def _stats_columns(base: Path) -> tuple[list[str], int]:
    """The indexed columns and the column stats index version."""
    definitions = base / ".hoodie" / ".index_defs" / "index.json"
    parsed = indexes.parse_index_definitions(definitions.read_text(), str(definitions))
    assert parsed.column_stats_fields is not None
    return list(parsed.column_stats_fields), parsed.column_stats_version


def _listed_files(mdt: MetadataTableReader) -> dict[str, list[str]]:
    """Data partition -> files the ``files`` partition lists (every file on storage)."""
    records = mdt.read_partition("files")
    return {
        ("" if key == "." else key): sorted(record.live_files())
        for key, record in records.items()
        if key != "__all_partitions__"
    }


def _file_path(base: Path, partition: str, name: str) -> Path:
    return base / partition / name if partition else base / name


@pytest.mark.parametrize("fixture", MDT_FIXTURES, ids=lambda t: t.id)
def test_column_stats_equal_hudis(fixture: FixtureTable, unpack_table: Any) -> None:
    """Every base file the table lists: each indexed column's record equals Hudi's, all fields
    (min/max in their wrappers, counts, sizes, value type)."""
    base = unpack_table(fixture)
    if "column_stats" not in _partitions(base):
        pytest.fail(f"{fixture.name} has no column_stats partition")
    mdt = MetadataTableReader(HudiTable.open(str(base)))
    stored = mdt.read_partition("column_stats")
    columns, version = _stats_columns(base)
    computed: dict[str, MetadataRecord] = {}
    log_files = []
    for partition, names in _listed_files(mdt).items():
        for name in names:
            if not name.endswith(".parquet"):
                log_files.append(name)
                continue
            footer = pq.ParquetFile(_file_path(base, partition, name)).metadata
            for item in column_stats.parquet_column_ranges(name, footer, columns):
                record = column_stats.column_stats_record(partition, item, version=version)
                computed[record.key] = record
    stored_base = {
        k: r
        for k, r in stored.items()
        if r.column_stats is not None and r.column_stats.file_name.endswith(".parquet")
    }
    assert computed.keys() == stored_base.keys()
    for key, record in computed.items():
        assert record == stored_base[key], key
    assert len(computed) > 0


def _base_instant(name: str) -> str:
    return name.rsplit("_", 1)[1].split(".")[0]


@pytest.mark.parametrize("fixture", MDT_FIXTURES, ids=lambda t: t.id)
def test_partition_stats_equal_hudis(fixture: FixtureTable, unpack_table: Any) -> None:
    """Each partition's stats are recomputed by the last write to it, over the base files of
    the snapshot before that write with the write's new files put in: so a clustering's stats
    still count the file groups it replaced (the fixtures' clustered partitions show it)."""
    base = unpack_table(fixture)
    if "partition_stats" not in _partitions(base):
        pytest.fail(f"{fixture.name} has no partition_stats partition")
    table = HudiTable.open(str(base))
    mdt = MetadataTableReader(table)
    stored = mdt.read_partition("partition_stats")
    columns, version = _stats_columns(base)
    writes = [i.requested_time for i in table.completed_commits()]
    computed = {}
    for partition, names in _listed_files(mdt).items():
        last = max(_base_instant(n) for n in names if n.endswith(".parquet"))
        before = writes[writes.index(last) - 1] if writes.index(last) else None
        newest = {
            s.file_id: s.base_file.name
            for s in (table.view.slices_as_of(before) if before else [])
            if s.partition_path == partition and s.base_file is not None
        }
        newest.update({n.split("_")[0]: n for n in names if _base_instant(n) == last})
        ranges = []
        for name in sorted(newest.values()):
            footer = pq.ParquetFile(_file_path(base, partition, name)).metadata
            ranges.extend(column_stats.parquet_column_ranges(name, footer, columns))
        for item in column_stats.partition_ranges(partition, ranges):
            record = column_stats.partition_stats_record(item, version=version)
            computed[record.key] = record
    assert computed.keys() == stored.keys()
    for key, record in computed.items():
        assert record == stored[key], key


def _slice_rows(table: HudiTable, as_of: str | None) -> list[tuple[str, str, pa.Table]]:
    """(partition, file id, merged rows) of each file slice of the snapshot as of ``as_of``."""
    slices = table.view.slices_as_of(as_of)
    rules = slice_merge_rules(table, slices)
    schema = snapshot_schema(table, slices)
    return [
        (
            s.partition_path,
            s.file_id,
            read_file_slice(table.location, s, rules, table.view.is_committed, as_of, schema),
        )
        for s in slices
    ]


def _locations(table: HudiTable, as_of: str | None) -> dict[str, tuple[str, str]]:
    return {
        key: (partition, file_id)
        for partition, file_id, rows in _slice_rows(table, as_of)
        for key in rows.column("_hoodie_record_key").to_pylist()
    }


@pytest.mark.parametrize("fixture", MDT_FIXTURES, ids=lambda t: t.id)
def test_record_index_equals_hudis(fixture: FixtureTable, unpack_table: Any) -> None:
    """Every live key maps to its file group, with the instant of the write that put it there
    (the first of the latest run of snapshots in which the key sat in that file group); each
    key sits in the record_index file group Hudi's hash picks."""
    base = unpack_table(fixture)
    if "record_index" not in _partitions(base):
        pytest.fail(f"{fixture.name} has no record_index partition")
    table = HudiTable.open(str(base))
    mdt = MetadataTableReader(table)
    stored = mdt.read_partition("record_index")
    zone = _writer_zone(base)
    writes = [i.requested_time for i in table.completed_commits()]
    history = [_locations(table, instant) for instant in writes]
    computed: dict[str, MetadataRecord] = {}
    for key, (partition, file_id) in history[-1].items():
        step = len(writes) - 1
        while step > 0 and history[step - 1].get(key) == (partition, file_id):
            step -= 1
        (computed[key],) = indexes.record_index_records(
            [key], partition, file_id, writes[step], zone
        )
    assert computed == stored
    slices = mdt.partition_slices("record_index")
    for position, file_slice in enumerate(slices):
        for key in mdt._read_slice(file_slice, None):
            assert index_keys.file_group_index(key, len(slices)) == position, key


@pytest.mark.parametrize("fixture", SECONDARY_FIXTURES, ids=lambda t: t.id)
def test_secondary_indexes_equal_hudis(fixture: FixtureTable, unpack_table: Any) -> None:
    base = unpack_table(fixture)
    definitions_path = base / ".hoodie" / ".index_defs" / "index.json"
    names = [p for p in _partitions(base) if p.startswith("secondary_index_")]
    definitions = indexes.parse_index_definitions(
        definitions_path.read_text(), str(definitions_path)
    )
    assert sorted(i.name for i in definitions.secondary_indexes) == sorted(names)
    table = HudiTable.open(str(base))
    mdt = MetadataTableReader(table)
    rows = _slice_rows(table, None)
    for index in definitions.secondary_indexes:
        stored = mdt.read_partition(index.name)
        computed = {
            r.key: r
            for _, _, table_rows in rows
            for r in indexes.secondary_index_records(table_rows, index)
        }
        assert computed == stored
        slices = mdt.partition_slices(index.name)
        for position, file_slice in enumerate(slices):
            for key in mdt._read_slice(file_slice, None):
                assert (
                    index_keys.secondary_file_group_index(key, len(slices), index.version)
                    == position
                ), key
