"""Hudi's metadata table read side: records (schema, decode/encode, merge rules)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from hudi_sync.table.logfile import BlockType, HeaderKey, read_blocks
from hudi_sync.table.metadata_table.records import (
    ColumnStats,
    FileInfo,
    MetadataRecord,
    MetadataType,
    RecordIndexInfo,
    WrappedValue,
    combine,
    decode_value,
    encode_value,
    merge_into,
    metadata_schema,
    parse_writer_schema,
)
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
    schemas = []
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
