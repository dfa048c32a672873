"""Merge-on-Read tables in the warehouse: ``<t>_rt`` (snapshot) and ``<t>_ro`` (read-optimized).

The sync folds each file slice's log records into one Parquet file beside the manifests
(``hudi_sync.manifest.log_parquet``) and the snapshot view merges them over the base
rows. Checked here on DuckDB against hudi-rs: every Hudi-written MOR fixture at every
instant, and tables this project writes through random operation sequences (v6 and v8,
Avro and Parquet log blocks, delete blocks, event-time ordering with ties and late
rows, inline compactions, rollbacks), plus what a sync costs (only changed slices are
converted), pruning, and the refusal of merge rules a view cannot express. The BigQuery
and Snowflake targets' ``_rt`` objects are in their own test files.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlglot

from hudi_sync import config as cfg
from hudi_sync.errors import UnsupportedTableError
from hudi_sync.manifest.log_parquet import (
    LOG_FOLDER,
    LogParquetStore,
    folded_file_rows,
    folded_schema,
)
from hudi_sync.manifest.snapshot import PublishedLogs
from hudi_sync.spark.writing.writer import write
from hudi_sync.sync.job import SNAPSHOT_VIEW_REFUSAL, sync_table
from hudi_sync.table import HudiTable
from hudi_sync.table.files.listing import StorageListing
from hudi_sync.table.read.snapshot import read_snapshot
from hudi_sync.table.records.log_records import OrderingValue
from hudi_sync.table.records.merge import (
    BASE_ROW_COLUMN,
    AmbiguousBaseRowError,
    DeleteKey,
    LogEntry,
    MergeMode,
    MergeRules,
    NullOrderingError,
    fold_log_records,
    mark_first_base_rows,
    merge_records,
)
from hudi_sync.table.write.compaction import compact
from hudi_sync.table.write.lock import TableLock
from hudi_sync.warehouse.bigquery import snapshot_select as bigquery_select
from hudi_sync.warehouse.common import ObjectNames
from hudi_sync.warehouse.duckdb import DuckDBTarget, snapshot_select
from hudi_sync.warehouse.snowflake import snapshot_select as snowflake_select
from hudi_sync.warehouse.snowflake.schema import Column
from tests import test_mor_read as mor_read
from tests.fixture_tables import fixture_tables
from tests.spark_model import table_rows
from tests.test_spark_writer import RandomWorkload, frame, hudi_rs, options
from tests.warehouse_rows import canonical, hudi_rs_rows, same_columns

MOR_FIXTURES = [t for t in fixture_tables() if "/mor/" in t.name and "no_metafields" not in t.name]
MOR = {"hoodie.datasource.write.table.type": "MERGE_ON_READ"}


def view_rows(database: Path, view: str) -> pa.Table:
    with duckdb.connect(str(database), read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        return con.sql(f'SELECT * FROM "{view}"').to_arrow_table()


def assert_views_equal_hudi_rs(path: Path, database: Path, stem: str, as_of: str | None) -> None:
    for suffix, read_optimized in (("_rt", False), ("_ro", True)):
        theirs = hudi_rs_rows(str(path), as_of, read_optimized)
        ours, theirs = same_columns(view_rows(database, stem + suffix), theirs)
        assert canonical(ours) == canonical(theirs), (stem + suffix, as_of)


@pytest.mark.parametrize("fixture", MOR_FIXTURES, ids=[t.id for t in MOR_FIXTURES])
def test_views_equal_hudi_rs_on_hudi_written_tables_at_every_instant(
    fixture: Any, fixture_copy: Any, tmp_path: Path
) -> None:
    path: Path = fixture_copy(fixture.name.split("/", 1)[1])
    database = tmp_path / "w.duckdb"
    target = DuckDBTarget(str(database), "t")
    table = HudiTable.open(str(path))
    for instant in [i.requested_time for i in table.completed_commits()]:
        report = sync_table(str(path), [target], as_of=instant)
        assert report.ok, report.errors
        assert_views_equal_hudi_rs(path, database, f"t_as_of_{report.instant}", instant)
    sync_table(str(path), [target])
    assert_views_equal_hudi_rs(path, database, "t", None)


def test_fixtures_have_snapshots_the_read_optimized_view_gets_wrong(
    unpack_table: Any, tmp_path: Path
) -> None:
    """The comparison above means something: at some instants ``_rt`` and ``_ro``
    differ, so a view over base files alone would show stale or deleted rows."""
    differing = 0
    for fixture in MOR_FIXTURES:
        path = unpack_table(fixture)
        for instant in HudiTable.open(str(path)).completed_commits():
            snapshot = hudi_rs_rows(str(path), instant.requested_time)
            base_only = hudi_rs_rows(str(path), instant.requested_time, read_optimized=True)
            differing += canonical(snapshot) != canonical(base_only)
    assert differing >= 5


@pytest.mark.parametrize(
    ("version", "block_format", "seed"), [(6, "avro", 31), (8, "parquet", 32), (8, "avro", 33)]
)
def test_snapshot_view_follows_random_writes_commit_by_commit(  # type: ignore[no-untyped-def]
    spark, tmp_path: Path, version: int, block_format: str, seed: int
) -> None:
    """A sync after every write (the post-commit hook's place): ``t_rt`` equals the
    model and hudi-rs, ``t_ro`` hudi-rs's read-optimized read."""
    settings = {
        **MOR,
        "hoodie.logfile.data.block.format": block_format,
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": 3,
    }
    workload = RandomWorkload(spark, tmp_path / "table", version, seed, **settings)
    database = tmp_path / "w.duckdb"
    target = DuckDBTarget(str(database), "t")
    stale = 0
    for operation in workload.random_sequence():
        instant = workload.step(operation)
        report = sync_table(str(workload.path), [target])
        assert report.ok, report.errors
        extra = workload.model.has_extra
        expected = workload.model.snapshot()
        assert hudi_rs(workload.path, extra) == expected, (operation, instant)
        assert _rows(view_rows(database, "t_rt"), extra) == expected, (operation, instant)
        read_optimized = hudi_rs_rows(str(workload.path), read_optimized=True)
        assert _rows(view_rows(database, "t_ro"), extra) == _rows(read_optimized, extra)
        stale += _rows(read_optimized, extra) != expected
    assert stale, "no step left rows in log files: the snapshot view was never needed"
    logs = [p for p in workload.path.rglob(".*.log.*") if not p.name.endswith(".crc")]
    assert logs, "no log files were written"


def _rows(table: pa.Table, with_extra: bool) -> list[Any]:
    if with_extra and "extra" not in table.column_names:
        table = table.append_column("extra", pa.nulls(table.num_rows, pa.string()))
    return table_rows(table, with_extra)


def _write(spark: Any, path: Path, rows: list[dict[str, Any]], operation: str) -> str:
    settings = {**MOR, "hoodie.compact.inline": "false"}
    written = write(frame(spark, rows, False), str(path), options("t", 8, operation, **settings))
    return written.instant


def test_late_rows_and_deletes_merge_by_event_time(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Log versions with a lower ordering value than the base row's lose to it; ties
    and higher values win; deletes drop the key (hudi-rs decides each)."""
    path, database = tmp_path / "t", tmp_path / "w.duckdb"
    base = [{"id": i, "p": "a", "name": f"n{i}", "ts": 5} for i in range(6)]
    _write(spark, path, base, "insert")
    changes = [
        {"id": 0, "p": "a", "name": "late", "ts": 4},  # older than the base row: loses
        {"id": 1, "p": "a", "name": "tie", "ts": 5},  # a tie: the later write wins
        {"id": 2, "p": "a", "name": "newer", "ts": 9},
        {"id": 9, "p": "a", "name": "new key", "ts": 1},  # a new base file
    ]
    _write(spark, path, changes, "upsert")
    _write(spark, path, [{"id": 3, "p": "a", "name": "", "ts": 0}], "delete")
    sync_table(str(path), [DuckDBTarget(str(database), "t")])
    shown = {r["id"]: r["name"] for r in view_rows(database, "t_rt").to_pylist()}
    assert shown == {r[0]: r[2] for r in hudi_rs(path, False)}
    assert shown[0] == "n0" and shown[1] == "tie" and shown[2] == "newer" and 3 not in shown


def test_a_sync_converts_only_the_slices_whose_logs_changed(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path, database = tmp_path / "t", tmp_path / "w.duckdb"
    rows = [{"id": i, "p": p, "name": "x", "ts": 1} for i, p in enumerate("abcabc")]
    _write(spark, path, rows, "insert")
    target = DuckDBTarget(str(database), "t")
    assert sync_table(str(path), [target]).ok
    store = LogParquetStore(HudiTable.open(str(path)), keep=5)
    assert store.publish(HudiTable.open(str(path)).latest_instant(), dry_run=True).names == ()

    _write(spark, path, [{"id": 0, "p": "a", "name": "y", "ts": 2}], "upsert")
    first = _logs_published(path, target)
    assert (first.converted, len(first.names)) == (1, 1)
    _write(spark, path, [{"id": 1, "p": "b", "name": "y", "ts": 2}], "upsert")
    listed: list[list[str]] = []
    original = StorageListing._list_partitions

    def recording(self: StorageListing, partitions: list[str]) -> Any:
        listed.append(partitions)
        return original(self, partitions)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(StorageListing, "_list_partitions", recording)
        second = _logs_published(path, target)
    assert listed[0] == ["p=b"]  # only the partition the new commit wrote to is listed
    assert (second.converted, len(second.names)) == (1, 2)  # partition a's file is reused
    assert first.names[0] in second.names
    folder = path / LOG_FOLDER / "parquet"
    assert sorted(p.name for p in folder.iterdir()) == sorted(second.names)
    # A rerun of the same snapshot converts nothing.
    again = LogParquetStore(HudiTable.open(str(path)), keep=5).publish(second.instant)
    assert again.converted == 0 and again.names == second.names


def _logs_published(path: Path, target: DuckDBTarget) -> Any:
    """Sync, then the snapshot's folded logs as a rerun of the publication sees them."""
    before = _parquet_names(path)
    report = sync_table(str(path), [target])
    assert report.ok, report.errors
    table = HudiTable.open(str(path))
    logs = LogParquetStore(table, keep=5).publish(report.instant, dry_run=True)
    return dataclasses.replace(logs, converted=len(_parquet_names(path) - before))


def _parquet_names(path: Path) -> set[str]:
    folder = path / LOG_FOLDER / "parquet"
    return {p.name for p in folder.iterdir()} if folder.exists() else set()


def test_compaction_rebases_and_old_folded_logs_are_pruned(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path, database = tmp_path / "t", tmp_path / "w.duckdb"
    rows = [{"id": i, "p": "a", "name": "x", "ts": 1} for i in range(4)]
    _write(spark, path, rows, "insert")
    target = DuckDBTarget(str(database), "t")
    for ts in (2, 3):
        _write(spark, path, [{"id": 0, "p": "a", "name": f"v{ts}", "ts": ts}], "upsert")
        sync_table(str(path), [target], keep=1)
    assert len(_parquet_names(path)) == 1  # the first slice version's file is pruned
    settings = {**MOR, "hoodie.compact.inline": "true"}
    settings["hoodie.compact.inline.max.delta.commits"] = "1"
    update = [{"id": 1, "p": "a", "name": "v4", "ts": 4}]
    write(frame(spark, update, False), str(path), options("t", 8, "upsert", **settings))
    report = sync_table(str(path), [target], keep=1)
    assert report.ok
    assert _parquet_names(path) == set()  # compacted: base files only, nothing to fold
    assert_views_equal_hudi_rs(path, database, "t", None)
    shown = {r["id"]: r["name"] for r in view_rows(database, "t_rt").to_pylist()}
    assert shown[0] == "v3" and shown[1] == "v4"
    with duckdb.connect(str(database), read_only=True) as con:
        views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views()").fetchall()}
    assert "t_log_history" not in views  # no log records: no log objects


def test_merge_rules_a_view_cannot_express_refuse_rt_and_sync_ro(  # type: ignore[no-untyped-def]
    fixture_copy, tmp_path: Path
) -> None:
    path: Path = fixture_copy("mor/avro/v6_trips_8i1u")
    properties = path / ".hoodie" / "hoodie.properties"
    text = properties.read_text()
    properties.write_text(f"{text}\n{cfg.PAYLOAD_CLASS.key}=com.example.MyPayload\n")
    database = tmp_path / "w.duckdb"
    with pytest.raises(UnsupportedTableError) as refused:
        sync_table(str(path), [DuckDBTarget(str(database), "t")])
    message = str(refused.value)
    assert "\n" not in message and "com.example.MyPayload" in message and "_rt" in message
    ours, theirs = same_columns(
        view_rows(database, "t_ro"), hudi_rs_rows(str(path), read_optimized=True)
    )
    assert canonical(ours) == canonical(theirs)
    with duckdb.connect(str(database), read_only=True) as con:
        views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views()").fetchall()}
    assert "t_rt" not in views
    # The post-commit hook's way: the refusal is reported, the rest synced.
    report = sync_table(str(path), [DuckDBTarget(str(database), "t")], continue_on_error=True)
    assert list(report.errors) == [SNAPSHOT_VIEW_REFUSAL] and report.results


def test_skip_ro_suffix_keeps_the_bare_name_for_the_read_optimized_view(  # type: ignore[no-untyped-def]
    fixture_copy, tmp_path: Path
) -> None:
    path: Path = fixture_copy("mor/avro/v8_trips_8i3u1d")
    database = tmp_path / "w.duckdb"
    report = sync_table(str(path), [DuckDBTarget(str(database), "t", skip_ro_suffix=True)])
    assert report.results[0].objects[:2] == ("t", "t_rt")
    ours, theirs = same_columns(
        view_rows(database, "t"), hudi_rs_rows(str(path), read_optimized=True)
    )
    assert canonical(ours) == canonical(theirs)


def test_skip_ro_suffix_turned_on_at_the_instant_already_synced_creates_the_view(  # type: ignore[no-untyped-def]
    fixture_copy, tmp_path: Path
) -> None:
    """The marker is on ``t_rt``, which still shows the instant: the sync that renames the
    read-optimized view to ``t`` with no new commit creates it (no ``noop`` reporting a
    ``t`` that does not exist), with the read-optimized rows; the next is a no-op."""
    path: Path = fixture_copy("mor/avro/v8_trips_8i3u1d")
    database = tmp_path / "w.duckdb"

    def sync(skip: bool) -> str:
        report = sync_table(str(path), [DuckDBTarget(str(database), "t", skip_ro_suffix=skip)])
        assert report.ok, report.errors
        return report.results[0].action

    assert sync(False) == "create"
    assert sync(True) == "update"
    ours, theirs = same_columns(
        view_rows(database, "t"), hudi_rs_rows(str(path), read_optimized=True)
    )
    assert canonical(ours) == canonical(theirs)
    assert sync(True) == "noop"


# -- hand-written log blocks: the merge rules a view must get right ----------------------


def _rt_equals_the_table_core(path: Path, database: Path, hudi_rs: bool = False) -> dict[str, Any]:
    """Sync, then ``t_rt`` must equal the table core's snapshot (checked against hudi-rs
    on these blocks in ``tests/test_mor_read.py``; here too with ``hudi_rs``); returns
    fares by key."""
    report = sync_table(str(path), [DuckDBTarget(str(database), "t")])
    assert report.ok, report.errors
    shown = view_rows(database, "t_rt")
    ours, core = same_columns(shown, read_snapshot(HudiTable.open(str(path))))
    assert canonical(ours) == canonical(core)
    if hudi_rs:
        ours, theirs = same_columns(shown, hudi_rs_rows(str(path)))
        assert canonical(ours) == canonical(theirs)
    return {r["_hoodie_record_key"]: r["fare"] for r in shown.to_pylist()}


@pytest.mark.parametrize("mode", ["EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"])
def test_late_events_delete_blocks_and_reinserts_in_the_snapshot_view(
    fixture_copy: Any, tmp_path: Path, mode: str
) -> None:
    """Event time: a late event and a delete ordered below the stored event lose, a
    delete with Hudi's default ordering value is ordered by commit time. Commit time:
    the last write wins. The view must agree with the table core and hudi-rs."""
    path: Path = fixture_copy(mor_read.V8.fixture)
    mor_read._set_property(path, cfg.RECORD_MERGE_MODE.key, mode)
    base = mor_read._base_sf(path)
    late, updated, *_ = sorted(base)
    trip, instant = mor_read._trip, mor_read.V8.block_instant
    blocks = (
        mor_read._trip_block([trip(late, base[late][0] - 1000, 111.0)])
        + mor_read._trip_block([trip(updated, base[updated][0] + 1, 222.0)])
        + mor_read._delete_block(instant, [(updated, ("Long", base[updated][0]))])
        + mor_read._trip_block([trip("new-key", 5, 5.0)])
        + mor_read._delete_block(instant, [("new-key", ("Int", 0))])
        + mor_read._trip_block([trip("new-key", 1, 1.0)])
    )
    mor_read._add_log(path, blocks)
    fares = _rt_equals_the_table_core(path, tmp_path / "w.duckdb")
    if mode == "EVENT_TIME_ORDERING":
        assert fares[updated] == 222.0 and fares[late] == base[late][1]
    else:
        assert updated not in fares and fares[late] == 111.0
    assert fares["new-key"] == 1.0


def test_a_block_appended_to_a_log_file_reaches_the_view(fixture_copy: Any, tmp_path: Path) -> None:
    """A version 6 writer appends a new write's blocks to the log file it wrote before:
    the same name, a larger file. The sync must fold the slice again, not reuse the
    file it folded before. (The new deltacommit's timeline files are the previous one's
    under a later instant.)"""
    path: Path = fixture_copy(mor_read.V6.fixture)
    default = mor_read.MODEL + "DefaultHoodieRecordPayload"
    mor_read._set_property(path, cfg.PAYLOAD_CLASS.key, default)
    database = tmp_path / "w.duckdb"
    before = _rt_equals_the_table_core(path, database, hudi_rs=True)
    previous, instant = mor_read.V6.block_instant, "20250331030659000"
    for state in (".requested", ".inflight", ""):
        timeline = path / ".hoodie"
        text = (timeline / f"{previous}.deltacommit{state}").read_bytes()
        (timeline / f"{instant}.deltacommit{state}").write_bytes(text)
    (log,) = (path / mor_read.SF_PARTITION).glob(f".{mor_read.V6.file_id}_*.log.*")
    key = sorted(before)[0]
    with log.open("ab") as handle:
        handle.write(mor_read._trip_block([mor_read._trip(key, 10**15, 7.0, instant)], instant))
    after = _rt_equals_the_table_core(path, database, hudi_rs=True)
    assert after[key] == 7.0 != before[key]


# -- the view's query on constructed slices: the same answer as the table core's merge --


def _slice(
    partition: str, file_id: str, rows: list[tuple[str, Any, str]], kind: pa.DataType
) -> pa.Table:
    schema = pa.schema(
        [
            ("_hoodie_commit_seqno", pa.string()),
            ("_hoodie_record_key", pa.string()),
            ("_hoodie_partition_path", pa.string()),
            ("_hoodie_file_name", pa.string()),
            ("ts", kind),
            ("v", pa.string()),
        ]
    )
    name = f"{file_id}_1-0-1_001.parquet"
    records = [
        {"_hoodie_record_key": k, "_hoodie_partition_path": partition, "_hoodie_file_name": name}
        | {"_hoodie_commit_seqno": f"001_0_{number}", "ts": ts, "v": v}
        for number, (k, ts, v) in enumerate(rows)
    ]
    return pa.Table.from_pylist(records, schema=schema)


Slice = tuple[str, str, pa.Table, pa.Table, list[LogEntry]]  # partition, file id, base, log


def _view_and_merge(
    slices: list[Slice], rules: MergeRules, merge: bool = True
) -> tuple[list[Any], list[Any]]:
    """The snapshot view's rows (DuckDB, over the folded logs as the sync writes them)
    and the table core's merge (``merge_records``, unless not ``merge``) of the same
    slices."""
    names = ObjectNames.for_table("t", merge_on_read=True)
    assert names.log_history and names.log_manifest
    folded, merged, files = [], [], []
    for number, (partition, file_id, base, log, entries) in enumerate(slices):
        name = f"{file_id}_{number}.parquet"
        rows = mark_first_base_rows(fold_log_records(log, entries, rules), base, name)
        folded.append(folded_file_rows(rows, partition, file_id, name))
        files.append(name)
        if merge:
            merged.append(merge_records(base, log, entries, rules))
    schema = folded_schema(slices[0][2].schema)
    logs = PublishedLogs(None, tuple(files), "", "", "", schema, rules.ordering_field)
    with duckdb.connect() as con:
        ro, history = pa.concat_tables(s[2] for s in slices), pa.concat_tables(folded)
        con.register("ro_rows", ro)
        con.register("log_rows", history)
        con.register("files", pa.table({"filename": files}))
        con.execute(f'CREATE VIEW "{names.view}" AS SELECT * FROM ro_rows')
        con.execute(f'CREATE VIEW "{names.log_history}" AS SELECT * FROM log_rows')
        con.execute(f'CREATE VIEW "{names.log_manifest}" AS SELECT * FROM files')
        shown = con.sql(snapshot_select(names, logs)).to_arrow_table()
    expected = pa.concat_tables(merged) if merged else shown.slice(0, 0)

    def rows(table: pa.Table) -> list[Any]:
        picked = table.select(["_hoodie_partition_path", "_hoodie_record_key", "ts", "v"])
        return sorted(map(repr, picked.to_pylist()))

    return rows(shown), rows(expected)


EVENT = MergeRules(MergeMode.EVENT_TIME_ORDERING, "ts")


def test_the_view_meets_base_rows_in_their_own_partition_only() -> None:
    """A bucket index gives file groups the same id in every partition: a key in two
    partitions must meet only its own partition's log records (a delete block's rows
    included, which carry only their key)."""
    kind = pa.int64()
    a_base = _slice("p=a", "00000000-0", [("k", 5, "a-base"), ("d", 5, "a-base")], kind)
    b_base = _slice("p=b", "00000000-0", [("k", 5, "b-base"), ("d", 5, "b-base")], kind)
    b_log = _slice("p=b", "00000000-0", [("k", 9, "b-new")], kind)
    slices: list[Slice] = [
        (
            "p=a",
            "00000000-0",
            a_base,
            b_log.slice(0, 0),
            [DeleteKey("d", OrderingValue("long", 7))],
        ),
        ("p=b", "00000000-0", b_base, b_log, [0]),
    ]
    for rules in (EVENT, MergeRules(MergeMode.COMMIT_TIME_ORDERING)):
        shown, merged = _view_and_merge(slices, rules)
        assert shown == merged
        assert [r for r in merged if "'k'" in r and "p=a" in r] == [
            repr(
                {"_hoodie_partition_path": "p=a", "_hoodie_record_key": "k", "ts": 5, "v": "a-base"}
            )
        ]
        assert len(merged) == 3  # a's k, b's new k, b's d


def test_the_view_orders_null_int_values_as_hudis_zero() -> None:
    kind = pa.int32()
    base = _slice("", "f-0", [("k1", 5, "base"), ("k2", -3, "base"), ("k3", None, "base")], kind)
    base = pa.concat_tables([base, _slice("", "f-0", [("k4", None, "base")], kind)])
    log = _slice("", "f-0", [("k1", None, "null"), ("k2", None, "null"), ("k3", -1, "low")], kind)
    log = pa.concat_tables([log, _slice("", "f-0", [("k4", None, "null")], kind)])
    entries: list[LogEntry] = [0, 1, 2, 3, DeleteKey("k5", OrderingValue("int", 1))]
    shown, merged = _view_and_merge([("", "f-0", base, log, entries)], EVENT)
    assert shown == merged
    assert [eval(r)["v"] for r in merged] == ["base", "null", "base", "null"]


NAN = float("nan")


def test_the_view_orders_doubles_as_javas_double_compare_to() -> None:
    pairs = [(1.0, NAN), (NAN, 1e300), (NAN, NAN), (0.0, -0.0), (-0.0, 0.0), (-0.0, -0.0)]
    for kind in (pa.float64(), pa.float32()):
        base = _slice("", "f-0", [(f"k{i}", b, "base") for i, (b, _) in enumerate(pairs)], kind)
        log = _slice("", "f-0", [(f"k{i}", x, "log") for i, (_, x) in enumerate(pairs)], kind)
        shown, merged = _view_and_merge([("", "f-0", base, log, list(range(len(pairs))))], EVENT)
        assert shown == merged
        wins = {eval(r.replace("nan", "None"))["_hoodie_record_key"]: "log" in r for r in merged}
        assert wins == {"k0": True, "k1": False, "k2": True, "k3": False, "k4": True, "k5": True}


@pytest.mark.parametrize("kind", [pa.int64(), pa.float64(), pa.string()])
def test_the_view_fails_where_hudi_cannot_compare_a_null_ordering_value(kind: pa.DataType) -> None:
    """A null ordering value (Hudi's int 0) against a long, double or string value:
    Hudi's merge fails, so the view's query fails, naming the column and the key; two
    nulls, and keys without a base row, are answered."""
    value = {pa.int64(): 5, pa.float64(): 5.0, pa.string(): "5"}[kind]
    for stored, logged in ((value, None), (None, value)):
        base = _slice("", "f-0", [("k", stored, "base"), ("z", None, "base")], kind)
        log = _slice(
            "", "f-0", [("k", logged, "log"), ("z", None, "log"), ("n", None, "new")], kind
        )
        with pytest.raises(duckdb.Error, match=r"ordering field ts: .*record key k"):
            _view_and_merge([("", "f-0", base, log, [0, 1, 2])], EVENT, merge=False)
        with pytest.raises(NullOrderingError, match="ordering field ts"):
            merge_records(base, log, [0, 1, 2], EVENT)
        shown, merged = _view_and_merge([("", "f-0", base, log, [1, 2])], EVENT)
        assert shown == merged and len(merged) == 3


def _double_ordered(path: Path) -> dict[str, tuple[int, float]]:
    """The version 8 trips fixture ordered by ``fare`` (a double); its San Francisco
    base rows by key."""
    mor_read._set_property(path, cfg.PRECOMBINE_FIELD.key, "fare")
    mor_read._set_property(path, cfg.ORDERING_FIELDS.key, "fare")
    return mor_read._base_sf(path)


def _compacted(path: Path) -> pa.Table:
    """The table's rows after compacting every slice (read from base files only)."""
    table = HudiTable.open(str(path))
    lock = TableLock(table.location, table.location.join(".hoodie"), wait_ms=1000, expire_minutes=0)
    assert compact(table, lock)
    return read_snapshot(HudiTable.open(str(path)), read_optimized=True)


def _by_key(rows: pa.Table) -> dict[str, str]:
    return {r["_hoodie_record_key"]: repr((r["ts"], r["fare"])) for r in rows.to_pylist()}


def test_reader_view_and_compaction_order_doubles_as_hudi(
    fixture_copy: Any, tmp_path: Path
) -> None:
    """NaN above every double and equal to itself, -0.0 below 0.0 (``Double.compareTo``):
    the reader, the ``_rt`` view and compaction give Hudi's answer."""
    path: Path = fixture_copy(mor_read.V8.fixture)
    base = _double_ordered(path)
    first, second, *_ = sorted(base)
    trip, nan = mor_read._trip, float("nan")
    blocks = mor_read._trip_block(
        [trip(first, 1, nan), trip(second, 2, nan), trip("zero", 3, 0.0), trip("up", 4, 5.0)]
    ) + mor_read._trip_block([trip(second, 5, 1e300), trip("zero", 6, -0.0), trip("up", 7, nan)])
    mor_read._add_log(path, blocks)
    read = _by_key(read_snapshot(HudiTable.open(str(path))))
    expected = {first: (1, nan), second: (2, nan), "zero": (3, 0.0), "up": (7, nan)}
    assert {k: read[k] for k in expected} == {k: repr(v) for k, v in expected.items()}
    _rt_equals_the_table_core(path, tmp_path / "w.duckdb")
    assert _by_key(_compacted(path)) == read


def test_a_null_ordering_value_hudi_cannot_compare_is_refused_everywhere(
    fixture_copy: Any, tmp_path: Path
) -> None:
    """A log record with a null ``fare`` (Hudi's int 0) meets a stored double: Hudi's
    merge fails, so do the reader, compaction and a query of the ``_rt`` view, each in
    one line naming the column."""
    path: Path = fixture_copy(mor_read.V8.fixture)
    key = sorted(_double_ordered(path))[0]
    row = mor_read._trip(key, 1, 0.0) | {"fare": None}
    mor_read._add_log(path, mor_read._trip_block([row]))
    with pytest.raises(NullOrderingError, match=r"^ordering field fare: [^\n]*$"):
        read_snapshot(HudiTable.open(str(path)))
    database = tmp_path / "w.duckdb"
    assert sync_table(str(path), [DuckDBTarget(str(database), "t")]).ok
    with pytest.raises(duckdb.Error, match=f"ordering field fare: .*record key {key}"):
        view_rows(database, "t_rt")
    with pytest.raises(NullOrderingError, match="ordering field fare"):
        _compacted(path)


@pytest.mark.parametrize("kind", ["int", "long", "double", "float", "string", None])
def test_the_view_query_of_every_ordering_class_is_each_warehouses_sql(kind: str | None) -> None:
    """The query BigQuery and Snowflake get (the emulators run it on the long-ordered
    fixtures): every ordering class's comparison parses as their SQL, and names the
    partition in the join."""
    columns = ["_hoodie_record_key", "_hoodie_partition_path", "_hoodie_file_name", "ts"]
    bigquery = bigquery_select("`ro`", "`lh`", "`lm`", columns, set(columns), "ts", kind)
    typed = [Column(c, "VARCHAR", c) for c in columns]
    snowflake = snowflake_select("RO", "LH", "LM", typed, set(columns), "ts", kind)
    for sql, dialect in ((bigquery, "bigquery"), (snowflake, "snowflake")):
        parsed = sqlglot.parse_one(sql, read=dialect)
        join = str(parsed.find(sqlglot.exp.Join)).lower()
        assert "_hoodie_partition_path" in join
        assert BASE_ROW_COLUMN in join and "_hoodie_commit_seqno" in join
        if kind in ("float", "double"):
            assert "ATAN2" in sql.upper()


def test_log_records_hudi_cannot_fold_refuse_rt_and_sync_ro(
    fixture_copy: Any, tmp_path: Path
) -> None:
    """Two log records of a key, a double ``fare`` then a null one: Hudi's merge fails
    folding them, so the sync refuses ``_rt`` in one line and still syncs ``_ro``."""
    path: Path = fixture_copy(mor_read.V8.fixture)
    _double_ordered(path)
    rows = [mor_read._trip("n", 1, 5.0), mor_read._trip("n", 2, 0.0) | {"fare": None}]
    mor_read._add_log(path, mor_read._trip_block(rows))
    database = tmp_path / "w.duckdb"
    with pytest.raises(UnsupportedTableError, match=r"ordering field fare: [^\n]*_rt"):
        sync_table(str(path), [DuckDBTarget(str(database), "t")])
    report = sync_table(str(path), [DuckDBTarget(str(database), "t")], continue_on_error=True)
    assert list(report.errors) == [SNAPSHOT_VIEW_REFUSAL] and report.results
    assert view_rows(database, "t_ro").num_rows > 0


# -- two base rows of one key (insert and bulk_insert keep duplicates) ----------------


def _newest_base(path: Path) -> Path:
    """The newest base file of a table of one file group."""
    bases = [p for p in path.rglob("*.parquet") if ".hoodie" not in p.parts]
    return max(bases, key=lambda p: p.stem.rsplit("_", 1)[1])


def _base_names(path: Path) -> list[tuple[int, str]]:
    """The (id, name) of the newest base file's rows, in file order."""
    base = _newest_base(path)
    rows = pq.read_table(base, columns=["id", "name"]).to_pylist()
    return [(r["id"], r["name"]) for r in rows]


def _rt_names(path: Path, database: Path) -> list[tuple[int, str]]:
    """Sync; ``t_rt`` must equal the table core's snapshot; its (id, name) rows."""
    report = sync_table(str(path), [DuckDBTarget(str(database), "t")])
    assert report.ok, report.errors
    shown = view_rows(database, "t_rt")
    ours, core = same_columns(shown, read_snapshot(HudiTable.open(str(path))))
    assert canonical(ours) == canonical(core)
    return sorted((r["id"], r["name"]) for r in shown.to_pylist())


@pytest.mark.parametrize("operation", ["insert", "bulk_insert"])
def test_a_log_version_meets_only_the_first_base_row_of_its_key(  # type: ignore[no-untyped-def]
    spark, tmp_path: Path, operation: str
) -> None:
    """Hudi's file group reader merges a key's log version into the first base row of
    the key and passes the second through (``records.remove``); so must the view, also
    after a compaction rewrote the first row with a later commit seqno (its compactor
    keeps base file order). Two rows of a key with one seqno: ``_rt`` is refused.
    (hudi-rs keeps one row per key, unlike Hudi: no oracle here.)"""
    path, database = tmp_path / "t", tmp_path / "w.duckdb"
    rows = [{"id": 1, "p": "a", "name": n, "ts": 5} for n in ("one", "two")]
    _write(spark, path, [*rows, {"id": 2, "p": "a", "name": "other", "ts": 5}], operation)
    _, second = [n for i, n in _base_names(path) if i == 1]
    _write(spark, path, [{"id": 1, "p": "a", "name": "new", "ts": 6}], "upsert")
    assert _rt_names(path, database) == sorted([(1, "new"), (1, second), (2, "other")])
    _compacted(path)
    assert [n for i, n in _base_names(path) if i == 1] == ["new", second]
    _write(spark, path, [{"id": 1, "p": "a", "name": "newer", "ts": 7}], "upsert")
    assert _rt_names(path, database) == sorted([(1, "newer"), (1, second), (2, "other")])
    base = _newest_base(path)
    written = pq.read_table(base)
    same = pa.array(["20000101000000000_0_1"] * written.num_rows)
    pq.write_table(written.set_column(1, "_hoodie_commit_seqno", same), base)
    _write(spark, path, [{"id": 1, "p": "a", "name": "newest", "ts": 8}], "upsert")
    report = sync_table(str(path), [DuckDBTarget(str(database), "t")], continue_on_error=True)
    message = report.errors[SNAPSHOT_VIEW_REFUSAL]
    assert "record key 1 has 2 base rows" in message and "\n" not in message


def test_deletes_and_losing_log_versions_meet_the_first_base_row_only() -> None:
    """A delete and a late (losing) log version of a key with two base rows: the view
    leaves the second row alone, as the table core's merge does."""
    kind = pa.int64()
    base = _slice("", "f-0", [("k", 5, "k1"), ("k", 1, "k2"), ("d", 5, "d1"), ("d", 5, "d2")], kind)
    log = _slice("", "f-0", [("k", 3, "late")], kind)
    entries: list[LogEntry] = [0, DeleteKey("d", OrderingValue("long", 9))]
    for rules in (EVENT, MergeRules(MergeMode.COMMIT_TIME_ORDERING)):
        shown, merged = _view_and_merge([("", "f-0", base, log, entries)], rules)
        assert shown == merged
        kept = sorted(eval(r)["v"] for r in merged)
        assert kept == (["d2", "k1", "k2"] if rules is EVENT else ["d2", "k2", "late"])
    twins = base.set_column(0, "_hoodie_commit_seqno", pa.array(["001_0_0"] * 4))
    with pytest.raises(AmbiguousBaseRowError, match=r"^f-0: record key k has 2 base rows"):
        mark_first_base_rows(fold_log_records(log, entries, EVENT), twins, "f-0")


# -- a table without meta fields: keys built from the key fields -------------------------


@pytest.mark.parametrize(
    "payload", ["OverwriteWithLatestAvroPayload", "DefaultHoodieRecordPayload"]
)
def test_the_view_of_a_table_without_meta_fields_builds_its_keys(
    fixture_copy: Any, tmp_path: Path, payload: str
) -> None:
    """No _hoodie_record_key anywhere: the folded logs carry the keys the sync built, the
    view builds each base row's key from ``id`` and its partition and file group from
    the file's path. ``NAME_rt`` must equal the table core's snapshot and the model of
    Hudi's merge (upserts, a late event, deletes, a re-insert)."""
    path: Path = fixture_copy(mor_read.NO_META)
    mor_read._set_property(path, cfg.PAYLOAD_CLASS.key, mor_read.MODEL + payload)
    base = mor_read._no_meta_rows(read_snapshot(HudiTable.open(str(path))))
    mor_read.add_no_meta_log(path, mor_read.no_meta_blocks())
    database = tmp_path / "w.duckdb"
    report = sync_table(str(path), [DuckDBTarget(str(database), "t")])
    assert report.ok, report.errors
    shown = view_rows(database, "t_rt")
    core = read_snapshot(HudiTable.open(str(path)))
    assert canonical(shown.select(core.column_names)) == canonical(core)
    expected = mor_read.no_meta_model(base, payload == "DefaultHoodieRecordPayload")
    assert mor_read._no_meta_rows(shown) == expected != base
    keys = {
        (r["_hoodie_partition_path"], r["_hoodie_record_key"], r["id"]) for r in shown.to_pylist()
    }
    assert keys == {
        (f"byteField={r['byteField']}", str(r["id"]), r["id"]) for r in core.to_pylist()
    }


def test_two_base_rows_of_a_built_key_refuse_the_view(fixture_copy: Any, tmp_path: Path) -> None:
    """Without meta fields the base rows have no commit seqno, so no view can tell which
    of a key's two base rows Hudi merges its log version into: no ``NAME_rt``, in one
    line naming the base file and the key; ``NAME_ro`` syncs."""
    path: Path = fixture_copy(mor_read.NO_META)
    (base,) = (path / mor_read.NO_META_PARTITION).glob("*.parquet")
    rows = pq.read_table(base)
    pq.write_table(pa.concat_tables([rows, rows.slice(1, 1)]), base)  # id 1 twice
    mor_read.add_no_meta_log(path, mor_read.no_meta_blocks())
    database = tmp_path / "w.duckdb"
    report = sync_table(str(path), [DuckDBTarget(str(database), "t")], continue_on_error=True)
    assert list(report.errors) == [SNAPSHOT_VIEW_REFUSAL] and report.results
    message = report.errors[SNAPSHOT_VIEW_REFUSAL]
    assert "\n" not in message and base.name in message and "record key 1 has 2" in message
    assert view_rows(database, "t_ro").num_rows == 5
