"""The write side's services never turn a name read from storage into a path outside the
table: compaction plans, the cleaner's file listing, rollback markers, the archived
timeline's ``_version_``, the metadata table's own plans and partition list, and the
Debezium state's tombstone list. Each test plants what a hostile tenant could write in
one table's storage and checks that the service refuses it in one line naming the file
the name came from, with the file outside the table untouched (and no file written
there)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hudi_sync.cli.app import app
from hudi_sync.table.write.compaction import CompactionOperation, plan_bytes
from tests.fixture_tables import fixture_tables, unpack

MOR_V6 = "sample_table/mor/parquet/v6_simplekeygen_nonhivestyle"
PLANNED = "20990101000000000"  # a compaction instant newer than the fixture's writes


def _fixture(name: str, target: Path) -> Path:
    (found,) = [t for t in fixture_tables() if t.name == name]
    return unpack(found, target)


def _one_line_error(output: str, source: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    assert source in lines[0], output
    return lines[0]


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.mark.parametrize("field", ["partitionPath", "fileId"])
def test_a_compaction_plan_cannot_read_or_write_outside_the_table(
    tmp_path: Path, field: str
) -> None:
    """A pending plan naming ``../..`` (as its partition, or in its file id, from which
    the new base file's name is made) made ``hudi-sync compact`` read another table's
    file and write the compacted file into that table."""
    base = _fixture(MOR_V6, tmp_path / "tables")
    (stored,) = (base / "10").glob("*.parquet")
    victim = tmp_path / "victim" / "10"
    victim.mkdir(parents=True)
    shutil.copy(stored, victim / stored.name)
    before = _tree(tmp_path / "victim")
    file_id, _, rest = stored.name.partition("_")
    escape = os.path.relpath(victim, base)
    operation = CompactionOperation(
        partition_path=escape if field == "partitionPath" else "10",
        file_id=file_id if field == "partitionPath" else f"../{escape}/{file_id}",
        base_instant=rest.rsplit("_", 1)[1].removesuffix(".parquet"),
        base_file=stored.name,
        log_files=(),
    )
    plan = base / ".hoodie" / f"{PLANNED}.compaction.requested"
    plan.write_bytes(plan_bytes([operation]))

    result = CliRunner().invoke(app, ["compact", str(base), "--run-only"])

    assert result.exit_code == 2, result.output
    line = _one_line_error(result.output, f"{PLANNED}.compaction.requested")
    assert "inside" in line
    assert _tree(tmp_path / "victim") == before
    assert not list((tmp_path / "tables").rglob(f"*_{PLANNED}.parquet"))


COW_V8 = "sample_table/cow/v8_simplekeygen_nonhivestyle"
WITH_MDT = {"hoodie.metadata.enable": "true"}
RETAIN_ONE = {
    "hoodie.cleaner.commits.retained": 1,
    "hoodie.keep.min.commits": 2,
    "hoodie.keep.max.commits": 3,
}
FILE_ID = "0badc0de-0000-0000-0000-000000000000-0"


def _with_metadata_table(base: Path) -> None:
    from hudi_sync.table import HudiTable
    from hudi_sync.table.write.metadata_table.create import create_metadata_table
    from tests.fixture_tables import set_properties

    table = HudiTable.open(str(base))
    create_metadata_table(table.location, table.config)
    set_properties(base, {"hoodie.table.metadata.partitions": "files"})


def _commit_escaping_files(base: Path, victim: Path, versions: int, stored: Path) -> list[Path]:
    """``versions`` commits on the v8 table at ``base`` (with a metadata table) whose
    write stats, and so the metadata table's ``files`` records, list a file group in a
    partition that leads out of the table into ``victim``; returns the victim's files
    they name (copies of ``stored``), which exist there."""
    from hudi_sync.table import HudiTable
    from hudi_sync.table.timeline.commit_metadata import WriteStat
    from hudi_sync.table.write.metadata_table.keepers import data_timeline_writer
    from hudi_sync.table.write.timeline import CommitRecord

    table = HudiTable.open(str(base))
    writer = data_timeline_writer(
        table.location,
        table.location.join(".hoodie", "timeline"),
        8,
        table.config.raw,
        table.config.metadata_partitions,
    )
    escape = os.path.relpath(victim, base)
    victim.mkdir(parents=True, exist_ok=True)
    named = []
    for _ in range(versions):
        instant = writer.new_instant_time()
        name = f"{FILE_ID}_0-0-0_{instant}.parquet"
        shutil.copy(stored, victim / name)
        named.append(victim / name)
        stat = WriteStat(
            file_id=FILE_ID,
            path=f"{escape}/{name}",
            partition_path=escape,
            num_writes=1,
            prev_commit=None,
            file_size=(victim / name).stat().st_size,
        )
        writer.request(instant, "commit", "upsert")
        writer.complete(instant, "commit", CommitRecord("UPSERT", "", [stat]))
    return named


def test_the_cleaner_never_deletes_a_file_outside_the_table(tmp_path: Path) -> None:
    """Names listed by the metadata table with a partition leading out of the table
    made the cleaner (run after every write) delete another table's older file."""
    from hudi_sync.errors import CorruptTableError
    from hudi_sync.table import HudiTable
    from hudi_sync.table.write.cleaner import clean
    from hudi_sync.table.write.metadata_table.keepers import data_timeline_writer

    base = _fixture(COW_V8, tmp_path / "tables")
    _with_metadata_table(base)
    victim = tmp_path / "victim" / "10"
    stored = sorted((base / "10").glob("*.parquet"))[0]
    named = _commit_escaping_files(base, victim, 2, stored)
    table = HudiTable.open(str(base))
    writer = data_timeline_writer(
        table.location, table.location.join(".hoodie", "timeline"), 8, table.config.raw, ("files",)
    )
    with pytest.raises(CorruptTableError) as refused:
        clean(table, writer, 1)
    assert "\n" not in str(refused.value)
    assert all(path.exists() for path in named)


def _tombstones(path: Path, keys: list[str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"key": keys, "order": ["9"] * len(keys)}), path)


