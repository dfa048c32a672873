"""Merge-on-Read writes: log files, deltacommits and compaction, read back by hudi-rs,
our Spark reader and the table core, against the in-memory model."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from hudi_sync.cli.app import app
from hudi_sync.errors import BadInputError
from hudi_sync.spark import read, write
from hudi_sync.spark.compat import collect_arrow
from hudi_sync.table import HudiTable
from hudi_sync.table.read.snapshot import read_snapshot
from hudi_sync.table.write.compaction import compact, pending_compactions, plan_compaction
from hudi_sync.table.write.lock import TableLock
from tests.fixture_tables import set_properties
from tests.frames import rows_frame
from tests.spark_model import TableModel, table_rows
from tests.test_spark_writer import (
    ENGINES,
    RandomWorkload,
    core_rows,
    frame,
    hudi_rs,
    options,
    our_rows,
    our_rows_as_of,
)
from tests.warehouse_rows import hudi_rs_rows

HUDI_WRITTEN_MOR = (
    "mor/avro/v6_trips_8i3d",
    "mor/avro/v8_trips_8i3u1d",
    "mor/parquet/v6_nonpartitioned_rollback",
    "mor/avro/v9_txns_simple_meta",
)
MOR = {"hoodie.datasource.write.table.type": "MERGE_ON_READ"}


def hudi_rs_incremental(path: Path, begin: str, end: str) -> list[Any]:
    options = (
        hudi.HudiReadOptions()
        .with_query_type(hudi.HudiQueryType.Incremental)
        .with_start_timestamp(begin)
        .with_end_timestamp(end)
    )
    batches = hudi.HudiTable(str(path)).read(options)
    return table_rows(pa.Table.from_batches(batches), False) if batches else []


@pytest.mark.parametrize(
    ("version", "block_format", "seed", "engine"),
    [
        (6, "avro", 11, "driver"),
        (8, "parquet", 12, "driver"),
        (8, "avro", 13, "driver"),
        (8, "parquet", 12, "executors"),
    ],
)
def test_random_merge_on_read_writes_match_the_model_in_every_reader(  # type: ignore[no-untyped-def]
    spark, tmp_path, version, block_format, seed, engine
) -> None:
    """A random sequence per table version and log block format; the executors'
    parameter, whose writes and inline compactions run the executors' engines (some 14
    Spark jobs a write), runs each kind of operation once (``covering_sequence``)."""
    settings = {
        **MOR,
        **ENGINES[engine],
        "hoodie.logfile.data.block.format": block_format,
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": 3,
    }
    workload = RandomWorkload(spark, tmp_path / "table", version, seed, **settings)
    sequence = workload.covering_sequence() if engine == "executors" else None
    for operation in sequence or workload.random_sequence():
        instant = workload.step(operation)
        extra = workload.model.has_extra
        expected = workload.model.snapshot()
        assert hudi_rs(workload.path, extra) == expected, (operation, instant)
        assert core_rows(workload.path, extra) == expected, (operation, instant)
    # The Spark reader (the core's slices read in Spark tasks) on the latest snapshot and,
    # below, on every commit: one Spark job each rather than one a step.
    assert our_rows(spark, workload.path, workload.model.has_extra) == expected

    table = HudiTable.open(str(workload.path))
    actions = [i.action for i in table.timeline.instants if i.is_completed]
    assert "deltacommit" in actions and "rollback" in actions
    compactions = [
        i for i in table.timeline.completed_writes if table.timeline.commit_metadata(i).compacted
    ]
    assert compactions, "inline compaction never ran"
    logs = [p for p in workload.path.rglob(".*.log.*") if not p.name.endswith(".crc")]
    assert logs, "no log files were written"
    # Time travel to every commit in all three readers, compactions included.
    ours = our_rows_as_of(spark, workload.path, {i: m.has_extra for i, m in workload.history})
    for instant, model in workload.history:
        expected, extra = model.snapshot(), model.has_extra
        assert hudi_rs(workload.path, extra, as_of=instant) == expected, instant
        assert ours[instant] == expected, instant
        assert core_rows(workload.path, extra, instant) == expected, instant
    # Read-optimized: base files only, the same in hudi-rs and here.
    ours = our_rows(
        spark, workload.path, True, **{"hoodie.datasource.query.type": "read_optimized"}
    )
    assert ours == table_rows(_hudi_rs_read_optimized(workload.path), True)


def _hudi_rs_read_optimized(path: Path) -> pa.Table:
    table = hudi_rs_rows(str(path), read_optimized=True)
    if "extra" not in table.column_names:
        table = table.append_column("extra", pa.nulls(table.num_rows, pa.string()))
    return table


@pytest.mark.parametrize("version", [6, 8])
def test_incremental_queries_return_the_changes_in_log_files(  # type: ignore[no-untyped-def]
    spark, tmp_path, version
) -> None:
    path = tmp_path / "t"
    name = f"t{version}"
    model = TableModel()
    instants = []
    batches = [
        (
            "insert",
            [{"id": i, "p": "a" if i % 2 else "b", "name": f"n{i}", "ts": 1} for i in range(8)],
        ),
        (
            "upsert",
            [
                {"id": 1, "p": "a", "name": "u1", "ts": 2},
                {"id": 2, "p": "b", "name": "u2", "ts": 2},
            ],
        ),
        (
            "upsert",
            [
                {"id": 3, "p": "a", "name": "u3", "ts": 3},
                {"id": 9, "p": "a", "name": "n9", "ts": 1},
            ],
        ),
    ]
    for operation, rows in batches:
        result = write(
            frame(spark, rows, False), str(path), options(name, version, operation, **MOR)
        )
        getattr(model, operation)(rows, result.instant)
        instants.append(result.instant)
    table = HudiTable.open(str(path))
    completed = {i.requested_time: i for i in table.timeline.completed_writes}
    for begin, end in itertools.pairwise(instants):
        # Version 8 ranges select by completion time (Hudi 1.x): name the commits so.
        low = completed[begin].completion_time or begin
        high = completed[end].completion_time or end
        query = {
            "hoodie.datasource.query.type": "incremental",
            "hoodie.datasource.read.begin.instanttime": low,
            "hoodie.datasource.read.end.instanttime": high,
        }
        ours = our_rows(spark, path, False, **query)
        # The end commit's rows: its updates live in log files only.
        assert ours == sorted(r for r in model.snapshot() if r[-1] == end), (begin, end)
        assert ours and ours == hudi_rs_incremental(path, low, high)


@pytest.mark.spark_compat
def test_a_hudi_written_merge_on_read_table_takes_upserts_and_deletes(  # type: ignore[no-untyped-def]
    spark, fixture_copy
) -> None:
    path = fixture_copy("mor/avro/v6_trips_8i1u")
    before = {r["uuid"]: r for r in read_snapshot(HudiTable.open(str(path))).to_pylist()}
    keys = sorted(before)
    upserted = dict(before[keys[0]], fare=999.5, ts=before[keys[0]]["ts"] + 1)
    data_columns = [c for c in before[keys[0]] if not c.startswith("_hoodie_")]
    settings = {
        "hoodie.table.name": HudiTable.open(str(path)).config.name,
        "hoodie.datasource.write.recordkey.field": "uuid",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.precombine.field": "ts",
        **MOR,
    }
    rows = [{c: upserted[c] for c in data_columns}]
    df = rows_frame(spark, rows, read(spark, str(path)).select(*data_columns).schema)
    write(df, str(path), settings)
    deleted = [{c: before[keys[1]][c] for c in data_columns}]
    write(
        rows_frame(spark, deleted, df.schema),
        str(path),
        {**settings, "hoodie.datasource.write.operation": "delete"},
    )

    expected = {k: v for k, v in before.items() if k != keys[1]}
    expected[keys[0]] = upserted
    for source in (read_snapshot(HudiTable.open(str(path))), hudi_rs_rows(str(path))):
        rows_by_key = {r["uuid"]: r for r in source.to_pylist()}
        assert sorted(rows_by_key) == sorted(expected)
        assert rows_by_key[keys[0]]["fare"] == 999.5
        for key in expected:
            assert {c: rows_by_key[key][c] for c in data_columns} == {
                c: expected[key][c] for c in data_columns
            }


@pytest.mark.spark_compat
def test_a_pending_compaction_is_finished_before_the_next_write(  # type: ignore[no-untyped-def]
    spark, tmp_path
) -> None:
    path = tmp_path / "t"
    model = TableModel()
    first = [{"id": i, "p": "a", "name": f"n{i}", "ts": 1} for i in range(6)]
    model.insert(
        first,
        write(frame(spark, first, False), str(path), options("t", 6, "insert", **MOR)).instant,
    )
    update = [{"id": 1, "p": "a", "name": "u1", "ts": 5}]
    model.upsert(
        update,
        write(frame(spark, update, False), str(path), options("t", 6, "upsert", **MOR)).instant,
    )
    result = CliRunner().invoke(app, ["compact", str(path), "--schedule-only", "--json"])
    assert result.exit_code == 0, result.output
    scheduled = json.loads(result.output)["compactions"]
    table = HudiTable.open(str(path))
    assert pending_compactions(table) == [scheduled]
    # A crashed attempt left a file behind: the resumed run removes it.
    leftover = next((path / "a").glob("*.parquet"))
    stray = leftover.with_name(leftover.name.split("_")[0] + f"_9-9-9_{scheduled}.parquet")
    shutil.copy(leftover, stray)
    marker = path / ".hoodie" / ".temp" / scheduled / "a" / f"{stray.name}.marker.CREATE"
    marker.parent.mkdir(parents=True)
    marker.touch()

    later = [{"id": 2, "p": "a", "name": "u2", "ts": 5}]
    written = write(frame(spark, later, False), str(path), options("t", 6, "upsert", **MOR))
    model.upsert(later, written.instant)
    assert written.compactions == [scheduled]
    assert not stray.exists()
    table = HudiTable.open(str(path))
    assert pending_compactions(table) == []
    assert hudi_rs(path, False) == model.snapshot() == core_rows(path, False)
    # The update written after the compaction lives in a log of the compacted slice.
    assert [s for s in table.file_slices() if s.log_files]


def test_compaction_merges_every_log_into_new_base_files(  # type: ignore[no-untyped-def]
    spark, tmp_path
) -> None:
    path = tmp_path / "t"
    rows = [{"id": i, "p": "ab"[i % 2], "name": f"n{i}", "ts": 1} for i in range(10)]
    write(frame(spark, rows, False), str(path), options("t", 8, "insert", **MOR))
    changes = [
        {"id": 1, "p": "b", "name": "x", "ts": 2},
        {"id": 2, "p": "a", "name": "late", "ts": 0},
    ]
    write(frame(spark, changes, False), str(path), options("t", 8, "upsert", **MOR))
    write(frame(spark, [rows[3]], False), str(path), options("t", 8, "delete", **MOR))
    before = hudi_rs(path, False)
    table = HudiTable.open(str(path))
    assert plan_compaction(table)
    logs = [  # the paths of the log files compacted, with their partition's value
        (s.partition_path[-1], f"{s.partition_path}/{log.name}")
        for s in table.file_slices()
        for log in s.log_files
    ]
    lock = TableLock(table.location, table.location.join(".hoodie"), wait_ms=1000, expire_minutes=0)
    (instant,) = compact(table, lock)
    table = HudiTable.open(str(path))
    assert not plan_compaction(table)  # every slice is a base file only
    # The write stats count as Hudi 1.x's compactor does (as in the fixtures' metadata
    # tables): in a, the late event is merged into id 2 (one data record); in b, id 1 is
    # updated by a data record and id 3 deleted by a delete block (whose keys are not
    # log records). A log record per commit, one block per write.
    stats: dict[str, Counter[str]] = {"a": Counter(), "b": Counter()}
    compaction = table.timeline.commit_metadata(table.timeline.completed_writes[-1])
    for stat in compaction.write_stats:  # summed over each partition's file groups
        stats[stat.partition_path[-1]].update(
            {k: v for k, v in stat.to_record().items() if isinstance(v, int)}
        )
    expected = {"a": (5, 1, 0, 1, 1, 1), "b": (4, 1, 1, 1, 2, 2)}
    for partition, (writes, updates, deletes, records, keys, blocks) in expected.items():
        record = stats[partition]
        counts = (record["numWrites"], record["numUpdateWrites"], record["numDeletes"])
        assert counts == (writes, updates, deletes), partition
        assert record["numInserts"] == 0
        assert record["totalLogRecords"] == records
        assert record["totalUpdatedRecordsCompacted"] == keys
        assert record["totalLogBlocks"] == blocks
        compacted = [name for value, name in logs if value == partition]
        assert record["totalLogFilesCompacted"] == len(compacted)
        assert record["totalLogSizeCompacted"] == sum(
            (path / name).stat().st_size for name in compacted
        )
    assert hudi_rs(path, False) == before == core_rows(path, False)
    metadata = table.timeline.commit_metadata(table.timeline.completed_writes[-1])
    assert metadata.compacted and metadata.operation_type == "COMPACT"
    assert {s.prev_commit for s in metadata.write_stats} == {
        table.completed_commits()[0].requested_time
    }
    # A read-optimized query now sees the merged rows too.
    optimized = our_rows(spark, path, False, **{"hoodie.datasource.query.type": "read_optimized"})
    assert optimized == before
    assert instant == table.latest_instant()


def test_table_type_mismatches_and_unsupported_tables_are_refused(  # type: ignore[no-untyped-def]
    spark, tmp_path, fixture_copy
) -> None:
    rows = [{"id": 1, "p": "a", "name": "n", "ts": 1}]
    cow, mor = tmp_path / "cow", tmp_path / "mor"
    write(frame(spark, rows, False), str(cow), options("t", 8, "insert"))
    write(frame(spark, rows, False), str(mor), options("t", 8, "insert", **MOR))
    with pytest.raises(BadInputError, match=r"table.type=MERGE_ON_READ \(table: COPY_ON_WRITE"):
        write(frame(spark, rows, False), str(cow), options("t", 8, "upsert", **MOR))
    with pytest.raises(BadInputError, match=r"table.type=COPY_ON_WRITE \(table: MERGE_ON_READ"):
        write(
            frame(spark, rows, False),
            str(mor),
            options("t", 8, "upsert", **{"hoodie.datasource.write.table.type": "COPY_ON_WRITE"}),
        )
    # A metadata table partition hudi_sync does not keep current (Hudi's bloom filter
    # index, declared on the copy as Hudi declares it), not disabled.
    hudi_written = fixture_copy("mor/avro/v8_trips_8i3u1d")
    config = HudiTable.open(str(hudi_written)).config
    partitions = ",".join([*config.metadata_partitions, "bloom_filters"])
    set_properties(hudi_written, {"hoodie.table.metadata.partitions": partitions})
    own = {
        "hoodie.datasource.write.recordkey.field": "uuid",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.hive_style_partitioning": str(config.hive_style_partitioning),
        **MOR,
    }
    with pytest.raises(
        BadInputError, match="metadata table partitions current: bloom_filters"
    ) as refused:
        trip = rows_frame(
            spark, [{"uuid": "u", "city": "c", "ts": 1}], "uuid string, city string, ts long"
        )
        write(trip, str(hudi_written), options(config.name, 8, "upsert", **own))
    assert "\n" not in str(refused.value)
    result = CliRunner().invoke(app, ["compact", str(cow)])
    assert result.exit_code == 2 and "nothing to compact" in result.output


@pytest.mark.parametrize("version", [6, 8])
def test_the_cleaner_removes_old_slices_with_their_log_files(  # type: ignore[no-untyped-def]
    spark, tmp_path, version
) -> None:
    path = tmp_path / "t"
    folder = path / ("p=a" if version == 8 else "a")  # options(): hive style on version 8
    settings = {
        **MOR,
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": 2,
        "hoodie.cleaner.commits.retained": 1,
    }
    model = TableModel()
    rows = [{"id": i, "p": "a", "name": f"n{i}", "ts": 1} for i in range(4)]
    model.insert(
        rows,
        write(
            frame(spark, rows, False), str(path), options("t", version, "insert", **settings)
        ).instant,
    )
    logs_seen: set[str] = set()
    for step in range(5):
        change = [{"id": step % 4, "p": "a", "name": f"s{step}", "ts": 2 + step}]
        result = write(
            frame(spark, change, False), str(path), options("t", version, "upsert", **settings)
        )
        model.upsert(change, result.instant)
        logs_seen |= {p.name for p in folder.glob(".*.log.*")}
        assert hudi_rs(path, False) == model.snapshot() == core_rows(path, False), step
    remaining = {p.name for p in folder.glob(".*.log.*")}
    table = HudiTable.open(str(path))
    current = {log.name for s in table.file_slices() for log in s.log_files}
    assert remaining < logs_seen  # logs of cleaned slices are gone...
    assert current <= remaining  # ...never those the latest snapshot reads
    assert len(list(folder.glob("*.parquet"))) <= 2


KILLED_CHILD = textwrap.dedent(
    """
    import os, sys
    from hudi_sync.spark import local_session, write
    from hudi_sync.table.write import commit as commit_module
    from hudi_sync.table.write import timeline as timeline_module
    from tests.test_spark_writer import frame, options

    path, step, version = sys.argv[1], sys.argv[2], int(sys.argv[3])

    def die(*args, **kwargs):
        os._exit(9)

    complete = timeline_module.TimelineWriter.complete

    def die_completing_a_compaction(self, instant, action, commit):
        if commit.compacted:
            os._exit(9)
        return complete(self, instant, action, commit)

    if step == "deltacommit":  # its log files are written, it never completes
        commit_module.WriteTransaction.write_partition_metadata = die
    else:  # the deltacommit completes; the inline compaction's files are written
        timeline_module.TimelineWriter.complete = die_completing_a_compaction
    spark = local_session("child", cores=1)
    rows = [{"id": 1, "p": "a", "name": step, "ts": 5}, {"id": 9, "p": "a", "name": step, "ts": 5}]
    settings = {
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": 2,
    }
    write(frame(spark, rows, False), path, options("t", version, "upsert", **settings))
    os._exit(0)
    """
)


@pytest.mark.parametrize(
    ("step", "version"), [("deltacommit", 6), ("compaction", 6), ("compaction", 8)]
)
def test_a_writer_killed_mid_deltacommit_or_compaction_converges_on_rerun(  # type: ignore[no-untyped-def]
    spark, tmp_path, step, version
) -> None:
    path = tmp_path / "t"
    model = TableModel()
    seed = [{"id": i, "p": "a", "name": f"n{i}", "ts": 1} for i in range(4)]
    model.insert(
        seed,
        write(frame(spark, seed, False), str(path), options("t", version, "insert", **MOR)).instant,
    )
    child = subprocess.run(
        [sys.executable, "-c", KILLED_CHILD, str(path), step, str(version)],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 9, child.stderr[-2000:]
    table = HudiTable.open(str(path))
    if step == "compaction":  # the deltacommit completed before the compaction died
        model.upsert(
            [
                {"id": 1, "p": "a", "name": step, "ts": 5},
                {"id": 9, "p": "a", "name": step, "ts": 5},
            ],
            table.latest_instant() or "",
        )
        assert pending_compactions(table)
    assert hudi_rs(path, False) == model.snapshot() == core_rows(path, False)
    # The next write rolls back the dead deltacommit or finishes the compaction first.
    again = [{"id": 2, "p": "a", "name": "again", "ts": 3}]
    result = write(frame(spark, again, False), str(path), options("t", version, "upsert", **MOR))
    model.upsert(again, result.instant)
    table = HudiTable.open(str(path))
    assert pending_compactions(table) == [] and not table.timeline.pending
    assert hudi_rs(path, False) == model.snapshot() == core_rows(path, False)
    if step == "compaction":
        assert result.compactions
        compacted = result.compactions[0]
        written = {
            s.path
            for i in table.timeline.completed_writes
            if i.requested_time == compacted
            for s in table.timeline.commit_metadata(i).write_stats
        }
        on_disk = {str(p.relative_to(path)) for p in path.rglob(f"*_{compacted}.parquet")}
        assert on_disk == written  # the killed attempt's files are gone
    else:
        assert result.rolled_back


@pytest.mark.parametrize("version", [6, 8])
def test_cdc_queries_on_merge_on_read_tables_infer_changes_from_log_files(  # type: ignore[no-untyped-def]
    spark, tmp_path, version
) -> None:
    """No CDC log is written for a log append (Hudi infers a Merge-on-Read commit's
    changes from its log records: the LOG_FILE case); compactions change nothing."""
    path = tmp_path / "t"
    settings = {
        **MOR,
        "hoodie.table.cdc.enabled": "true",
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": 3,
    }
    steps = [
        ("insert", [{"id": i, "p": "a", "name": f"n{i}", "ts": 1} for i in range(4)]),
        (
            "upsert",
            [
                {"id": 1, "p": "a", "name": "u1", "ts": 2},
                {"id": 2, "p": "a", "name": "late", "ts": 0},
            ],
        ),
        ("delete", [{"id": 3, "p": "a", "name": "n3", "ts": 9}]),  # then a compaction
        (
            "upsert",
            [
                {"id": 1, "p": "a", "name": "u1b", "ts": 3},
                {"id": 5, "p": "a", "name": "n5", "ts": 1},
            ],
        ),
    ]
    model = TableModel()
    expected: list[tuple[str, str, Any, Any]] = []
    compactions: list[str] = []
    for operation, rows in steps:
        before = {k: dict(v) for k, v in model.rows.items()}
        result = write(
            frame(spark, rows, False), str(path), options("t", version, operation, **settings)
        )
        compactions += result.compactions
        if operation == "delete":
            model.delete(r["id"] for r in rows)
        else:
            getattr(model, operation)(rows, result.instant)
        for key in sorted(set(before) | set(model.rows)):
            old, new = before.get(key), model.rows.get(key)
            if old != new:
                op = "i" if old is None else "d" if new is None else "u"
                expected.append((result.instant, op, _image(old), _image(new)))
    assert compactions, "the test wants a compaction between the writes"
    changes = read(
        spark,
        str(path),
        {
            "hoodie.datasource.query.type": "incremental",
            "hoodie.datasource.query.incremental.format": "cdc",
            "hoodie.datasource.read.begin.instanttime": "earliest",
        },
    ).collect()
    got = [(r.ts_ms, r.op, _parsed(r.before), _parsed(r.after)) for r in changes]
    assert sorted(got, key=repr) == sorted(expected, key=repr)
    assert not list(path.rglob("*.cdc"))


def _image(row: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if row is None else {c: row[c] for c in ("id", "p", "name", "ts")}


def _parsed(text: str | None) -> dict[str, Any] | None:
    return (
        None
        if text is None
        else {k: v for k, v in json.loads(text).items() if k in ("id", "p", "name", "ts")}
    )


def test_the_compact_command_runs_the_sync_hook_after_the_compaction(  # type: ignore[no-untyped-def]
    spark, tmp_path
) -> None:
    """After a compaction the sync runs: the read-optimized view (base files) holds the
    snapshot, as the snapshot view did before."""
    import duckdb

    path, database = tmp_path / "t", tmp_path / "w.duckdb"
    rows = [{"id": i, "p": "a", "name": f"n{i}", "ts": 1} for i in range(5)]
    write(frame(spark, rows, False), str(path), options("t", 8, "insert", **MOR))
    change = [{"id": 2, "p": "a", "name": "changed", "ts": 2}]
    write(frame(spark, change, False), str(path), options("t", 8, "upsert", **MOR))
    sync = [
        "--conf", "hoodie.datasource.meta.sync.enable=true",
        "--conf", "hoodie.meta.sync.client.tool.class=duckdb",
        "--conf", f"hoodie.duckdb.sync.database={database}",
    ]  # fmt: skip
    result = CliRunner().invoke(app, ["compact", str(path), *sync, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["sync_errors"] == ""
    with duckdb.connect(str(database), read_only=True) as con:
        view = sorted(con.execute("select id, name from t_ro").fetchall())
        snapshot = sorted(con.execute("select id, name from t_rt").fetchall())
    assert view == snapshot == sorted((r[0], r[2]) for r in hudi_rs(path, False))
    assert (2, "changed") in view


@pytest.mark.parametrize("version", [6, 8, 9])
def test_archival_of_deltacommits_and_compactions_keeps_every_reader_in_agreement(  # type: ignore[no-untyped-def]
    spark, tmp_path, version
) -> None:
    retention = {
        **MOR,
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": 2,
        "hoodie.cleaner.commits.retained": 2,
        "hoodie.keep.min.commits": 3,
        "hoodie.keep.max.commits": 4,
    }
    workload = RandomWorkload(spark, tmp_path / "t", version, 21, **retention)
    for operation in ["insert", "upsert", "delete", "upsert", "insert", "upsert", "upsert"] * 2:
        instant = workload.step(operation)
        assert len(HudiTable.open(str(workload.path)).timeline.completed_writes) <= 4
        expected = workload.model.snapshot()
        assert hudi_rs(workload.path, False) == expected, (operation, instant)
        assert core_rows(workload.path, False) == expected, (operation, instant)
    # The Spark reader (the core's slices read in Spark tasks) once, on the archived table.
    assert our_rows(spark, workload.path, False) == expected
    table = HudiTable.open(str(workload.path))
    everything = table.instants(include_archived=True)
    archived = [i for i in everything if i not in table.timeline.instants]
    assert {i.action for i in archived} >= {"deltacommit", "commit"}
    written = [instant for instant, _ in workload.history]
    kept = [i.requested_time for i in everything if i.action == "deltacommit"]
    assert set(kept) <= set(written)
    if version >= 8:  # Hudi 1.x's LSM history, read back by our table core above
        assert (workload.path / ".hoodie" / "timeline" / "history" / "_version_").exists()


@pytest.mark.parametrize("fixture", HUDI_WRITTEN_MOR)
def test_spark_reads_hudi_written_merge_on_read_tables_as_hudi_rs_does(  # type: ignore[no-untyped-def]
    spark, unpack_table, fixture
) -> None:
    from tests.fixture_tables import fixture_tables
    from tests.warehouse_rows import canonical, hudi_rs_rows, same_columns

    (table,) = [t for t in fixture_tables() if t.name.endswith(fixture)]
    path = str(unpack_table(table))
    ours, theirs = same_columns(collect_arrow(read(spark, path)), hudi_rs_rows(path))
    assert canonical(ours) == canonical(theirs)


@pytest.mark.spark4
@pytest.mark.parametrize("fixture", HUDI_WRITTEN_MOR)
def test_format_hudi_reads_hudi_written_merge_on_read_tables_as_hudi_rs_does(  # type: ignore[no-untyped-def]
    spark, unpack_table, fixture
) -> None:
    """``format("hudi")`` (PySpark 4.0+) reads what hudi-rs reads, evolved columns in log
    files included."""
    from tests.fixture_tables import fixture_tables
    from tests.warehouse_rows import canonical, hudi_rs_rows, same_columns

    (table,) = [t for t in fixture_tables() if t.name.endswith(fixture)]
    path = str(unpack_table(table))
    theirs = hudi_rs_rows(path)
    via_format = collect_arrow(spark.read.format("hudi").load(path))
    assert canonical(same_columns(via_format, theirs)[0]) == canonical(theirs)


@pytest.mark.parametrize("via", ["read", pytest.param("format", marks=pytest.mark.spark4)])
def test_a_truncated_log_file_fails_the_spark_read_naming_the_file(  # type: ignore[no-untyped-def]
    spark, fixture_copy, via
) -> None:
    path = fixture_copy("mor/avro/v6_trips_8i1u")
    (log,) = [p for p in path.rglob(".*.log.*") if not p.name.endswith(".crc")]
    log.write_bytes(log.read_bytes()[: log.stat().st_size // 2])
    with pytest.raises(Exception) as failed:
        if via == "read":
            read(spark, str(path)).collect()
        else:
            spark.read.format("hudi").load(str(path)).collect()
    lines = [line for line in str(failed.value).splitlines() if "CorruptTableError" in line]
    assert lines and log.name in lines[-1] and "truncated" in lines[-1], str(failed.value)[-800:]


@pytest.mark.parametrize("version", [6, 8])
def test_log_files_roll_over_at_the_configured_size(  # type: ignore[no-untyped-def]
    spark, tmp_path, version
) -> None:
    path = tmp_path / "t"
    settings = {**MOR, "hoodie.logfile.max.size": 1500}
    model = TableModel()
    rows = [{"id": i, "p": "a", "name": f"n{i}", "ts": 1} for i in range(60)]
    model.insert(
        rows,
        write(
            frame(spark, rows, False), str(path), options("t", version, "insert", **settings)
        ).instant,
    )
    changes = [dict(r, name="x" * 40, ts=2) for r in rows[:50]]
    result = write(
        frame(spark, changes, False), str(path), options("t", version, "upsert", **settings)
    )
    model.upsert(changes, result.instant)
    deleted = rows[55:]
    result = write(
        frame(spark, deleted, False), str(path), options("t", version, "delete", **settings)
    )
    model.delete(r["id"] for r in deleted)
    logs = [p for p in path.rglob(".*.log.*")]
    assert len(logs) >= 3 and all(p.stat().st_size <= 1500 for p in logs)
    table = HudiTable.open(str(path))
    upsert_stats = table.timeline.commit_metadata(table.timeline.completed_writes[1]).write_stats
    assert len(upsert_stats) >= 2 and sum(s.num_updates for s in upsert_stats) == 50
    assert hudi_rs(path, False) == model.snapshot() == core_rows(path, False)


def test_compacting_a_file_group_whose_rows_were_all_deleted(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The new base file has no rows and a string _hoodie_file_name column (an untyped
    empty column was written as INT, and Spark's read then failed to merge schemas)."""
    path = tmp_path / "t"
    rows = [{"id": i, "p": "a", "name": "x", "ts": 1} for i in range(3)]
    write(frame(spark, rows, False), str(path), options("t", 8, "insert", **MOR))
    compacting = {
        **MOR,
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": 1,
    }
    result = write(frame(spark, rows, False), str(path), options("t", 8, "delete", **compacting))
    assert result.compactions
    assert our_rows(spark, path, False) == [] == hudi_rs(path, False)
    (base,) = [p for p in path.rglob("*.parquet") if result.compactions[0] in p.name]
    assert pq.read_schema(base).field("_hoodie_file_name").type == pa.string()


