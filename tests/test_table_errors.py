"""Bad input: each gets a clear error that names the table or file at fault."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hudi_sync.errors import CorruptTableError, TableNotFoundError, UnsupportedTableError
from hudi_sync.table import HudiTable


def _set_property(table: Path, key: str, value: str | None) -> None:
    props = table / ".hoodie" / "hoodie.properties"
    lines = [line for line in props.read_text().splitlines() if not line.startswith(f"{key}=")]
    if value is not None:
        lines.append(f"{key}={value}")
    props.write_text("\n".join(lines) + "\n")


def test_missing_hoodie_folder(tmp_path: Path) -> None:
    (tmp_path / "data.parquet").write_bytes(b"PAR1")
    with pytest.raises(TableNotFoundError, match=re.escape(str(tmp_path))):
        HudiTable.open(str(tmp_path))


@pytest.mark.parametrize("version", ["5", "7", "10"])
def test_unsupported_table_version(fixture_copy, version: str) -> None:  # type: ignore[no-untyped-def]
    table = fixture_copy("cow/v6_nonpartitioned")
    _set_property(table, "hoodie.table.version", version)
    with pytest.raises(UnsupportedTableError, match=f"table version {version} is not supported"):
        HudiTable.open(str(table))


def test_layout_version_must_match_table_version(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    table = fixture_copy("cow/v8_nonpartitioned")
    _set_property(table, "hoodie.timeline.layout.version", "1")
    with pytest.raises(UnsupportedTableError, match="layout 1 does not match table version 8"):
        HudiTable.open(str(table))


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("hoodie.table.name", None, "missing required key hoodie.table.name"),
        ("hoodie.table.version", "six", "hoodie.table.version='six' is not a whole number"),
        ("hoodie.table.checksum", "12345", "checksum 12345 does not match"),
        ("hoodie.table.type", "SNAPSHOT_ISOLATED", "unknown hoodie.table.type"),
    ],
)
def test_corrupt_properties(fixture_copy, key: str, value: str | None, message: str) -> None:  # type: ignore[no-untyped-def]
    table = fixture_copy("cow/v6_nonpartitioned")
    _set_property(table, key, value)
    with pytest.raises(CorruptTableError, match=message) as error:
        HudiTable.open(str(table))
    assert "hoodie.properties" in str(error.value)


@pytest.mark.parametrize("base_format", ["orc", "HFILE", "LANCE"])
def test_every_hudi_base_format_opens(fixture_copy, base_format: str) -> None:  # type: ignore[no-untyped-def]
    """Listing does not read base files; tests/test_base_formats.py lists such tables."""
    table = fixture_copy("cow/v6_nonpartitioned")
    _set_property(table, "hoodie.table.base.file.format", base_format)
    opened = HudiTable.open(str(table))
    assert opened.config.base_file_format == base_format.upper()
    assert opened.file_slices() == []  # the fixture's files are .parquet, not this format


@pytest.mark.parametrize("base_format", ["AVRO", "HOODIE_LOG"])
def test_unknown_base_format(fixture_copy, base_format: str) -> None:  # type: ignore[no-untyped-def]
    table = fixture_copy("cow/v6_nonpartitioned")
    _set_property(table, "hoodie.table.base.file.format", base_format)
    with pytest.raises(UnsupportedTableError, match=f"unknown base file format {base_format} "):
        HudiTable.open(str(table))


def test_truncated_commit_json(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    table = fixture_copy("cow/v6_nonpartitioned")
    commit = sorted((table / ".hoodie").glob("*.commit"))[-1]
    commit.write_bytes(commit.read_bytes()[:200])
    opened = HudiTable.open(str(table))
    with pytest.raises(CorruptTableError, match=f"{commit.name}: corrupt JSON instant file"):
        _ = opened.avro_schema


def test_truncated_commit_avro(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    table = fixture_copy("cow/v9_txns_simple_meta")
    replace = sorted((table / ".hoodie" / "timeline").glob("*_*.replacecommit"))[0]
    replace.write_bytes(replace.read_bytes()[:300])
    opened = HudiTable.open(str(table))
    # Replacecommit metadata is needed to decide the snapshot, so listing reports it.
    with pytest.raises(CorruptTableError, match=f"{replace.name}: corrupt Avro instant file"):
        opened.file_slices()


def test_garbage_avro_is_reported_not_guessed(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    table = fixture_copy("cow/v8_nonpartitioned")
    commit = sorted((table / ".hoodie" / "timeline").glob("*_*.commit"))[-1]
    commit.write_bytes(b"Obj\x01" + b"\x00" * 40)
    with pytest.raises(CorruptTableError, match=commit.name):
        _ = HudiTable.open(str(table)).avro_schema


def test_unknown_action(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    table = fixture_copy("cow/v6_nonpartitioned")
    (table / ".hoodie" / "20990101000000000.frobnicate").write_text("{}")
    with pytest.raises(CorruptTableError, match="unknown action 'frobnicate'"):
        HudiTable.open(str(table)).instants()


def test_base_file_name_that_does_not_parse(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    table = fixture_copy("cow/v6_simplekeygen_nonhivestyle")
    (table / "10" / "part-00000-not-hudi.parquet").write_bytes(b"PAR1")
    with pytest.raises(CorruptTableError, match=r"10/part-00000-not-hudi\.parquet"):
        HudiTable.open(str(table)).file_slices()


def test_foreign_non_base_files_are_ignored(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    table = fixture_copy("cow/v6_simplekeygen_nonhivestyle")
    before = HudiTable.open(str(table)).file_slices()
    (table / "10" / "_SUCCESS").write_text("")
    (table / "10" / ".abc.parquet.crc").write_text("")
    assert HudiTable.open(str(table)).file_slices() == before


def test_empty_completed_commit_is_empty_metadata(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    # Hudi's Java reader treats an empty commit file as empty metadata.
    table = fixture_copy("cow/v6_nonpartitioned")
    commit = sorted((table / ".hoodie").glob("*.commit"))[-1]
    commit.write_bytes(b"")
    opened = HudiTable.open(str(table))
    assert opened.timeline.commit_metadata(opened.completed_commits()[-1]).write_stats == []
