"""The PySpark writer against an in-memory model, hudi-rs and our own reader."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_sync.errors import BadInputError, TimeTravelError, WriteError
from hudi_sync.spark import read, write
from hudi_sync.spark.compat import collect_arrow
from hudi_sync.table import HudiTable
from hudi_sync.table.read.snapshot import read_snapshot
from tests.frames import rows_frame
from tests.spark_model import TableModel, table_rows
from tests.warehouse_rows import hudi_rs_rows

SCHEMA = "id int, p string, name string, ts long"
EXTRA_SCHEMA = SCHEMA + ", extra string"
PARTITIONS = ("a", "b", "c")


def options(name: str, version: int, operation: str, **extra: object) -> dict[str, object]:
    return {
        "hoodie.table.name": name,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.hive_style_partitioning": str(version >= 8).lower(),
        "hoodie.write.table.version": version,
        "hoodie.datasource.write.operation": operation,
        # Small files so that inserts spread over several file groups.
        "hoodie.parquet.max.file.size": 6000,
        "hoodie.parquet.small.file.limit": 3000,
        "hoodie.copyonwrite.record.size.estimate": 400,
        "hoodie.cleaner.commits.retained": 50,
        "hoodie.keep.min.commits": 60,
        "hoodie.keep.max.commits": 70,
        **extra,
    }


def frame(spark: SparkSession, rows: list[dict[str, Any]], with_extra: bool) -> DataFrame:
    schema = EXTRA_SCHEMA if with_extra else SCHEMA
    return rows_frame(spark, rows, schema)


def our_rows(spark: SparkSession, path: Path, with_extra: bool, **read_options: str) -> list[Any]:
    return table_rows(collect_arrow(read(spark, str(path), read_options)), with_extra)


def our_rows_as_of(
    spark: SparkSession, path: Path, extra_by_instant: dict[str, bool]
) -> dict[str, list[Any]]:
    """Our reader's rows as of each instant, read as ``our_rows`` reads each one but
    collected in one Spark job (a union of the time-travel reads, each row tagged with
    its instant) instead of one job a commit."""
    if not extra_by_instant:
        return {}
    tag = "__as_of__"
    frames = [
        read(spark, str(path), {"as.of.instant": instant}).withColumn(tag, F.lit(instant))
        for instant in extra_by_instant
    ]
    union = frames[0]
    for each in frames[1:]:
        union = union.unionByName(each, allowMissingColumns=True)
    collected = collect_arrow(union)
    tags = collected.column(tag)
    return {
        instant: table_rows(collected.filter(pc.equal(tags, instant)), with_extra)
        for instant, with_extra in extra_by_instant.items()
    }


def core_rows(path: Path, with_extra: bool, as_of: str | None = None) -> list[Any]:
    """The table core's snapshot (no Spark): what the Spark reader's tasks read."""
    return _model_rows(read_snapshot(HudiTable.open(str(path)), as_of), with_extra)


def hudi_rs(path: Path, with_extra: bool, as_of: str | None = None) -> list[Any]:
    return _model_rows(hudi_rs_rows(str(path), as_of=as_of), with_extra)


def _model_rows(table: pa.Table, with_extra: bool) -> list[Any]:
    """A reader's rows as the model holds them (``extra`` null where the files lack it)."""
    if with_extra and "extra" not in table.column_names:
        table = table.append_column("extra", pa.nulls(table.num_rows, pa.string()))
    return table_rows(table, with_extra)