def test_the_debezium_state_reads_no_tombstone_file_outside_its_folder(tmp_path: Path) -> None:
    """The tombstone file list an ingest commit records is read as file names in the
    state folder: a name with ``../`` made the next ingest read another table's file."""
    from hudi_sync.debezium.state import (
        CHECKPOINT_KEY,
        TOMBSTONES_KEY,
        TombstoneStore,
        load_state,
    )
    from hudi_sync.errors import CorruptTableError
    from hudi_sync.table import HudiTable
    from hudi_sync.table.write.metadata_table.keepers import data_timeline_writer
    from hudi_sync.table.write.timeline import CommitRecord

    base = _fixture(COW_V8, tmp_path / "tables")
    outside = tmp_path / "victim" / "secret.parquet"
    _tombstones(outside, ["k1"])
    (base / ".hoodie" / ".aux" / "debezium").mkdir(parents=True)  # as an ingest leaves it
    escape = os.path.relpath(outside, base / ".hoodie" / ".aux" / "debezium")
    table = HudiTable.open(str(base))
    writer = data_timeline_writer(
        table.location, table.location.join(".hoodie", "timeline"), 8, table.config.raw, ()
    )
    instant = writer.new_instant_time()
    writer.request(instant, "commit", "upsert")
    extra = {CHECKPOINT_KEY: "topic,0:5", TOMBSTONES_KEY: escape}
    done = writer.complete(instant, "commit", CommitRecord("UPSERT", "", [], extra_metadata=extra))

    with pytest.raises(CorruptTableError) as refused:
        TombstoneStore(str(base)).load(load_state(str(base)).tombstone_files)
    assert "\n" not in str(refused.value)
    assert done in str(refused.value)


def test_removing_unreferenced_tombstones_deletes_no_sibling() -> None:
    """A file named ``tombstones-[ab].parquet`` in the state folder of a table on an
    object store is deleted literally: fsspec's ``rm`` read it as a pattern there and
    deleted the referenced ``tombstones-a.parquet`` instead (the next ingest then
    failed on a missing file)."""
    import uuid

    import pyarrow as pa
    import pyarrow.parquet as pq

    from hudi_sync.debezium.state import TombstoneStore

    store = TombstoneStore(f"memory://hostile-{uuid.uuid4().hex}/t")
    fs = store.location.fs
    for name, key in (("tombstones-a.parquet", "kept"), ("tombstones-[ab].parquet", "stray")):
        sink = pa.BufferOutputStream()
        pq.write_table(pa.table({"key": [key], "order": ["9"]}), sink)
        fs.pipe_file(f"{store.folder}/{name}", sink.getvalue().to_pybytes())

    store.remove_unreferenced(["tombstones-a.parquet"])

    assert store.location.names(store.folder) == ["tombstones-a.parquet"]
    assert store.load(["tombstones-a.parquet"]) == {"kept": "9"}


