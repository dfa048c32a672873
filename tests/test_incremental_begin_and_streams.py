"""Incremental begins are bounds (Hudi's quickstart reads everything from ``"000"``), and a
``readStream`` delivers every completed commit exactly once on table versions 6, 8 and 9."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path
from typing import Any

import fsspec
import pyarrow.compute as pc
import pytest
from pyspark.sql import functions as F

from hudi_sync.errors import BadInputError, TimeTravelError
from hudi_sync.spark import read, write
from hudi_sync.spark.compat import collect_arrow
from hudi_sync.table import HudiTable
from hudi_sync.table.timeline.time_travel import to_begin_bound
from tests.objectstores import commits_after_hidden
from tests.test_cdc import CDC_READ, _with_cdc_enabled
from tests.test_spark_writer import frame, options
from tests.timeline_files import write_clean
from tests.warehouse_rows import canonical, hudi_rs_rows, same_columns

BEGIN = "hoodie.datasource.read.begin.instanttime"
INCREMENTAL = {"hoodie.datasource.query.type": "incremental"}
# Hudi-written Copy-on-Write tables of each table version, with several commits.
BY_VERSION = {
    "v6": "cow/v6_simplekeygen_nonhivestyle",
    "v8": "cow/v8_simplekeygen_nonhivestyle",
    "v9": "cow/v9_txns_simple_meta",
}
# Every spelling of "from the start": zeros, earliest, and an instant before any commit.
FROM_THE_START = ["000", "0", "earliest", "20000101000000000"]


@pytest.mark.parametrize("value", ["000", "0", " 0000 ", "", "earliest", "EARLIEST", "0" * 14])
def test_zeros_and_earliest_are_an_open_begin(value: str) -> None:
    assert to_begin_bound(value, dt.UTC) is None


def test_other_begins_are_instants_or_errors() -> None:
    assert to_begin_bound("20240101000000", dt.UTC) == "20240101000000"
    assert to_begin_bound("2024-01-02", dt.UTC) == "20240102000000000"
    with pytest.raises(TimeTravelError, match="'12'"):
        to_begin_bound("12", dt.UTC)


def _both_apis(
    spark: Any, path: str, query: dict[str, str], begins: list[str]
) -> dict[str, tuple[Any, Any]]:
    """The query from each begin through ``read()`` and ``spark.read.format("hudi")``, as
    Arrow, by begin: each API's reads collected in one Spark job (a union of the reads,
    each row tagged with its begin) rather than one job a read."""
    tag = "__begin__"

    def collected(frames: list[Any]) -> dict[str, Any]:
        tagged = [f.withColumn(tag, F.lit(b)) for f, b in zip(frames, begins, strict=True)]
        union = tagged[0]
        for each in tagged[1:]:
            union = union.unionByName(each)
        table = collect_arrow(union)
        tags = table.column(tag)
        return {b: table.filter(pc.equal(tags, b)).drop_columns([tag]) for b in begins}

    ours = collected([read(spark, path, {**query, BEGIN: b}) for b in begins])
    source = collected(
        [spark.read.format("hudi").options(**{**query, BEGIN: b}).load(path) for b in begins]
    )
    return {b: (ours[b], source[b]) for b in begins}


@pytest.mark.parametrize("suffix", BY_VERSION.values(), ids=BY_VERSION.keys())
@pytest.mark.spark4  # format("hudi"): the Python Data Source API
def test_latest_state_from_the_start_is_the_whole_snapshot(  # type: ignore[no-untyped-def]
    spark, fixture_copy, suffix: str
) -> None:
    """Every commit is in ``(start, latest]``, so the incremental query returns exactly
    hudi-rs's snapshot, whichever spelling of the start is used."""
    path = str(fixture_copy(suffix))
    theirs = hudi_rs_rows(path)
    for begin, (ours, source) in _both_apis(spark, path, INCREMENTAL, FROM_THE_START).items():
        assert canonical(same_columns(ours, theirs)[0]) == canonical(theirs), begin
        keys = Counter(
            zip(
                source["_hoodie_record_key"].to_pylist(),
                source["_hoodie_commit_time"].to_pylist(),
                strict=True,
            )
        )
        assert keys == Counter(
            zip(
                theirs["_hoodie_record_key"].to_pylist(),
                theirs["_hoodie_commit_time"].to_pylist(),
                strict=True,
            )
        ), begin


def _cdc_table(spark: Any, path: Path, version: int) -> list[str]:
    """A CDC table written by the project: an insert, an upsert and a delete."""
    cdc = {"hoodie.table.cdc.enabled": "true"}
    steps: list[tuple[str, list[dict[str, Any]]]] = [
        ("insert", [{"id": i, "p": "ab"[i % 2], "name": f"n{i}", "ts": 1} for i in range(6)]),
        (
            "upsert",
            [
                {"id": 1, "p": "b", "name": "n1-v2", "ts": 2},
                {"id": 9, "p": "a", "name": "n9", "ts": 2},
            ],
        ),
        ("delete", [{"id": 2, "p": "a", "name": None, "ts": 3}]),
    ]
    return [
        write(frame(spark, rows, False), str(path), options("t", version, op, **cdc)).instant
        for op, rows in steps
    ]


def _change_rows(frame_arrow: Any) -> Counter[tuple[Any, ...]]:
    return Counter(
        zip(*(frame_arrow[c].to_pylist() for c in ("op", "ts_ms", "before", "after")), strict=True)
    )


