"""The Spark merge (``hudi_sync.write.merge.engine=spark``) against the Python merge:
same rows, meta fields and write stats, files hudi-rs reads the same, nothing visible
after a failed write."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from hudi_sync.errors import WriteError
from hudi_sync.spark import write
from hudi_sync.spark.writing import spark_merge
from hudi_sync.spark.writing.merge import PARTITION_PATH, RECORD_KEY
from hudi_sync.spark.writing.options import MERGE_ENGINE
from hudi_sync.table import HudiTable
from tests.frames import rows_frame
from tests.test_driver_write import spark_jobs
from tests.test_spark_writer import RandomWorkload, frame, hudi_rs, options
from tests.warehouse_rows import hudi_rs_rows

# Each kind of write once in each state that differs: a new table, inserts into stored
# files, an overwrite, a column added (an upsert into files that all lack it), then an
# upsert and a delete where some stored files have the column and some lack it (checked
# before the upsert): that upsert merges file groups of both schemas, so an upsert into
# files of one schema needs no step of its own (one was here, a dear step: 12 and 13 Spark
# jobs on the two engines, about a sixth of the test's time); the one delete, because a
# delete's rows are dropped alike in both states.
STEPS = ["insert", "insert", "insert_overwrite", "add_column", "upsert", "delete"]


def _normalized(path: Path, instants: list[str]) -> pa.Table:
    """hudi-rs's snapshot with commit times as the write's position, without the
    names and seqnos that differ by design."""
    table = hudi_rs_rows(str(path))
    times = table.column("_hoodie_commit_time")
    position = pc.index_in(times, value_set=pa.array(instants, pa.string()))
    table = table.set_column(0, "_hoodie_commit_time", position)
    table = table.drop_columns(["_hoodie_commit_seqno", "_hoodie_file_name"])
    return table.sort_by("_hoodie_record_key")


def _check_files(path: Path) -> None:
    """Every latest base file names itself in ``_hoodie_file_name``; seqnos are unique
    and start with the row's commit time."""
    table = HudiTable.open(str(path))
    seqnos: list[str] = []
    for file_slice in table.file_slices():
        if file_slice.base_file is None:
            continue
        name = file_slice.base_file.name
        stored = pq.read_table(
            os.path.join(str(path), file_slice.partition_path, name),
            columns=["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_file_name"],
        )
        assert set(stored.column("_hoodie_file_name").to_pylist()) <= {name}
        for time, seqno in zip(
            stored.column("_hoodie_commit_time").to_pylist(),
            stored.column("_hoodie_commit_seqno").to_pylist(),
            strict=True,
        ):
            assert seqno.startswith(f"{time}_"), (seqno, time)
        seqnos += stored.column("_hoodie_commit_seqno").to_pylist()
    assert len(seqnos) == len(set(seqnos))


@pytest.mark.parametrize("version,seed", [(6, 3), (8, 4)])
def test_spark_and_python_merges_write_the_same_table(  # type: ignore[no-untyped-def]
    spark, tmp_path, version, seed
) -> None:
    """About 25 s: each of the 6 steps is two writes by the executors' engines (4 to 13
    Spark jobs each), and the two engines' tables after every kind of write are the
    subject (STEPS says why these steps)."""
    engines = ("python", "spark")
    workloads = {
        e: RandomWorkload(spark, tmp_path / e, version, seed, **{MERGE_ENGINE: e}) for e in engines
    }
    instants: dict[str, list[str]] = {e: [] for e in engines}
    for step in STEPS:
        if step == "upsert":  # the state STEPS counts on: stored files of both schemas
            for workload in workloads.values():
                assert _base_file_schemas(workload.path) == {True, False}, workload.path
        for engine, workload in workloads.items():
            instant = workload.step(step)
            assert instant is not None
            instants[engine].append(instant)
        ours = workloads["spark"]
        assert hudi_rs(ours.path, ours.model.has_extra) == ours.model.snapshot(), step
        tables = {e: _normalized(workloads[e].path, instants[e]) for e in engines}
        assert tables["spark"].equals(tables["python"]), step
        _check_files(ours.path)
        stats = {}
        for engine, workload in workloads.items():
            timeline = HudiTable.open(str(workload.path)).timeline
            metadata = timeline.commit_metadata(timeline.completed_writes[-1])
            written = metadata.write_stats
            stats[engine] = (
                sum(s.num_inserts for s in written),
                sum(s.num_updates for s in written),
                sum(s.num_deletes for s in written),
            )  # not the files: routing new keys to small files depends on file sizes
            for s in written:
                assert s.file_size == os.path.getsize(workload.path / s.path), s
                rows = pq.read_metadata(workload.path / s.path).num_rows
                assert s.num_writes == rows, s
        assert stats["spark"] == stats["python"], step