@pytest.mark.parametrize("pointer", ["../" * 6 + "victim/x", "1"])
def test_archival_publishes_no_manifest_read_or_naming_outside_the_history(
    tmp_path: Path, pointer: str
) -> None:
    """``_version_`` names the live manifest and the manifest names the history's
    files: a ``_version_`` with ``../`` made archival read another file as the manifest,
    and a manifest naming ``../`` files was copied into the new one, which every
    reader of the archived timeline then followed out of the table."""
    import json

    from hudi_sync.errors import CorruptTableError
    from hudi_sync.table.write.archiver import add_lsm_history_layer

    history = tmp_path / "t" / ".hoodie" / "timeline" / "history"
    (history / "manifest_..").mkdir(parents=True)  # what the escape walks through
    outside = {"files": [{"fileName": "../../../../victim/secret.parquet", "fileLen": 1}]}
    (tmp_path / "victim").mkdir()
    (tmp_path / "victim" / "x").write_text(json.dumps({"files": []}))
    assert os.path.normpath(history / f"manifest_{pointer}") in (
        str(tmp_path / "victim" / "x"),
        str(history / "manifest_1"),
    )
    (history / "manifest_1").write_text(json.dumps(outside))
    (history / "_version_").write_text(pointer)
    row = {
        "instantTime": "20240101000000000",
        "completionTime": "20240101000000001",
        "action": "commit",
        "metadata": b"",
        "plan": None,
        "version": 1,
    }

    with pytest.raises(CorruptTableError) as refused:
        add_lsm_history_layer(str(history), [row])
    message = str(refused.value)
    assert "\n" not in message
    assert ("_version_" if pointer != "1" else "manifest_1") in message
    assert not (history / "manifest_2").exists()


def test_a_marker_outside_the_table_is_refused_before_any_delete() -> None:
    """Markers are listed from storage: an object store's key may hold ``..``
    segments, and a marker naming ``../`` must not become a file to delete."""
    import uuid

    from hudi_sync.errors import CorruptTableError
    from hudi_sync.storage import open_location
    from hudi_sync.table.write.rollback import remove_written_files

    root = f"/hostile-{uuid.uuid4().hex}"
    location = open_location(f"memory://{root}/t")
    fs = location.fs
    instant = "20240101000000000"
    ours = f"{root}/t/10/f-0_0-0-0_{instant}.parquet"
    fs.pipe_file(ours, b"partial")
    fs.pipe_file(
        f"{root}/t/.hoodie/.temp/{instant}/10/f-0_0-0-0_{instant}.parquet.marker.CREATE", b""
    )
    escape = f"{root}/t/.hoodie/.temp/{instant}/../../../other/10/v_0-0-0_{instant}.parquet"
    fs.pipe_file(f"{escape}.marker.CREATE", b"")

    with pytest.raises(CorruptTableError) as refused:
        remove_written_files(location, instant)
    assert "\n" not in str(refused.value)
    assert ".marker.CREATE" in str(refused.value)
    assert fs.exists(ours)  # refused before anything was deleted


def test_a_metadata_table_compaction_plan_stays_in_its_metadata_table(tmp_path: Path) -> None:
    """A pending compaction plan of the metadata table naming a partition that leads
    into another table's metadata table made the next write's metadata services read
    that table's files and write a compacted file among them."""
    from hudi_sync.errors import CorruptTableError
    from hudi_sync.table import HudiTable
    from hudi_sync.table.metadata_table.reader import MetadataTableReader
    from hudi_sync.table.write.metadata_table.compaction import MetadataCompactor, plan_bytes
    from hudi_sync.table.write.timeline import TimelineWriter

    base = _fixture(COW_V8, tmp_path / "ours")
    other = _fixture(COW_V8, tmp_path / "other")
    _with_metadata_table(base)
    _with_metadata_table(other)
    theirs = other / ".hoodie" / "metadata" / "files"
    (stored,) = [p for p in theirs.iterdir() if p.name.endswith(".hfile")]
    before = _tree(other)
    table = HudiTable.open(str(base))
    mdt = base / ".hoodie" / "metadata"
    operation: dict[str, Any] = {
        "baseInstantTime": stored.name.rsplit("_", 1)[1].removesuffix(".hfile"),
        "deltaFilePaths": [],
        "dataFilePath": stored.name,
        "fileId": stored.name.split("_", 1)[0],
        "partitionPath": os.path.relpath(theirs, mdt),
        "metrics": {},
        "bootstrapFilePath": None,
    }
    plan = mdt / ".hoodie" / "timeline" / f"{PLANNED}.compaction.requested"
    plan.write_bytes(plan_bytes([operation]))
    reader = MetadataTableReader(table.location, table.timeline)
    writer = TimelineWriter(table.location, str(mdt / ".hoodie" / "timeline"), 8)

    with pytest.raises(CorruptTableError) as refused:
        MetadataCompactor(reader, writer, 8).finish_pending()
    assert "\n" not in str(refused.value)
    assert f"{PLANNED}.compaction.requested" in str(refused.value)
    assert _tree(other) == before


