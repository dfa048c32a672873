"""Hudi's metadata table kept current by our writes: the ``files`` partition.

hudi-rs lists v8+ tables through the metadata table's ``files`` partition, so a file a
write adds without a metadata record is invisible to it: hudi-rs reading our writes
back is the independent check. The records themselves are checked against Hudi's: the
``files`` records we compute for every commit Hudi made in the fixtures equal the cells
of the HFile log block Hudi wrote for it, byte for byte.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError
from hudi_sync.spark import read, write, write_arrow
from hudi_sync.spark.compat import arrow_dataframe
from hudi_sync.storage import open_location
from hudi_sync.table import HudiTable
from hudi_sync.table.metadata_table.hfile_reader import read_hfile
from hudi_sync.table.metadata_table.reader import MetadataTableReader
from hudi_sync.table.read.snapshot import read_snapshot
from hudi_sync.table.records.logfile import BlockType, read_blocks
from hudi_sync.table.write.metadata_table.codec import HudiRecordCodec
from hudi_sync.table.write.metadata_table.files_records import commit_records
from hudi_sync.table.write.metadata_table.partitions import prepare_metadata_table
from hudi_sync.table.write.metadata_table.sync import maintained_partitions
from hudi_sync.table.write.timeline import CommitRecord, TimelineWriter
from tests.fixture_tables import set_properties
from tests.frames import rows_frame
from tests.metadata_checks import (
    MDT_FIXTURES,
    assert_readers_agree,
    check_files_step,
    listed_files,
    mdt_files,
    rows_by_key,
    write_options,
)

# The partitions hudi_sync does not maintain yet, disabled with Hudi's own options.
DISABLE_INDEXES = {
    "hoodie.metadata.index.column.stats.enable": "false",
    "hoodie.metadata.index.partition.stats.enable": "false",
    "hoodie.metadata.record.index.enable": "false",
    "hoodie.metadata.index.secondary.enable": "false",
}


def test_files_records_of_every_hudi_commit_equal_the_cells_hudi_wrote(
    unpack_table,  # type: ignore[no-untyped-def]
) -> None:
    from tests.fixture_tables import fixture_tables

    checked = 0
    for fixture in (t for t in fixture_tables() if any(t.name.endswith(f) for f in MDT_FIXTURES)):
        base = unpack_table(fixture)
        table = HudiTable.open(str(base))
        codec = HudiRecordCodec(table.config.version)
        for instant in table.timeline.completed_writes:
            (log,) = (base / ".hoodie/metadata/files").glob(
                f".files-0000-0_{instant.requested_time}.log.*"
            )
            (block,) = read_blocks(log.read_bytes(), str(log))
            assert block.block_type == BlockType.HFILE_DATA
            theirs = read_hfile(block.content, str(log)).entries
            stats = table.timeline.commit_metadata(instant).write_stats
            assert codec.encode_files(commit_records(stats)) == list(theirs), (log, instant)
            checked += 1
    assert checked == 32  # commits, deltacommits, replacecommits, clusterings, compactions


def test_partitions_we_do_not_maintain_are_refused_or_dropped_as_hudi_drops_them(
    fixture_copy,  # type: ignore[no-untyped-def]
) -> None:
    path = fixture_copy("cow/v9_txns_simple_meta")
    location = open_location(str(path))
    config = HudiTable.open(str(path)).config
    maintained = maintained_partitions()

    def prepare(options: dict[str, str]) -> tuple[str, ...]:
        listed = HudiTable.open(str(path)).config.metadata_partitions
        return prepare_metadata_table(
            location, config.version, listed, options, maintained
        ).partitions

    with pytest.raises(BadInputError) as refused:
        prepare({"hoodie.metadata.index.column.stats.enable": "false"})
    message = str(refused.value)
    assert "\n" not in message
    assert "partition_stats, record_index, secondary_index_merchant_idx" in message
    assert "column_stats, " not in message  # disabled: not named
    assert "hoodie.metadata.index.secondary.enable=false" in message
    assert (path / ".hoodie/metadata/column_stats").is_dir()  # nothing dropped on refusal

    assert prepare(DISABLE_INDEXES) == ("files",)
    after = HudiTable.open(str(path)).config
    assert after.metadata_partitions == ("files",)
    assert sorted(p.name for p in (path / ".hoodie/metadata").iterdir()) == [".hoodie", "files"]
    definitions = json.loads((path / ".hoodie/.index_defs/index.json").read_text())
    assert definitions["indexDefinitions"] == {}
    assert after.name == config.name and after.checksum == config.checksum

    assert prepare({"hoodie.metadata.enable": "false"}) == ()
    assert HudiTable.open(str(path)).config.metadata_partitions == ()
    assert not (path / ".hoodie/metadata").exists()


def _options(table: HudiTable, operation: str) -> dict[str, str]:
    return write_options(table, operation, **DISABLE_INDEXES)


@pytest.mark.parametrize("fixture", MDT_FIXTURES)
def test_upserts_deletes_and_overwrites_keep_the_files_partition_current(  # type: ignore[no-untyped-def]
    spark, fixture_copy, fixture
) -> None:
    path = fixture_copy(fixture)
    table = HudiTable.open(str(path))
    key = table.config.record_key_fields[0]
    ordering = table.config.ordering_fields[0]
    partition_field = table.config.partition_fields[0]
    model = rows_by_key(read_snapshot(table), key)
    columns = list(next(iter(model.values())))
    schema = read(spark, str(path)).select(*columns).schema
    keys = sorted(model)
    text_column = next(
        c for c in columns if c not in (key, partition_field) and isinstance(model[keys[0]][c], str)
    )

    def frame(rows: list[dict[str, Any]]):  # type: ignore[no-untyped-def]
        return rows_frame(spark, rows, schema)

    # Upsert: two updates and one insert (a copy of a row under a new key).
    changed = [
        dict(model[k], **{text_column: "upserted", ordering: model[k][ordering] + 1})
        for k in keys[:2]
    ]
    inserted = dict(model[keys[2]], **{key: "new-key", text_column: "inserted"})
    result = write(frame([*changed, inserted]), str(path), _options(table, "upsert"))
    model.update({r[key]: r for r in [*changed, inserted]})
    check_files_step(path, key, model, result.instant)

    # Delete one row.
    result = write(frame([model[keys[3]]]), str(path), _options(table, "delete"))
    del model[keys[3]]
    check_files_step(path, key, model, result.instant)

    # Overwrite the partition of one row with that row alone.
    survivor = dict(model[keys[0]], **{text_column: "overwritten"})
    result = write(frame([survivor]), str(path), _options(table, "insert_overwrite"))
    model = {k: r for k, r in model.items() if r[partition_field] != survivor[partition_field]} | {
        survivor[key]: survivor
    }
    check_files_step(path, key, model, result.instant)

    # Drop another partition; two commits retained, so the clean deletes files too.
    dropped = next(r[partition_field] for r in model.values() if r[key] != survivor[key])
    options = {
        **_options(table, "delete_partition"),
        "hoodie.datasource.write.partitions.to.delete": _partition_path(table, dropped),
        "hoodie.cleaner.commits.retained": "2",
    }
    result = write(frame([survivor]), str(path), options)
    model = {k: r for k, r in model.items() if r[partition_field] != dropped}
    check_files_step(path, key, model, result.instant)
    assert result.clean_instant is not None
    mdt = MetadataTableReader.of(HudiTable.open(str(path))).timeline
    assert any(i.requested_time == result.clean_instant and i.is_completed for i in mdt.instants)


def _partition_path(table: HudiTable, value: str) -> str:
    field = table.config.partition_fields[0]
    return f"{field}={value}" if table.config.hive_style_partitioning else value


CHILD = textwrap.dedent(
    """
    import os, sys
    from hudi_sync.table.write import timeline as timeline_module
    import tests.test_metadata_table_write as t

    original = timeline_module.TimelineWriter._complete_file
    step = sys.argv[2]

    def die(self, instant, action, data, after=None):
        # The data timeline's writer has a listener, the metadata table's has none.
        if (self.listener is not None) == (step == "before-data-completion"):
            os._exit(9)
        return original(self, instant, action, data, after)

    timeline_module.TimelineWriter._complete_file = die
    t.upsert_one(None, sys.argv[1], "killed")  # Arrow rows: the child starts no JVM
    os._exit(0)
    """
)


def upsert_one(spark: SparkSession | None, path: str, text: str):  # type: ignore[no-untyped-def]
    """Upsert the first row of the table with ``text`` in its merchant name (through
    Spark's writer, or without ``spark`` as Arrow rows in this process)."""
    table = HudiTable.open(path)
    snapshot = read_snapshot(table)
    model = rows_by_key(snapshot, "txn_id")
    columns = list(next(iter(model.values())))
    row = dict(model[min(model)], merchant_name=text)
    row["txn_ts"] += 1
    rows = pa.Table.from_pylist([row], snapshot.select(columns).schema)
    if spark is None:
        return write_arrow(rows, path, _options(table, "upsert")), row
    return write(arrow_dataframe(spark, rows), path, _options(table, "upsert")), row


@pytest.mark.parametrize("step", ["before-metadata-completion", "before-data-completion"])
def test_a_write_killed_around_its_metadata_deltacommit_is_rolled_back_on_both(  # type: ignore[no-untyped-def]
    spark, fixture_copy, step
) -> None:
    path = fixture_copy("mor/avro/v9_txns_simple_meta")
    # A first write drops the index partitions, so the killed one only adds its commit.
    upsert_one(spark, str(path), "first")
    before = rows_by_key(read_snapshot(HudiTable.open(str(path))), "txn_id")
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), step],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert child.returncode == 9, child.stderr[-2000:]
    (failed,) = [i.requested_time for i in HudiTable.open(str(path)).timeline.pending]
    mdt_timeline = path / ".hoodie/metadata/.hoodie/timeline"
    completed = list(mdt_timeline.glob(f"{failed}_*.deltacommit"))
    assert len(completed) == (step == "before-data-completion")
    assert len(list(mdt_timeline.glob(f"{failed}.deltacommit.*"))) == 2  # requested, inflight
    written = list((path / ".hoodie/metadata/files").glob(f".files-0000-0_{failed}.log.*"))
    assert len(written) == 1
    # Both readable, neither showing the failed write.
    assert_readers_agree(path, "txn_id", before)
    assert mdt_files(path)[1] == listed_files(path, skip_instant=failed)

    result, row = upsert_one(spark, str(path), "after")
    assert result.rolled_back == [failed]
    before[row["txn_id"]] = row
    assert_readers_agree(path, "txn_id", before)
    assert mdt_files(path)[1] == listed_files(path)
    # The metadata table's deltacommit and its log file went, with a rollback of the
    # data rollback's time on both timelines.
    assert not list(mdt_timeline.glob(f"{failed}*"))
    assert not any(w.exists() for w in written)
    data_rollbacks = {p.name.split("_")[0] for p in (path / ".hoodie/timeline").glob("*.rollback")}
    mdt_rollbacks = {p.name.split("_")[0] for p in mdt_timeline.glob("*.rollback")}
    assert mdt_rollbacks == data_rollbacks and len(data_rollbacks) == 1