_MODEL_CLASSES = "org.apache.hudi.common.model."


@pytest.mark.parametrize("version", [6, 8])
def test_a_created_table_names_the_merge_rules_it_is_written_by(  # type: ignore[no-untyped-def]
    spark, tmp_path, version
) -> None:
    """A new table stores the payload class (and merger strategy, and on version 8 the
    merge mode) of the rules hudi_sync applies: Hudi 0.x, which takes
    OverwriteWithLatestAvroPayload (commit time) when none is stored, then reads and
    compacts it as we do. Hudi's own options choose the rules; others are refused."""
    first = [{"id": 1, "p": "a", "name": "first", "ts": 5}]
    late = [{"id": 1, "p": "a", "name": "later", "ts": 1}]  # a lower ordering value
    event = tmp_path / "event"
    write(frame(spark, first, False), str(event), options("t", version, "insert", **MOR))
    write(frame(spark, late, False), str(event), options("t", version, "upsert", **MOR))
    props = HudiTable.open(str(event)).config.raw
    assert props["hoodie.compaction.payload.class"] == _MODEL_CLASSES + "DefaultHoodieRecordPayload"
    strategy = (
        "hoodie.compaction.record.merger.strategy"
        if version == 6
        else ("hoodie.record.merge.strategy.id")
    )
    assert props[strategy] == "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
    if version == 8:
        assert props["hoodie.record.merge.mode"] == "EVENT_TIME_ORDERING"
    assert (
        [r[2] for r in core_rows(event, False)]
        == ["first"]
        == [r[2] for r in hudi_rs(event, False)]
    )

    commit = tmp_path / "commit"
    payload = {
        **MOR,
        "hoodie.datasource.write.payload.class": _MODEL_CLASSES + "OverwriteWithLatestAvroPayload",
    }
    write(frame(spark, first, False), str(commit), options("t", version, "insert", **payload))
    write(frame(spark, late, False), str(commit), options("t", version, "upsert", **MOR))
    props = HudiTable.open(str(commit)).config.raw
    assert (
        props["hoodie.compaction.payload.class"]
        == _MODEL_CLASSES + "OverwriteWithLatestAvroPayload"
    )
    if version == 8:
        assert props["hoodie.record.merge.mode"] == "COMMIT_TIME_ORDERING"
        assert props["hoodie.record.merge.strategy.id"] == "ce9acb64-bde0-424c-9b91-f6ebba25356d"
    # The later commit wins in the writer, our reader and hudi-rs alike.
    assert (
        [r[2] for r in core_rows(commit, False)]
        == ["later"]
        == [r[2] for r in hudi_rs(commit, False)]
    )
    assert [r[2] for r in our_rows(spark, commit, False)] == ["later"]

    # Another mode than the table's, and a payload class whose rules we do not apply.
    with pytest.raises(BadInputError, match="merge mode EVENT_TIME_ORDERING"):
        write(
            frame(spark, late, False),
            str(commit),
            options(
                "t", version, "upsert", **{**MOR, "hoodie.record.merge.mode": "EVENT_TIME_ORDERING"}
            ),
        )
    custom = {**MOR, "hoodie.datasource.write.payload.class": "com.example.MergePayload"}
    with pytest.raises(BadInputError, match=r"com\.example\.MergePayload"):
        write(
            frame(spark, first, False),
            str(tmp_path / "custom"),
            options("t", version, "insert", **custom),
        )
    assert not (tmp_path / "custom").exists()


def test_a_merge_on_read_insert_reads_its_rows_without_a_cache(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """An insert into a Merge-on-Read table looks no key up: Spark's writer reads the
    rows once more, straight from their source, as the Copy-on-Write merge's inserts
    do. 4 Spark jobs on the executors' engine (the summary's shuffle and result, the
    new file groups' shuffle and write); caching the rows first took a 5th."""
    from tests.test_driver_write import spark_jobs

    path = str(tmp_path / "t")
    executors = {**MOR, "hudi_sync.write.driver.max.bytes": 0}
    first = [{"id": i, "p": "ab"[i % 2], "name": f"n{i}", "ts": 1} for i in range(20)]
    write(frame(spark, first, False), path, options("t", 8, "insert", **executors))
    more = [{"id": 100 + i, "p": "abc"[i % 3], "name": "new", "ts": 1} for i in range(6)]

    def run() -> None:
        write(frame(spark, more, False), path, options("t", 8, "insert", **executors))

    assert spark_jobs(spark, run) <= 4
    written = hudi_rs_rows(path).select(["id", "p", "name", "ts"]).to_pylist()
    assert sorted(written, key=lambda r: r["id"]) == first + more
