"""The first sync of a Merge-on-Read table folds every slice with logs: in batches whose
Avro blocks decode together, in worker processes when there are many. Either way each
folded log file holds what folding its slice alone gives."""

from __future__ import annotations

import math
import random
import re
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError, CorruptTableError
from hudi_sync.manifest.log_parquet import (
    LOG_FOLDER,
    LogParquetStore,
    folded_batch_rows,
    folded_file_rows,
)
from hudi_sync.spark.writing.writer import write_arrow
from hudi_sync.table import HudiTable
from hudi_sync.table.read.slice_reader import read_folded_log, read_folded_logs
from hudi_sync.table.read.snapshot import slice_merge_rules, snapshot_schema
from hudi_sync.table.records.merge import DeleteKey, MergeMode, MergeRules, fold_log_records
from hudi_sync.table.records.vector_merge import columnar_fold, columnar_folds

PARTITIONS = 30  # x 4 buckets: 120 slices


def _options(operation: str = "upsert") -> dict[str, object]:
    return {
        "hoodie.table.name": "fold",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.index.type": "BUCKET",
        "hoodie.bucket.index.num.buckets": 4,
        "hoodie.write.table.version": 8,
        "hoodie.datasource.write.operation": operation,
    }


def _rows(ids: list[int], ts: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "p": pa.array([f"p{i % PARTITIONS:02d}" for i in ids]),
            "name": pa.array([f"n{ts}-{i}" for i in ids]),
            "ts": pa.array([ts + i % 3 for i in ids], pa.int64()),
        }
    )