def test_a_refused_write_leaves_the_table_alone_and_metadata_enable_false_deletes_it(  # type: ignore[no-untyped-def]
    spark, fixture_copy
) -> None:
    """A partition hudi_sync does not keep (Hudi's bloom filter index, declared on the
    copy as Hudi declares it) refuses the write, naming it and Hudi's option."""
    path = fixture_copy("cow/v9_txns_simple_meta")
    table = HudiTable.open(str(path))
    with_bloom = ",".join([*table.config.metadata_partitions, "bloom_filters"])
    set_properties(path, {cfg.METADATA_PARTITIONS.key: with_bloom})
    pristine = path.parent / "pristine"
    shutil.copytree(path, pristine)
    options = {k: v for k, v in _options(table, "upsert").items() if k not in DISABLE_INDEXES}
    model = rows_by_key(read_snapshot(table), "txn_id")
    columns = list(next(iter(model.values())))
    df = read(spark, str(path)).select(*columns).limit(1)
    refusal = "cannot keep these metadata table partitions current: bloom_filters "
    with pytest.raises(BadInputError, match=f"{refusal}.*{cfg.METADATA_BLOOM_FILTERS.key}"):
        write(df, str(path), options)
    assert listed_files(path) == listed_files(pristine)
    assert sorted(p.name for p in (path / ".hoodie").rglob("*")) == sorted(
        p.name for p in (pristine / ".hoodie").rglob("*")
    )
    # Hudi's own switch: the metadata table goes, the write goes on, readers list directly.
    row = dict(model[min(model)], merchant_name="direct", txn_ts=model[min(model)]["txn_ts"] + 1)
    changed = rows_frame(spark, [row], df.schema)
    write(changed, str(path), {**options, "hoodie.metadata.enable": "false"})
    assert not (path / ".hoodie/metadata").exists()
    assert HudiTable.open(str(path)).config.metadata_partitions == ()
    assert_readers_agree(path, "txn_id", model | {row["txn_id"]: row})


