"""Bucket-index writes of a DataFrame on the executors (``bucket_write``) against the
driver's Arrow path (``bucket_index``): the same sequence of inserts, upserts and deletes,
written once each way (``hudi_sync.write.driver.max.bytes`` picks the path), reads
the same row for row in our reader and in hudi-rs, and as a model of Hudi's rules says:
one row per key by ordering value then arrival (ties to the later row, a null ordering
value lowest), new and existing buckets, partitioned or not, before and after a
compaction. Which path wrote is read off the log files' write tokens (the driver's is
``0-0-0``, a Spark task's names its partition, stage and attempt)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession

from hudi_sync.errors import BadInputError
from hudi_sync.spark.writing.writer import write
from hudi_sync.table import HudiTable
from hudi_sync.table.read.snapshot import read_snapshot
from hudi_sync.table.write.compaction import compact, run_in_process
from hudi_sync.table.write.lock import TableLock
from tests.frames import rows_frame
from tests.warehouse_rows import hudi_rs_rows

SCHEMA = "id int, p string, name string, ts long"
PATHS = {"driver": 2**63 - 1, "executors": 0}  # hudi_sync.write.driver.max.bytes


def options(operation: str, partitioned: bool, version: int, path: str) -> dict[str, object]:
    chosen = {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.index.type": "BUCKET",
        "hoodie.bucket.index.num.buckets": 4,
        "hoodie.write.table.version": version,
        "hoodie.datasource.write.operation": operation,
        "hudi_sync.write.driver.max.bytes": PATHS[path],
    }
    if partitioned:
        chosen["hoodie.datasource.write.partitionpath.field"] = "p"
    return chosen


def frame(spark: SparkSession, rows: list[tuple[Any, ...]], path: str = "executors") -> DataFrame:
    """The rows in this order: for the executors in three Spark partitions (arrival
    crosses partitions, the executors' subject); for the driver, which collects them in
    this order either way, made from Arrow (``tests.frames``: no Python worker job)."""
    if path == "driver":
        return rows_frame(spark, rows, SCHEMA)
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, 3), SCHEMA)


def later_wins(stored: tuple[Any, ...] | None, row: tuple[Any, ...]) -> bool:
    """Hudi's event-time rule: the higher ordering value wins, a tie the later row; a
    null ordering value is the lowest."""
    if stored is None:
        return True
    return (row[3] if row[3] is not None else -1) >= (stored[3] if stored[3] is not None else -1)


def steps(seed: int) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """Insert, upsert, delete, upsert: duplicate keys in a batch (ties and nulls in the
    ordering field among them), keys already stored and new ones, late rows that lose."""
    rng = random.Random(seed)
    first = [(k, "ab"[k % 2], f"i{k}", rng.choice([1, 1, 2])) for k in range(40)]
    first += [(k, "ab"[k % 2], f"tie{k}", 1) for k in range(0, 40, 3)]  # later: wins ties
    # Null ordering values (keys never written again: Hudi cannot compare a null with a
    # stored value): two nulls, the later wins; a null loses to any value, before or after.
    for k in range(100, 112):
        values = [[None, None], [None, 3], [3, None]][k % 3]
        first += [(k, "ab"[k % 2], f"n{k}-{i}", v) for i, v in enumerate(values)]
    rng.shuffle(first)
    second = []
    for _ in range(120):
        key = rng.randrange(70)
        second.append((key, "ab"[key % 2], f"u{rng.randrange(999)}", rng.choice([0, 5, 5, 6])))
    deletes = [(k, "ab"[k % 2], "", 7) for k in range(0, 70, 4)]
    third = [(k, "ab"[k % 2], f"w{k}-{i}", 8) for i in range(2) for k in range(30, 90, 2)]
    return [("insert", first), ("upsert", second), ("delete", deletes), ("upsert", third)]


def model(batches: list[tuple[str, list[tuple[Any, ...]]]]) -> list[tuple[Any, ...]]:
    table: dict[int, tuple[Any, ...]] = {}
    for operation, rows in batches:
        if operation == "delete":
            for row in rows:
                table.pop(row[0], None)
            continue
        incoming: dict[int, tuple[Any, ...]] = {}
        for row in rows:  # one row per key: ordering value, then arrival
            if later_wins(incoming.get(row[0]), row):
                incoming[row[0]] = row
        for key, row in incoming.items():
            if later_wins(table.get(key), row):
                table[key] = row
    return sorted(table.values(), key=lambda r: r[0])


def rows_of(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["p"], r["name"], r["ts"]) for r in table.to_pylist())


def write_tokens(path: Path) -> set[str]:
    return {f.name.rsplit("_", 1)[1] for f in path.rglob(".*.log.*")}


@pytest.mark.parametrize(
    ("partitioned", "version"), [(True, 8), (False, 6)], ids=["partitioned-v8", "flat-v6"]
)
def test_executors_and_driver_write_the_same_table(
    spark: SparkSession, tmp_path: Path, partitioned: bool, version: int
) -> None:
    batches = steps(version)
    expected = model(batches)
    tables = {name: tmp_path / name for name in PATHS}
    for number, (operation, rows) in enumerate(batches):
        for name, path in tables.items():
            opts = options(operation, partitioned, version, name)
            write(frame(spark, rows, name), str(path), opts)
        if number == 1:  # existing buckets with base files from here on
            for path in tables.values():
                opened = HudiTable.open(str(path))
                lock = TableLock(opened.location, opened.location.join(".hoodie"), 60_000, 0)
                assert compact(opened, lock, executor=run_in_process)
    assert write_tokens(tables["driver"]) == {"0-0-0"}
    assert "0-0-0" not in write_tokens(tables["executors"])
    ours = {name: rows_of(read_snapshot(HudiTable.open(str(p)))) for name, p in tables.items()}
    theirs = {name: rows_of(hudi_rs_rows(str(p))) for name, p in tables.items()}
    assert ours["executors"] == ours["driver"] == theirs["executors"] == theirs["driver"]
    assert ours["executors"] == expected
    for name, path in tables.items():  # one file group per (partition, bucket)
        slices = HudiTable.open(str(path)).file_slices()
        groups = {(s.partition_path, s.file_id[:8]) for s in slices}
        assert len(groups) == len(slices) <= (2 if partitioned else 1) * 4, name


@pytest.mark.spark_compat
def test_a_refused_key_on_the_executors_leaves_nothing_written(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    write(frame(spark, [(1, "a", "x", 1)]), str(path), options("upsert", True, 8, "executors"))
    rows = [(1, "a", "y", 2), (None, "b", "no key", 2)]
    with pytest.raises(BadInputError, match="null or empty record key field id"):
        write(frame(spark, rows), str(path), options("upsert", True, 8, "executors"))
    table = HudiTable.open(str(path))
    assert len(table.timeline.completed_writes) == 1 and not table.timeline.pending
    assert rows_of(read_snapshot(table)) == [(1, "a", "x", 1)]
