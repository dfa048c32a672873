"""Hudi's metadata table read side: records (schema, decode/encode, merge rules), the
reader (valid instants) and listing a table through the ``files`` partition."""

from __future__ import annotations

import dataclasses
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from hudi_sync.errors import CorruptTableError
from hudi_sync.table.files.fs_view import FileSystemView
from hudi_sync.table.files.listing import StorageListing
from hudi_sync.table.metadata_table.hfile_reader import read_hfile
from hudi_sync.table.metadata_table.listing import MetadataTableListing
from hudi_sync.table.metadata_table.reader import MetadataTableReader
from hudi_sync.table.metadata_table.records import (
    ALL_PARTITIONS_KEY,
    SCHEMA_FILE_INFO_KEY,
    ColumnStats,
    FileInfo,
    MetadataRecord,
    MetadataType,
    RecordIndexInfo,
    WrappedValue,
    combine,
    decode_records,
    decode_value,
    encode_value,
    merge_into,
    metadata_schema,
    parse_writer_schema,
)
from hudi_sync.table.read.snapshot import read_snapshot
from hudi_sync.table.records.logfile import BlockType, HeaderKey, read_blocks
from hudi_sync.table.table import HudiTable
from tests import hudi_oracle
from tests.fixture_tables import FixtureTable, fixture_tables


def _has_mdt(table: FixtureTable) -> bool:
    with zipfile.ZipFile(table.zip_path) as archive:
        return any("/.hoodie/metadata/.hoodie/" in name for name in archive.namelist())


# Every fixture with a metadata table (all v8/v9 ones that keep one).
MDT_FIXTURES = [t for t in fixture_tables() if _has_mdt(t)]


def _strip_docs(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_docs(v) for k, v in value.items() if k != "doc"}
    if isinstance(value, list):
        return [_strip_docs(v) for v in value]
    return value


def _block_schemas(base: Path) -> list[str]:
    """The writer schemas of the MDT's HFile base files (file info) and log blocks."""
    schemas = [
        read_hfile(path.read_bytes(), str(path)).file_info[SCHEMA_FILE_INFO_KEY].decode()
        for path in sorted((base / ".hoodie" / "metadata").glob("*/*.hfile"))
    ]
    assert schemas
    for log in sorted((base / ".hoodie" / "metadata").glob("*/.*.log.*")):
        for block in read_blocks(log.read_bytes(), str(log)):
            if block.block_type == BlockType.HFILE_DATA:
                schemas.append(block.header[HeaderKey.SCHEMA])
    return schemas


@pytest.mark.parametrize("fixture", MDT_FIXTURES, ids=lambda t: t.id)
def test_schema_equals_the_writers_schema_of_every_block(
    fixture: FixtureTable, unpack_table: Any
) -> None:
    base = unpack_table(fixture)
    version = int(
        (base / ".hoodie" / "hoodie.properties")
        .read_text()
        .split("hoodie.table.version=")[1]
        .split()[0]
    )
    schemas = _block_schemas(base)
    assert schemas
    for text in schemas:
        assert _strip_docs(json.loads(text)) == metadata_schema(version)


def _record(key: str, files: dict[str, FileInfo], kind: MetadataType = MetadataType.FILE_LIST):
    return MetadataRecord(key, kind, files=files)


def test_files_merge_adds_grows_and_drops() -> None:
    older = _record("p", {"a": FileInfo(10), "b": FileInfo(5), "c": FileInfo(7)})
    newer = _record(
        "p", {"a": FileInfo(3), "b": FileInfo(0, True), "d": FileInfo(0, True), "e": FileInfo(4)}
    )
    merged = combine(older, newer)
    # sizes take the larger, a deleted listed file is dropped, an unknown tombstone stays
    assert merged.files == {
        "a": FileInfo(10),
        "c": FileInfo(7),
        "d": FileInfo(0, True),
        "e": FileInfo(4),
    }
    assert merged.live_files() == {"a": 10, "c": 7, "e": 4}
    # the kept tombstone drops the file when merged onto an older base record
    base = {"p": _record("p", {"d": FileInfo(9)})}
    assert merge_into(base, [merged])["p"].live_files() == {"a": 10, "c": 7, "e": 4}


def _stats(lo: int, hi: int, nulls: int, deleted: bool = False) -> ColumnStats:
    return ColumnStats(
        "f.parquet",
        "c",
        WrappedValue("IntWrapper", lo),
        WrappedValue("IntWrapper", hi),
        10,
        nulls,
        100,
        200,
        deleted,
    )


