"""A writer killed at each step (of the data commit and of the metadata table's
deltacommit before it), and two writers at once (separate processes).

A child whose rows go to the driver's engine writes them as Arrow rows (``write_arrow``:
the same ``_write`` steps ``write`` runs on a small DataFrame it collects) and starts no
JVM; the child whose data files are written by Spark's tasks starts a session."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from hudi_sync.spark import write, write_arrow
from hudi_sync.spark.compat import arrow_dataframe
from hudi_sync.table import HudiTable
from hudi_sync.table.read.snapshot import read_snapshot
from tests.metadata_checks import (
    IndexModel,
    StatsModel,
    assert_files_partition,
    assert_readers_agree,
    rows_by_key,
    write_options,
)
from tests.test_spark_writer import core_rows, frame, hudi_rs, options, our_rows

# The rows of tests.test_spark_writer.SCHEMA as Arrow (parsing its DDL needs a JVM).
ARROW_SCHEMA = pa.schema(
    [("id", pa.int32()), ("p", pa.string()), ("name", pa.string()), ("ts", pa.int64())]
)

CHILD = textwrap.dedent(
    """
    import os, sys, time
    import pyarrow as pa
    from hudi_sync.errors import WriteConflictError
    from hudi_sync.spark import local_session, write, write_arrow
    from hudi_sync.table.write import commit as commit_module
    from hudi_sync.table.write import timeline as timeline_writer
    from tests.test_spark_crash_and_concurrency import ARROW_SCHEMA
    from tests.test_spark_writer import ENGINES, frame, options

    path, mode, flag, engine = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]

    def die(*args, **kwargs):
        os._exit(9)

    def wait_for_flag(self, partitions):
        open(flag + ".ready", "w").close()
        while not os.path.exists(flag):
            time.sleep(0.05)
        return original(self, partitions)

    original = commit_module.WriteTransaction.write_partition_metadata
    if mode == "after-requested":
        timeline_writer.TimelineWriter.mark_inflight = die
    elif mode == "after-files":
        commit_module.WriteTransaction.write_partition_metadata = die
    elif mode == "before-completion":
        timeline_writer.TimelineWriter.complete = die
    elif mode == "slow":
        commit_module.WriteTransaction.write_partition_metadata = wait_for_flag
    rows = [{"id": 1, "p": "a", "name": mode, "ts": 5}, {"id": 9, "p": "a", "name": mode, "ts": 5}]
    write_options = options("t", 6, "upsert", **ENGINES[engine])
    try:
        if engine == "driver":
            write_arrow(pa.Table.from_pylist(rows, ARROW_SCHEMA), path, write_options)
        else:
            write(frame(local_session("child", cores=1), rows, False), path, write_options)
    except WriteConflictError as exc:
        print(exc)
        os._exit(3)
    os._exit(0)
    """
)


def _child(
    path: Path, mode: str, flag: Path | None = None, engine: str = "driver"
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), mode, str(flag or path.parent / "flag"), engine],
        cwd=Path(__file__).resolve().parents[1],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(scope="module")
def seeded(spark, tmp_path_factory):  # type: ignore[no-untyped-def]
    """One seeded table for the module and the rows our reader reads from it; each test
    kills or races a writer on its own copy (the seed is the same three-row upsert)."""
    path = tmp_path_factory.mktemp("seed") / "t"
    rows = [{"id": i, "p": p, "name": f"n{i}", "ts": 1} for i, p in enumerate("aab")]
    write(frame(spark, rows, False), str(path), options("t", 6, "upsert"))
    return path, our_rows(spark, path, False)


def _seed(seeded, tmp_path: Path) -> tuple[Path, list]:  # type: ignore[no-untyped-def, type-arg]
    source, before = seeded
    path = tmp_path / "t"
    shutil.copytree(source, path)
    return path, before


@pytest.mark.parametrize(
    "step,engine",
    [
        ("after-requested", "driver"),
        ("after-files", "driver"),
        ("after-files", "executors"),  # data files written by Spark's tasks
        ("before-completion", "driver"),
    ],
)
def test_a_writer_killed_at_each_step_leaves_the_previous_snapshot(  # type: ignore[no-untyped-def]
    spark, seeded, tmp_path, step, engine
) -> None:
    path, before = _seed(seeded, tmp_path)
    child = _child(path, step, engine=engine)
    _, err = child.communicate(timeout=300)
    assert child.returncode == 9, err[-2000:]
    pending = [i.requested_time for i in HudiTable.open(str(path)).timeline.pending]
    assert len(pending) == 1
    assert our_rows(spark, path, False) == before
    assert hudi_rs(path, False) == before
    # The next write rolls the dead one back, then commits.
    result = write(
        frame(spark, [{"id": 2, "p": "b", "name": "after", "ts": 2}], False),
        str(path),
        options("t", 6, "upsert"),
    )
    assert result.rolled_back == pending
    leftovers = [p for p in path.rglob(f"*_{pending[0]}.parquet")]
    assert leftovers == []
    after = core_rows(path, False)
    assert hudi_rs(path, False) == after
    assert {r[2] for r in after} == {"n0", "n1", "after"}


def test_a_second_writer_of_the_same_file_group_fails_cleanly(spark, seeded, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Optimistic concurrency: the slow writer (a separate process) has written its
    files when the fast one commits an update of the same file group; at its own
    commit the slow one detects the overlap, rolls back and fails."""
    path, _ = _seed(seeded, tmp_path)
    flag = tmp_path / "go"
    slow = _child(path, "slow", flag)
    deadline = time.monotonic() + 300
    while not Path(str(flag) + ".ready").exists():
        assert slow.poll() is None, slow.communicate()[1][-2000:]
        assert time.monotonic() < deadline
        time.sleep(0.1)
    fast = write(
        frame(spark, [{"id": 1, "p": "a", "name": "fast", "ts": 7}], False),
        str(path),
        options("t", 6, "upsert"),
    )
    flag.touch()
    out, err = slow.communicate(timeout=300)
    assert slow.returncode == 3, err[-2000:]
    assert "conflicts with commit " + fast.instant in out
    ours = our_rows(spark, path, False)  # (id, p, name, ts, commit time)
    assert {r[0]: r[2] for r in ours} == {0: "n0", 1: "fast", 2: "n2"}
    assert hudi_rs(path, False) == ours
    timeline = HudiTable.open(str(path)).timeline
    assert not timeline.pending and any(i.action == "rollback" for i in timeline.instants)