def _base_file_schemas(path: Path) -> set[bool]:
    """Whether each latest base file has the ``extra`` column, as a set."""
    table = HudiTable.open(str(path))
    return {
        "extra" in pq.read_schema(path / s.partition_path / s.base_file.name).names
        for s in table.file_slices()
        if s.base_file is not None
    }


def _table_files(path: Path) -> set[str]:
    found = set()
    for folder, _, names in os.walk(path):
        for name in names:
            relative = os.path.relpath(os.path.join(folder, name), path)
            if not relative.startswith(".hoodie"):
                found.add(relative)
    return found


# The Python merge is the default; these tests are about the Spark merge's failures.
SPARK_UPSERT = options("t", 6, "upsert", **{MERGE_ENGINE: "spark"})


def _engine(engine: str) -> dict[str, str]:
    """The options that choose ``engine``: a merge engine of the executors by name, or
    the driver's engine (``driver``: none named, and the writes are small)."""
    return {} if engine == "driver" else {MERGE_ENGINE: engine}


def _seed_table(spark: Any, path: Path, engine: str = "python") -> None:
    rows = [{"id": i, "p": "abc"[i % 3], "name": f"n{i}", "ts": 1} for i in range(30)]
    write(frame(spark, rows, False), str(path), options("t", 6, "insert", **_engine(engine)))


def test_a_spark_job_that_fails_mid_write_leaves_nothing_visible(  # type: ignore[no-untyped-def]
    spark, tmp_path
) -> None:
    path = tmp_path / "table"
    _seed_table(spark, path)
    before_rows, before_files = hudi_rs(path, False), _table_files(path)
    boom = F.udf(lambda key: (_ for _ in ()).throw(RuntimeError("task died")), "string")
    real_route = spark_merge.route

    def failing_route(*args: Any) -> Any:  # the write job's tasks fail
        return real_route(*args).withColumn("name", boom("_hoodie_record_key"))

    rows = [{"id": i, "p": "abc"[i % 3], "name": "new", "ts": 2} for i in range(0, 40, 2)]
    with (
        mock.patch.object(spark_merge, "route", failing_route),
        pytest.raises(WriteError, match="rolled back"),
    ):
        write(frame(spark, rows, False), str(path), SPARK_UPSERT)
    assert hudi_rs(path, False) == before_rows
    assert _table_files(path) == before_files
    table = HudiTable.open(str(path))
    assert not table.timeline.pending
    temp = path / ".hoodie" / ".temp"
    assert not temp.exists() or not os.listdir(temp)


def test_files_renamed_before_a_failed_commit_are_rolled_back(  # type: ignore[no-untyped-def]
    spark, tmp_path
) -> None:
    path = tmp_path / "table"
    _seed_table(spark, path)
    before_rows, before_files = hudi_rs(path, False), _table_files(path)
    rows = [{"id": i, "p": "abc"[i % 3], "name": "new", "ts": 2} for i in range(0, 40, 2)]
    with (
        mock.patch(
            "hudi_sync.table.write.commit.WriteTransaction.write_partition_metadata",
            side_effect=RuntimeError("driver died"),
        ),
        pytest.raises(WriteError, match="rolled back"),
    ):
        write(frame(spark, rows, False), str(path), SPARK_UPSERT)
    assert hudi_rs(path, False) == before_rows
    assert _table_files(path) == before_files


def test_a_failing_transformation_fails_before_the_timeline_is_touched(  # type: ignore[no-untyped-def]
    spark, tmp_path
) -> None:
    path = tmp_path / "table"
    _seed_table(spark, path)
    timeline = sorted(os.listdir(path / ".hoodie"))
    boom = F.udf(lambda name: (_ for _ in ()).throw(RuntimeError("udf died")), "string")
    rows = [{"id": 1, "p": "b", "name": "x", "ts": 2}]
    df = frame(spark, rows, False).withColumn("name", boom("name"))
    with pytest.raises(WriteError, match="nothing was written"):
        write(df, str(path), options("t", 6, "upsert"))
    assert sorted(os.listdir(path / ".hoodie")) == timeline


