"""The executors' key lookup reads the stored keys with their types named: no Spark job
infers the base files' schema, and a base file without the key columns is refused,
naming it (Spark would read the missing columns as nulls: every key new)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from hudi_sync.errors import CorruptTableError, WriteError
from hudi_sync.spark import write
from hudi_sync.spark.writing.options import MERGE_ENGINE
from hudi_sync.table import HudiTable
from tests.test_spark_writer import frame, hudi_rs, options

PYTHON_MERGE = {MERGE_ENGINE: "python"}  # the executors' Python merge: key_lookup


def _seeded(spark, path: Path) -> list[dict[str, object]]:  # type: ignore[no-untyped-def]
    rows = [{"id": i, "p": "a", "name": f"n{i}", "ts": 1} for i in range(4)]
    write(frame(spark, rows, False), str(path), options("t", 6, "insert", **PYTHON_MERGE))
    return rows


def test_an_upsert_runs_no_schema_inference_job(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    rows = _seeded(spark, path)
    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup())
    changed = [dict(rows[1], name="new", ts=2), {"id": 9, "p": "a", "name": "n9", "ts": 1}]
    write(frame(spark, changed, False), str(path), options("t", 6, "upsert", **PYTHON_MERGE))
    infos = [
        tracker.getStageInfo(stage)
        for job in set(tracker.getJobIdsForGroup()) - before
        for stage in tracker.getJobInfo(job).stageIds
    ]
    # The status store keeps a bounded number of stages (spark.ui.retainedStages): late in
    # the suite's long session one of this write's stage ids had no info left (seen once,
    # in a full run). Stages it no longer holds are left out; the write must still show
    # stages, and none of them an inference.
    stages = [info for info in infos if info is not None]
    # Spark names a schema inference's stage after the reader call ("parquet at ...").
    assert stages and not [s.name for s in stages if s.name.startswith("parquet at")]
    names = {r[0]: r[2] for r in hudi_rs(path, False)}
    assert (names[1], names[9], len(names)) == ("new", "n9", 5)


def test_a_base_file_without_the_record_key_column_is_refused_naming_it(  # type: ignore[no-untyped-def]
    spark, tmp_path
) -> None:
    path = tmp_path / "t"
    rows = _seeded(spark, path)
    (base,) = [p for p in path.rglob("*.parquet")]
    pq.write_table(pq.read_table(base).drop_columns(["_hoodie_record_key"]), base)
    writes = len(HudiTable.open(str(path)).timeline.completed_writes)
    changed = [dict(rows[1], name="new", ts=2)]
    with pytest.raises((CorruptTableError, WriteError)) as refused:
        write(frame(spark, changed, False), str(path), options("t", 6, "upsert", **PYTHON_MERGE))
    message = str(refused.value)
    assert base.name in message and "_hoodie_record_key" in message and "\n" not in message
    table = HudiTable.open(str(path))
    assert len(table.timeline.completed_writes) == writes and not table.timeline.pending