@pytest.mark.parametrize("escape", ["partition", "definitions"])
def test_dropping_metadata_partitions_deletes_and_rewrites_nothing_outside(
    tmp_path: Path, escape: str
) -> None:
    """``hoodie.table.metadata.partitions`` and ``hoodie.table.index.defs.path`` are
    read from storage: dropping a disabled index deleted the folder a ``../`` partition
    name led to (another table), or rewrote another table's index definitions."""
    import json

    from hudi_sync import config as cfg
    from hudi_sync.errors import CorruptTableError
    from hudi_sync.storage import open_location
    from hudi_sync.table.write.metadata_table.partitions import prepare_metadata_table
    from tests.fixture_tables import set_properties

    base = _fixture(COW_V8, tmp_path / "ours")
    _with_metadata_table(base)
    victim = tmp_path / "victim"
    (victim / "data").mkdir(parents=True)
    (victim / "data" / "rows.parquet").write_bytes(b"rows")
    definitions = {"indexDefinitions": {"secondary_index_x": {"indexName": "secondary_index_x"}}}
    (victim / "index.json").write_text(json.dumps(definitions))
    before = _tree(victim)
    if escape == "partition":
        (base / ".hoodie" / "metadata" / "secondary_index_..").mkdir()
        metadata = base / ".hoodie" / "metadata"  # where secondary_index_.. leads back
        dropped = f"secondary_index_../../{os.path.relpath(victim, metadata)}"
        changes = {}
    else:
        dropped = "secondary_index_x"
        changes = {cfg.INDEX_DEFS_PATH.key: os.path.relpath(victim / "index.json", base)}
    listed = ("files", dropped)
    set_properties(base, {cfg.METADATA_PARTITIONS.key: ",".join(listed), **changes})
    properties = (base / ".hoodie" / "hoodie.properties").read_bytes()
    options = {cfg.METADATA_SECONDARY_INDEX.key: "false"}

    with pytest.raises(CorruptTableError) as refused:
        prepare_metadata_table(open_location(str(base)), 8, listed, options, frozenset({"files"}))
    assert "\n" not in str(refused.value)
    assert "hoodie.properties" in str(refused.value)
    assert _tree(victim) == before
    assert (base / ".hoodie" / "hoodie.properties").read_bytes() == properties


def test_a_metadata_partition_listed_in_storage_is_one_folder_of_the_metadata_table(
    tmp_path: Path,
) -> None:
    """A partition the write keeps current (``hoodie.table.metadata.partitions``, an
    index of ``index.json``) named ``secondary_index_../../..`` was accepted, and its
    log files were written where the name led (another table)."""
    from hudi_sync import config as cfg
    from hudi_sync.errors import CorruptTableError
    from hudi_sync.storage import open_location
    from hudi_sync.table.metadata_table.records import metadata_schema
    from hudi_sync.table.write.metadata_table.partitions import prepare_metadata_table
    from hudi_sync.table.write.metadata_table.writer import FileGroupRecords, MetadataTableWriter
    from tests.fixture_tables import set_properties

    base = _fixture(COW_V8, tmp_path / "ours")
    _with_metadata_table(base)
    victim = tmp_path / "victim"
    victim.mkdir()
    metadata = base / ".hoodie" / "metadata"
    (metadata / "secondary_index_..").mkdir()
    hostile = f"secondary_index_../../{os.path.relpath(victim, metadata)}"
    listed = ("files", hostile)
    set_properties(base, {cfg.METADATA_PARTITIONS.key: ",".join(listed)})
    location = open_location(str(base))

    with pytest.raises(CorruptTableError, match=r"hoodie\.properties"):
        prepare_metadata_table(location, 8, listed, {}, frozenset(listed))
    writer = MetadataTableWriter(location, 8, json.dumps(metadata_schema(8)), lambda entries: b"")
    group = FileGroupRecords(hostile, "secondary_index_x-0000-0", [])
    with pytest.raises(CorruptTableError) as refused:
        writer.deltacommit("20990101000000000", [group])
    assert "\n" not in str(refused.value)
    assert list(victim.iterdir()) == []