# -- the metadata table's steps ---------------------------------------------------------
# A Hudi-written table with a metadata table, every partition kept (files, record_index,
# secondary indexes, column_stats, partition_stats); the writer is killed at each step of
# the metadata deltacommit that precedes the data commit.
MDT_CHILD = textwrap.dedent(
    """
    import os, sys
    from hudi_sync.table.write.metadata_table.writer import MetadataTableWriter
    from hudi_sync.table.write import timeline as timeline_module
    import tests.test_spark_crash_and_concurrency as t

    path, step = sys.argv[1], sys.argv[2]
    append = MetadataTableWriter._append
    deltacommit = MetadataTableWriter.deltacommit
    complete_file = timeline_module.TimelineWriter._complete_file

    def before_block(self, *args):
        os._exit(9)

    def after_block(self, *args):
        append(self, *args)
        os._exit(9)

    def after_deltacommit(self, *args):
        deltacommit(self, *args)
        os._exit(9)

    def before_completion(self, instant, action, data, after=None):
        # The data timeline's writer has the metadata listener, the metadata table's none.
        if (self.listener is not None) == (step == "before-data-completion"):
            os._exit(9)
        return complete_file(self, instant, action, data, after)

    if step == "before-metadata-block":
        MetadataTableWriter._append = before_block
    elif step == "after-metadata-block":
        MetadataTableWriter._append = after_block
    elif step == "after-metadata-completion":
        MetadataTableWriter.deltacommit = after_deltacommit
    else:
        timeline_module.TimelineWriter._complete_file = before_completion
    t.upsert_new_key(None, path, "KILLED")
    os._exit(0)
    """
)
MDT_STEPS = [
    "before-metadata-block",
    "after-metadata-block",
    "before-metadata-completion",
    "after-metadata-completion",
    "before-data-completion",
]


def upsert_new_key(spark: SparkSession | None, path: str, new_key: str):  # type: ignore[no-untyped-def]
    """Upsert a copy of the first row under ``new_key`` (through Spark's writer, or
    without ``spark`` as Arrow rows in this process); the written row."""
    table = HudiTable.open(path)
    snapshot = read_snapshot(table)
    model = rows_by_key(snapshot, "txn_id")
    columns = list(next(iter(model.values())))
    row = dict(model[min(model)], txn_id=new_key, merchant_name=f"merchant of {new_key}")
    rows = pa.Table.from_pylist([row], snapshot.select(columns).schema)
    settings = write_options(table, "upsert")
    if spark is None:
        return write_arrow(rows, path, settings), row
    return write(arrow_dataframe(spark, rows), path, settings), row


@pytest.mark.parametrize("step", MDT_STEPS)
def test_a_writer_killed_at_each_metadata_table_step_leaves_both_tables_consistent(  # type: ignore[no-untyped-def]
    spark, fixture_copy, step
) -> None:
    path = fixture_copy("mor/avro/v9_txns_simple_meta")
    before = rows_by_key(read_snapshot(HudiTable.open(str(path))), "txn_id")
    index, stats = IndexModel(path), StatsModel(path)
    stats.before_write()
    child = subprocess.run(
        [sys.executable, "-c", MDT_CHILD, str(path), step],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert child.returncode == 9, child.stderr[-2000:]
    (failed,) = [i.requested_time for i in HudiTable.open(str(path)).timeline.pending]
    mdt_timeline = path / ".hoodie/metadata/.hoodie/timeline"
    assert len(list(mdt_timeline.glob(f"{failed}_*.deltacommit"))) == step.startswith(
        ("after-metadata-completion", "before-data-completion")
    )
    # Both tables read as before the write: hudi-rs and our core, files and indexes.
    assert_readers_agree(path, "txn_id", before)
    assert_files_partition(path, None, skip_instant=failed)
    index.check(failed)
    assert "KILLED" not in index.records

    # The next write rolls the dead one back on both tables, then commits.
    result, row = upsert_new_key(spark, str(path), "AFTER")
    assert result.rolled_back == [failed]
    leftovers = [p for p in path.rglob(f"*{failed}*") if "timeline" not in p.parts]
    assert leftovers == []
    assert not list(mdt_timeline.glob(f"{failed}*"))
    before[row["txn_id"]] = row
    assert_readers_agree(path, "txn_id", before)
    assert_files_partition(path, result.instant)
    index.check(result.instant)
    stats.after_write(result.instant, result.clean_instant)
