"""A metadata table's ``files`` records name only partitions and files inside the table
(issue 49, item 1).

Someone who can write one table's storage can write its metadata table: a partition
``../other/region=apac`` or a file name holding ``/`` in the ``files`` partition would
have the cleaner delete, the log fold read and the sync publish another table's files.
Each test forges the records of a real Hudi-written table's ``files`` partition (its
newest base HFile rewritten with the project's own HFile writer) so that they reach
``other``, a copy of the same table beside it, and checks that the name is refused in one
line naming the HFile, before anything is deleted or written.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hudi_sync.cli.app import app
from hudi_sync.errors import CorruptTableError
from hudi_sync.sync.job import sync_table
from hudi_sync.table import HudiTable
from hudi_sync.table.metadata_table.hfile_reader import read_hfile
from hudi_sync.table.metadata_table.records import (
    ALL_PARTITIONS_KEY,
    FileInfo,
    MetadataRecord,
    MetadataType,
    decode_records,
    encode_records,
)
from hudi_sync.table.timeline.instant import comparable_instant
from hudi_sync.table.write.cleaner import clean
from hudi_sync.table.write.metadata_table.hfile_writer import write_hfile
from hudi_sync.table.write.timeline import TimelineWriter
from hudi_sync.warehouse.duckdb import DuckDBTarget
from tests.fixture_tables import fixture_tables

COW = "sample_table/cow/v9_txns_simple_meta"
MOR = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"


def _tables(unpack_table: Any, tmp_path: Path, fixture: str) -> tuple[Path, Path]:
    """The attacker's table and ``other``, a copy of it beside it."""
    (found,) = [t for t in fixture_tables() if t.name == fixture]
    source = unpack_table(found)
    table, other = tmp_path / "lake" / "table", tmp_path / "lake" / "other"
    shutil.copytree(source, table)
    shutil.copytree(source, other)
    return table, other


def forge_files_partition(table: Path, partition: str, files: dict[str, int]) -> Path:
    """Rewrite the newest base HFile of ``table``'s ``files`` partition so that it lists
    ``partition`` with ``files`` (name -> size); the HFile's path."""
    folder = table / ".hoodie/metadata/files"
    hfile = max(folder.glob("files-*.hfile"), key=lambda p: comparable_instant(p.stem[-17:]))
    records = {r.key: r for r in decode_records(read_hfile(hfile.read_bytes(), str(hfile)), "")}
    listed = records[ALL_PARTITIONS_KEY]
    records[ALL_PARTITIONS_KEY] = dataclasses.replace(
        listed, files={**(listed.files or {}), partition: FileInfo(0)}
    )
    records[partition] = MetadataRecord(
        partition, MetadataType.FILE_LIST, {n: FileInfo(s) for n, s in files.items()}
    )
    version = HudiTable.open(str(table)).config.version
    entries, info = encode_records(records.values(), version)
    hfile.write_bytes(write_hfile(entries, info))
    return hfile


def _files(folder: Path) -> dict[str, int]:
    return {f.name: f.stat().st_size for f in folder.iterdir() if f.name.endswith(".parquet")}


def _tree(path: Path) -> dict[str, int]:
    return {str(f.relative_to(path)): f.stat().st_size for f in path.rglob("*") if f.is_file()}


def _assert_refused(refused: pytest.ExceptionInfo[CorruptTableError], hfile: Path) -> None:
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"{hfile}: "), message


def test_a_clean_never_deletes_another_tables_files(unpack_table: Any, tmp_path: Path) -> None:
    """The partition ``../other/region=apac`` lists the other table's file versions: the
    older one is a version a clean keeping one commit deletes."""
    table, other = _tables(unpack_table, tmp_path, COW)
    hfile = forge_files_partition(table, "../other/region=apac", _files(other / "region=apac"))
    before, own = _tree(other), _tree(table)
    opened = HudiTable.open(str(table))
    writer = TimelineWriter(opened.location, opened.timeline.folder, opened.config.version)
    with pytest.raises(CorruptTableError) as refused:
        clean(opened, writer, 1)
    _assert_refused(refused, hfile)
    assert _tree(other) == before
    assert _tree(table) == own  # refused before anything: no clean instant, no deletion


