"""HFile reader and writer against the HFiles Hudi wrote into the fixtures' metadata tables
(base ``.hfile`` files and the content of HFILE_DATA log blocks)."""

from __future__ import annotations

import io
import json
import random
import struct
import zipfile
from itertools import pairwise
from pathlib import Path
from typing import Any

import fastavro
import pytest

from hudi_sync.errors import BadInputError, CorruptTableError, UnsupportedTableError
from hudi_sync.table.metadata_table.hfile_reader import HFileReader, read_hfile
from hudi_sync.table.records.logfile import BlockType, read_blocks
from hudi_sync.table.write.metadata_table.hfile_writer import write_hfile
from tests.fixture_tables import FixtureTable, fixture_tables

LAYOUT_KEYS = {
    b"hfile.LASTKEY",
    b"hfile.AVG_KEY_LEN",
    b"hfile.AVG_VALUE_LEN",
    b"KEY_VALUE_VERSION",
    b"MAX_MEMSTORE_TS_KEY",
}


def _has_mdt_hfiles(table: FixtureTable) -> bool:
    with zipfile.ZipFile(table.zip_path) as archive:
        return any(
            ".hoodie/metadata/" in name and name.endswith(".hfile") and "__MACOSX" not in name
            for name in archive.namelist()
        )


MDT_TABLES = [t for t in fixture_tables() if _has_mdt_hfiles(t)]


def _hfiles(base: Path) -> list[tuple[str, str, bytes]]:
    """(MDT partition, where, bytes) of every HFile in the table's metadata table: base files
    and HFILE_DATA log blocks."""
    found: list[tuple[str, str, bytes]] = []
    for partition in sorted(p for p in (base / ".hoodie" / "metadata").iterdir() if p.is_dir()):
        if partition.name.startswith("."):
            continue
        for path in sorted(partition.iterdir()):
            if path.name.endswith(".hfile"):
                found.append((partition.name, str(path), path.read_bytes()))
            elif ".log." in path.name:
                for number, block in enumerate(read_blocks(path.read_bytes(), str(path))):
                    if block.block_type == BlockType.HFILE_DATA:
                        found.append((partition.name, f"{path}#{number}", block.content))
    return found


def test_fixtures_have_metadata_hfiles() -> None:
    names = {t.name for t in MDT_TABLES}
    assert {
        "sample_table/cow/v9_txns_simple_meta",
        "sample_table/mor/avro/v9_txns_simple_meta",
        "quickstart_trips_table/mor/avro/v8_trips_8i3u1d",
    } <= names


def _check_record(partition: str, key: str, record: dict[str, Any], base: Path) -> None:
    # Hudi may blank the value's key field, the HFile key carrying it.
    assert record["key"] in (key, "")
    if partition == "files":
        assert record["type"] in (1, 2)
        listing = record["filesystemMetadata"]
        assert listing is not None
        if key == "__all_partitions__":
            assert record["type"] == 1
        else:
            assert record["type"] == 2
            assert (base / key).is_dir() or key == "."
            assert all(name.split(".")[0] or name.startswith(".") for name in listing)
    elif partition == "record_index":
        assert record["recordIndexMetadata"] is not None
    elif partition in ("column_stats", "partition_stats"):
        assert record["ColumnStatsMetadata"] is not None
    elif partition.startswith("secondary_index_"):
        assert "$" in key and record["SecondaryIndexMetadata"] is not None