def test_only_computed_columns_are_computed_before_the_timeline_is_touched(  # type: ignore[no-untyped-def]
    spark, tmp_path
) -> None:
    """A frame that reads its columns as stored skips the pre-commit hash of every
    column (nothing in it can fail but the read); one computed column (here an ANSI
    cast that fails on one row) keeps it, and fails before the timeline is touched."""
    from hudi_sync.spark.writing.incoming import reads_plainly

    path, source = tmp_path / "table", str(tmp_path / "incoming")
    _seed_table(spark, path)
    frame(spark, [{"id": 1, "p": "b", "name": "x", "ts": 2}], False).write.parquet(source)
    stored = spark.read.parquet(source)
    assert reads_plainly(stored)
    assert reads_plainly(stored.where(F.col("ts") > 0).select("id", "p", F.col("name").alias("n")))
    failing = stored.withColumn("name", F.col("name").cast("int").cast("string"))
    assert not reads_plainly(failing)
    timeline = sorted(os.listdir(path / ".hoodie"))
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"  # Spark 4's default
    with pytest.raises(WriteError, match="nothing was written"):
        write(failing, str(path), options("t", 6, "upsert"))
    assert sorted(os.listdir(path / ".hoodie")) == timeline
    write(stored, str(path), options("t", 6, "upsert"))
    assert {r["id"]: r["name"] for r in hudi_rs_rows(str(path)).to_pylist()}[1] == "x"


def test_timestamps_and_new_columns_keep_their_types(  # type: ignore[no-untyped-def]
    spark, tmp_path
) -> None:
    """Spark writes timestamps as Hudi does (int64 microseconds, UTC), not INT96; a
    column added later reads as null in rows written before it, in both merges."""
    schema = "id int, p string, at timestamp, ts long"
    first = rows_frame(spark, [(1, "a", None, 1), (2, "a", None, 1)], schema).withColumn(
        "at", F.to_timestamp(F.lit("2024-01-02 03:04:05.123456"))
    )
    tables = {}
    for engine in ("python", "spark"):
        path = tmp_path / engine
        write(first, str(path), options("t", 6, "insert", **{MERGE_ENGINE: engine}))
        second = (
            first.where("id = 2")
            .withColumn("extra", F.lit("x"))
            .unionByName(
                first.where("id = 1").withColumn("id", F.lit(3)).withColumn("extra", F.lit(None))
            )
        )
        write(second, str(path), options("t", 6, "upsert", **{MERGE_ENGINE: engine}))
        for name in _table_files(path):
            if name.endswith(".parquet"):
                field = pq.read_schema(path / name).field("at")
                assert field.type == pa.timestamp("us", tz="UTC"), (engine, name)
        tables[engine] = _normalized(path, [])
    assert (
        tables["spark"]
        .drop_columns(["_hoodie_commit_time"])
        .equals(tables["python"].drop_columns(["_hoodie_commit_time"]))
    )
    assert tables["spark"].column("extra").to_pylist() == [None, "x", None]


def _commit_counts(path: Path) -> tuple[int, int, int, int]:
    """(inserts, updates, deletes, writes) of the newest commit's write stats."""
    timeline = HudiTable.open(str(path)).timeline
    stats = timeline.commit_metadata(timeline.completed_writes[-1]).write_stats
    return (
        sum(s.num_inserts for s in stats),
        sum(s.num_updates for s in stats),
        sum(s.num_deletes for s in stats),
        sum(s.num_writes for s in stats),
    )


# Each step: (operation, rows, Spark settings, whether the Spark merge may stream the
# stored files in place). Stored partitions a, b, c hold ids 0..29 (ts 1).
IN_PLACE_STEPS: list[tuple[str, list[dict[str, Any]], dict[str, str], bool]] = [
    # updates (some older than stored: kept), a delete flag, new keys of a new partition
    (
        "upsert",
        [{"id": i, "p": "abc"[i % 3], "name": f"u{i}", "ts": 2 if i % 4 else 0} for i in range(12)]
        + [{"id": 100 + i, "p": "d", "name": f"n{i}", "ts": 1} for i in range(7)],
        {},
        True,
    ),
    (
        "delete",
        [{"id": i, "p": "abc"[i % 3], "name": "", "ts": 0} for i in (1, 5)]
        + [{"id": 101, "p": "d", "name": "", "ts": 0}],
        {},
        True,
    ),
    # two updates and ten new keys of one new file group: the inserts are read by one
    # task instead of being shuffled to it
    (
        "upsert",
        [{"id": i, "p": "abc"[i % 3], "name": f"v{i}", "ts": 3} for i in (6, 7)]
        + [{"id": 300 + i, "p": "e", "name": f"e{i}", "ts": 1} for i in range(10)],
        {},
        True,
    ),
    # the same key twice: deduplicated first, so not in place
    (
        "upsert",
        [
            {"id": 2, "p": "c", "name": "second", "ts": 7},
            {"id": 2, "p": "c", "name": "first", "ts": 5},
        ],
        {},
        False,
    ),
    # broadcasts off: not in place
    (
        "upsert",
        [{"id": i, "p": "abc"[i % 3], "name": "late", "ts": 9} for i in range(20, 26)],
        {"spark.sql.autoBroadcastJoinThreshold": "-1"},
        False,
    ),
    # a new key in a partition of small files goes to one of them: not in place
    ("upsert", [{"id": 200, "p": "a", "name": "small", "ts": 1}], {}, False),
]
SMALL_FILE_LIMIT = 3000  # options()' hoodie.parquet.small.file.limit