@pytest.mark.parametrize(
    ("partition", "name"),
    [
        ("region=apac", "a/../../../other/region=apac/{name}"),
        ("region=apac/../../other/region=apac", "{name}"),
        ("region=apac", ".."),
        ("/tmp", "{name}"),
        ("region=apac//x", "{name}"),
    ],
)
def test_a_cow_sync_refuses_names_outside_the_table(
    unpack_table: Any, tmp_path: Path, partition: str, name: str
) -> None:
    """Without the check the sync succeeds (exit 0) with views over files that are not
    the table's; refused instead, and no warehouse object or manifest is created."""
    table, other = _tables(unpack_table, tmp_path, COW)
    theirs = _files(other / "region=apac")
    hfile = forge_files_partition(
        table, partition, {name.format(name=n): s for n, s in theirs.items()}
    )
    database = tmp_path / "w.duckdb"
    with pytest.raises(CorruptTableError) as refused:
        sync_table(str(table), [DuckDBTarget(str(database), "t")])
    _assert_refused(refused, hfile)
    assert not database.exists()
    assert not (table / ".hoodie/manifest").exists()


def test_the_sync_command_exits_2_in_one_line(unpack_table: Any, tmp_path: Path) -> None:
    table, other = _tables(unpack_table, tmp_path, COW)
    hfile = forge_files_partition(table, "../other/region=apac", _files(other / "region=apac"))
    database = tmp_path / "w.duckdb"
    args = ["sync", "duckdb", str(table), "--database", str(database), "--table", "t"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    message = result.stderr.strip()
    assert message.startswith(f"error: {hfile}: ") and "\n" not in message, message
    assert not database.exists()


def test_the_log_fold_never_reads_or_writes_outside_the_table(
    unpack_table: Any, tmp_path: Path
) -> None:
    """A partition ``../other/city=chennai`` lists the other table's base and log files:
    the MOR sync would fold the other table's log into this table's ``_rt`` view."""
    table, other = _tables(unpack_table, tmp_path, MOR)
    chennai = other / "city=chennai"
    theirs = {
        f.name: f.stat().st_size
        for f in chennai.iterdir()
        if f.name != ".hoodie_partition_metadata"
    }
    assert any(".log." in n for n in theirs)
    hfile = forge_files_partition(table, "../other/city=chennai", theirs)
    before = _tree(other)
    database = tmp_path / "w.duckdb"
    with pytest.raises(CorruptTableError) as refused:
        sync_table(str(table), [DuckDBTarget(str(database), "t")])
    _assert_refused(refused, hfile)
    assert not (table / ".hoodie/manifest").exists()
    assert _tree(other) == before
    assert not database.exists()


def test_a_log_name_with_folders_is_refused_before_the_fold_writes(
    unpack_table: Any, tmp_path: Path
) -> None:
    """A log file name ``.x/../../../other/city=chennai/.<file id>_...`` is a file group
    of its own, read from the other table, whose folded log is named after its file id,
    folders included: written outside ``logs/parquet/`` (on main, to
    ``.hoodie/manifest/other/city=chennai/``; more ``..`` reach any folder)."""
    table, other = _tables(unpack_table, tmp_path, MOR)
    (table / "city=chennai" / ".x").mkdir()
    (log,) = sorted(p for p in (other / "city=chennai").iterdir() if ".log." in p.name)[:1]
    own = {p.name: p.stat().st_size for p in (table / "city=chennai").glob("*.parquet")}
    forged = {**own, f".x/../../../other/city=chennai/{log.name}": log.stat().st_size}
    hfile = forge_files_partition(table, "city=chennai", forged)
    before = _tree(other)
    with pytest.raises(CorruptTableError) as refused:
        sync_table(str(table), [DuckDBTarget(str(tmp_path / "w.duckdb"), "t")])
    _assert_refused(refused, hfile)
    assert _tree(other) == before
    assert not (table / ".hoodie/manifest").exists()


def test_the_table_lists_as_before_with_its_own_names(unpack_table: Any, tmp_path: Path) -> None:
    """The check refuses no name Hudi writes: forged records naming the table's own
    partition and files list exactly those files."""
    table, _ = _tables(unpack_table, tmp_path, COW)
    own = _files(table / "region=apac")
    forge_files_partition(table, "region=apac", own)
    listed = HudiTable.open(str(table)).view.listing.list_files(["region=apac"])
    assert sorted(listed.names["region=apac"]) == sorted(own)
