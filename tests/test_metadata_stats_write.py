"""Our writes keep Hudi's ``column_stats`` and ``partition_stats`` metadata partitions current.

After every write to a copy of a Hudi-written table, the merged ``column_stats`` equal the
records recomputed from every file on storage (a written file without its stats fails), the
files a clean deleted are tombstoned with Hudi's stubs, and ``partition_stats`` equal each
touched partition's aggregate recomputed from files, as Hudi recomputes it: over the latest
file slices before the write, with the write's files put in (a new base file starts its file
group's slice). hudi-rs, which lists through the metadata table, reads what our core reads.
"""

from __future__ import annotations

from typing import Any

import pytest

from hudi_sync.spark import read, write
from hudi_sync.table import HudiTable
from hudi_sync.table.metadata_table import column_stats
from hudi_sync.table.metadata_table.reader import MetadataTableReader
from hudi_sync.table.read.snapshot import read_snapshot
from tests.frames import rows_frame
from tests.metadata_checks import (
    MDT_FIXTURES,
    StatsModel,
    assert_readers_agree,
    file_ranges,
    indexed_columns,
    rows_by_key,
    write_options,
)

# Maintained elsewhere; disabled here with Hudi's own options.
DISABLE_OTHERS = {
    "hoodie.metadata.record.index.enable": "false",
    "hoodie.metadata.index.secondary.enable": "false",
}


def _options(table: HudiTable, operation: str, **extra: str) -> dict[str, str]:
    return write_options(table, operation, **{**DISABLE_OTHERS, **extra})


@pytest.mark.parametrize("fixture", MDT_FIXTURES)
def test_writes_keep_column_and_partition_stats_current(  # type: ignore[no-untyped-def]
    spark, fixture_copy, fixture
) -> None:
    path = fixture_copy(fixture)
    table = HudiTable.open(str(path))
    key = table.config.record_key_fields[0]
    ordering = table.config.ordering_fields[0]
    partition_field = table.config.partition_fields[0]
    model = rows_by_key(read_snapshot(table), key)
    columns = list(next(iter(model.values())))
    schema = read(spark, str(path)).select(*columns).schema
    keys = sorted(model)
    text_column = next(
        c for c in columns if c not in (key, partition_field) and isinstance(model[keys[0]][c], str)
    )
    stats = StatsModel(path)

    def step(rows: list[dict[str, Any]], operation: str, **extra: str) -> Any:
        stats.before_write()
        frame = rows_frame(spark, rows, schema)
        result = write(frame, str(path), _options(table, operation, **extra))
        assert_readers_agree(path, key, model)
        stats.after_write(result.instant, result.clean_instant)
        return result

    changed = [
        dict(model[k], **{text_column: "upserted", ordering: model[k][ordering] + 1})
        for k in keys[:2]
    ]
    model.update({r[key]: r for r in changed})
    step(changed, "upsert")

    inserted = dict(model[keys[2]], **{key: "new-key", text_column: "inserted"})
    model[inserted[key]] = inserted
    step([inserted], "insert")

    gone = model.pop(keys[3])
    step([gone], "delete")

    survivor = dict(model[keys[0]], **{text_column: "overwritten"})
    model = {k: r for k, r in model.items() if r[partition_field] != survivor[partition_field]}
    model[survivor[key]] = survivor
    step([survivor], "insert_overwrite")

    # One commit retained: the clean after this upsert deletes replaced and older files.
    again = dict(survivor, **{text_column: "cleaned", ordering: survivor[ordering] + 1})
    model[again[key]] = again
    result = step([again], "upsert", **{"hoodie.cleaner.commits.retained": "1"})
    assert result.clean_instant is not None


def test_a_log_file_a_write_adds_has_its_column_stats(  # type: ignore[no-untyped-def]
    spark, fixture_copy
) -> None:
    """A Merge-on-Read upsert writes a log file: its stats (from its records) are stored."""
    path = fixture_copy("mor/avro/v9_txns_simple_meta")
    table = HudiTable.open(str(path))
    model = rows_by_key(read_snapshot(table), "txn_id")
    columns = list(next(iter(model.values())))
    schema = read(spark, str(path)).select(*columns).schema
    row = dict(model[min(model)], merchant_name="logged", txn_ts=model[min(model)]["txn_ts"] + 1)
    frame = rows_frame(spark, [row], schema)
    result = write(frame, str(path), _options(table, "upsert"))
    logs = [p for p in path.rglob(f".*_{result.instant}.log.*") if ".hoodie" not in p.parts]
    assert logs
    names, version = indexed_columns(path)
    stored = MetadataTableReader.of(HudiTable.open(str(path))).read_partition("column_stats")
    for log in logs:
        partition = "/".join(log.parent.relative_to(path).parts)
        for item in file_ranges(path, partition, log.name, names):
            record = column_stats.column_stats_record(partition, item, version=version)
            assert stored.get(record.key) == record, (log.name, item.column)
            assert item.value_count == 1


def test_a_file_whose_values_of_a_column_are_all_null_counts_in_partition_stats(  # type: ignore[no-untyped-def]
    spark, fixture_copy
) -> None:
    """Index version 1 (v8) stores no value type: a file whose ``ts`` values are all null
    has a record without bounds. Its null and value counts still add to the partition's
    (they were dropped, as if the file had no values)."""
    path = fixture_copy("mor/avro/v8_trips_8i3u1d")
    table = HudiTable.open(str(path))
    model = rows_by_key(read_snapshot(table), "uuid")
    columns = list(next(iter(model.values())))
    schema = read(spark, str(path)).select(*columns).schema
    stats = StatsModel(path)
    template = model[min(model)]
    for key, ts in (("unordered", None), ("ordered", 7)):
        row = dict(template, uuid=key, city="nowhere", ts=ts)
        model[key] = row
        stats.before_write()
        frame = rows_frame(spark, [row], schema)
        result = write(frame, str(path), _options(table, "insert"))
        assert_readers_agree(path, "uuid", model)
        stats.after_write(result.instant, result.clean_instant)
    stored = MetadataTableReader.of(HudiTable.open(str(path))).read_partition("partition_stats")
    (ts_stats,) = [
        r.column_stats
        for r in stored.values()
        if r.column_stats is not None
        and r.column_stats.file_name == "city=nowhere"
        and r.column_stats.column_name == "ts"
    ]
    assert (ts_stats.value_count, ts_stats.null_count) == (2, 1)