def test_column_stats_merge_widens_bounds_and_sums_counts() -> None:
    older = MetadataRecord("k", MetadataType.PARTITION_STATS, column_stats=_stats(3, 9, 1))
    newer = MetadataRecord("k", MetadataType.PARTITION_STATS, column_stats=_stats(-2, 5, 2))
    stats = combine(older, newer).column_stats
    assert stats is not None
    assert (stats.min_value, stats.max_value) == (
        WrappedValue("IntWrapper", -2),
        WrappedValue("IntWrapper", 9),
    )
    assert (stats.value_count, stats.null_count, stats.total_size) == (20, 3, 200)
    tomb = MetadataRecord("k", MetadataType.PARTITION_STATS, column_stats=_stats(0, 0, 0, True))
    assert combine(older, tomb).column_stats == tomb.column_stats


@pytest.mark.parametrize("version", [8, 9])
def test_encode_decode_round_trip(version: int) -> None:
    records = [
        _record("__all_partitions__", {"a=1": FileInfo(0)}, MetadataType.PARTITION_LIST),
        MetadataRecord("k1", MetadataType.COLUMN_STATS, column_stats=_stats(1, 2, 0)),
        MetadataRecord(
            "k2",
            MetadataType.RECORD_INDEX,
            record_index=RecordIndexInfo("p", 1, -2, 0, None, 1700000000000, 0, None),
        ),
        MetadataRecord("v$k", MetadataType.SECONDARY_INDEX, secondary_index_deleted=True),
    ]
    writer = parse_writer_schema(json.dumps(metadata_schema(version)), "test")
    for record in records:
        assert decode_value(encode_value(record, version), writer, "test") == record


# -- reading the metadata table and listing through it ------------------------------------


def _slices(view: FileSystemView, as_of: str | None, read_optimized: bool = False) -> list[Any]:
    return [s.to_json() for s in view.slices_as_of(as_of, read_optimized)]


@pytest.mark.parametrize("fixture", MDT_FIXTURES, ids=lambda t: t.id)
def test_listing_through_the_mdt_equals_a_storage_listing_at_every_instant(
    fixture: FixtureTable, unpack_table: Any
) -> None:
    base = unpack_table(fixture)
    table = HudiTable.open(str(base))
    assert isinstance(table.view.listing, MetadataTableListing)
    direct = FileSystemView(table.location, table.config, table.timeline)
    instants = [i.requested_time for i in table.completed_commits()]
    assert len(instants) >= 5
    for as_of in [None, *instants]:
        ours = _slices(table.view, as_of)
        assert ours == _slices(direct, as_of), as_of
        assert ours == hudi_oracle.slices(str(base), as_of), as_of
        assert _slices(table.view, as_of, True) == _slices(direct, as_of, True), as_of
    # sizes come from the MDT: they are the files' sizes on storage
    listed = table.view.listing.list_files()
    assert sorted(listed.names) == sorted(listed.sizes) and listed.names
    for partition, names in listed.names.items():
        assert names
        for name in names:
            assert (base / partition / name).stat().st_size == listed.sizes[partition][name]


@pytest.mark.parametrize("fixture", MDT_FIXTURES, ids=lambda t: t.id)
def test_decoded_partitions_make_sense(fixture: FixtureTable, unpack_table: Any) -> None:
    base = unpack_table(fixture)
    table = HudiTable.open(str(base))
    reader = MetadataTableReader.of(table)
    direct = FileSystemView(table.location, table.config, table.timeline)
    files = reader.read_partition("files")
    assert sorted(files[ALL_PARTITIONS_KEY].live_files()) == sorted(direct.partitions)
    assert files[ALL_PARTITIONS_KEY].type is MetadataType.PARTITION_LIST
    # the record index maps every key of the latest snapshot to its partition
    rows = read_snapshot(table).select(["_hoodie_record_key", "_hoodie_partition_path"]).to_pylist()
    index = reader.read_partition("record_index")
    assert {k: r.record_index.partition_name for k, r in index.items() if r.record_index} == {
        row["_hoodie_record_key"]: row["_hoodie_partition_path"] for row in rows
    }
    # column stats name files of the table; partition stats name its partitions
    stats = reader.read_partition("column_stats").values()
    assert {s.column_stats.file_name for s in stats if s.column_stats} <= {
        n for names in table.view.listing.list_files().names.values() for n in names
    } | {n for p in direct.partitions.values() for n in _all_names(p)}
    partition_stats = reader.read_partition("partition_stats").values()
    assert {s.column_stats.file_name for s in partition_stats if s.column_stats} == set(
        direct.partitions
    )
    # secondary index keys end with a record key of the table
    for name in table.config.metadata_partitions:
        if name.startswith("secondary_index_"):
            keys = reader.read_partition(name)
            assert {k.rsplit("$", 1)[1] for k in keys} == set(index)


