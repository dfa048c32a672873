"""Every writer path keeps the metadata table current (issue 39, item 4).

hudi-rs lists v8+ tables through the metadata table's ``files`` partition, so a file a
path writes without a metadata record is invisible to it: after each path's write,
hudi-rs reads the same rows as the table core and a model, and the ``files``
partition's merged records equal a direct listing of the committed files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from hudi_sync.spark.reading.reader import read
from hudi_sync.spark.writing.writer import write, write_arrow
from hudi_sync.table import HudiTable
from hudi_sync.table.read.snapshot import read_snapshot
from tests.fixture_tables import set_properties
from tests.test_metadata_table_write import listed_files, mdt_files
from tests.warehouse_rows import hudi_rs_rows

DATA = ("id", "p", "name", "ts")


def _rows(source: pa.Table) -> dict[Any, dict[str, Any]]:
    return {r["id"]: {c: r[c] for c in DATA} for r in source.to_pylist()}


def assert_current(path: Path, model: dict[Any, dict[str, Any]], hudi_rs: bool = True) -> None:
    """hudi-rs (listing through the metadata table) and the table core read the model,
    and the ``files`` partition records exactly the files a listing finds."""
    table = HudiTable.open(str(path))
    assert table.config.metadata_partitions, "the table has no metadata table"
    assert _rows(read_snapshot(table)) == model
    if hudi_rs:
        assert _rows(hudi_rs_rows(str(path))) == model
    partitions, files = mdt_files(path)
    assert files == listed_files(path)
    assert partitions == sorted(files)


def test_bucket_index_upserts_append_logs_the_metadata_table_records(tmp_path: Path) -> None:
    """The first write makes log-only file groups, which hudi-rs 0.5 skips when it lists
    through the metadata table (its ``file_groups_from_files_partition_records`` keeps
    only groups with a base file): an inline compaction then gives them base files, and
    two upserts append logs to the compacted slices."""
    from tests.test_bucket_index import options

    path = tmp_path / "bucket"
    settings = {"hoodie.metadata.enable": "true"}
    first = [{"id": i, "p": "a" if i % 2 else "b", "name": f"n{i}", "ts": 1} for i in range(6)]
    write_arrow(pa.Table.from_pylist(first), str(path), options(9, **settings))
    model = {r["id"]: r for r in first}
    assert_current(path, model, hudi_rs=False)
    compacting = {**settings, "hoodie.compact.inline": "true"}
    compacting["hoodie.compact.inline.max.delta.commits"] = "1"
    again = [dict(model[5], name="v1", ts=2)]
    result = write_arrow(pa.Table.from_pylist(again), str(path), options(9, **compacting))
    assert result.compactions
    model[5] = again[0]
    assert_current(path, model)
    for step in (2, 3):
        changed = [dict(model[i], name=f"v{step}", ts=step) for i in range(step)]
        write_arrow(pa.Table.from_pylist(changed), str(path), options(9, **settings))
        model.update({r["id"]: r for r in changed})
        assert_current(path, model)
    slices = HudiTable.open(str(path)).file_slices()
    assert all(s.base_file is not None for s in slices)
    assert sum(len(s.log_files) for s in slices) >= 2  # the upserts appended logs


def test_compact_through_the_cli_keeps_the_metadata_table_current(tmp_path: Path) -> None:
    """``hudi-sync compact`` on a Merge-on-Read table with a metadata table: the
    compaction's base files are recorded (hudi-rs, which skips log-only groups listed
    through the metadata table, reads every row only through them)."""
    from typer.testing import CliRunner

    from hudi_sync.cli.app import app
    from tests.test_bucket_index import options

    path = tmp_path / "mor"
    settings = {"hoodie.metadata.enable": "true"}
    first = [{"id": i, "p": "a" if i % 2 else "b", "name": f"n{i}", "ts": 1} for i in range(6)]
    write_arrow(pa.Table.from_pylist(first), str(path), options(9, **settings))
    changed = [dict(first[1], name="v2", ts=2)]
    write_arrow(pa.Table.from_pylist(changed), str(path), options(9, **settings))
    model = {r["id"]: r for r in [*first, *changed]}
    assert_current(path, model, hudi_rs=False)
    result = CliRunner().invoke(app, ["compact", str(path), "--json"])
    assert result.exit_code == 0, result.output
    table = HudiTable.open(str(path))
    assert [i.action for i in table.timeline.completed_writes][-1] == "commit"
    assert all(s.base_file is not None and not s.log_files for s in table.file_slices())
    assert_current(path, model)


@pytest.mark.spark_compat
def test_a_cdc_table_keeps_its_metadata_table_and_its_change_feed(  # type: ignore[no-untyped-def]
    spark, tmp_path: Path
) -> None:
    """Insert, upsert and delete on a CDC table with a metadata table: the ``.cdc`` logs
    are data files of the commit (Hudi lists them in ``files``), and the CDC query
    returns each commit's changes as hudi-rs's snapshots before and after it imply."""
    from hudi_sync.spark import read
    from tests.test_cdc import CDC_READ, expected_changes, observed
    from tests.test_spark_writer import frame, options

    path = tmp_path / "cdc"
    extra = {"hoodie.table.cdc.enabled": "true", "hoodie.metadata.enable": "true"}
    first = [{"id": i, "p": "a" if i % 2 else "b", "name": f"n{i}", "ts": 1} for i in range(6)]
    steps = [
        ("insert", first),
        ("upsert", [dict(first[1], name="v2", ts=2), dict(first[2], name="v2", ts=2)]),
        ("upsert", [{"id": 9, "p": "a", "name": "n9", "ts": 3}]),
        ("delete", [dict(first[3], ts=4)]),
    ]
    model: dict[Any, dict[str, Any]] = {}
    previous = None
    for operation, rows in steps:
        result = write(frame(spark, rows, False), str(path), options("t", 9, operation, **extra))
        if operation == "delete":
            for row in rows:
                del model[row["id"]]
        else:
            model.update({r["id"]: r for r in rows})
        assert_current(path, model)
        window = {
            **CDC_READ,
            "hoodie.datasource.read.begin.instanttime": previous or "earliest",
            "hoodie.datasource.read.end.instanttime": result.instant,
        }
        changes = [r.asDict() for r in read(spark, str(path), window).collect()]
        want = expected_changes(path, previous, result.instant, operation, set())
        assert want and observed(changes, result.instant) == want, operation
        previous = result.instant
    assert any(f.endswith(".cdc") for files in mdt_files(path)[1].values() for f in files)


@pytest.mark.spark_compat
def test_a_v6_metadata_table_is_refused_or_deleted_by_hudis_switch(  # type: ignore[no-untyped-def]
    spark, fixture_copy
) -> None:
    """Hudi 0.11-0.15 keep a metadata table on v6 tables, which hudi_sync does not write:
    a write is refused in one line naming it and ``hoodie.metadata.enable=false``; with
    that switch the write goes on and the metadata table goes, as Hudi deletes it."""
    from hudi_sync import config as cfg
    from hudi_sync.errors import BadInputError
    from tests.test_metadata_table_write import _options

    path = fixture_copy("mor/avro/v6_trips_8i1u")
    (path / ".hoodie/metadata/.hoodie").mkdir(parents=True)
    table = HudiTable.open(str(path))
    (path / ".hoodie/metadata/.hoodie/hoodie.properties").write_text(
        f"hoodie.table.name={table.config.name}_metadata\nhoodie.table.type=MERGE_ON_READ\n"
        "hoodie.table.version=6\n"
    )
    set_properties(path, {cfg.METADATA_PARTITIONS.key: "files"})
    pristine = sorted(p.relative_to(path) for p in path.rglob("*"))
    key = table.config.record_key_fields[0]
    ordering = table.config.ordering_fields[0]
    model = {r[key]: r for r in _meta_free(read_snapshot(table))}
    columns = list(next(iter(model.values())))
    df = read(spark, str(path)).select(*columns).limit(1)
    options = {**_options(table, "upsert"), "hoodie.write.table.version": "6"}
    with pytest.raises(BadInputError) as refused:
        write(df, str(path), options)
    message = str(refused.value)
    assert "\n" not in message
    assert "metadata table" in message and "hoodie.metadata.enable=false" in message
    assert sorted(p.relative_to(path) for p in path.rglob("*")) == pristine

    from pyspark.sql import functions as F

    first = model[min(model)]
    text = next(c for c in columns if c != key and isinstance(first[c], str))
    row = dict(first, **{ordering: first[ordering] + 1, text: "written"})
    changed = (
        read(spark, str(path))
        .select(*columns)
        .where(F.col(key) == first[key])
        .withColumn(ordering, F.col(ordering) + 1)
        .withColumn(text, F.lit("written"))
    )
    write(changed, str(path), {**options, "hoodie.metadata.enable": "false"})
    assert not (path / ".hoodie/metadata").exists()
    assert HudiTable.open(str(path)).config.metadata_partitions == ()
    model[row[key]] = row
    assert {r[key]: r for r in _meta_free(read_snapshot(HudiTable.open(str(path))))} == model
    theirs = {r[key]: r for r in _meta_free(hudi_rs_rows(str(path)))}
    assert {k: {c: theirs[k][c] for c in columns} for k in theirs} == model


def _meta_free(source: pa.Table) -> list[dict[str, Any]]:
    return [
        {c: v for c, v in r.items() if not c.startswith("_hoodie_")} for r in source.to_pylist()
    ]


def test_debezium_ingest_keeps_the_metadata_table_current(  # type: ignore[no-untyped-def]
    spark, broker, tmp_path: Path
) -> None:
    """One batch of Debezium inserts, updates and a delete through the real
    Kafka-protocol broker into a v9 Copy-on-Write table created with a metadata table
    (a Merge-on-Read ingest writes log-only bucket file groups, which hudi-rs 0.5 skips
    when listing through the metadata table; the bucket test covers that path)."""
    from hudi_sync.debezium.ingest import ingest
    from tests.debezium_events import PostgresLog
    from tests.test_debezium_ingest import COLUMNS, config, new_topic

    topic = new_topic(broker, partitions=2)
    path = tmp_path / "items"
    log = PostgresLog()
    rows = [{"id": i, "name": f"n{i}", "note": "x", "qty": i} for i in range(4)]
    events = [log.change("c", None, r) for r in rows]
    events.append(log.change("u", rows[1], {**rows[1], "name": "n1-v2", "qty": 10}))
    events.append(log.change("d", rows[2], None))
    broker.produce(topic, events)
    options = {"hoodie.metadata.enable": "true", "hoodie.write.table.version": "9"}
    summary = ingest(spark, config(broker, topic, path, options=options))
    assert summary.batches_committed == 1
    model = {r["id"]: r for r in rows if r["id"] != 2} | {
        1: {**rows[1], "name": "n1-v2", "qty": 10}
    }
    table = HudiTable.open(str(path))
    assert table.config.version == 9 and table.config.metadata_partitions
    pick = {r["id"]: {c: r[c] for c in COLUMNS} for r in read_snapshot(table).to_pylist()}
    assert pick == model
    theirs = {r["id"]: {c: r[c] for c in COLUMNS} for r in hudi_rs_rows(str(path)).to_pylist()}
    assert theirs == model
    partitions, files = mdt_files(path)
    assert files == listed_files(path)
    assert partitions == sorted(files)
