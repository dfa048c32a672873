"""Merge-on-Read upserts through the simple index: the stored keys looked up once
(``key_lookup``), a few updates appended to logs by the driver, many by the Python
workers, new keys in new base files; every way read alike by hudi-rs."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from hudi_sync.spark import write
from hudi_sync.spark.writing import python_merge
from hudi_sync.table import HudiTable
from tests.test_spark_writer import frame, hudi_rs, options

# The executors' engines (the driver's takes small writes: tests/test_driver_write.py);
# the stored rows (the tests' setup) are written by the driver's.
STORED = {"hoodie.datasource.write.table.type": "MERGE_ON_READ"}
MOR = {**STORED, "hudi_sync.write.driver.max.bytes": 0}
# Plan nodes of the Python workers' Arrow jobs (``applyInArrow``, ``mapInArrow``).
PYTHON_NODES = ("FlatMapGroupsInArrow", "MapInArrow", "PythonMapInArrow")


def _base_rows() -> list[dict[str, Any]]:
    return [{"id": i, "p": "ab"[i % 2], "name": f"n{i}", "ts": 1} for i in range(60)]


def _upserts() -> list[dict[str, Any]]:
    """Updates in both stored partitions, one losing to the stored row by ordering, a
    key given twice, new keys in a stored and in a new partition; deletes separately."""
    rows = [{"id": i, "p": "ab"[i % 2], "name": f"u{i}", "ts": 2} for i in range(0, 60, 7)]
    rows.append({"id": 3, "p": "b", "name": "old", "ts": 0})  # loses to ts 1
    rows.append({"id": 14, "p": "a", "name": "later", "ts": 3})  # 14 twice: ts 3 wins
    rows += [{"id": 100 + i, "p": "a", "name": f"new{i}", "ts": 2} for i in range(5)]
    rows += [{"id": 200 + i, "p": "c", "name": f"c{i}", "ts": 2} for i in range(5)]
    return rows


def _expected(after_delete: bool) -> list[tuple[Any, ...]]:
    """The rows the table holds after the upserts (and the delete), without commit times."""
    table = {r["id"]: r for r in _base_rows()}
    for row in _upserts():
        stored = table.get(row["id"])
        if stored is None or row["ts"] >= stored["ts"]:
            table[row["id"]] = row
    if after_delete:
        for key in (1, 2, 200):
            table.pop(key)
    return sorted((r["id"], r["p"], r["name"], r["ts"]) for r in table.values())


def _rows(path: Path) -> list[tuple[Any, ...]]:
    return sorted(row[:4] for row in hudi_rs(path, False))


def _status_store(spark: SparkSession) -> Any:
    return spark._jsparkSession.sharedState().statusStore()


def _last_execution_id(spark: SparkSession) -> int:
    """The newest SQL execution's id (-1 if none). Executions are listed by id, and
    only the last is fetched: the store holds up to a thousand executions of the run's
    one session, and each one read is a round trip to the JVM."""
    store = _status_store(spark)
    count = int(store.executionsCount())
    return int(store.executionsList(count - 1, 1).apply(0).executionId()) if count else -1


def _sql_plans_after(spark: SparkSession, last_id: int) -> list[str]:
    """The physical plan of every SQL execution after execution ``last_id``, read from
    the newest back to it."""
    store = _status_store(spark)
    plans = []
    for offset in reversed(range(int(store.executionsCount()))):
        execution = store.executionsList(offset, 1).apply(0)
        if int(execution.executionId()) <= last_id:
            break
        plans.append(execution.physicalPlanDescription())
    return plans[::-1]


@pytest.mark.parametrize("version", [6, 8])
def test_driver_and_worker_log_appends_write_tables_hudi_rs_reads_alike(  # type: ignore[no-untyped-def]
    spark, tmp_path, version, monkeypatch
) -> None:
    base = tmp_path / "base"
    write(frame(spark, _base_rows(), False), str(base), options("t", version, "insert", **STORED))
    stored = set(HudiTable.open(str(base)).view.base_files_as_of())
    written: dict[str, Any] = {}
    for way in ("driver", "workers"):
        path = tmp_path / way
        shutil.copytree(base, path)
        if way == "workers":  # every update counts as too many for the driver
            monkeypatch.setattr(python_merge, "DRIVER_BYTES", 0)
        upsert = options("t", version, "upsert", **MOR)
        written[way] = write(frame(spark, _upserts(), False), str(path), upsert)
        assert _rows(path) == _expected(False), way
        deletes = [{"id": i, "p": p, "name": None, "ts": 9} for i, p in ((1, "b"), (2, "a"))]
        deletes.append({"id": 200, "p": "c", "name": None, "ts": 9})
        write(frame(spark, deletes, False), str(path), options("t", version, "delete", **MOR))
        assert _rows(path) == _expected(True), way

    def logged(result: Any) -> set[tuple[Any, ...]]:
        return {
            (s.partition_path, s.file_id, s.num_updates, s.num_deletes, s.num_inserts)
            for s in result.stats
            if s.log_files
        }

    driver, workers = written["driver"], written["workers"]
    assert logged(driver) == logged(workers)
    # Every 7th key (14 once, its later row) and key 3, whose row loses to the stored one
    # when read: a log takes what comes, readers merge by ordering.
    assert sum(s.num_updates for s in driver.stats) == 10
    # New keys go to new base files, in the stored partition too: no log takes them.
    for result in (driver, workers):
        new = [s for s in result.stats if (s.partition_path, s.file_id) not in stored]
        assert new and all(not s.log_files and s.path.endswith(".parquet") for s in new)
        assert sum(s.num_inserts for s in new) == 10
        assert {s.partition_path.removeprefix("p=") for s in new} == {"a", "c"}


def test_a_small_merge_on_read_upsert_starts_no_python_workers(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "table"
    write(frame(spark, _base_rows(), False), str(path), options("t", 8, "insert", **STORED))
    before = _last_execution_id(spark)
    result = write(frame(spark, _upserts(), False), str(path), options("t", 8, "upsert", **MOR))
    plans = _sql_plans_after(spark, before)
    assert plans and not [p for p in plans if any(node in p for node in PYTHON_NODES)]
    assert any(s.log_files for s in result.stats)
    assert _rows(path) == _expected(False)