def _all_names(files: Any) -> list[str]:
    return [f.name for f in files.base_files + files.log_files]


def test_mdt_block_of_an_instant_pending_on_the_data_table_is_ignored(fixture_copy: Any) -> None:
    base = fixture_copy("mor/avro/v9_txns_simple_meta")
    timeline = base / ".hoodie" / "timeline"
    last = sorted(timeline.glob("2*_*.deltacommit"))[-1]
    instant = last.name.split("_")[0]
    before = HudiTable.open(str(base))
    added = _files_written_at(before, instant)
    assert added
    last.unlink()  # the data instant is now inflight: its MDT deltacommit must not count
    table = HudiTable.open(str(base))
    reader = MetadataTableReader.of(table)
    assert instant not in reader.valid_instants
    assert list((base / ".hoodie" / "metadata" / ".hoodie" / "timeline").glob(f"{instant}_*"))
    listed = {n for names in table.view.listing.list_files().names.values() for n in names}
    assert not listed & added
    direct = FileSystemView(table.location, table.config, table.timeline)
    assert _slices(table.view, None) == _slices(direct, None)
    assert _slices(table.view, None) == hudi_oracle.slices(str(base))


def _files_written_at(table: HudiTable, instant: str) -> set[str]:
    listed = table.view.listing.list_files().names
    return {n for names in listed.values() for n in names if instant in n}


def test_a_table_without_the_mdt_folder_is_listed_directly(fixture_copy: Any) -> None:
    import shutil

    base = fixture_copy("cow/v9_txns_simple_meta")
    shutil.rmtree(base / ".hoodie" / "metadata")
    table = HudiTable.open(str(base))
    assert isinstance(table.view.listing, StorageListing)
    assert _slices(table.view, None) == hudi_oracle.slices(str(base))


def test_a_corrupt_mdt_file_is_named_in_one_line(fixture_copy: Any) -> None:
    base = fixture_copy("cow/v9_txns_simple_meta")
    hfile = sorted((base / ".hoodie" / "metadata" / "files").glob("*.hfile"))[-1]
    data = hfile.read_bytes()
    hfile.write_bytes(data[: len(data) // 2])
    table = HudiTable.open(str(base))
    with pytest.raises(CorruptTableError) as caught:
        table.file_slices()
    message = str(caught.value)
    assert hfile.name in message and "\n" not in message


@pytest.mark.parametrize("fixture", MDT_FIXTURES, ids=lambda t: t.id)
def test_every_fixture_record_decodes_and_re_encodes_to_its_bytes(
    fixture: FixtureTable, unpack_table: Any
) -> None:
    """Values of base files and of HFILE_DATA blocks: decoding is exact (the datum fills
    the value) and encoding gives Hudi's bytes (the key left to the row key, as Hudi's
    HFile writer leaves it)."""
    base = unpack_table(fixture)
    version = int(_property(base, "hoodie.table.version"))
    contents = [
        (read_hfile(p.read_bytes(), str(p)), str(p))
        for p in sorted((base / ".hoodie" / "metadata").glob("*/*.hfile"))
    ]
    for log in sorted((base / ".hoodie" / "metadata").glob("*/.*.log.*")):
        for block in read_blocks(log.read_bytes(), str(log)):
            if block.block_type == BlockType.HFILE_DATA:
                contents.append((read_hfile(block.content, str(log)), str(log)))
    kinds = set()
    for content, where in contents:
        for (key, value), record in zip(
            content.entries, decode_records(content, where), strict=True
        ):
            assert record.key.encode() == key
            kinds.add(record.type)
            assert encode_value(dataclasses.replace(record, key=""), version) == value
    assert {
        MetadataType.PARTITION_LIST,
        MetadataType.FILE_LIST,
        MetadataType.COLUMN_STATS,
        MetadataType.RECORD_INDEX,
        MetadataType.PARTITION_STATS,
        MetadataType.SECONDARY_INDEX,
    } <= kinds


def _property(base: Path, key: str) -> str:
    text = (base / ".hoodie" / "hoodie.properties").read_text()
    return text.split(f"{key}=")[1].split()[0]
