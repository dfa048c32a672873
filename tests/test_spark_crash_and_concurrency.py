"""A writer killed at each step, and two writers at once (separate processes)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hudi_sync.spark import read, write
from hudi_sync.table import HudiTable
from tests.test_spark_writer import frame, hudi_rs, options, our_rows

CHILD = textwrap.dedent(
    """
    import os, sys, time
    from hudi_sync.errors import WriteConflictError
    from hudi_sync.spark import local_session, write
    from hudi_sync.table.write import commit as commit_module
    from hudi_sync.table.write import timeline as timeline_writer
    from tests.test_spark_writer import frame, options

    path, mode, flag = sys.argv[1], sys.argv[2], sys.argv[3]

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
    spark = local_session("child", cores=1)
    rows = [{"id": 1, "p": "a", "name": mode, "ts": 5}, {"id": 9, "p": "a", "name": mode, "ts": 5}]
    try:
        write(frame(spark, rows, False), path, options("t", 6, "upsert"))
    except WriteConflictError as exc:
        print(exc)
        os._exit(3)
    os._exit(0)
    """
)


def _child(path: Path, mode: str, flag: Path | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), mode, str(flag or path.parent / "flag")],
        cwd=Path(__file__).resolve().parents[1],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _seed(spark, path: Path) -> list:  # type: ignore[no-untyped-def]
    rows = [{"id": i, "p": p, "name": f"n{i}", "ts": 1} for i, p in enumerate("aab")]
    write(frame(spark, rows, False), str(path), options("t", 6, "upsert"))
    return our_rows(spark, path, False)


@pytest.mark.parametrize("step", ["after-requested", "after-files", "before-completion"])
def test_a_writer_killed_at_each_step_leaves_the_previous_snapshot(spark, tmp_path, step) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    before = _seed(spark, path)
    child = _child(path, step)
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
    assert hudi_rs(path, False) == our_rows(spark, path, False)
    assert {r[2] for r in our_rows(spark, path, False)} == {"n0", "n1", "after"}


def test_a_second_writer_of_the_same_file_group_fails_cleanly(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Optimistic concurrency: the slow writer (a separate process) has written its
    files when the fast one commits an update of the same file group; at its own
    commit the slow one detects the overlap, rolls back and fails."""
    path = tmp_path / "t"
    _seed(spark, path)
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
    rows = {r["id"]: r["name"] for r in read(spark, str(path)).toArrow().to_pylist()}
    assert rows == {0: "n0", 1: "fast", 2: "n2"}
    assert hudi_rs(path, False) == our_rows(spark, path, False)
    timeline = HudiTable.open(str(path)).timeline
    assert not timeline.pending and any(i.action == "rollback" for i in timeline.instants)
