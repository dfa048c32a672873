"""Index records of Hudi's metadata table recomputed from the fixtures' Hudi-written data files
equal what Hudi stored (record_index, column_stats, partition_stats, secondary_index_*)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_sync.errors import BadInputError
from hudi_sync.table.metadata_table import column_stats, index_keys
from hudi_sync.table.metadata_table.reader import MetadataTableReader
from hudi_sync.table.metadata_table.records import (
    MetadataRecord,
    decode_value,
    encode_value,
    metadata_schema,
    parse_writer_schema,
)
from hudi_sync.table.read.slice_reader import read_file_slice
from hudi_sync.table.read.snapshot import slice_merge_rules, snapshot_schema
from hudi_sync.table.records.logfile import BlockType, read_blocks
from hudi_sync.table.table import HudiTable
from hudi_sync.table.write.metadata_table import indexes
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


def _log_rows(path: Path) -> pa.Table:
    """The data records of a log file, unmerged (as Hudi reads a log file for column stats)."""
    tables = []
    for block in read_blocks(path.read_bytes(), str(path)):
        if block.block_type == BlockType.AVRO_DATA:
            columns = block.avro_columns()
            assert columns is not None
            tables.append(pa.Table.from_struct_array(columns))
    return pa.concat_tables(tables) if tables else pa.table({})


def _file_ranges(
    base: Path, partition: str, name: str, columns: list[str]
) -> list[column_stats.ColumnRange]:
    path = _file_path(base, partition, name)
    if name.endswith(".parquet"):
        return column_stats.parquet_column_ranges(name, pq.ParquetFile(path).metadata, columns)
    instant, file_id = _instant_and_group(name)
    result = indexes.log_file_index_records(
        partition, name, _log_rows(path), instant, file_id, columns, (), ZoneInfo("UTC")
    )
    return result.column_ranges


@pytest.mark.parametrize("fixture", MDT_FIXTURES, ids=lambda t: t.id)
def test_column_stats_equal_hudis(fixture: FixtureTable, unpack_table: Any) -> None:
    """Every base file the table lists: each indexed column's record equals Hudi's, all fields
    (min/max in their wrappers, counts, sizes, value type)."""
    base = unpack_table(fixture)
    if "column_stats" not in _partitions(base):
        pytest.fail(f"{fixture.name} has no column_stats partition")
    mdt = MetadataTableReader.of(HudiTable.open(str(base)))
    stored = mdt.read_partition("column_stats")
    columns, version = _stats_columns(base)
    computed: dict[str, MetadataRecord] = {}
    for partition, names in _listed_files(mdt).items():
        for name in names:
            for item in _file_ranges(base, partition, name, columns):
                record = column_stats.column_stats_record(partition, item, version=version)
                computed[record.key] = record
    assert computed.keys() == stored.keys()
    for key, record in computed.items():
        assert record == stored[key], key
    assert len(computed) > 0


def _instant_and_group(name: str) -> tuple[str, str]:
    """(instant, file id) of a base file ``<id>_<token>_<instant>.parquet`` or a log file
    ``.<id>_<instant>.log.<version>_<token>``."""
    if name.startswith("."):
        file_id, rest = name[1:].split("_", 1)
        return rest.split(".log.")[0], file_id
    return name.rsplit("_", 1)[1].split(".")[0], name.split("_")[0]


@pytest.mark.parametrize("fixture", MDT_FIXTURES, ids=lambda t: t.id)
def test_partition_stats_equal_hudis(fixture: FixtureTable, unpack_table: Any) -> None:
    """Each partition's stats are recomputed by the last write to it, over the file slices
    (base and log files) of the snapshot before that write with the write's files put in: so
    a clustering's stats still count the file groups it replaced (the fixtures' clustered
    partitions show it)."""
    base = unpack_table(fixture)
    if "partition_stats" not in _partitions(base):
        pytest.fail(f"{fixture.name} has no partition_stats partition")
    table = HudiTable.open(str(base))
    mdt = MetadataTableReader.of(table)
    stored = mdt.read_partition("partition_stats")
    columns, version = _stats_columns(base)
    writes = [i.requested_time for i in table.completed_commits()]
    computed = {}
    for partition, names in _listed_files(mdt).items():
        last = max(_instant_and_group(n)[0] for n in names)
        before = writes[writes.index(last) - 1] if writes.index(last) else None
        groups: dict[str, list[str]] = {}
        for s in table.view.slices_as_of(before) if before else []:
            if s.partition_path == partition:
                base_names = [s.base_file.name] if s.base_file is not None else []
                # the view lists later log files too (their blocks are filtered on reading)
                logs = [log.name for log in s.log_files if log.instant <= str(before)]
                groups[s.file_id] = base_names + logs
        for name in sorted(names):
            instant, file_id = _instant_and_group(name)
            if instant == last:
                if name.endswith(".parquet"):
                    groups[file_id] = []
                groups.setdefault(file_id, []).append(name)
        ranges = [
            item
            for group in groups.values()
            for name in group
            for item in _file_ranges(base, partition, name, columns)
        ]
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
    mdt = MetadataTableReader.of(table)
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
    mdt = MetadataTableReader.of(table)
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


@pytest.mark.parametrize("fixture", MDT_FIXTURES, ids=lambda t: t.id)
def test_default_columns_to_index_are_hudis(fixture: FixtureTable, unpack_table: Any) -> None:
    """Without a column list, Hudi indexed the three meta columns and then the table's
    columns in schema order (the index definition it wrote lists them)."""
    base = unpack_table(fixture)
    schema = json.loads(_properties(base)["hoodie.table.create.schema"])
    assert indexes.columns_to_index(schema) == _stats_columns(base)[0]
    assert indexes.columns_to_index(schema, max_columns=2)[3:] == [
        f["name"] for f in schema["fields"][:2]
    ]


def test_base_file_records_encode_and_equal_hudis(unpack_table: Any) -> None:
    """The writer's entry point on each latest base file of the v9 COW fixture: every record
    encodes in the metadata record schema and reads back equal; its column_stats and
    secondary index records are those Hudi stored."""
    (fixture,) = [t for t in MDT_FIXTURES if t.name == "sample_table/cow/v9_txns_simple_meta"]
    base = unpack_table(fixture)
    table = HudiTable.open(str(base))
    mdt = MetadataTableReader.of(table)
    columns, version = _stats_columns(base)
    definitions_path = base / ".hoodie" / ".index_defs" / "index.json"
    definitions = indexes.parse_index_definitions(
        definitions_path.read_text(), str(definitions_path)
    )
    stored = {name: mdt.read_partition(name) for name in _partitions(base) if name != "files"}
    for file_slice in table.view.slices_as_of(None):
        assert file_slice.base_file is not None
        name = file_slice.base_file.name
        result = indexes.base_file_index_records(
            file_slice.partition_path,
            name,
            _file_path(base, file_slice.partition_path, name).read_bytes(),
            file_slice.base_instant,
            file_slice.file_id,
            columns,
            definitions.secondary_indexes,
            _writer_zone(base),
            stats_version=version,
        )
        assert sorted(result.by_partition) == sorted(
            ["record_index", "column_stats", *(i.name for i in definitions.secondary_indexes)]
        )
        for partition, records in result.by_partition.items():
            assert records
            for record in records:
                writer = parse_writer_schema(json.dumps(metadata_schema(9)), "test")
                assert decode_value(encode_value(record), writer, "test") == record
                if partition != "record_index":
                    assert stored[partition][record.key] == record


def test_secondary_keys_escape_and_share_a_file_group() -> None:
    key = index_keys.secondary_index_key("a$b\\c", "k$1")
    assert key == "a\\$b\\\\c$k\\$1"
    assert index_keys.secondary_key_prefix(key) == "a\\$b\\\\c$"
    assert index_keys.secondary_index_key(None, "k") == "\0$k"
    # All record keys of one secondary value land in one file group (version 2).
    groups = {
        index_keys.secondary_file_group_index(index_keys.secondary_index_key("v", k), 10)
        for k in ("a", "b", "c", "d", "e")
    }
    assert len(groups) == 1
    # Java's String.hashCode over UTF-16 units, Math.abs(Integer.MIN_VALUE) kept in range.
    assert index_keys.java_string_hash("polygenelubricants") == -(1 << 31)
    assert index_keys.file_group_index("polygenelubricants", 10) == 8
    assert index_keys.java_string_hash("\U0001f600") == 1772899


def test_unsupported_secondary_values_are_refused() -> None:
    index = indexes.SecondaryIndex("secondary_index_x", "x", 2)
    rows = pa.table({"_hoodie_record_key": ["k"], "x": [1.5]})
    with pytest.raises(BadInputError, match="secondary index field 'x'"):
        indexes.secondary_index_records(rows, index)
    assert indexes.instant_millis("20260307162434124", ZoneInfo("America/Chicago")) == (
        1772922274124
    )
