"""Our writes keep Hudi's ``column_stats`` and ``partition_stats`` metadata partitions current.

After every write to a copy of a Hudi-written table, the merged ``column_stats`` equal the
records recomputed from every file on storage (a written file without its stats fails), the
files a clean deleted are tombstoned with Hudi's stubs, and ``partition_stats`` equal each
touched partition's aggregate recomputed from files, as Hudi recomputes it: over the latest
file slices before the write, with the write's files put in (a new base file starts its file
group's slice). hudi-rs, which lists through the metadata table, reads what our core reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_sync.spark import write
from hudi_sync.table import HudiTable
from hudi_sync.table.logfile import BlockType, read_blocks
from hudi_sync.table.metadata_table import column_stats, index_keys
from hudi_sync.table.metadata_table.column_stats import ColumnRange
from hudi_sync.table.metadata_table.hfile import read_hfile
from hudi_sync.table.metadata_table.indexes import columns_to_index, parse_index_definitions
from hudi_sync.table.metadata_table.reader import MetadataTableReader
from hudi_sync.table.metadata_table.records import MetadataRecord, decode_records
from hudi_sync.table.snapshot_read import read_snapshot
from tests.test_metadata_table_write import _assert_readers_agree, _rows, listed_files

MDT_FIXTURES = [
    "mor/avro/v8_trips_8i3u1d",
    "cow/v9_txns_simple_meta",
    "mor/avro/v9_txns_simple_meta",
]
# Maintained elsewhere; disabled here with Hudi's own options.
DISABLE_OTHERS = {
    "hoodie.metadata.record.index.enable": "false",
    "hoodie.metadata.index.secondary.enable": "false",
}
Slices = dict[str, dict[str, list[str]]]  # partition -> file id -> file names


def _options(table: HudiTable, operation: str, **extra: str) -> dict[str, str]:
    config = table.config
    return {
        "hoodie.table.name": config.name,
        "hoodie.datasource.write.recordkey.field": ",".join(config.record_key_fields),
        "hoodie.datasource.write.partitionpath.field": ",".join(config.partition_fields),
        "hoodie.datasource.write.hive_style_partitioning": str(
            config.hive_style_partitioning
        ).lower(),
        "hoodie.datasource.write.precombine.field": config.ordering_fields[0],
        "hoodie.datasource.write.table.type": config.table_type.value,
        "hoodie.datasource.write.operation": operation,
        **DISABLE_OTHERS,
        **extra,
    }


def _columns(path: Path) -> tuple[list[str], int]:
    """The indexed columns (index.json's source fields over the latest schema), index version."""
    definitions = path / ".hoodie/.index_defs/index.json"
    parsed = parse_index_definitions(definitions.read_text(), str(definitions))
    assert parsed.column_stats_fields is not None
    schema = HudiTable.open(str(path)).avro_schema
    return columns_to_index(schema, True, parsed.column_stats_fields), parsed.column_stats_version


def _log_rows(file: Path) -> pa.Table:
    tables = []
    for block in read_blocks(file.read_bytes(), str(file)):
        if block.block_type == BlockType.AVRO_DATA:
            columns = block.avro_columns()
            assert columns is not None
            tables.append(pa.Table.from_struct_array(columns))
    return pa.concat_tables(tables) if tables else pa.table({})


def _ranges(path: Path, partition: str, name: str, columns: list[str]) -> list[ColumnRange]:
    """One file's ranges recomputed from the file itself."""
    file = path / partition / name if partition and partition != "." else path / name
    if name.endswith(".parquet"):
        return column_stats.parquet_column_ranges(name, pq.ParquetFile(file).metadata, columns)
    return column_stats.table_column_ranges(name, _log_rows(file), columns)


def _latest_slices(path: Path) -> Slices:
    slices: Slices = {}
    for s in HudiTable.open(str(path)).view.slices_as_of(None):
        names = [s.base_file.name] if s.base_file is not None else []
        slices.setdefault(s.partition_path, {})[s.file_id] = names + [
            log.name for log in s.log_files
        ]
    return slices


def _file_id(name: str) -> str:
    return name[1:].split("_", 1)[0] if name.startswith(".") else name.split("_", 1)[0]


def _check_column_stats(path: Path, columns: list[str], version: int) -> dict[str, Any]:
    """Stored column_stats (tombstones aside) equal the records of every file on storage,
    recomputed."""
    merged = MetadataTableReader.of(HudiTable.open(str(path))).read_partition("column_stats")
    stored = {
        k: r for k, r in merged.items() if r.column_stats is None or not r.column_stats.is_deleted
    }
    computed = {}
    for partition, names in listed_files(path).items():
        data_partition = "" if partition == "." else partition
        for name in names:
            for item in _ranges(path, data_partition, name, columns):
                record = column_stats.column_stats_record(data_partition, item, version=version)
                computed[record.key] = record
    assert sorted(computed) == sorted(stored)
    for key, record in computed.items():
        assert stored[key] == record, key
    return stored


def _partition_aggregate(partition: str, ranges: list[ColumnRange]) -> list[ColumnRange]:
    typed = {r.column for r in ranges if r.value_type != "NULL"}
    return column_stats.partition_ranges(
        partition, [r for r in ranges if r.value_type != "NULL" or r.column not in typed]
    )


class StatsModel:
    """What the stats partitions must hold, updated write by write from the files."""

    def __init__(self, path: Path) -> None:
        self.path = path
        table = HudiTable.open(str(path))
        self.partition_stats = dict(MetadataTableReader.of(table).read_partition("partition_stats"))
        self.columns, self.version = _columns(path)

    def before_write(self) -> None:
        self.slices = _latest_slices(self.path)
        self.slice_ranges = {
            (p, name): _ranges(self.path, p, name, self.columns)
            for p, groups in self.slices.items()
            for names in groups.values()
            for name in names
        }
        self.files = listed_files(self.path)

    def after_write(self, instant: str, clean: str | None) -> None:
        table = HudiTable.open(str(self.path))
        (done,) = [i for i in table.timeline.completed_writes if i.requested_time == instant]
        stats = table.timeline.commit_metadata(done).write_stats
        written: dict[str, set[str]] = {}
        for stat in stats:
            if stat.path:
                written.setdefault(stat.partition_path, set()).add(stat.path.rsplit("/", 1)[-1])
        self.columns, self.version = _columns(self.path)
        stored = _check_column_stats(self.path, self.columns, self.version)
        for partition, names in written.items():  # each written file has its stats
            for name in names:
                keys = {
                    index_keys.column_stats_key(partition, name, r.column)
                    for r in _ranges(self.path, partition, name, self.columns)
                }
                assert keys and keys <= stored.keys(), name
        for partition, names in written.items():
            groups = {f: list(n) for f, n in self.slices.get(partition, {}).items()}
            for name in sorted(names):
                if name.endswith(".parquet"):
                    groups[_file_id(name)] = [name]
                else:
                    groups.setdefault(_file_id(name), []).append(name)
            ranges = [
                item
                for group in groups.values()
                for name in group
                for item in (
                    _ranges(self.path, partition, name, self.columns)
                    if name in names
                    else self.slice_ranges[(partition, name)]
                )
            ]
            for item in _partition_aggregate(partition, ranges):
                record = column_stats.partition_stats_record(item, version=self.version)
                self.partition_stats[record.key] = record
        stored_partitions = MetadataTableReader.of(table).read_partition("partition_stats")
        assert sorted(stored_partitions) == sorted(self.partition_stats)
        for key, record in self.partition_stats.items():
            assert stored_partitions[key] == record, key
        if clean is not None:
            self._check_tombstones(clean)

    def _check_tombstones(self, clean: str) -> None:
        """The clean's metadata deltacommit holds Hudi's stub for each column of each file
        it deleted, and only those."""
        after = listed_files(self.path)
        deleted = {
            (partition, name)
            for partition, names in self.files.items()
            for name in names
            if name not in after.get(partition, [])
        }
        assert deleted, "the clean deleted no file"
        records: list[MetadataRecord] = []
        for log in (self.path / ".hoodie/metadata/column_stats").glob(f".*_{clean}.log.*"):
            for block in read_blocks(log.read_bytes(), str(log)):
                records += decode_records(read_hfile(block.content, str(log)), str(log))
        expected = {
            index_keys.column_stats_key("" if p == "." else p, name, column)
            for p, name in deleted
            for column in self.columns
        }
        assert {r.key for r in records} == expected
        for record in records:
            assert record.column_stats is not None and record.column_stats.is_deleted
            assert record.column_stats.value_count == -1 and record.column_stats.min_value is None


@pytest.mark.parametrize("fixture", MDT_FIXTURES)
def test_writes_keep_column_and_partition_stats_current(  # type: ignore[no-untyped-def]
    spark, fixture_copy, fixture
) -> None:
    path = fixture_copy(fixture)
    table = HudiTable.open(str(path))
    key = table.config.record_key_fields[0]
    ordering = table.config.ordering_fields[0]
    partition_field = table.config.partition_fields[0]
    model = _rows(read_snapshot(table), key)
    columns = list(next(iter(model.values())))
    schema = spark.read.format("hudi").load(str(path)).select(*columns).schema
    keys = sorted(model)
    text_column = next(
        c for c in columns if c not in (key, partition_field) and isinstance(model[keys[0]][c], str)
    )
    stats = StatsModel(path)

    def step(rows: list[dict[str, Any]], operation: str, **extra: str) -> Any:
        stats.before_write()
        frame = spark.createDataFrame([[r[c] for c in columns] for r in rows], schema)
        result = write(frame, str(path), _options(table, operation, **extra))
        _assert_readers_agree(path, key, model)
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
    model = _rows(read_snapshot(table), "txn_id")
    columns = list(next(iter(model.values())))
    schema = spark.read.format("hudi").load(str(path)).select(*columns).schema
    row = dict(model[min(model)], merchant_name="logged", txn_ts=model[min(model)]["txn_ts"] + 1)
    frame = spark.createDataFrame([[row[c] for c in columns]], schema)
    result = write(frame, str(path), _options(table, "upsert"))
    logs = [p for p in path.rglob(f".*_{result.instant}.log.*") if ".hoodie" not in p.parts]
    assert logs
    names, version = _columns(path)
    stored = MetadataTableReader.of(HudiTable.open(str(path))).read_partition("column_stats")
    for log in logs:
        partition = "/".join(log.parent.relative_to(path).parts)
        for item in _ranges(path, partition, log.name, names):
            record = column_stats.column_stats_record(partition, item, version=version)
            assert stored.get(record.key) == record, (log.name, item.column)
            assert item.value_count == 1