def test_stored_files_are_merged_in_place_when_the_profile_allows(  # type: ignore[no-untyped-def]
    spark, tmp_path
) -> None:
    """Hudi's merge handle in Spark (``merged_in_place``) writes what the Python merge
    writes; it is used exactly when no key comes twice, the stored partitions' incoming
    rows fit the broadcast threshold and no new key goes to a small file. The profile
    streams the stored keys through a broadcast of the incoming ones whenever broadcasts
    are on, and shuffles both sides when they are off: both give the same stats. The
    Python merge's table is written by the driver's engine, which merges each file group
    with the Python workers' function (``python_merge.group_merger``) without Spark
    jobs; the executors' Python merge is compared with the Spark merge write by write in
    ``test_spark_and_python_merges_write_the_same_table``."""
    paths = {e: tmp_path / e for e in ("driver", "spark")}
    # One seed for both (the Spark merge's insert into a new table is compared with the
    # Python merge's in test_spark_and_python_merges_write_the_same_table).
    _seed_table(spark, paths["driver"], "driver")
    shutil.copytree(paths["driver"], paths["spark"])
    real, real_profile = spark_merge.merged_in_place, spark_merge.profile
    for operation, rows, settings, in_place in IN_PLACE_STEPS:
        for engine, path in paths.items():
            before = {key: spark.conf.get(key, None) for key in settings}
            for key, value in settings.items():
                spark.conf.set(key, value)
            try:
                with (
                    mock.patch.object(spark_merge, "merged_in_place", wraps=real) as spy,
                    mock.patch.object(spark_merge, "profile", wraps=real_profile) as profiled,
                ):
                    write(
                        frame(spark, rows, False),
                        str(path),
                        options("t", 6, operation, **_engine(engine)),
                    )
            finally:
                for key, value in before.items():
                    if value is None:
                        spark.conf.unset(key)
                    else:
                        spark.conf.set(key, value)
            assert spy.called == (in_place and engine == "spark"), (operation, rows[0], engine)
            if engine == "spark":  # the profile broadcasts the incoming keys unless told not to
                broadcast, counted = profiled.call_args.args[5:7]
                assert broadcast == (not settings), (operation, rows[0])
                # each partition's keys come counted unless some key comes twice
                duplicated = len({(r["id"], r["p"]) for r in rows}) < len(rows)
                assert (counted is None) == duplicated, (operation, rows[0])
        instants = {e: HudiTable.open(str(p)).timeline.completed_writes for e, p in paths.items()}
        tables = {
            e: _normalized(p, [i.requested_time for i in instants[e]]) for e, p in paths.items()
        }
        assert tables["spark"].equals(tables["driver"]), (operation, rows[0])
        assert _commit_counts(paths["spark"]) == _commit_counts(paths["driver"])
        _check_files(paths["spark"])
    names = dict(
        zip(
            tables["spark"].column("id").to_pylist(),
            tables["spark"].column("name").to_pylist(),
            strict=True,
        )
    )
    # newer ordering values won, older ones lost, deleted keys are gone
    assert (names[1 + 2], names[4], names[2], names[104]) == ("u3", "n4", "second", "n4")
    assert not {1, 5, 101} & set(names)
    assert names[200] == "small" and names[21] == "late"
    assert (names[6], names[7], names[309]) == ("v6", "v7", "e9")


