"""The driver's Arrow engine (``driver_write``) against the executors' engines, for the
simple index on both table types: the same sequence (duplicate keys in a batch with ties
and null ordering values, late rows that lose, updates, deletes of stored and missing
keys, an insert_overwrite) written once each way reads the same row for row in our
reader and in hudi-rs, and as a model of Hudi's rules says. Which engine wrote is told
by the Spark jobs a write starts: the driver's engine one (the collect of the rows), the
executors' several; the driver's files carry write tokens ``N-0-0`` (one number a file
group). Also: which engine a write takes
(``hudi_sync.write.driver.max.bytes``, a named Spark merge engine, key types whose
text Spark and Arrow spell differently), and ``write_arrow`` on every index."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from hudi_sync.errors import BadInputError
from hudi_sync.spark.writing.writer import write, write_arrow
from hudi_sync.table import HudiTable
from hudi_sync.table.read.snapshot import read_snapshot
from tests.frames import rows_frame
from tests.test_bucket_write import frame, model, rows_of, steps
from tests.warehouse_rows import hudi_rs_rows

MERGE_ENGINE = "hudi_sync.write.merge.engine"
ENGINES = {"driver": 2**63 - 1, "executors": 0}  # hudi_sync.write.driver.max.bytes


def options(operation: str, table_type: str, engine: str, **more: object) -> dict[str, object]:
    return {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.operation": operation,
        "hoodie.combine.before.insert": "true",  # the model keeps one row per key
        "hudi_sync.write.driver.max.bytes": ENGINES[engine],
        **more,
    }


def spark_jobs(spark: SparkSession, run: Callable[[], object]) -> int:
    """How many Spark jobs ``run`` started."""
    group = f"counted-{uuid.uuid4()}"
    spark.sparkContext.setJobGroup(group, "counted")
    try:
        run()
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def write_tokens(path: Path) -> set[str]:
    """The write tokens of the table's data files (base and log files)."""
    tokens = {f.name.split("_")[1] for f in path.rglob("*.parquet") if ".hoodie" not in f.parts}
    return tokens | {f.name.rsplit("_", 1)[1] for f in path.rglob(".*.log.*")}


def overwritten(expected: list[tuple[Any, ...]], rows: list[tuple[Any, ...]]) -> list[Any]:
    """The model after an insert_overwrite of the rows' partitions with the rows."""
    partitions = {row[1] for row in rows}
    kept = [row for row in expected if row[1] not in partitions]
    return sorted(kept + rows, key=lambda r: r[0])


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_driver_and_executors_write_the_same_table(
    spark: SparkSession, tmp_path: Path, table_type: str
) -> None:
    """Over 30 s on Copy-on-Write by nature: the same writes also run on the executors'
    engine, Spark jobs each, to compare the two engines' tables."""
    batches = steps(11)
    expected = model(batches)
    replacement = [(k, "a", f"o{k}", 9) for k in range(500, 506)]
    tables = {name: tmp_path / name for name in ENGINES}
    jobs: dict[str, list[int]] = {name: [] for name in ENGINES}
    for name, path in tables.items():
        sequence = [*batches, ("insert_overwrite", replacement)]
        for operation, rows in sequence:
            chosen = options(operation, table_type, name)
            run = partial(write, frame(spark, rows), str(path), chosen)
            jobs[name].append(spark_jobs(spark, run))
    expected = overwritten(expected, replacement)
    # The driver's engine: one job (the collect) a write; the executors': several.
    assert max(jobs["driver"]) <= 1 < min(jobs["executors"]), jobs
    assert all(t.endswith("-0-0") for t in write_tokens(tables["driver"]))
    ours = {name: rows_of(read_snapshot(HudiTable.open(str(p)))) for name, p in tables.items()}
    theirs = {name: rows_of(hudi_rs_rows(str(p))) for name, p in tables.items()}
    assert ours["driver"] == expected
    assert ours["executors"] == ours["driver"] == theirs["executors"] == theirs["driver"]


def test_the_engine_is_chosen_by_size_options_and_key_types(
    spark: SparkSession, tmp_path: Path
) -> None:
    rows = [(1, "a", "x", 1), (2, "b", "y", 1)]
    small = tmp_path / "small"
    chosen = options("upsert", "COPY_ON_WRITE", "driver")
    assert spark_jobs(spark, partial(write, frame(spark, rows), str(small), chosen)) <= 1
    # A Spark merge engine named in the options keeps the write on the executors.
    named = tmp_path / "named"
    spark_engine = options("upsert", "COPY_ON_WRITE", "driver", **{MERGE_ENGINE: "python"})
    assert spark_jobs(spark, partial(write, frame(spark, rows), str(named), spark_engine)) > 1
    # A double key's text differs between Spark ("1.0") and Arrow ("1"): the executors
    # key it, and the driver's engine refuses Arrow rows keyed by it.
    doubles = rows_frame(spark, [(1.0, "a", "x", 1)], "id double, p string, name string, ts long")
    typed = tmp_path / "typed"
    write(doubles, str(typed), options("upsert", "COPY_ON_WRITE", "driver"))
    assert [
        r["_hoodie_record_key"] for r in read_snapshot(HudiTable.open(str(typed))).to_pylist()
    ] == ["1.0"]
    arrow = pa.table({"id": [2.0], "p": ["a"], "name": ["y"], "ts": [2]})
    with pytest.raises(BadInputError, match="field id is double: only string and integer"):
        write_arrow(arrow, str(typed), options("upsert", "COPY_ON_WRITE", "driver"))
    assert len(HudiTable.open(str(typed)).timeline.completed_writes) == 1


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_write_arrow_takes_every_operation(tmp_path: Path, table_type: str) -> None:
    path = str(tmp_path / "t")

    def rows(keys: range, p: str, ts: int) -> pa.Table:
        return pa.table(
            {
                "id": pa.array(list(keys), pa.int64()),
                "p": pa.array([p] * len(keys), pa.string()),
                "name": pa.array([f"n{k}" for k in keys], pa.string()),
                "ts": pa.array([ts] * len(keys), pa.int64()),
            }
        )

    def run(operation: str, data: pa.Table, **more: object) -> None:
        write_arrow(data, path, options(operation, table_type, "driver", **more))

    run("bulk_insert", rows(range(0, 10), "a", 1))
    run("insert", rows(range(10, 15), "b", 1))
    run("upsert", rows(range(5, 12), "a", 2))  # 10 and 11: new in "a" (the index is per partition)
    run("delete", rows(range(0, 3), "a", 0))
    run("delete_partition", rows(range(0, 1), "b", 0))
    run("upsert", rows(range(0), "a", 3))  # an empty batch commits, writing no file
    assert (
        not HudiTable.open(path)
        .timeline.commit_metadata(HudiTable.open(path).timeline.completed_writes[-1])
        .write_stats
    )
    table = HudiTable.open(path)
    got = sorted((r["id"], r["p"], r["ts"]) for r in read_snapshot(table).to_pylist())
    want = [(k, "a", 1) for k in range(3, 5)] + [(k, "a", 2) for k in range(5, 12)]
    assert got == want
    theirs = sorted((r["id"], r["p"], r["ts"]) for r in hudi_rs_rows(path).to_pylist())
    assert theirs == want
    assert [i.action for i in table.timeline.completed_writes][-2] == "replacecommit"