class RandomWorkload:
    """Random operations with the model's expected outcome of each."""

    def __init__(
        self, spark: SparkSession, path: Path, version: int, seed: int, **extra: object
    ) -> None:
        self.spark, self.path, self.version = spark, path, version
        self.extra = extra
        self.random = random.Random(seed)
        self.model = TableModel()
        self.next_key = 0
        self.history: list[tuple[str, TableModel]] = []

    def _new_rows(self, count: int) -> list[dict[str, Any]]:
        rows = []
        for _ in range(count):
            rows.append(self._row(self.next_key, self.random.choice(PARTITIONS)))
            self.next_key += 1
        return rows

    def _row(self, key: int, partition: str) -> dict[str, Any]:
        row = {
            "id": key,
            "p": partition,
            "name": f"n{self.random.randrange(1000)}",
            "ts": self.random.randrange(4),  # few values: ordering ties are common
        }
        if self.model.has_extra:
            row["extra"] = self.random.choice([None, "x", "y"])
        return row

    def _write(self, rows: list[dict[str, Any]], operation: str, **extra: object) -> str:
        df = frame(self.spark, rows, self.model.has_extra)
        name = f"t{self.version}"
        all_options = options(name, self.version, operation, **{**self.extra, **extra})
        return write(df, str(self.path), all_options).instant

    def random_sequence(self) -> list[str]:
        """Seven random operations between a first insert and a column added, with a
        partition dropped and an upsert that dies before it commits."""
        return _placed(self.random.choices(OPERATIONS, k=7))

    def covering_sequence(self) -> list[str]:
        """Each kind of operation once, in random order, placed as ``random_sequence``
        places them: the shortest sequence with every edge of the random ones (for
        workloads whose every write is Spark jobs)."""
        kinds = sorted(set(OPERATIONS))
        self.random.shuffle(kinds)
        return _placed(kinds)

    def step(self, operation: str) -> str | None:
        model, existing = self.model, sorted(self.model.rows)
        if operation == "insert":
            rows = self._new_rows(self.random.randint(1, 25))
            instant = self._write(rows, "insert")
            model.insert(rows, instant)
        elif operation == "upsert":
            picked = self.random.sample(existing, min(len(existing), self.random.randint(1, 12)))
            rows = [self._row(k, model.rows[k]["p"]) for k in picked]
            rows += [dict(r, name=r["name"] + "-dup") for r in rows[: len(rows) // 3]]
            rows += self._new_rows(self.random.randint(0, 8))
            self.random.shuffle(rows)
            instant = self._write(rows, "upsert")
            model.upsert(rows, instant)
        elif operation == "delete":
            picked = self.random.sample(existing, min(len(existing), self.random.randint(1, 6)))
            rows = [dict(model.rows[k]) for k in picked] + [self._row(10_000, "a")]
            instant = self._write(rows, "delete")
            model.delete(picked)
        elif operation == "insert_overwrite":
            partition = self.random.choice(PARTITIONS)
            rows = [dict(r, p=partition) for r in self._new_rows(self.random.randint(1, 6))]
            instant = self._write(rows, "insert_overwrite")
            model.overwrite_partitions(rows, instant)
        elif operation == "delete_partition":
            partition = self.random.choice(PARTITIONS)
            partition_path = f"p={partition}" if self.version >= 8 else partition
            instant = self._write(
                [],
                "delete_partition",
                **{"hoodie.datasource.write.partitions.to.delete": partition_path},
            )
            model.delete_partition(partition)
        elif operation == "add_column":
            model.has_extra = True
            picked = self.random.sample(existing, min(len(existing), 3))
            rows = [self._row(k, model.rows[k]["p"]) for k in picked] + self._new_rows(2)
            instant = self._write(rows, "upsert")
            model.upsert(rows, instant)
        elif operation == "failed_upsert":
            rows = [self._row(k, model.rows[k]["p"]) for k in existing[:3]] + self._new_rows(2)
            df = frame(self.spark, rows, model.has_extra)
            # The write dies once its data files are written, before it commits.
            with (
                mock.patch(
                    "hudi_sync.table.write.commit.WriteTransaction.write_partition_metadata",
                    side_effect=RuntimeError("writer died"),
                ),
                pytest.raises(WriteError, match="rolled back"),
            ):
                name = f"t{self.version}"
                write(df, str(self.path), options(name, self.version, "upsert", **self.extra))
            return None
        else:  # pragma: no cover - the test's own list
            raise AssertionError(operation)
        self.history.append((instant, model.copy()))
        return instant


OPERATIONS = ["upsert", "upsert", "insert", "delete", "insert_overwrite", "upsert"]


def _placed(operations: list[str]) -> list[str]:
    """``operations`` between a first insert and a column added (then an upsert), with a
    partition dropped and an upsert that dies before it commits, at fixed places."""
    sequence = ["insert", *operations, "add_column", "upsert"]
    sequence.insert(5, "delete_partition")
    sequence.insert(3, "failed_upsert")
    return sequence


# Each engine (the driver's for small writes, the executors' for large ones: see
# hudi_sync.write.driver.max.bytes) runs the workload; version 8's seed on both (the
# executors' with each kind of operation once: ``covering_sequence``).
ENGINES = {"driver": {}, "executors": {"hudi_sync.write.driver.max.bytes": 0}}


@pytest.mark.parametrize(
    "version,seed,engine",
    [(6, 1, "driver"), (8, 2, "driver"), (9, 3, "driver"), (8, 2, "executors")],
)
def test_random_operations_match_the_model_in_every_reader(  # type: ignore[no-untyped-def]
    spark, tmp_path, version, seed, engine
) -> None:
    """A random sequence per table version, each step checked against the model by the
    core and hudi-rs, the Spark reader at the end and at every commit. The executors'
    parameter, whose every write is Spark jobs, runs each kind of operation once."""
    workload = RandomWorkload(spark, tmp_path / "table", version, seed, **ENGINES[engine])
    sequence = workload.covering_sequence() if engine == "executors" else None
    for operation in sequence or workload.random_sequence():
        instant = workload.step(operation)
        extra = workload.model.has_extra
        expected = workload.model.snapshot()
        assert core_rows(workload.path, extra) == expected, (operation, instant)
        assert hudi_rs(workload.path, extra) == expected, (operation, instant)
    # The Spark reader (the core's slices read in Spark tasks) on the latest snapshot and,
    # below, on every commit: one Spark job each rather than one a step.
    assert our_rows(spark, workload.path, workload.model.has_extra) == expected
    # Time travel to every commit, in both readers.
    table = HudiTable.open(str(workload.path))
    completed = {i.requested_time: i for i in table.timeline.completed_writes}
    ours = our_rows_as_of(spark, workload.path, {i: m.has_extra for i, m in workload.history})
    for instant, model in workload.history:
        expected = model.snapshot()
        extra = model.has_extra
        assert ours[instant] == expected, instant
        as_of = completed[instant].completion_time or instant
        assert hudi_rs(workload.path, extra, as_of=as_of) == expected, instant
    assert any(i.action == "rollback" for i in table.timeline.instants)
    assert len(table.timeline.completed_writes) == len(workload.history)


@pytest.mark.parametrize("version", [6, 8])
def test_archival_bounds_the_active_timeline_and_every_reader_agrees(  # type: ignore[no-untyped-def]
    spark, tmp_path, version
) -> None:
    retention = {
        "hoodie.cleaner.commits.retained": 2,
        "hoodie.keep.min.commits": 3,
        "hoodie.keep.max.commits": 4,
    }
    workload = RandomWorkload(spark, tmp_path / "t", version, 7, **retention)
    sequence = ["insert", "insert_overwrite", "upsert", "delete", "insert", "upsert"]
    for operation in sequence * 2:
        instant = workload.step(operation)
        active = HudiTable.open(str(workload.path)).timeline.completed_writes
        assert len(active) <= 4, (operation, instant)
        expected = workload.model.snapshot()
        assert core_rows(workload.path, False) == expected, (operation, instant)
        assert hudi_rs(workload.path, False) == expected, (operation, instant)
    # The Spark reader (the core's slices read in Spark tasks) once, on the archived table.
    assert our_rows(spark, workload.path, False) == expected

    table = HudiTable.open(str(workload.path))
    written = [instant for instant, _ in workload.history]
    everything = table.instants(include_archived=True)
    # Nothing is lost: every commit is on the active timeline or in the archive.
    assert [i.requested_time for i in everything if i.is_write] == written
    active = [i.requested_time for i in table.timeline.completed_writes]
    archived = written[: len(written) - len(active)]
    assert len(archived) >= 6 and active == written[len(archived) :]
    assert any(i.action == "clean" for i in everything if i not in table.timeline.instants)
    if version == 6:
        assert list((workload.path / ".hoodie" / "archived").glob(".commits_.archive.*"))
    else:
        assert (workload.path / ".hoodie" / "timeline" / "history" / "_version_").exists()
    completed = {i.requested_time: i for i in table.timeline.completed_writes}
    ours = our_rows_as_of(spark, workload.path, {i: False for i, _ in workload.history[-2:]})
    for instant, model in workload.history[-2:]:
        expected = model.snapshot()
        assert ours[instant] == expected, instant
        as_of = completed[instant].completion_time or instant
        assert hudi_rs(workload.path, False, as_of=as_of) == expected, instant
    with pytest.raises(TimeTravelError):
        read(spark, str(workload.path), {"as.of.instant": archived[0]})


def test_archival_options_follow_hudis_rules(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    rows = [{"id": 1, "p": "a", "name": "x", "ts": 1}]
    too_few = options("t", 6, "upsert", **{"hoodie.keep.min.commits": 50})
    with pytest.raises(BadInputError, match=r"keep\.min\.commits=50 must be greater"):
        write(frame(spark, rows, False), str(tmp_path / "t"), too_few)
    inverted = options("t", 6, "upsert", **{"hoodie.keep.max.commits": 60})
    with pytest.raises(BadInputError, match=r"keep\.max\.commits=60 must be greater"):
        write(frame(spark, rows, False), str(tmp_path / "t"), inverted)
    assert not (tmp_path / "t").exists()


def test_table_files_are_only_hudi_base_files(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    workload = RandomWorkload(spark, tmp_path / "t", 6, 3)
    for operation in ("insert", "upsert", "delete"):
        workload.step(operation)
    for path in (tmp_path / "t").rglob("*"):
        if ".hoodie" in path.relative_to(tmp_path / "t").parts or path.is_dir():
            continue
        assert path.name == ".hoodie_partition_metadata" or path.name.endswith(".parquet")
        assert not path.name.startswith(("part-", "_SUCCESS", "_temporary")), path


def test_unchanged_rows_keep_commit_time_and_seqno(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "t")
    rows = [{"id": i, "p": "a", "name": f"n{i}", "ts": 1} for i in range(5)]
    first = write(frame(spark, rows, False), path, options("t", 6, "upsert")).instant
    before = {r["id"]: r for r in read_snapshot(HudiTable.open(path)).to_pylist()}
    second = write(
        frame(spark, [dict(rows[0], ts=2, name="new")], False), path, options("t", 6, "upsert")
    )
    after = {r["id"]: r for r in read_snapshot(HudiTable.open(path)).to_pylist()}
    assert after[0]["_hoodie_commit_time"] == second.instant != first
    for key in range(1, 5):
        assert after[key]["_hoodie_commit_time"] == before[key]["_hoodie_commit_time"] == first
        assert after[key]["_hoodie_commit_seqno"] == before[key]["_hoodie_commit_seqno"]
        assert after[key]["_hoodie_file_name"] != before[key]["_hoodie_file_name"]
    (stat,) = second.stats
    assert (stat.num_updates, stat.num_inserts, stat.prev_commit) == (1, 0, first)


@pytest.mark.parametrize("version", [6, 8])
def test_inserts_split_by_hudis_record_size_estimate(spark, tmp_path, version) -> None:  # type: ignore[no-untyped-def]
    """New keys of a new partition fill ``max.file.size / record size`` records per file
    group. The record size is the bytes per record of the newest commit that wrote more
    than ``threshold * small.file.limit`` bytes, else the configured estimate; version 6
    (Hudi 0.x) counts replacecommits, version 8 (Hudi 1.x) skips them."""
    path, max_size, small_limit = str(tmp_path / "t"), 6000, 3000
    threshold = "hoodie.record.size.estimation.threshold"

    def insert(partition: str, count: int, operation: str = "insert", **extra: object) -> Any:
        first_id = ord(partition) * 1000
        rows = [{"id": first_id + i, "p": partition, "name": "n", "ts": 1} for i in range(count)]
        return write(frame(spark, rows, False), path, options("t", version, operation, **extra))

    def groups(result: Any) -> int:
        return len({s.file_id for s in result.stats})

    def expected(commit: Any, count: int) -> int:
        written = sum(s.total_write_bytes for s in commit.stats)
        records = sum(s.num_writes for s in commit.stats)
        per_file = max_size // -(-written // records)
        return -(-count // per_file)

    first = insert("a", 200)  # an empty timeline: the estimate, 400 bytes
    assert groups(first) == -(-200 // (max_size // 400))
    # no commit wrote 10^6 * small.file.limit bytes: the estimate again
    second = insert("b", 45, **{threshold: 1e6})
    assert groups(second) == 3
    # every commit qualifies: the newest one's bytes per record
    third = insert("c", 45, **{threshold: 0})
    assert groups(third) == expected(second, 45) != 3
    # the two newest commits are too small, so the search goes back to the first one
    small = max(sum(s.total_write_bytes for s in c.stats) for c in (second, third))
    assert small < sum(s.total_write_bytes for s in first.stats)
    fourth = insert("d", 45, **{threshold: (small + 0.5) / small_limit})
    assert groups(fourth) == expected(first, 45)
    # a replacecommit is the newest write
    overwrite = insert("a", 3, "insert_overwrite")
    fifth = insert("e", 45, **{threshold: 0})
    assert groups(fifth) == expected(overwrite if version == 6 else fourth, 45)
    assert expected(overwrite, 45) != expected(fourth, 45)
    assert hudi_rs(Path(path), False) == our_rows(spark, Path(path), False)


def test_cleaner_keeps_the_retained_commits_and_refuses_older_time_travel(  # type: ignore[no-untyped-def]
    spark, tmp_path
) -> None:
    path = str(tmp_path / "t")
    instants = []
    for ts in range(5):
        rows = [{"id": 1, "p": "a", "name": f"v{ts}", "ts": ts}]
        result = write(
            frame(spark, rows, False),
            path,
            options("t", 6, "upsert", **{"hoodie.cleaner.commits.retained": 2}),
        )
        instants.append(result.instant)
    files = sorted(p.name for p in (tmp_path / "t" / "a").glob("*.parquet"))
    # Queries as of the last two commits need their two versions; older ones are gone.
    assert [f.rsplit("_", 1)[1][:-8] for f in files] == instants[-2:]
    assert our_rows(spark, tmp_path / "t", False, **{"as.of.instant": instants[-2]})[0][2] == "v3"
    with pytest.raises(TimeTravelError, match="cleaned"):
        read(spark, path, {"as.of.instant": instants[0]})


def test_complex_keys_stand_in_for_null_and_empty_values(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Hudi's ComplexKeyGenerator writes a null value ``__null__`` and an empty one
    ``__empty__`` (``f1:v1,f2:v2``), and refuses a key whose every value is null or
    empty; an upsert of such a key finds its row again."""
    path = str(tmp_path / "t")
    keyed = {**options("t", 8, "upsert"), "hoodie.datasource.write.recordkey.field": "id,name"}
    rows = [
        {"id": 1, "p": "a", "name": None, "ts": 1},
        {"id": 2, "p": "a", "name": "", "ts": 1},
        {"id": None, "p": "a", "name": "x:1,y", "ts": 1},
    ]
    write(frame(spark, rows, False), path, keyed)
    write(frame(spark, [dict(rows[0], ts=5)], False), path, keyed)
    stored = {r["_hoodie_record_key"]: r["ts"] for r in hudi_rs_rows(path).to_pylist()}
    expected = {"id:1,name:__null__": 5, "id:2,name:__empty__": 1, "id:__null__,name:x:1,y": 1}
    assert stored == expected
    blank = [{"id": None, "p": "a", "name": "", "ts": 1}]
    # The executors' and the driver's engines word it alike in substance.
    with pytest.raises(BadInputError, match=r"every (one of fields|record key field \()id, name"):
        write(frame(spark, blank, False), path, keyed)


def test_options_that_contradict_the_table_fail_clearly(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "t")
    rows = [{"id": 1, "p": "a", "name": "x", "ts": 1}]
    write(frame(spark, rows, False), path, options("t", 6, "upsert"))
    changed_key = {**options("t", 6, "upsert"), "hoodie.datasource.write.recordkey.field": "name"}
    with pytest.raises(BadInputError, match=r"recordkey\.field=name"):
        write(frame(spark, rows, False), path, changed_key)
    retyped = rows_frame(spark, [(1, "a", "x", "late")], "id int, p string, name string, ts string")
    with pytest.raises(BadInputError, match="column ts changes type"):
        write(retyped, path, options("t", 6, "upsert"))
    with pytest.raises(BadInputError, match="no column name"):
        write(frame(spark, rows, False).drop("name"), path, options("t", 6, "upsert"))
    with pytest.raises(BadInputError, match=r"null or empty(: | record key )field id"):
        write(frame(spark, [dict(rows[0], id=None)], False), path, options("t", 6, "upsert"))
    # (object-store tables, and a missing bucket: tests/test_spark_objectstores.py)
    with pytest.raises(BadInputError, match="operation"):
        write(frame(spark, rows, False), path, options("t", 6, "merge"))
    for threshold, problem in (("often", "is not a number"), ("-1", "must be at least 0")):
        odd = options("t", 6, "upsert", **{"hoodie.record.size.estimation.threshold": threshold})
        with pytest.raises(BadInputError, match=rf"estimation\.threshold=.*{problem}"):
            write(frame(spark, rows, False), path, odd)
    # Nothing of the refused writes reached the timeline.
    assert len(HudiTable.open(path).timeline.instants) == 1


@pytest.mark.spark_compat
def test_rows_spark_reads_from_a_hudi_v6_table_upsert_back_into_it(  # type: ignore[no-untyped-def]
    spark, fixture_copy
) -> None:
    """Hudi 0.x stores lists as parquet-avro's 2-level lists (item named ``array``, not
    null); Spark names the item ``element``: the same type, so the upsert goes on."""
    from pyspark.sql import functions as F

    from hudi_sync.table.read.snapshot import read_snapshot

    path = fixture_copy("cow/v6_simplekeygen_nonhivestyle")
    config = HudiTable.open(str(path)).config
    key, ordering = config.record_key_fields[0], config.ordering_fields[0]
    loaded = read(spark, str(path))
    data = [c for c in loaded.columns if not c.startswith("_hoodie_")]
    first = loaded.select(*data).orderBy(key).limit(1)
    changed = first.withColumn(ordering, F.col(ordering) + 1).withColumn("name", F.lit("again"))
    settings = {
        "hoodie.table.name": config.name,
        "hoodie.datasource.write.recordkey.field": key,
        "hoodie.datasource.write.partitionpath.field": config.partition_fields[0],
        "hoodie.datasource.write.precombine.field": ordering,
        "hoodie.datasource.write.operation": "upsert",
    }
    write(changed, str(path), settings)
    wanted = changed.collect()[0][key]
    for rows in (read_snapshot(HudiTable.open(str(path))), hudi_rs_rows(str(path))):
        (row,) = [r for r in rows.to_pylist() if r[key] == wanted]
        assert row["name"] == "again" and len(rows.column(key)) == len(set(rows.column(key)))