def test_an_upsert_infers_no_stored_files_schema(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The Spark merge reads the stored files as their footers type them: Spark infers
    no schema, which is a job each read; new keys find their file group by an
    expression, not a join with the buckets (a job). An upsert of stored and new keys
    into stored partitions runs 10 jobs (AQE: each shuffle and broadcast its own): the
    incoming keys' summary 3, the profile 3, the merge and write 4 (two broadcasts,
    the inserts' shuffle, the write); it ran 14."""
    path = str(tmp_path / "t")
    executors = {MERGE_ENGINE: "spark", "hudi_sync.write.driver.max.bytes": 0}
    rows = [{"id": i, "p": "ab"[i % 2], "name": f"n{i}", "ts": 1} for i in range(20)]
    write(frame(spark, rows, False), path, options("t", 8, "insert", **executors))
    upsert = [dict(r, ts=2, name="u") for r in rows[:6]] + [
        {"id": 100 + i, "p": "a", "name": "new", "ts": 1} for i in range(3)
    ]

    def run() -> None:
        write(frame(spark, upsert, False), path, options("t", 8, "upsert", **executors))

    assert spark_jobs(spark, run) <= 10
    expected = {r["id"]: r for r in rows} | {r["id"]: r for r in upsert}
    written = hudi_rs_rows(path).select(["id", "p", "name", "ts"]).to_pylist()
    assert len(written) == len(expected) and {r["id"]: r for r in written} == expected


def test_stored_files_are_read_as_their_footers_type_them() -> None:
    """``read_schema`` gives Spark the writer schema only where every stored file holds
    each column as that type (or not at all); else Spark infers it (and the merge
    casts): another type, another case, or a timestamp without a zone."""
    wanted = pa.schema([("_hoodie_record_key", pa.string()), ("v", pa.int64())])
    same = pa.schema([("_hoodie_record_key", pa.string()), ("v", pa.int64())])
    older = pa.schema([("_hoodie_record_key", pa.string())])  # before v was added
    read = spark_merge.read_schema(wanted, [same, older])
    assert read is not None and read.simpleString() == "struct<_hoodie_record_key:string,v:bigint>"
    assert spark_merge.read_schema(wanted, [same, pa.schema([("v", pa.int32())])]) is None
    assert spark_merge.read_schema(wanted, [pa.schema([("V", pa.int64())])]) is None
    zoneless = pa.schema([("t", pa.list_(pa.timestamp("us")))])
    assert spark_merge.read_schema(zoneless, [zoneless]) is None
    zoned = pa.schema([("t", pa.timestamp("us", tz="UTC"))])
    assert spark_merge.read_schema(zoned, [zoned]) is not None


def test_inserts_find_the_same_bucket_by_expression_and_by_join(spark) -> None:  # type: ignore[no-untyped-def]
    """``route`` finds an insert's bucket by an expression over the buckets' ranges when
    they are few, by a broadcast join with them (a Spark job) when there are more than
    ``ROUTE_EXPRESSION_BUCKETS``: the same bucket either way, the one whose range holds
    the key's hash; a row that has a file id keeps it, a partition without buckets
    gets none."""
    many = spark_merge.ROUTE_EXPRESSION_BUCKETS + 6
    buckets = [spark_merge.Bucket("a", i / many, (i + 1) / many, f"a{i}") for i in range(many)]
    buckets += [spark_merge.Bucket("b", 0.0, 0.1, "b0"), spark_merge.Bucket("b", 0.1, 1.0, "b1")]
    rows = [(f"k{i}", "abc"[i % 3], "stored" if i % 11 == 0 else None) for i in range(3000)]
    schema = f"{RECORD_KEY} string, {PARTITION_PATH} string, {spark_merge.FILE_ID} string"
    incoming = rows_frame(spark, rows, schema)

    def routed(chosen: list[spark_merge.Bucket], join: bool | None) -> dict[str, str | None]:
        frame = spark_merge.route(spark, incoming, chosen, join)
        return {
            r[0]: r[2]
            for r in frame.select(RECORD_KEY, PARTITION_PATH, spark_merge.FILE_ID).collect()
        }

    by_join = routed(buckets, True)
    assert by_join == routed(buckets, False) == routed(buckets, None)
    for key, partition, stored in rows:
        assert (by_join[key] is None) == (partition == "c" and stored is None), key
        assert stored is None or by_join[key] == stored
    used = {by_join[k] for k, p, s in rows if p == "a" and s is None}
    assert len(used) == many  # some 900 hashes over 70 ranges: each range gets some
    few = buckets[-2:]  # b's two buckets: the expression
    assert routed(few, None) == routed(few, True)