@pytest.mark.parametrize("version", [6, 8])
@pytest.mark.spark4  # format("hudi"): the Python Data Source API
def test_cdc_from_the_start_reads_every_change(spark, tmp_path: Path, version: int) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    instants = _cdc_table(spark, path, version)
    earliest = collect_arrow(read(spark, str(path), {**CDC_READ, BEGIN: "earliest"}))
    # 6 inserts; an update and an insert; a delete.
    assert Counter(earliest["op"].to_pylist()) == {"i": 7, "u": 1, "d": 1}
    assert set(earliest["ts_ms"].to_pylist()) == set(instants)
    for begin, (ours, source) in _both_apis(spark, str(path), CDC_READ, FROM_THE_START).items():
        assert _change_rows(ours) == _change_rows(earliest), begin
        assert _change_rows(source) == _change_rows(earliest), begin

    # Once a clean retains commits from the second on (so changes are readable after it),
    # a begin before the table's first commit still means "from the start", while a begin
    # at the first commit asks for changes that may be gone: refused, as before.
    clean = "20991231000000000"
    if version == 8:
        write_clean(path / ".hoodie" / "timeline", clean, instants[1], f"{clean}_{clean}.clean")
    else:
        write_clean(path / ".hoodie", clean, instants[1])
    after_clean = collect_arrow(read(spark, str(path), {**CDC_READ, BEGIN: "000"}))
    assert set(after_clean["ts_ms"].to_pylist()) == set(instants[2:])
    assert _change_rows(
        collect_arrow(read(spark, str(path), {**CDC_READ, BEGIN: "19990101000000"}))
    ) == _change_rows(after_clean)
    with pytest.raises(BadInputError, match="before the earliest instant whose changes"):
        read(spark, str(path), {**CDC_READ, BEGIN: instants[0]})


@pytest.mark.spark_compat
@pytest.mark.spark4  # format("hudi"): the Python Data Source API
def test_cdc_from_the_start_on_a_hudi_written_version_9_table(  # type: ignore[no-untyped-def]
    spark, unpack_table, tmp_path: Path
) -> None:
    from tests.fixture_tables import fixture_tables

    (fixture,) = [t for t in fixture_tables() if t.name.endswith("mor/avro/v9_txns_simple_meta")]
    path = str(_with_cdc_enabled(unpack_table(fixture), tmp_path / "v9"))
    earliest = collect_arrow(read(spark, path, {**CDC_READ, BEGIN: "earliest"}))
    assert earliest.num_rows > 0
    for begin, (ours, source) in _both_apis(spark, path, CDC_READ, FROM_THE_START).items():
        assert _change_rows(ours) == _change_rows(earliest), begin
        assert _change_rows(source) == _change_rows(earliest), begin


def _run_available_now(spark: Any, path: str, sink: Path, checkpoint: Path, start: str) -> None:
    query = (
        spark.readStream.format("hudi")
        .option("hoodie.datasource.streaming.startOffset", start)
        .load(path)
        .writeStream.format("parquet")
        .option("path", str(sink))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(180)
    assert query.exception() is None


# The start offset differs per version so that each spelling of "from the start" is used.
STREAM_CASES = [
    pytest.param("v6", "earliest", id="v6"),
    pytest.param("v8", "000", id="v8", marks=pytest.mark.spark_compat),
    pytest.param("v9", "0", id="v9"),
]


@pytest.mark.parametrize(("version", "start"), STREAM_CASES)
@pytest.mark.spark4  # format("hudi"): the Python Data Source API
def test_read_stream_delivers_every_commit_once_as_the_table_grows(  # type: ignore[no-untyped-def]
    spark, fixture_copy, tmp_path: Path, version: str, start: str
) -> None:
    """The table is revealed a few commits at a time (later timeline files moved aside);
    after each stage a restarted ``availableNow`` stream must have delivered, exactly
    once, every row version the revealed commits wrote: hudi-rs's snapshot as of the
    stage's last commit, restricted to the stage's commits. The newest commit of a quiet
    table must arrive too (on versions 8+ it lagged one commit). Version 9's twelve
    commits come four at a time: a stage that ends on a replacecommit, one that holds
    the other, and the last."""
    path = fixture_copy(BY_VERSION[version])
    uri = str(path)
    commits = [i.requested_time for i in HudiTable.open(uri).timeline.completed_writes]
    assert len(commits) >= 2
    stages = (
        [commits[i : i + 4] for i in range(0, len(commits), 4)]
        if len(commits) > 4
        else [[c] for c in commits]
    )
    sink, checkpoint = tmp_path / "sink", tmp_path / "checkpoint"
    fs = fsspec.filesystem("file")
    Path(f"{uri}-hidden").mkdir()  # where commits_after_hidden parks later timeline files
    expected: Counter[tuple[str, str]] = Counter()
    for stage in stages:
        with commits_after_hidden(fs, uri, stage[-1]):
            _run_available_now(spark, uri, sink, checkpoint, start)
            snapshot = hudi_rs_rows(uri, as_of=stage[-1]).to_pylist()
        expected.update(
            (r["_hoodie_record_key"], r["_hoodie_commit_time"])
            for r in snapshot
            if r["_hoodie_commit_time"] in stage
        )
        delivered = spark.read.parquet(str(sink)).select(
            "_hoodie_record_key", "_hoodie_commit_time"
        )
        got = Counter((r[0], r[1]) for r in delivered.collect())
        assert got == expected, f"after {stage[-1]}"
    assert {commit for _, commit in expected} & set(stages[-1])
