"""Change data capture (RFC-51): CDC writes in each logging mode, the CDC query's
inference cases, and ``format("hudi")``, each against a model computed from hudi-rs's
snapshots before and after every commit (an independent reader)."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pytest
from pyspark.sql import SparkSession

from hudi_sync.errors import BadInputError, CorruptTableError
from hudi_sync.spark import read, write
from hudi_sync.spark.compat import collect_arrow
from hudi_sync.sync.hook import DUCKDB_DATABASE, DUCKDB_TABLE, SYNC_TOOLS
from hudi_sync.table import HudiTable
from hudi_sync.table.cdc_log import CdcMode, json_value, parse_cdc_mode, read_cdc_file
from hudi_sync.table.cdc_query import InferenceCase, change_rows, plan_changes
from hudi_sync.table.schema import META_FIELDS
from tests.test_spark_writer import frame, options
from tests.warehouse_rows import hudi_rs_rows

DATA = ("id", "p", "name", "ts")
CDC_READ = {
    "hoodie.datasource.query.type": "incremental",
    "hoodie.datasource.query.incremental.format": "cdc",
}
# (operation, rows or partitions): insert into a new table, an upsert with updates, a
# late event that loses, new keys (small file and new file group) and a soft delete;
# a delete; a bulk insert re-inserting the deleted key; the three replace operations.
SEQUENCE: list[tuple[str, Any]] = [
    ("insert", [(i, "a" if i % 2 else "b", f"n{i}", 1) for i in range(8)]),
    (
        "upsert",
        [(1, "a", "n1-v2", 2), (2, "b", "late", 0), (20, "a", "n20", 2), (21, "c", "n21", 2)],
    ),
    ("upsert_soft_delete", [(3, "a", "gone", 3)]),
    ("delete", [(4, "b", None, 4), (99, "b", None, 4)]),
    ("bulk_insert", [(4, "b", "n4-again", 5), (30, "c", "n30", 5)]),
    ("insert_overwrite", [(40, "c", "n40", 6)]),
    ("delete_partition", "b"),
    ("insert_overwrite_table", [(50, "a", "n50", 7), (51, "c", "n51", 7)]),
]


def _data(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in DATA}


def _by_key(path: Path, instant: str | None) -> dict[int, dict[str, Any]]:
    if instant is None:
        return {}
    return {r["id"]: r for r in hudi_rs_rows(str(path), as_of=instant).to_pylist()}


def expected_changes(
    path: Path, previous: str | None, instant: str, operation: str, touched: set[str]
) -> Counter[str]:
    """What the commit changed, from hudi-rs's snapshots before and after it: Hudi
    reports replaced file groups as deletes of every row and the rows written as
    inserts; other writes as inserts, updates (rows the commit rewrote) and deletes."""
    before, after = _by_key(path, previous), _by_key(path, instant)
    changes: list[tuple[str, Any, Any]] = []
    if operation.startswith(("insert_overwrite", "delete_partition")):
        changes += [("d", _data(r), None) for r in before.values() if r["p"] in touched]
        changes += [
            ("i", None, _data(r)) for r in after.values() if r["_hoodie_commit_time"] == instant
        ]
    else:
        for key in before.keys() | after.keys():
            old, new = before.get(key), after.get(key)
            if old is None and new is not None:
                changes.append(("i", None, _data(new)))
            elif new is None and old is not None:
                changes.append(("d", _data(old), None))
            elif new is not None and new["_hoodie_commit_time"] == instant:
                changes.append(("u", _data(old), _data(new)))  # type: ignore[arg-type]
    return Counter(json.dumps([op, b, a], sort_keys=True) for op, b, a in changes)


def observed(rows: list[dict[str, Any]], instant: str | None = None) -> Counter[str]:
    if instant is not None:
        assert all(r["ts_ms"] == instant for r in rows)
    return Counter(
        json.dumps(
            [
                r["op"],
                _data(json.loads(r["before"])) if r["before"] else None,
                _data(json.loads(r["after"])) if r["after"] else None,
            ],
            sort_keys=True,
        )
        for r in rows
    )


def run_sequence(
    spark: SparkSession, path: Path, version: int, cdc: dict[str, str]
) -> list[tuple[str, str, set[str]]]:
    """Write SEQUENCE; returns (instant, operation, partitions it replaced)."""
    done = []
    for operation, rows in SEQUENCE:
        extra: dict[str, Any] = dict(cdc)
        if operation == "delete_partition":
            hive_style = version == 8  # tests.test_spark_writer.options
            extra["hoodie.datasource.write.partitions.to.delete"] = (
                f"p={rows}" if hive_style else rows
            )
            df = frame(spark, [], False)
            touched = {rows}
        elif operation == "upsert_soft_delete":
            df = frame(spark, [dict(zip(DATA, r, strict=True)) for r in rows], False)
            touched = set()
        else:
            df = frame(spark, [dict(zip(DATA, r, strict=True)) for r in rows], False)
            touched = {r[1] for r in rows} if operation == "insert_overwrite" else set()
            if operation == "insert_overwrite_table":
                touched = {"a", "b", "c"}
        op = "upsert" if operation == "upsert_soft_delete" else operation
        # Hudi's soft-delete column, kept by the table once written.
        df = df.selectExpr("*", f"{operation == 'upsert_soft_delete'} as _hoodie_is_deleted")
        result = write(df, str(path), options("t", version, op, **extra))
        done.append((result.instant, operation, touched))
    return done


@pytest.mark.parametrize(
    ("mode", "version"),
    [("KEY_OP", 6), ("DATA_BEFORE", 8), ("data_before_after", 6)],
)
def test_cdc_rows_equal_the_snapshot_model_for_every_operation(  # type: ignore[no-untyped-def]
    spark, tmp_path: Path, mode: str, version: int
) -> None:
    path = tmp_path / "t"
    cdc = {"hoodie.table.cdc.enabled": "true", "hoodie.table.cdc.supplemental.logging.mode": mode}
    commits = run_sequence(spark, path, version, cdc)
    table = HudiTable.open(str(path))
    assert table.config.cdc_enabled
    assert parse_cdc_mode(table.config.cdc_logging_mode) is parse_cdc_mode(mode)

    previous = None
    everything: Counter[str] = Counter()
    # Each commit's range through the table core (what the Spark reader reads, on the
    # driver or in its tasks); the Spark reader once, on the whole range, below.
    for instant, operation, touched in commits:
        want = expected_changes(path, previous, instant, operation, touched)
        plan = plan_changes(table, previous or "earliest", instant)
        rows = change_rows(table.location, plan.splits).to_pylist()
        assert observed(rows, instant) == want, operation
        assert want, f"{operation} should change rows"
        everything += want
        previous = instant

    # The whole range at once (read() and format("hudi") agree on CDC queries:
    # tests/test_incremental_begin_and_streams.py).
    whole = read(
        spark, str(path), {**CDC_READ, "hoodie.datasource.read.begin.instanttime": "earliest"}
    ).collect()
    assert observed([r.asDict() for r in whole]) == everything
    assert len({r.ts_ms for r in whole}) == len(commits)  # each commit its own ts_ms
    check_cdc_files(path, parse_cdc_mode(mode))


@pytest.mark.parametrize("mode", ["op_key_only", "data_before_after"])
def test_both_merge_engines_log_the_same_changes(  # type: ignore[no-untyped-def]
    spark, tmp_path: Path, mode: str
) -> None:
    """The Spark merge (the executors' default) logs CDC from its own job over the
    changed keys; the Python merge logs each group as it merges it, and so does the
    driver's engine (small writes). Commit by commit their CDC logs hold the same records
    (file ids may differ: routing to small files depends on the files' sizes), and each
    engine's logs pass ``check_cdc_files``. Over 30 s: two of the three engines are the
    executors' (10 to 14 Spark jobs a write), each writing the whole sequence."""
    cdc = {"hoodie.table.cdc.enabled": "true", "hoodie.table.cdc.supplemental.logging.mode": mode}
    engines = ("spark", "python", "driver")
    chosen: dict[str, dict[str, object]] = {
        "spark": {"hudi_sync.write.merge.engine": "spark"},
        "python": {"hudi_sync.write.merge.engine": "python"},
        "driver": {},  # no engine named: small writes go to the driver
    }
    commits = {e: run_sequence(spark, tmp_path / e, 6, {**cdc, **chosen[e]}) for e in engines}
    logged: dict[str, list[Counter[str]]] = {}
    for engine in engines:
        path = tmp_path / engine
        check_cdc_files(path, parse_cdc_mode(mode))
        timeline = HudiTable.open(str(path)).timeline
        per_commit = []
        for instant in timeline.completed_writes:
            records: Counter[str] = Counter()
            for stat in timeline.commit_metadata(instant).write_stats:
                for relative in stat.cdc_stats:
                    data = (path / relative).read_bytes()
                    for record in read_cdc_file(data, relative):
                        record.pop("ts_ms", None)  # the instant, which differs
                        records[json.dumps(record, sort_keys=True, default=str)] += 1
            per_commit.append(records)
        logged[engine] = per_commit
    assert len(commits["spark"]) == len(commits["python"]) == len(commits["driver"])
    assert logged["spark"] == logged["python"] == logged["driver"]
    assert sum(c.total() for c in logged["spark"]) >= 3  # an update, a soft delete, a delete


def check_cdc_files(path: Path, mode: CdcMode) -> None:
    """CDC logs exist exactly for the file groups a commit rewrote with changes (none
    for new file groups), are listed in cdcStats with their size, are named like
    Hudi's, and decode to the records the mode keeps."""
    table = HudiTable.open(str(path))
    on_disk = {str(p.relative_to(path)) for p in path.rglob("*.cdc") if ".hoodie" not in p.parts}
    fields = {
        CdcMode.OP_KEY_ONLY: {"op", "record_key"},
        CdcMode.DATA_BEFORE: {"op", "record_key", "before"},
        CdcMode.DATA_BEFORE_AFTER: {"op", "ts_ms", "before", "after"},
    }[mode]
    listed: set[str] = set()
    for instant in table.timeline.completed_writes:
        for stat in table.timeline.commit_metadata(instant).write_stats:
            changed = stat.num_inserts + stat.num_updates + stat.num_deletes > 0
            assert bool(stat.cdc_stats) == (stat.prev_commit is not None and changed), stat
            for relative, size in stat.cdc_stats.items():
                name = relative.rsplit("/", 1)[-1]
                prefix = f".{stat.file_id}_{instant.requested_time}.log.1_"
                assert name.startswith(prefix) and name.endswith(".cdc"), name
                data = (path / relative).read_bytes()
                assert len(data) == size
                records = read_cdc_file(data, relative)
                assert records and all(set(r) == fields for r in records)
                assert len(records) == stat.num_inserts + stat.num_updates + stat.num_deletes
                listed.add(relative)
    assert listed == on_disk and listed


def test_a_cdc_table_reads_syncs_and_lists_like_the_same_writes_without_cdc(  # type: ignore[no-untyped-def]
    spark, tmp_path: Path
) -> None:
    def data_rows(path: Path) -> Counter[str]:
        rows = hudi_rs_rows(str(path)).to_pylist()
        return Counter(json.dumps(_data(r), sort_keys=True) for r in rows)

    plain, with_cdc = tmp_path / "plain", tmp_path / "cdc"
    run_sequence(spark, plain, 8, {})
    database = str(tmp_path / "w.duckdb")
    sync = {
        "hoodie.datasource.meta.sync.enable": "true",
        SYNC_TOOLS: "duckdb",
        DUCKDB_DATABASE: database,
        DUCKDB_TABLE: "trips",
    }
    run_sequence(spark, with_cdc, 8, {"hoodie.table.cdc.enabled": "true", **sync})
    assert data_rows(with_cdc) == data_rows(plain)  # hudi-rs reads the snapshot unchanged
    ours = collect_arrow(read(spark, str(with_cdc))).to_pylist()
    assert Counter(json.dumps(_data(r), sort_keys=True) for r in ours) == data_rows(plain)
    assert list((with_cdc).rglob("*.cdc")), "the sequence rewrote file groups"
    manifest = (with_cdc / ".hoodie" / "manifest" / "latest_snapshot_files.csv").read_text()
    assert ".cdc" not in manifest and manifest.strip()
    with duckdb.connect(database) as con:
        view = con.sql('SELECT * FROM "trips"').to_arrow_table().to_pylist()
    assert Counter(json.dumps(_data(r), sort_keys=True) for r in view) == data_rows(plain)
    table = HudiTable.open(str(with_cdc))
    assert all(not s.log_files for s in table.file_slices())


def test_the_cleaner_removes_cdc_logs_with_their_file_slice(  # type: ignore[no-untyped-def]
    spark, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    cdc = {
        "hoodie.table.cdc.enabled": "true",
        "hoodie.cleaner.commits.retained": 2,
        "hoodie.keep.min.commits": 3,
        "hoodie.keep.max.commits": 4,
    }
    for version in range(6):
        rows = [{"id": i, "p": "a", "name": f"v{version}", "ts": version} for i in range(3)]
        write(frame(spark, rows, False), str(path), {**options("t", 6, "upsert"), **cdc})
    table = HudiTable.open(str(path))
    bases = {b.instant for b in table.view.partitions["a"].base_files}
    logs = {log.instant for log in table.view.partitions["a"].cdc_files}
    assert logs and logs <= bases, "every CDC log's base file version is still there"
    assert len(bases) <= 3
    with pytest.raises(BadInputError, match=r"begin.instanttime.*use \d+ or later"):
        plan_changes(table, table.instants(include_archived=True)[0].requested_time)
    # From the earliest readable instant on, every remaining commit reads.
    plan = plan_changes(table, "earliest")
    assert plan.instants and change_rows(table.location, plan.splits).num_rows > 0


def test_cdc_query_bad_inputs_fail_in_one_line(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    plain = tmp_path / "plain"
    write(
        frame(spark, [{"id": 1, "p": "a", "name": "x", "ts": 1}], False),
        str(plain),
        options("t", 6, "insert"),
    )
    with pytest.raises(BadInputError, match=r"not a CDC table \(hoodie.table.cdc.enabled"):
        read(spark, str(plain), {**CDC_READ, "hoodie.datasource.read.begin.instanttime": "0"})

    with pytest.raises(BadInputError, match="is not a CDC logging mode"):
        write(
            frame(spark, [{"id": 1, "p": "a", "name": "x", "ts": 1}], False),
            str(tmp_path / "bad"),
            options(
                "t",
                6,
                "insert",
                **{
                    "hoodie.table.cdc.enabled": "true",
                    "hoodie.table.cdc.supplemental.logging.mode": "everything",
                },
            ),
        )
    assert not (tmp_path / "bad").exists()

    path = tmp_path / "t"
    cdc = {
        "hoodie.table.cdc.enabled": "true",
        "hoodie.table.cdc.supplemental.logging.mode": "op_key_only",
    }
    first = write(
        frame(spark, [{"id": 1, "p": "a", "name": "x", "ts": 1}], False),
        str(path),
        options("t", 6, "insert", **cdc),
    )
    second = write(
        frame(spark, [{"id": 1, "p": "a", "name": "y", "ts": 2}], False),
        str(path),
        options("t", 6, "upsert", **cdc),
    )
    writes_before = len(HudiTable.open(str(path)).timeline.completed_writes)
    with pytest.raises(BadInputError, match=r"supplemental.logging.mode=data_before .*fixed"):
        write(
            frame(spark, [{"id": 1, "p": "a", "name": "z", "ts": 3}], False),
            str(path),
            options(
                "t",
                6,
                "upsert",
                **{**cdc, "hoodie.table.cdc.supplemental.logging.mode": "data_before"},
            ),
        )
    with pytest.raises(BadInputError, match=r"cdc\.enabled=false"):
        write(
            frame(spark, [{"id": 1, "p": "a", "name": "z", "ts": 3}], False),
            str(path),
            options("t", 6, "upsert", **{"hoodie.table.cdc.enabled": "false"}),
        )
    assert len(HudiTable.open(str(path)).timeline.completed_writes) == writes_before

    with pytest.raises(BadInputError, match=r"begin.instanttime=.* is after"):
        read(
            spark,
            str(path),
            {
                **CDC_READ,
                "hoodie.datasource.read.begin.instanttime": second.instant,
                "hoodie.datasource.read.end.instanttime": first.instant,
            },
        )

    # A truncated CDC log: one line naming the file.
    (log,) = [p for p in path.rglob("*.cdc")]
    log.write_bytes(log.read_bytes()[:-20])
    table = HudiTable.open(str(path))
    with pytest.raises(CorruptTableError, match=log.name) as error:
        change_rows(table.location, plan_changes(table, first.instant).splits)
    assert "\n" not in str(error.value)


def _with_cdc_enabled(source: Path, target: Path) -> Path:
    """A Hudi-written MOR table with CDC switched on: Hudi infers MOR changes from the
    log files (LOG_FILE), so the table needs nothing else."""
    shutil.copytree(source, target)
    properties = target / ".hoodie" / "hoodie.properties"
    properties.write_text(properties.read_text() + "hoodie.table.cdc.enabled=true\n")
    return target


@pytest.mark.parametrize("suffix", ["v6_trips_8i3d", "v8_trips_8i3u1d", "v9_txns_simple_meta"])
def test_merge_on_read_fixture_changes_equal_the_snapshot_model(  # type: ignore[no-untyped-def]
    unpack_table, tmp_path: Path, suffix: str
) -> None:
    from tests.fixture_tables import fixture_tables

    (fixture,) = [t for t in fixture_tables() if t.name.endswith("mor/avro/" + suffix)]
    path = _with_cdc_enabled(unpack_table(fixture), tmp_path / suffix)
    table = HudiTable.open(str(path))
    plan = plan_changes(table, "earliest")
    cases = Counter(s.case for s in plan.splits)
    assert cases[InferenceCase.LOG_FILE] >= 1 and cases[InferenceCase.BASE_FILE_INSERT] >= 1
    key_field = table.config.record_key_fields[0]
    data_fields = [f["name"] for f in table.avro_schema["fields"] if f["name"] not in META_FIELDS]

    def snapshot(instant: str | None) -> dict[Any, dict[str, Any]]:
        """hudi-rs's merged rows, in JSON's value forms (ISO timestamps...)."""
        if instant is None:
            return {}
        rows = hudi_rs_rows(str(path), as_of=instant).to_pylist()
        return {r[key_field]: json_value({k: r[k] for k in data_fields}) for r in rows}

    def canonical(op: str, before: Any, after: Any) -> str:
        return json.dumps([op, before, after], sort_keys=True)

    previous = None
    seen_ops: Counter[str] = Counter()
    for instant in plan.instants:
        ts = instant.requested_time
        before, after = snapshot(previous), snapshot(ts)
        want = Counter(
            canonical(
                "i" if k not in before else "d" if k not in after else "u",
                before.get(k),
                after.get(k),
            )
            for k in before.keys() | after.keys()
            if before.get(k) != after.get(k)
        )
        rows = change_rows(table.location, [s for s in plan.splits if s.instant == ts])
        got = Counter(
            canonical(r["op"], _subset(r["before"], data_fields), _subset(r["after"], data_fields))
            for r in rows.to_pylist()
        )
        assert got == want, ts
        seen_ops.update(r["op"] for r in rows.to_pylist())
        previous = ts
    assert seen_ops["d"] >= 1 and seen_ops["i"] >= 1


def _subset(text: str | None, fields: list[str]) -> dict[str, Any] | None:
    if text is None:
        return None
    image = json.loads(text)
    return {k: image.get(k) for k in fields}


@pytest.mark.spark4
def test_read_stream_restarts_from_its_checkpoint_without_loss_or_repeats(  # type: ignore[no-untyped-def]
    spark, tmp_path: Path
) -> None:
    path, sink, checkpoint = tmp_path / "t", tmp_path / "sink", tmp_path / "checkpoint"
    cdc = {"hoodie.table.cdc.enabled": "true"}
    instants = []

    def commit(version: int) -> None:
        rows = [
            {"id": i, "p": "ab"[i % 2], "name": f"v{version}", "ts": version}
            for i in range(version, version + 3)
        ]
        instants.append(
            write(frame(spark, rows, False), str(path), options("t", 6, "upsert", **cdc)).instant
        )

    def start(trigger: dict[str, Any]) -> Any:
        stream = (
            spark.readStream.format("hudi")
            .option("hoodie.datasource.query.incremental.format", "cdc")
            .load(str(path))
        )
        return (
            stream.writeStream.format("json")
            .option("path", str(sink))
            .option("checkpointLocation", str(checkpoint))
            .trigger(**trigger)
            .start()
        )

    import time

    def batches_with_rows(count: int) -> int:
        """Wait (bounded) until the running stream has read ``count`` non-empty batches."""
        deadline = time.time() + 120
        while time.time() < deadline:
            done = len([p for p in query.recentProgress if p["numInputRows"] > 0])
            if done >= count:
                return done
            time.sleep(0.5)
        return len([p for p in query.recentProgress if p["numInputRows"] > 0])

    commit(1)
    query = start({"processingTime": "1 second"})
    assert batches_with_rows(1) == 1
    commit(2)  # while the stream runs: its own micro-batch
    assert batches_with_rows(2) == 2
    query.stop()
    commit(3)
    commit(4)
    query = start({"availableNow": True})
    query.awaitTermination(180)

    streamed = [r.asDict() for r in spark.read.json(str(sink)).collect()]
    batch = read(spark, str(path), {**CDC_READ, "hoodie.datasource.read.begin.instanttime": "0"})
    expected = [r.asDict() for r in batch.collect()]
    assert observed(streamed) == observed(expected)
    assert Counter(r["ts_ms"] for r in streamed) == Counter(r["ts_ms"] for r in expected)
    assert {r["ts_ms"] for r in streamed} == set(instants)
    assert os.path.isdir(checkpoint / "offsets")


def test_changes_command_prints_the_cdc_rows_and_show_table_the_mode(  # type: ignore[no-untyped-def]
    spark, tmp_path: Path, unpack_table
) -> None:
    from typer.testing import CliRunner

    from hudi_sync.cli.app import app
    from tests.fixture_tables import fixture_tables

    runner = CliRunner()
    path = tmp_path / "t"
    cdc = {
        "hoodie.table.cdc.enabled": "true",
        "hoodie.table.cdc.supplemental.logging.mode": "data_before",
    }
    first = write(
        frame(spark, [{"id": 1, "p": "a", "name": "x", "ts": 1}], False),
        str(path),
        options("t", 8, "insert", **cdc),
    )
    write(
        frame(
            spark,
            [{"id": 1, "p": "a", "name": "y", "ts": 2}, {"id": 2, "p": "a", "name": "z", "ts": 2}],
            False,
        ),
        str(path),
        options("t", 8, "upsert", **cdc),
    )

    result = runner.invoke(app, ["changes", str(path), "--from", first.instant, "--json"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    want = read(
        spark, str(path), {**CDC_READ, "hoodie.datasource.read.begin.instanttime": first.instant}
    ).collect()
    assert observed(lines) == observed([r.asDict() for r in want])
    assert sorted(r["op"] for r in lines) == ["i", "u"]

    # piped (CliRunner's stdout is no terminal): tab-separated, each image whole
    piped = runner.invoke(app, ["changes", str(path), "--from", first.instant])
    assert piped.exit_code == 0, piped.output
    cells = list(csv.DictReader(io.StringIO(piped.stdout), delimiter="\t"))

    def images(rows: list[dict[str, Any]]) -> list[tuple[str, Any, Any]]:
        def load(value: Any) -> Any:
            return json.loads(value) if isinstance(value, str) and value else value or None

        found = [(r["op"], load(r["before"]), load(r["after"])) for r in rows]
        return sorted(found, key=lambda image: json.dumps(image, sort_keys=True, default=str))

    assert images(cells) == images(lines)

    shown = runner.invoke(app, ["show", "table", str(path), "--json"])
    settings = {r["setting"]: r["value"] for r in json.loads(shown.stdout)}
    assert settings["cdc"] is True and settings["cdc_mode"] == "DATA_BEFORE"

    (fixture,) = [t for t in fixture_tables() if t.name.endswith("cow/v6_nonpartitioned")]
    refused = runner.invoke(app, ["changes", str(unpack_table(fixture)), "--from", "0"])
    assert refused.exit_code == 2
    assert "not a CDC table" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1


def test_small_cdc_plans_read_on_the_driver_equal_the_worker_read(  # type: ignore[no-untyped-def]
    spark, tmp_path: Path, monkeypatch
) -> None:
    from hudi_sync.spark.reading import reader

    path = tmp_path / "t"
    cdc = {"hoodie.table.cdc.enabled": "true"}
    for version in range(3):
        rows = [{"id": i, "p": "ab"[i % 2], "name": f"v{version}", "ts": version} for i in range(6)]
        write(frame(spark, rows, False), str(path), options("t", 6, "upsert", **cdc))
    table = HudiTable.open(str(path))
    plan = plan_changes(table, "earliest")
    assert plan.read_bytes is not None and 0 < plan.read_bytes <= reader.DRIVER_READ_MAX_BYTES
    query = {**CDC_READ, "hoodie.datasource.read.begin.instanttime": "earliest"}
    on_driver = [r.asDict() for r in read(spark, str(path), query).collect()]
    monkeypatch.setattr(reader, "DRIVER_READ_MAX_BYTES", 0)
    in_workers = [r.asDict() for r in read(spark, str(path), query).collect()]
    assert Counter(json.dumps(r, sort_keys=True) for r in on_driver) == Counter(
        json.dumps(r, sort_keys=True) for r in in_workers
    )
    assert Counter(r["op"] for r in on_driver) == {"i": 6, "u": 12}