@pytest.fixture(scope="module")
def many_slices(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """120 slices with logs: inserts, updates some of them late (lower ordering values),
    then deletes (delete blocks)."""
    path = tmp_path_factory.mktemp("fold") / "t"
    ids = list(range(PARTITIONS * 12))
    write_arrow(_rows(ids, 10), str(path), _options())
    write_arrow(_rows(ids[::2], 9), str(path), _options())
    write_arrow(_rows(ids[::5], 20), str(path), _options("delete"))
    return path


def _folded_files(path: Path, store: LogParquetStore) -> dict[str, list[dict[str, Any]]]:
    instant = store.table.timeline.latest_completed_write()
    assert instant is not None
    store.publish(instant.requested_time)
    folder = path / LOG_FOLDER / "parquet"
    return {f.name: pq.read_table(f).to_pylist() for f in sorted(folder.iterdir())}


def _clear(path: Path) -> None:
    for folder in ("parquet", "snapshots"):
        for item in sorted((path / LOG_FOLDER / folder).glob("**/*"), reverse=True):
            item.rmdir() if item.is_dir() else item.unlink()


def test_worker_processes_fold_what_the_syncing_process_folds(many_slices: Path) -> None:
    in_process = LogParquetStore(HudiTable.open(str(many_slices)), keep=5, processes=1)
    alone = _folded_files(many_slices, in_process)
    assert in_process.workers_used == 0
    assert len(alone) == PARTITIONS * 4
    assert any(any(r["_hudi_sync_deleted"] for r in rows) for rows in alone.values())
    _clear(many_slices)
    workers = LogParquetStore(
        HudiTable.open(str(many_slices)), keep=5, processes=2, min_slices_per_process=10
    )
    assert _folded_files(many_slices, workers) == alone
    assert workers.workers_used == 2


def test_a_batch_folds_each_slice_as_folding_it_alone(many_slices: Path) -> None:
    table = HudiTable.open(str(many_slices))
    instant = table.timeline.latest_completed_write()
    assert instant is not None
    slices = [s for s in table.view.slices_as_of(instant.requested_time) if s.log_files]
    assert all(len(s.log_files) >= 1 for s in slices) and len(slices) == PARTITIONS * 4
    rules, schema = slice_merge_rules(table, slices), snapshot_schema(table, slices)
    committed = table.view.committed_instants
    batched = list(read_folded_logs(table.location, slices, rules, committed, schema))
    for file_slice, rows in zip(slices, batched, strict=True):
        alone = read_folded_log(table.location, file_slice, rules, committed, schema)
        assert rows.to_pylist() == alone.to_pylist()
        assert rows.schema == alone.schema


def test_a_folded_file_is_plain_parquet_of_its_slices_rows(many_slices: Path) -> None:
    """A folded file holds a slice's few rows: it is written without dictionary pages
    (a page per column that costs a third of the encoding and saves no bytes) and
    without statistics, and reads back as folding its slice alone gives."""
    _clear(many_slices)
    table = HudiTable.open(str(many_slices))
    store = LogParquetStore(table, keep=5, processes=1)
    files = _folded_files(many_slices, store)
    instant = table.timeline.latest_completed_write()
    assert instant is not None
    slices = {s.file_id: s for s in table.view.slices_as_of(instant.requested_time)}
    rules = slice_merge_rules(table, [s for s in slices.values() if s.log_files])
    schema = snapshot_schema(table, list(slices.values()))
    committed = table.view.committed_instants
    assert len(files) == PARTITIONS * 4
    for name, rows in files.items():
        metadata = pq.ParquetFile(many_slices / LOG_FOLDER / "parquet" / name).metadata
        for group in range(metadata.num_row_groups):
            for column in range(metadata.num_columns):
                chunk = metadata.row_group(group).column(column)
                assert not chunk.has_dictionary_page, (name, chunk.path_in_schema)
                assert not chunk.is_stats_set, (name, chunk.path_in_schema)
        file_slice = slices[name.split("_", 1)[0]]
        alone = read_folded_log(table.location, file_slice, rules, committed, schema)
        expected = folded_file_rows(alone, file_slice.partition_path, file_slice.file_id, name)
        assert rows == expected.to_pylist()


def test_a_worker_error_is_raised_by_the_sync_naming_the_file(
    many_slices: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "t"
    shutil.copytree(many_slices, copy)
    _clear(copy)
    table = HudiTable.open(str(copy))
    instant = table.timeline.latest_completed_write()
    assert instant is not None
    victim = next(s for s in table.view.slices_as_of(instant.requested_time) if s.log_files)
    broken = copy / victim.relative_path(victim.log_files[-1].name)
    broken.write_bytes(broken.read_bytes()[:40])  # cut inside its first block
    store = LogParquetStore(table, keep=5, processes=2, min_slices_per_process=10)
    with pytest.raises(CorruptTableError, match=re.escape(broken.name)):
        store.publish(instant.requested_time)
    assert store.workers_used == 2


def test_the_process_count_option_is_read_strictly() -> None:
    assert cfg.LOG_FOLD_PROCESSES.read({}) == 0
    assert cfg.LOG_FOLD_PROCESSES.read({"hudi_sync.sync.log.fold.processes": "3"}) == 3
    with pytest.raises(BadInputError, match=re.escape(cfg.LOG_FOLD_PROCESSES.key)):
        cfg.LOG_FOLD_PROCESSES.read({"hudi_sync.sync.log.fold.processes": "-1"})


KEY = "_hoodie_record_key"


@pytest.mark.parametrize("seed", range(12))
def test_the_column_wise_fold_keeps_what_folding_record_by_record_keeps(seed: int) -> None:
    chooser = random.Random(seed)
    kinds: list[tuple[pa.DataType, list[Any]]] = [
        (pa.float64(), [math.nan, -math.inf, -1.5, -0.0, 0.0, 1.5, math.inf]),
        (pa.int32(), [None, -1, 0, 1, 2]),
        (pa.int64(), [-(2**40), 0, 3, 2**40]),
        (pa.string(), ["a", "ab", "b", "é", "z"]),
    ]
    ts_type, values = kinds[seed % len(kinds)]
    schema = pa.schema([(KEY, pa.string()), ("ts", ts_type), ("v", pa.string())])
    keys = [f"k{i}" for i in range(6)]
    log = pa.Table.from_pylist(
        [
            {KEY: chooser.choice(keys), "ts": chooser.choice(values), "v": f"log{i}"}
            for i in range(25)
        ],
        schema=schema,
    )
    entries = list(range(log.num_rows))
    for rules in (
        MergeRules(MergeMode.EVENT_TIME_ORDERING, "ts"),
        MergeRules(MergeMode.COMMIT_TIME_ORDERING),
    ):
        fast = columnar_fold(log, entries, rules)
        assert fast is not None, "the common shape is folded column-wise"
        exact = fold_log_records(log, entries, rules)
        assert fast.schema == exact.schema
        assert repr(fast.to_pylist()) == repr(exact.to_pylist())  # NaN, -0.0 told apart


def test_deletes_are_folded_record_by_record() -> None:
    schema = pa.schema([(KEY, pa.string()), ("ts", pa.int64()), ("_hoodie_is_deleted", pa.bool_())])
    log = pa.Table.from_pylist(
        [
            {KEY: "a", "ts": 1, "_hoodie_is_deleted": False},
            {KEY: "a", "ts": 2, "_hoodie_is_deleted": True},
        ],
        schema=schema,
    )
    rules = MergeRules(MergeMode.EVENT_TIME_ORDERING, "ts")
    assert columnar_fold(log, [0, 1], rules) is None
    assert columnar_fold(log.slice(0, 1), [0, DeleteKey("a")], rules) is None


@pytest.mark.parametrize("with_partition", [True, False])
def test_a_batchs_file_columns_are_each_slices_own(with_partition: bool) -> None:
    def folded(rows: list[tuple[str, str | None]], ts: pa.DataType) -> pa.Table:
        columns: dict[str, pa.Array] = {KEY: pa.array([k for k, _ in rows], pa.string())}
        if with_partition:  # a delete row's partition is null
            columns["_hoodie_partition_path"] = pa.array([p for _, p in rows], pa.string())
        columns["ts"] = pa.array(range(len(rows)), ts)
        return pa.table(columns)

    files = [("p/a", "f-a", "a.parquet"), ("p/b", "f-b", "b.parquet"), ("p/c", "f-c", "c.parquet")]
    rows: list[list[tuple[str, str | None]]] = [
        [("k1", None), ("k2", "p/x")],
        [],
        [("k3", None)] * 3,
    ]
    same = [folded(r, pa.int64()) for r in rows]
    mixed = [*same[:2], folded(rows[2], pa.float64())]  # another schema: slice by slice
    for tables in (same, mixed):
        alone = [folded_file_rows(t, *f) for t, f in zip(tables, files, strict=True)]
        batched = folded_batch_rows(tables, files)
        assert [t.to_pylist() for t in batched] == [t.to_pylist() for t in alone]
        assert [t.schema for t in batched] == [t.schema for t in alone]
        partitions = [t.column("_hoodie_partition_path").to_pylist() for t in batched]
        stored = "p/x" if with_partition else "p/a"
        assert partitions == [["p/a", stored], [], ["p/c"] * 3]
        assert [t.column("_hudi_sync_file_id").to_pylist() for t in batched] == [
            ["f-a"] * 2,
            [],
            ["f-c"] * 3,
        ]
        assert batched[2].column("_hudi_sync_log_file").to_pylist() == ["c.parquet"] * 3


@pytest.mark.parametrize("seed", range(8))
def test_logs_folded_together_keep_what_each_folded_alone_keeps(seed: int) -> None:
    """``columnar_folds`` folds many slices' logs in one pass, a key being its log and
    its record key: every log keeps what ``columnar_fold`` keeps it alone, the same
    keys among logs do not meet, and a log that cannot be folded column-wise (a delete
    record, a null ordering value in a double column, another schema, no rows) is
    answered alone (None where alone gives None) without changing the others."""
    chooser = random.Random(seed)
    ts_type, values = [
        (pa.float64(), [math.nan, -math.inf, -1.5, -0.0, 0.0, 1.5]),
        (pa.int32(), [None, -1, 0, 1, 2]),
        (pa.string(), ["a", "ab", "b", "é"]),
    ][seed % 3]
    schema = pa.schema([(KEY, pa.string()), ("ts", ts_type), ("v", pa.string())])
    keys = [f"k{i}" for i in range(5)]  # shared by every log

    def log(size: int, of: pa.Schema = schema, ts: list[Any] = values) -> pa.Table:
        rows = [
            {KEY: chooser.choice(keys), "ts": chooser.choice(ts), "v": f"r{i}"} for i in range(size)
        ]
        return pa.Table.from_pylist(rows, schema=of)

    logs: list[tuple[pa.Table, list[Any]]] = []
    for _ in range(12):
        rows = log(chooser.randint(1, 9))
        logs.append((rows, list(range(rows.num_rows))))
    logs.insert(3, (logs[0][0], [0, DeleteKey("k1"), *range(1, logs[0][0].num_rows)]))
    logs.insert(5, (schema.empty_table(), []))
    other = pa.schema([(KEY, pa.string()), ("ts", pa.int64()), ("v", pa.string())])
    logs.insert(7, (log(4, other, [1, 2]), [0, 1, 2, 3]))
    for rules in (
        MergeRules(MergeMode.EVENT_TIME_ORDERING, "ts"),
        MergeRules(MergeMode.COMMIT_TIME_ORDERING),
    ):
        together = columnar_folds(logs, rules)
        assert sum(t is not None for t in together) >= 12
        for (rows, entries), joint in zip(logs, together, strict=True):
            alone = columnar_fold(rows, entries, rules)
            if alone is None:
                assert joint is None
                continue
            assert joint is not None and joint.schema == alone.schema
            assert repr(joint.to_pylist()) == repr(alone.to_pylist())  # NaN, -0.0 told apart
    with_null = pa.Table.from_pylist([{KEY: "k1", "ts": None, "v": "x"}], schema=schema)
    declined = [*logs, (with_null, [0])]  # joint fold declined: each log alone
    for (rows, entries), joint in zip(declined, columnar_folds(declined, rules), strict=True):
        alone = columnar_fold(rows, entries, rules)
        assert repr(None if joint is None else joint.to_pylist()) == repr(
            None if alone is None else alone.to_pylist()
        )