class _LateListener:
    """Stands in for the metadata table's writer (no Spark needed): it reports that
    what it published completed at ``completion``."""

    def __init__(self, completion: str) -> None:
        self.completion = completion

    def before_commit(self, instant: str, action: str, commit: CommitRecord) -> str | None:
        return self.completion

    def before_clean(self, instant: str, deleted: Any) -> str | None:
        return self.completion

    def before_rollback(self, rolled_back: str, instant: str) -> str | None:
        return self.completion


def test_a_data_instant_completes_after_what_the_metadata_table_completed_first(
    tmp_path: Path,
) -> None:
    """Two completions in one millisecond tied (the metadata deltacommit and the data
    commit): the data instant's completion time must follow the metadata table's, so a
    reader ordering by completion time sees the metadata table's first."""
    location = open_location(str(tmp_path))
    folder = location.join(".hoodie", "timeline")
    location.fs.makedirs(folder, exist_ok=True)
    ahead = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).strftime("%Y%m%d%H%M%S%f")[:17]
    writer = TimelineWriter(location, folder, 9, _LateListener(ahead))
    instant = writer.new_instant_time()
    writer.request(instant, "commit", "upsert")
    name = writer.complete(instant, "commit", CommitRecord("upsert", "", ()))
    assert name.split("_")[1].split(".")[0] > ahead
    rollback = writer.rollback(instant, "commit", {}, 0.0)
    assert writer.last_completion is not None and writer.last_completion > ahead
    assert rollback
