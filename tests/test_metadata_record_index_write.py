"""Our writes keep Hudi's ``record_index`` and ``secondary_index_*`` partitions current.

On copies of the three fixtures with a metadata table (column_stats and partition_stats
disabled with Hudi's options), upserts (one changing a key's secondary value), inserts, a
delete, an ``insert_overwrite`` and a ``delete_partition`` go through the Spark writer
(and a compaction, on Merge-on-Read). After each, the merged
``record_index`` equals a model kept here: the Hudi-written locations at the start, and
for each key the write placed in another file group (or newly), its partition, file id
and the write's instant; a deleted key is gone. The secondary indexes equal the
(secondary key, record key) pairs recomputed from the snapshot, every key sits in the
metadata file group Hudi's hash picks, and hudi-rs reads the rows our table core reads.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from hudi_sync.spark import read, write
from hudi_sync.table import HudiTable
from hudi_sync.table.metadata_table import index_keys
from hudi_sync.table.metadata_table.reader import MetadataTableReader
from hudi_sync.table.read.snapshot import read_snapshot
from hudi_sync.table.records.log_records import OrderingValue, delete_keys
from hudi_sync.table.records.logfile import BlockType, read_blocks
from hudi_sync.table.write.compaction import compact
from hudi_sync.table.write.lock import TableLock
from hudi_sync.table.write.metadata_table import indexes
from tests.frames import rows_frame
from tests.metadata_checks import MDT_FIXTURES as FIXTURES
from tests.metadata_checks import IndexModel, index_definitions, write_options

# Another module keeps these current; disabled here with Hudi's own options.
DISABLE_STATS = {
    "hoodie.metadata.index.column.stats.enable": "false",
    "hoodie.metadata.index.partition.stats.enable": "false",
}


def _options(table: HudiTable, operation: str) -> dict[str, str]:
    return write_options(table, operation, **DISABLE_STATS)


@pytest.mark.parametrize("fixture", FIXTURES)
def test_writes_keep_record_and_secondary_indexes_current(  # type: ignore[no-untyped-def]
    spark, fixture_copy, fixture
) -> None:
    path = fixture_copy(fixture)
    table = HudiTable.open(str(path))
    assert "record_index" in table.config.metadata_partitions
    (secondary, *_) = index_definitions(path).secondary_indexes
    key = table.config.record_key_fields[0]
    ordering = table.config.ordering_fields[0]
    partition_field = table.config.partition_fields[0]
    snapshot = read_snapshot(table)
    data_columns = [c for c in snapshot.column_names if not c.startswith("_hoodie_")]
    model = {r[key]: {c: r[c] for c in data_columns} for r in snapshot.to_pylist()}
    schema = read(spark, str(path)).select(*data_columns).schema
    keys = sorted(model)
    index = IndexModel(path)

    def frame(rows: list[dict[str, Any]]):  # type: ignore[no-untyped-def]
        return rows_frame(spark, rows, schema)

    # Upsert: keys[0] changes its secondary value, keys[1] only its ordering value, and a
    # copy of keys[2] comes in under a new key.
    old_value = model[keys[0]][secondary.source_field]
    changed = [
        dict(
            model[keys[0]],
            **{secondary.source_field: "changed", ordering: model[keys[0]][ordering] + 1},
        ),
        dict(model[keys[1]], **{ordering: model[keys[1]][ordering] + 1}),
    ]
    inserted = dict(model[keys[2]], **{key: "new-key-1"})
    result = write(frame([*changed, inserted]), str(path), _options(table, "upsert"))
    index.check(result.instant)
    # The stats partitions the options disable are dropped, as Hudi drops them, though the
    # writer could keep them current.
    kept = HudiTable.open(str(path)).config.metadata_partitions
    assert "column_stats" not in kept and "partition_stats" not in kept
    assert not (path / ".hoodie/metadata/column_stats").exists()
    stored = MetadataTableReader.of(HudiTable.open(str(path))).read_partition(secondary.name)
    assert index_keys.secondary_index_key("changed", keys[0]) in stored
    assert index_keys.secondary_index_key(old_value, keys[0]) not in stored
    assert index.records["new-key-1"].record_index.instant_time == indexes.instant_millis(  # type: ignore[union-attr]
        result.instant, dt.UTC
    )

    # Insert another new key.
    inserted2 = dict(model[keys[3]], **{key: "new-key-2"})
    result = write(frame([inserted2]), str(path), _options(table, "insert"))
    index.check(result.instant)

    # Delete: the key leaves record_index (a delete block) and its secondary pairs go.
    gone = keys[4]
    result = write(frame([model[gone]]), str(path), _options(table, "delete"))
    index.check(result.instant)
    mdt = MetadataTableReader.of(HudiTable.open(str(path)))
    assert gone not in mdt.read_partition("record_index")
    # As Hudi's append handle writes an EmptyHoodieRecordPayload: a delete block after the
    # data block, the metadata partition as partition path, ordering value int 0.
    (log,) = (path / ".hoodie/metadata/record_index").glob(f".*_{result.instant}.log.*")
    blocks = list(read_blocks(log.read_bytes(), str(log)))
    assert [b.block_type for b in blocks][-1] == BlockType.DELETE
    assert delete_keys(blocks[-1].content, str(log)) == [
        (gone, "record_index", OrderingValue("int", 0))
    ]
    assert not any(k.endswith("$" + gone) for k in mdt.read_partition(secondary.name))

    # Overwrite one partition with one of its rows: the others leave the indexes, the
    # survivor is placed in its new file group.
    survivor = dict(model[keys[1]], **{ordering: model[keys[1]][ordering] + 2})
    result = write(frame([survivor]), str(path), _options(table, "insert_overwrite"))
    dropped = {
        k
        for k, r in model.items()
        if r[partition_field] == survivor[partition_field] and k not in (survivor[key], gone)
    }
    index.check(result.instant)
    assert dropped and not dropped & set(index.records)

    # Drop another partition: its keys leave the indexes.
    other = next(
        r[partition_field]
        for k, r in model.items()
        if r[partition_field] != survivor[partition_field] and k in index.records
    )
    options = {
        **_options(table, "delete_partition"),
        "hoodie.datasource.write.partitions.to.delete": _partition_path(table, other),
    }
    result = write(frame([survivor]), str(path), options)
    index.check(result.instant)
    assert not {k for k, r in model.items() if r[partition_field] == other} & set(index.records)

    # A compaction places no key anew: the indexes stay as they are.
    table = HudiTable.open(str(path))
    if table.config.table_type.value == "MERGE_ON_READ":
        lock = TableLock(table.location, table.location.join(".hoodie"), wait_ms=1000)
        (instant,) = compact(table, lock)
        index.check(instant)


def _partition_path(table: HudiTable, value: str) -> str:
    field = table.config.partition_fields[0]
    return f"{field}={value}" if table.config.hive_style_partitioning else value


def test_with_every_index_maintained_a_write_needs_no_option(  # type: ignore[no-untyped-def]
    spark, fixture_copy
) -> None:
    """No index disabled: the write keeps every partition (stats too) and the indexes."""
    path = fixture_copy("mor/avro/v9_txns_simple_meta")
    table = HudiTable.open(str(path))
    listed = table.config.metadata_partitions
    snapshot = read_snapshot(table)
    data_columns = [c for c in snapshot.column_names if not c.startswith("_hoodie_")]
    rows = sorted(snapshot.select(data_columns).to_pylist(), key=lambda r: r["txn_id"])
    schema = read(spark, str(path)).select(*data_columns).schema
    index = IndexModel(path)
    options = {k: v for k, v in _options(table, "upsert").items() if k not in DISABLE_STATS}
    new = dict(rows[0], txn_id="TXN-NEW", merchant_name="new merchant")
    frame = rows_frame(spark, [new], schema)
    result = write(frame, str(path), options)
    index.check(result.instant)
    frame = rows_frame(spark, [rows[1]], schema)
    result = write(frame, str(path), {**options, "hoodie.datasource.write.operation": "delete"})
    index.check(result.instant)
    assert HudiTable.open(str(path)).config.metadata_partitions == listed


def upsert_new_key(spark, path: str, new_key: str):  # type: ignore[no-untyped-def]
    """Upsert a copy of the first row under ``new_key``, with a new merchant name."""
    table = HudiTable.open(path)
    snapshot = read_snapshot(table)
    data_columns = [c for c in snapshot.column_names if not c.startswith("_hoodie_")]
    first = min(snapshot.select(data_columns).to_pylist(), key=lambda r: r["txn_id"])
    schema = read(spark, path).select(*data_columns).schema
    row = dict(first, txn_id=new_key, merchant_name=f"merchant of {new_key}")
    frame = rows_frame(spark, [row], schema)
    return write(frame, path, _options(table, "upsert"))


CHILD = textwrap.dedent(
    """
    import os, sys
    from hudi_sync.spark import local_session
    from hudi_sync.table.write import timeline as timeline_module
    import tests.test_metadata_record_index_write as t

    original = timeline_module.TimelineWriter._complete_file

    def die(self, instant, action, data, after=None):
        if self.listener is not None:  # the data timeline's writer: its metadata is done
            os._exit(9)
        return original(self, instant, action, data, after)

    timeline_module.TimelineWriter._complete_file = die
    t.upsert_new_key(local_session("child", cores=1), sys.argv[1], "KILLED")
    os._exit(0)
    """
)


def test_a_write_killed_after_its_index_records_is_rolled_back_on_both(  # type: ignore[no-untyped-def]
    spark, fixture_copy
) -> None:
    """The metadata deltacommit (record_index and secondary index log files) completed,
    the data commit not: readers ignore the index records, and the next write rolls them
    back with the data files."""
    path = fixture_copy("mor/avro/v9_txns_simple_meta")
    index = IndexModel(path)
    index.check(upsert_new_key(spark, str(path), "FIRST").instant)
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert child.returncode == 9, child.stderr[-2000:]
    (failed,) = [i.requested_time for i in HudiTable.open(str(path)).timeline.pending]
    mdt = path / ".hoodie/metadata"
    written = [
        *mdt.glob(f"record_index/.*_{failed}.log.*"),
        *mdt.glob(f"secondary_index_merchant_idx/.*_{failed}.log.*"),
    ]
    assert len(written) == 2
    index.check(failed)  # nothing moved: the failed write's records do not count
    assert "KILLED" not in index.records
    index.check(upsert_new_key(spark, str(path), "AFTER").instant)
    assert not any(w.exists() for w in written)
    assert "KILLED" not in index.records and "AFTER" in index.records