def test_a_write_refuses_a_listing_that_leads_out_of_the_table_before_committing(
    spark: Any, tmp_path: Path
) -> None:
    """A normal write on a table whose metadata table lists files in a partition that
    leads out of it: its automatic clean deleted the other table's older file. The
    write is refused before the timeline is touched."""
    from hudi_sync.errors import CorruptTableError
    from hudi_sync.spark import write
    from hudi_sync.table import HudiTable
    from tests.test_spark_writer import frame, options

    path = tmp_path / "t"
    rows = [{"id": i, "p": "a", "name": f"n{i}", "ts": 1} for i in range(3)]
    write(frame(spark, rows, False), str(path), options("t", 8, "insert", **WITH_MDT))
    stored = next((path / "p=a").glob("*.parquet"))
    named = _commit_escaping_files(path, tmp_path / "victim" / "p=a", 2, stored)
    timeline = sorted(p.name for p in (path / ".hoodie" / "timeline").iterdir())

    update = [{"id": 1, "p": "a", "name": "u", "ts": 2}]
    with pytest.raises(CorruptTableError) as refused:
        write(frame(spark, update, False), str(path), options("t", 8, "upsert", **RETAIN_ONE))
    assert "\n" not in str(refused.value)
    assert ".hoodie/metadata/files" in str(refused.value)
    assert all(p.exists() for p in named)
    assert sorted(p.name for p in (path / ".hoodie" / "timeline").iterdir()) == timeline
    assert not HudiTable.open(str(path)).timeline.pending


def _failed_hudi_write(base: Path, markers: list[str]) -> tuple[str, Path]:
    """A pending commit on the v8 table at ``base`` that left a partial file in
    partition 10, with Hudi's timeline-server markers (``MARKERS0``) listing
    ``markers`` (``{partial}`` stands for the partial file's name)."""
    instant = "20990101000000000"
    timeline = base / ".hoodie" / "timeline"
    (timeline / f"{instant}.commit.requested").write_bytes(b"")
    stored = sorted((base / "10").glob("*.parquet"))[0]
    partial = base / "10" / f"{stored.name.split('_')[0]}_0-0-0_{instant}.parquet"
    shutil.copy(stored, partial)
    folder = base / ".hoodie" / ".temp" / instant
    folder.mkdir(parents=True)
    (folder / "MARKERS.type").write_text("TIMELINE_SERVER_BASED")
    lines = [m.format(partial=partial.name) for m in markers]
    (folder / "MARKERS0").write_text("".join(f"{line}\n" for line in lines))
    return instant, partial


def _roll_back(base: Path, instant: str) -> str:
    from hudi_sync.table import HudiTable
    from hudi_sync.table.write.metadata_table.keepers import data_timeline_writer
    from hudi_sync.table.write.rollback import roll_back

    table = HudiTable.open(str(base))
    writer = data_timeline_writer(
        table.location, table.location.join(".hoodie", "timeline"), 8, table.config.raw, ()
    )
    return roll_back(table.location, writer, instant, "commit")


def test_a_rollback_deletes_what_timeline_server_markers_list(tmp_path: Path) -> None:
    """Hudi's writers may list their markers in ``MARKERS<n>`` files: the rollback of
    such a failed write found no marker and left its partial file behind."""
    base = _fixture(COW_V8, tmp_path / "tables")
    instant, partial = _failed_hudi_write(base, ["10/{partial}.marker.CREATE"])

    _roll_back(base, instant)

    assert not partial.exists()
    assert not (base / ".hoodie" / ".temp" / instant).exists()


def test_a_timeline_server_marker_outside_the_table_is_refused(tmp_path: Path) -> None:
    """A ``MARKERS0`` line is text anyone with the table's storage can write: one
    leading out of the table is refused, naming the file, before anything is deleted."""
    from hudi_sync.errors import CorruptTableError

    base = _fixture(COW_V8, tmp_path / "tables")
    victim = tmp_path / "victim" / "10" / "v-0_0-0-0_20240101000000000.parquet"
    victim.parent.mkdir(parents=True)
    victim.write_bytes(b"theirs")
    escape = os.path.relpath(victim, base)
    instant, partial = _failed_hudi_write(
        base, ["10/{partial}.marker.CREATE", f"{escape}.marker.CREATE"]
    )

    with pytest.raises(CorruptTableError) as refused:
        _roll_back(base, instant)
    assert "\n" not in str(refused.value)
    assert "MARKERS0" in str(refused.value)
    assert victim.read_bytes() == b"theirs"
    assert partial.exists()