@pytest.mark.parametrize("table", MDT_TABLES, ids=lambda t: t.id)
def test_reads_every_metadata_hfile(table: FixtureTable, unpack_table) -> None:  # type: ignore[no-untyped-def]
    base = unpack_table(table)
    hfiles = _hfiles(base)
    assert any(w.endswith(".hfile") for _, w, _ in hfiles)
    assert any("#" in w for _, w, _ in hfiles)
    partitions_seen: set[str] = set()
    for partition, where, data in hfiles:
        reader = HFileReader(data, where)
        content = read_hfile(data, where)
        keys = [key for key, _ in content.entries]
        assert all(a < b for a, b in pairwise(keys)), where
        assert len(keys) == reader.trailer["entry_count"], where
        schema = fastavro.parse_schema(json.loads(content.file_info[b"schema"]))
        records = {}
        for key, value in content.entries:
            stream = io.BytesIO(value)
            record = fastavro.schemaless_reader(stream, schema, None)
            assert stream.tell() == len(value), where
            assert isinstance(record, dict)
            _check_record(partition, key.decode(), record, base)
            records[key] = record
            assert reader.get(key) == value
        if partition == "files" and b"__all_partitions__" in records:
            listed = set(records[b"__all_partitions__"]["filesystemMetadata"])
            assert {k.decode() for k in records if k != b"__all_partitions__"} <= listed
        if keys:
            prefix = keys[len(keys) // 2][:4]
            assert reader.with_prefix(prefix) == [e for e in content.entries if e[0][:4] == prefix]
            assert reader.get(keys[-1] + b"\x00") is None
        partitions_seen.add(partition)
    assert {"files", "record_index", "column_stats", "partition_stats"} <= partitions_seen


@pytest.mark.parametrize("table", MDT_TABLES, ids=lambda t: t.id)
def test_rewrite_of_fixture_hfiles(table: FixtureTable, unpack_table) -> None:  # type: ignore[no-untyped-def]
    """Files Hudi 1.1 (v9 tables) wrote with its own HFile writer come back byte for byte.

    The v8 fixture's HFiles were written by Hudi 1.0 through HBase's HFile writer, whose
    bytes ours cannot equal by design: CRC32C block checksums (Hudi 1.1's native writer
    writes NULL checksums), full HBase keys in the block index and ``hfile.LASTKEY``, trailer
    minor version 3 and ``total_uncompressed_bytes``, and file info in another order. For
    those, the re-written file holds the same entries, file info (bar those layout keys),
    meta blocks, data block first keys and trailer counts."""
    base = unpack_table(table)
    for _, where, data in _hfiles(base):
        content = read_hfile(data, where)
        written = write_hfile(content.entries, content.file_info, meta_blocks=content.meta_blocks)
        if table.name.split("/")[-1].startswith("v9"):
            assert written == data, where
            continue
        again = HFileReader(written, "rewritten")
        original = HFileReader(data, where)
        back = again.content()
        assert back.entries == content.entries
        assert back.meta_blocks == content.meta_blocks
        assert {k: v for k, v in back.file_info.items() if k not in LAYOUT_KEYS} == {
            k: v for k, v in content.file_info.items() if k not in LAYOUT_KEYS
        }
        assert [e.first_key for e in again.index] == [e.first_key for e in original.index]
        for name in ("entry_count", "data_index_count", "meta_index_count", "compression_codec"):
            assert again.trailer[name] == original.trailer[name], name


@pytest.mark.parametrize("compression", ["GZ", "NONE"])
def test_round_trip_across_blocks(compression: str) -> None:
    rng = random.Random(7)
    keys = sorted({f"key-{rng.randrange(10**9):09d}".encode() for _ in range(2000)})
    entries = [(k, rng.randbytes(rng.randrange(0, 200))) for k in keys]
    info = {b"schema": b"{}", b"minRecordKey": keys[0], b"hfile.CREATE_TIME_TS": bytes(8)}
    data = write_hfile(entries, info, block_size=4096, compression=compression)
    reader = HFileReader(data, "round-trip")
    assert len(reader.index) > 20
    content = reader.content()
    assert content.entries == entries
    assert content.file_info[b"schema"] == b"{}"
    assert content.file_info[b"hfile.LASTKEY"] == struct.pack(">h", len(keys[-1])) + keys[-1]
    assert reader.trailer["entry_count"] == len(entries)
    for block in reader.index[1:5]:
        assert reader.get(block.first_key) == dict(entries)[block.first_key]
    prefix = b"key-5"
    assert reader.with_prefix(prefix) == [e for e in entries if e[0].startswith(prefix)]
    assert reader.get(b"key-") is None and reader.get(b"zzz") is None
    assert write_hfile(entries, info, block_size=4096, compression=compression) == data


def test_empty_file_round_trip() -> None:
    data = write_hfile([], {b"schema": b"{}"}, create_time_ms=0)
    content = read_hfile(data, "empty")
    assert content.entries == [] and content.file_info[b"schema"] == b"{}"
    assert HFileReader(data, "empty").get(b"a") is None


def _sample() -> bytes:
    entries = [(b"k1", b"v1"), (b"k2", b"v2"), (b"k3", b"v3")]
    return write_hfile(entries, {b"schema": b"{}"}, compression="NONE", create_time_ms=0)


def _one_line(exc: pytest.ExceptionInfo[BaseException], *words: str) -> None:
    message = str(exc.value)
    assert "\n" not in message
    for word in words:
        assert word in message, message


def test_truncated_file_is_refused() -> None:
    data = _sample()
    with pytest.raises(CorruptTableError) as exc:
        read_hfile(data[:-100], "files-0000-0_x.hfile")
    _one_line(exc, "files-0000-0_x.hfile", "trailer magic")
    with pytest.raises(CorruptTableError) as exc:
        read_hfile(data[:3000], "short.hfile")
    _one_line(exc, "short.hfile", "trailer")
    with pytest.raises(CorruptTableError) as exc:
        read_hfile(data[:40] + data[-4096:], "cut.hfile")
    _one_line(exc, "cut.hfile")


def test_bad_magic_is_refused() -> None:
    data = _sample()
    with pytest.raises(CorruptTableError) as exc:
        read_hfile(b"XXXXXXXX" + data[8:], "bad.hfile")
    _one_line(exc, "bad.hfile", "block magic", "offset 0")
    trailer_at = len(data) - 4096
    with pytest.raises(CorruptTableError) as exc:
        read_hfile(data[:trailer_at] + b"NOTATRLR" + data[trailer_at + 8 :], "bad.hfile")
    _one_line(exc, "bad.hfile", "trailer magic")


def test_unsorted_keys_are_refused() -> None:
    data = _sample()
    swapped = data.replace(b"k2", b"k0", 1)
    with pytest.raises(CorruptTableError) as exc:
        read_hfile(swapped, "unsorted.hfile")
    _one_line(exc, "unsorted.hfile", "not sorted")
    with pytest.raises(BadInputError) as exc:
        write_hfile([(b"b", b""), (b"a", b"")], {})
    _one_line(exc, "sorted")
    with pytest.raises(BadInputError) as exc:
        write_hfile([(b"a", b""), (b"a", b"")], {})
    _one_line(exc, "unique")


def test_unsupported_codec_and_version_are_refused() -> None:
    data = _sample()
    trailer_at = len(data) - 4096
    snappy = data.replace(b"\x60\x02", b"\x60\x03", 1)  # field 12 (compression) NONE -> SNAPPY
    assert snappy[:trailer_at] == data[:trailer_at]
    with pytest.raises(UnsupportedTableError) as exc:
        read_hfile(snappy, "snappy.hfile")
    _one_line(exc, "snappy.hfile", "SNAPPY")
    with pytest.raises(UnsupportedTableError) as exc:
        read_hfile(data[:-1] + b"\x02", "v2.hfile")
    _one_line(exc, "v2.hfile", "version 2")
    with pytest.raises(BadInputError) as exc:
        write_hfile([], {}, compression="SNAPPY")
    _one_line(exc, "SNAPPY")


def _java_order_entries() -> list[tuple[bytes, bytes]]:
    """Keys around the one place byte order and Java String order part: a supplementary
    character (4 UTF-8 bytes, a surrogate pair in UTF-16) sorts after U+E000..U+FFFF in
    bytes, before them as a Java String."""
    names = [f"p{i:03d}/{c}" for i in range(40) for c in ("a", "\ue000", "\ufffd", "\U0001f600")]
    ordered = sorted(names, key=lambda name: name.encode("utf-16-be"))
    assert ordered != sorted(names)  # the orders differ on these keys
    return [(name.encode(), f"value of {name}".encode()) for name in ordered]


def test_keys_in_java_string_order_as_hudis_log_blocks_write_them_are_read() -> None:
    """Hudi's HFILE_DATA log blocks take their records from a String-keyed sorted map, so
    their keys are in UTF-16 order: such a file reads whole, and point and prefix look-ups
    find every key across its blocks."""
    entries = _java_order_entries()
    data = write_hfile(entries, {b"schema": b"{}"}, block_size=256, create_time_ms=0)
    reader = HFileReader(data, "java-order.hfile")
    assert len(reader.index) > 10
    assert reader.content().entries == entries
    for key, value in entries:
        assert reader.get(key) == value, key
    prefix = b"p017/"
    assert reader.with_prefix(prefix) == [e for e in entries if e[0].startswith(prefix)]
    assert reader.get("p017/\U0001f601".encode()) is None


def test_keys_in_neither_order_are_refused() -> None:
    """A file whose keys follow byte order in one place and Java String order in another
    is in no order: refused, naming the file."""
    low, high = "\ufffd".encode(), "\U0001f600".encode()
    keys = [b"a" + low, b"a" + high, b"b" + high, b"b" + low]  # bytes, then UTF-16
    with pytest.raises(BadInputError) as refused:
        write_hfile([(k, b"") for k in keys], {})
    _one_line(refused, "sorted")
    keys = [b"a" + low, b"a" + high, b"b" + high, b"c" + low, b"d"]  # bytes: sorted
    data = write_hfile([(k, b"") for k in keys], {}, compression="NONE", create_time_ms=0)
    assert data.count(b"c" + low) == 1
    with pytest.raises(CorruptTableError) as exc:
        read_hfile(data.replace(b"c" + low, b"b" + low), "mixed.hfile")
    _one_line(exc, "mixed.hfile", "not sorted")
