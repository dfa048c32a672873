"""Writes into table version 9 (Hudi 1.1's default): tables the writer creates carry the
``hoodie.properties`` keys Hudi 1.1 writes, and every write, into those tables and into a
Hudi-1.1-written table, reads back the same in hudi-rs, our table core and the model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from hudi_sync.errors import BadInputError
from hudi_sync.spark import read, write
from hudi_sync.table import HudiTable
from hudi_sync.table.config.properties import decode_properties, parse_java_properties
from hudi_sync.table.read.snapshot import read_snapshot
from hudi_sync.table.write.create import java_properties_text
from tests.fixture_tables import fixture_tables, without_metadata_table
from tests.frames import rows_frame
from tests.spark_model import TableModel, table_rows
from tests.test_spark_writer import frame, hudi_rs, options
from tests.warehouse_rows import hudi_rs_rows

MOR = {"hoodie.datasource.write.table.type": "MERGE_ON_READ"}
COMMIT_TIME = {"hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"}
NO_ORDERING = {"hoodie.datasource.write.precombine.field": ""}
# Keys of the fixture that belong to Hudi's metadata table and its indexes, which a table
# hudi_sync creates does not have yet.
METADATA_TABLE_KEYS = {
    "hoodie.table.metadata.partitions",
    "hoodie.table.metadata.partitions.inflight",
    "hoodie.table.index.defs.path",
}
# Keys hudi_sync writes that Hudi 1.1 leaves at their defaults (as on version 8): the base
# file format (PARQUET), meta fields (true) and the instant time zone (UTC, where Hudi's
# default is LOCAL: written so that every reader takes instants as UTC).
OUR_EXPLICIT_DEFAULTS = {
    "hoodie.table.base.file.format": "PARQUET",
    "hoodie.populate.meta.fields": "true",
    "hoodie.table.timeline.timezone": "UTC",
}
# Keys that name this table rather than the table version's rules.
PER_TABLE = {
    "hoodie.table.name",
    "hoodie.table.checksum",
    "hoodie.table.create.schema",
    "hoodie.table.recordkey.fields",
    "hoodie.table.partition.fields",
    "hoodie.table.ordering.fields",
    "hoodie.table.type",
    "hoodie.record.merge.mode",
}


def fixture_properties(suffix: str, unpack_table: Any) -> dict[str, str]:
    (table,) = [t for t in fixture_tables() if t.name.endswith(suffix)]
    return properties_of(unpack_table(table))


def properties_of(path: Path) -> dict[str, str]:
    where = str(path / ".hoodie" / "hoodie.properties")
    return parse_java_properties(decode_properties(Path(where).read_bytes(), where))


class CommitTimeModel(TableModel):
    """Commit-time ordering: the later write wins whatever its ordering value."""

    def upsert(self, batch: Any, instant: str) -> None:
        for row in batch:
            self.rows[row["id"]] = {**row, "_hoodie_commit_time": instant}


def core_rows(path: Path) -> list[Any]:
    return table_rows(read_snapshot(HudiTable.open(str(path))), False)


@pytest.mark.parametrize(
    ("case", "extra", "event_time"),
    [
        ("cow_event_time", {}, True),
        ("mor_event_time", MOR, True),
        ("cow_no_ordering", NO_ORDERING, False),
        ("mor_commit_time", {**MOR, **COMMIT_TIME}, False),
    ],
)
def test_a_created_v9_table_has_hudi_1_1s_properties_and_reads_back_in_hudi_rs(  # type: ignore[no-untyped-def]
    spark: SparkSession, tmp_path, unpack_table, case, extra, event_time
) -> None:
    path = tmp_path / case
    model: TableModel = TableModel() if event_time else CommitTimeModel()
    hive = {"hoodie.datasource.write.hive_style_partitioning": "true"}
    settings = {**hive, **extra}

    def step(operation: str, rows: list[dict[str, Any]]) -> str:
        result = write(frame(spark, rows, False), str(path), options("t", 9, operation, **settings))
        return result.instant

    inserted = [{"id": i, "p": "abc"[i % 3], "name": f"n{i}", "ts": 5} for i in range(9)]
    model.insert(inserted, step("insert", inserted))
    # A lower ordering value: kept out under event time, the later write under commit time.
    upserted = [
        {"id": 0, "p": "a", "name": "older", "ts": 1},
        {"id": 1, "p": "b", "name": "newer", "ts": 9},
        {"id": 20, "p": "c", "name": "new", "ts": 1},
    ]
    model.upsert(upserted, step("upsert", upserted))
    deleted = [dict(inserted[4]), dict(inserted[5])]
    step("delete", deleted)
    model.delete([4, 5])
    expected = model.snapshot()
    assert core_rows(path) == expected
    assert hudi_rs(path, False) == expected
    by_key = {r[0]: r[2] for r in expected}
    assert by_key[0] == ("n0" if event_time else "older")

    # hoodie.properties, key by key against the Hudi-1.1-written fixture of the same type.
    ours = properties_of(path)
    table_type = "mor/avro" if "MERGE_ON_READ" in extra.values() else "cow"
    theirs = fixture_properties(f"{table_type}/v9_txns_simple_meta", unpack_table)
    theirs_rules = {k: v for k, v in theirs.items() if k not in METADATA_TABLE_KEYS}
    if not event_time and "hoodie.record.merge.mode" not in extra:
        # Without an ordering field Hudi 1.1 stores none, and commit-time ordering.
        theirs_rules.pop("hoodie.table.ordering.fields")
    assert set(ours) == set(theirs_rules) | set(OUR_EXPLICIT_DEFAULTS), case
    for key, value in OUR_EXPLICIT_DEFAULTS.items():
        assert ours[key] == value
    for key in set(theirs_rules) - PER_TABLE:
        assert ours[key] == theirs_rules[key], key
    assert ours["hoodie.table.type"] == theirs["hoodie.table.type"]
    assert ours["hoodie.table.version"] == ours["hoodie.table.initial.version"] == "9"
    assert ours["hoodie.table.format"] == "native"
    assert ours["hoodie.record.merge.mode"] == (
        "EVENT_TIME_ORDERING" if event_time else "COMMIT_TIME_ORDERING"
    )
    assert ours.get("hoodie.table.ordering.fields") == (None if extra == NO_ORDERING else "ts")
    # The names before Hudi 1.1 are gone: no precombine field, payload class or strategy.
    for old in (
        "hoodie.table.precombine.field",
        "hoodie.compaction.payload.class",
        "hoodie.record.merge.strategy.id",
    ):
        assert old not in ours


@pytest.mark.parametrize("fixture", ["cow/v9_txns_simple_meta", "mor/avro/v9_txns_simple_meta"])
def test_writes_into_a_hudi_1_1_written_table_read_back_in_hudi_rs(  # type: ignore[no-untyped-def]
    spark: SparkSession, fixture_copy, fixture
) -> None:
    """A copy of the fixture without its metadata table (writes into the tables with one
    are tests/test_metadata_table_*.py) takes an upsert, an insert and a delete."""
    path = without_metadata_table(fixture_copy(fixture))
    props = properties_of(path)

    config = HudiTable.open(str(path)).config
    before = {r["txn_id"]: r for r in read_snapshot(HudiTable.open(str(path))).to_pylist()}
    assert {r["txn_id"]: r for r in hudi_rs_rows(str(path)).to_pylist()}.keys() == before.keys()
    data_columns = [c for c in next(iter(before.values())) if not c.startswith("_hoodie_")]
    schema = read(spark, str(path)).select(*data_columns).schema
    settings = {
        "hoodie.table.name": config.name,
        "hoodie.datasource.write.recordkey.field": "txn_id",
        "hoodie.datasource.write.partitionpath.field": "region",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.precombine.field": "txn_ts",
        **(MOR if "mor/" in fixture else {}),
    }
    keys = sorted(before)
    updated = {c: before[keys[0]][c] for c in data_columns}
    updated.update(txn_type="reversal", txn_ts=before[keys[0]]["txn_ts"] + 1)
    stale = {c: before[keys[1]][c] for c in data_columns}
    stale.update(txn_type="stale", txn_ts=before[keys[1]]["txn_ts"] - 1)  # loses: event time
    new = dict(updated, txn_id="TXN-NEW", region="eu", txn_type="credit")
    write(rows_frame(spark, [updated, stale, new], schema), str(path), settings)
    deleted = {c: before[keys[2]][c] for c in data_columns}
    write(
        rows_frame(spark, [deleted], schema),
        str(path),
        {**settings, "hoodie.datasource.write.operation": "delete"},
    )

    expected = {k: {c: v[c] for c in data_columns} for k, v in before.items() if k != keys[2]}
    expected[keys[0]] = updated
    expected["TXN-NEW"] = new
    for reader, source in (
        ("table core", read_snapshot(HudiTable.open(str(path)))),
        ("hudi-rs", hudi_rs_rows(str(path))),
    ):
        rows = {r["txn_id"]: {c: r[c] for c in data_columns} for r in source.to_pylist()}
        assert rows == expected, reader
    # The table stays a version 9 table with its Hudi 1.1 merge keys untouched.
    after = properties_of(path)
    assert after["hoodie.table.version"] == "9"
    assert {k: after.get(k) for k in props} == props


def test_a_write_into_a_time_based_key_generator_table_formats_its_partition(  # type: ignore[no-untyped-def]
    spark: SparkSession, tmp_path, fixture_copy
) -> None:
    """Hudi's TIMESTAMP key generator formats the partition field (a date string into
    ``yyyy/MM/dd/HH``, as the Hudi 1.1 time-based fixtures of hudi-rs store): a version 9
    table declaring the type and its settings (set up by rewriting the properties of a
    table we created) gets the new row under the formatted path; Hudi's own v6 fixture
    keeps no timestamp type, which Hudi's key generator requires, so a write stating none
    is refused in one line and leaves the table as it was."""
    path = tmp_path / "timebased"
    rows = [{"id": 1, "p": "2024-01-15T10:30:00.000Z", "name": "a", "ts": 1}]
    settings = options(
        "t", 9, "upsert", **{"hoodie.datasource.write.hive_style_partitioning": "false"}
    )
    write(frame(spark, rows, False), str(path), settings)
    props = properties_of(path)
    props.update(
        {
            "hoodie.table.keygenerator.type": "TIMESTAMP",
            "hoodie.keygen.timebased.timestamp.type": "DATE_STRING",
            "hoodie.keygen.timebased.input.dateformat": "yyyy-MM-dd'T'HH:mm:ss.SSSZ",
            "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd/HH",
        }
    )
    (path / ".hoodie" / "hoodie.properties").write_text(java_properties_text(props))
    write(frame(spark, [dict(rows[0], id=2, ts=2)], False), str(path), settings)
    paths = {r["id"]: r["_hoodie_partition_path"] for r in hudi_rs_rows(str(path)).to_pylist()}
    assert paths == {1: "2024-01-15T10:30:00.000Z", 2: "2024/01/15/10"}

    hudi_written = fixture_copy("cow/v6_timebasedkeygen_nonhivestyle")
    existing = read(spark, str(hudi_written))
    df = existing.select(*[c for c in existing.columns if not c.startswith("_hoodie_")])
    fixture_settings = {
        "hoodie.table.name": "v6_timebasedkeygen_nonhivestyle",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "ts_str",
        "hoodie.datasource.write.precombine.field": "longField",
    }
    before = sorted(p.relative_to(hudi_written).as_posix() for p in hudi_written.rglob("*"))
    with pytest.raises(BadInputError, match=r"keygen\.timebased\.timestamp\.type is required"):
        write(df.limit(1), str(hudi_written), fixture_settings)
    assert sorted(p.relative_to(hudi_written).as_posix() for p in hudi_written.rglob("*")) == before
