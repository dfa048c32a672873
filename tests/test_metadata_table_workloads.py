"""The proof of the metadata table: random write sequences on Hudi-written tables.

Copies of the three fixtures with a metadata table (COW and MOR, v8 and v9) take seeded
random sequences of upserts (newer, late and tied ordering values), deletes, inserts of
new keys (one with a null ordering value), re-inserts of deleted keys,
``insert_overwrite``, ``delete_partition``, compactions (Merge-on-Read) and one write
that fails midway, with every metadata partition kept (files, record_index, secondary
indexes, column_stats, partition_stats). After each step hudi-rs (listing through the
metadata table) and our table core equal the model of rows kept here, ``files`` equals
a direct listing, and each index partition equals the records recomputed from the table
(tests/metadata_checks.py); our Spark reader, whose tasks read through the same core,
equals the model once, at the end of the sequence.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from hudi_sync.errors import WriteError
from hudi_sync.spark import read, write
from hudi_sync.spark.compat import collect_arrow
from hudi_sync.table import HudiTable
from hudi_sync.table.read.snapshot import read_snapshot
from hudi_sync.table.write.commit import WriteTransaction
from hudi_sync.table.write.compaction import compact
from hudi_sync.table.write.lock import TableLock
from hudi_sync.table.write.metadata_table.writer import MetadataTableWriter
from tests.frames import rows_frame
from tests.metadata_checks import (
    MDT_FIXTURES,
    IndexModel,
    StatsModel,
    assert_files_partition,
    assert_readers_agree,
    index_definitions,
    rows_by_key,
    write_options,
)

SEEDS = (3, 8)
WRITES = ["upsert", "delete", "insert", "reinsert", "insert_overwrite", "delete_partition"]
Row = dict[str, Any]


class Workload:
    """One table, its model of rows, and the index models, moved step by step."""

    def __init__(self, spark, path: Path, rng: random.Random) -> None:  # type: ignore[no-untyped-def]
        self.spark, self.path, self.rng = spark, path, rng
        self.table = HudiTable.open(str(path))
        config = self.table.config
        self.key = config.record_key_fields[0]
        self.ordering = config.ordering_fields[0]
        self.partition = config.partition_fields[0]
        self.model = rows_by_key(read_snapshot(self.table), self.key)
        self.columns = list(next(iter(self.model.values())))
        self.schema = read(spark, str(path)).select(*self.columns).schema
        # The text column changed by writes: a secondary index's source, so it moves too.
        self.text = index_definitions(path).secondary_indexes[0].source_field
        self.gone: dict[str, Row] = {}
        self.null_ordered: set[str] = set()  # never updated: Hudi cannot order them
        self.index = IndexModel(path)
        self.stats = StatsModel(path)
        self.number = 0
        self.log: list[str] = []

    # -- writing ---------------------------------------------------------------------
    def _write(self, rows: list[Row], operation: str, **extra: str) -> Any:
        frame = rows_frame(self.spark, rows, self.schema)
        return write(frame, str(self.path), write_options(self.table, operation, **extra))

    def _live(self, count: int, updatable: bool = False) -> list[str]:
        keys = sorted(k for k in self.model if not (updatable and k in self.null_ordered))
        return self.rng.sample(keys, min(count, len(keys)))

    def step(self, kind: str) -> None:
        self.number += 1
        self.log.append(kind)
        self.stats.before_write()
        if kind == "failed":
            self._failed()
            return
        if kind == "compact":
            table = HudiTable.open(str(self.path))
            lock = TableLock(table.location, table.location.join(".hoodie"), wait_ms=1000)
            for instant in compact(table, lock):
                self.check(instant, None)
            return
        result = getattr(self, "_" + kind)()
        self.check(result.instant, result.clean_instant)

    def _upsert(self) -> Any:
        rows = []
        for key, kind in zip(self._live(3, updatable=True), ("newer", "late", "tie"), strict=False):
            stored = self.model[key]
            delta = {"newer": 1, "late": -1, "tie": 0}[kind]
            row = dict(stored, **{self.text: f"{kind} {self.number}"})
            row[self.ordering] = stored[self.ordering] + delta
            rows.append(row)
            if kind != "late":  # a late event loses to the stored row
                self.model[key] = row
        return self._write(rows, "upsert")

    def _delete(self) -> Any:
        rows = [self.model.pop(key) for key in self._live(2)]
        self.gone.update({r[self.key]: r for r in rows})
        return self._write(rows, "delete")

    def _insert(self) -> Any:
        (template,) = self._live(1)
        fresh = dict(self.model[template], **{self.key: f"new-{self.number}-a"})
        fresh[self.text] = f"inserted {self.number}"
        elsewhere = dict(fresh, **{self.key: f"new-{self.number}-b", self.partition: "elsewhere"})
        unordered = dict(fresh, **{self.key: f"new-{self.number}-c", self.ordering: None})
        rows = [fresh, elsewhere, unordered]
        self.null_ordered.add(unordered[self.key])
        self.model.update({r[self.key]: r for r in rows})
        return self._write(rows, "insert")

    def _reinsert(self) -> Any:
        if not self.gone:
            return self._delete()
        keys = self.rng.sample(sorted(self.gone), min(2, len(self.gone)))
        rows = [dict(self.gone.pop(k), **{self.text: f"back {self.number}"}) for k in keys]
        self.model.update({r[self.key]: r for r in rows})
        return self._write(rows, "upsert")

    def _insert_overwrite(self) -> Any:
        (key,) = self._live(1)
        survivor = dict(self.model[key], **{self.text: f"overwritten {self.number}"})
        value = survivor[self.partition]
        for other in [k for k, r in self.model.items() if r[self.partition] == value]:
            self.gone[other] = self.model.pop(other)
        self.gone.pop(key)
        self.model[key] = survivor
        return self._write([survivor], "insert_overwrite")

    def _delete_partition(self) -> Any:
        values = sorted({r[self.partition] for r in self.model.values()})
        if len(values) < 2:
            return self._upsert()
        dropped = self.rng.choice(values)
        for other in [k for k, r in self.model.items() if r[self.partition] == dropped]:
            self.gone[other] = self.model.pop(other)
        config = self.table.config
        path = f"{self.partition}={dropped}" if config.hive_style_partitioning else dropped
        (any_row,) = [self.model[k] for k in self._live(1)]
        return self._write(
            [any_row], "delete_partition", **{"hoodie.datasource.write.partitions.to.delete": path}
        )

    def _failed(self) -> None:
        """An upsert that raises midway (writing data files, or between two metadata log
        blocks): rolled back on both tables at once, the readers see the model."""
        where = self.rng.choice(["data", "metadata"])
        seen: list[str] = []
        original_append = MetadataTableWriter._append

        def append(writer: MetadataTableWriter, instant: str, number: int, group: Any) -> Any:
            seen.append(instant)
            if number == 1:
                raise RuntimeError("injected: between two metadata log blocks")
            return original_append(writer, instant, number, group)

        def partitions(transaction: WriteTransaction, names: set[str]) -> None:
            seen.append(transaction.instant)
            raise RuntimeError("injected: after the data files")

        (key,) = self._live(1, updatable=True)
        row = dict(self.model[key], **{self.text: "failed"})
        row[self.ordering] = self.model[key][self.ordering] + 1
        with pytest.MonkeyPatch.context() as patch:
            if where == "metadata":
                patch.setattr(MetadataTableWriter, "_append", append)
            else:
                patch.setattr(WriteTransaction, "write_partition_metadata", partitions)
            with pytest.raises(WriteError, match="failed and was rolled back: injected"):
                self._write([row], "upsert")
        failed = seen[0]
        table = HudiTable.open(str(self.path))
        assert not table.timeline.pending
        metadata = self.path / ".hoodie/metadata"
        assert not list((metadata / ".hoodie/timeline").glob(f"{failed}*"))
        assert not [p for p in self.path.rglob(f"*{failed}*") if "timeline" not in p.parts]
        self.check(failed, None, completed=False)

    # -- checking --------------------------------------------------------------------
    def check(self, instant: str, clean: str | None, completed: bool = True) -> None:
        assert_readers_agree(self.path, self.key, self.model)
        assert_files_partition(self.path, instant if completed else None)
        self.index.check(instant)
        if completed:
            self.stats.after_write(instant, clean)
        else:
            self.stats.check_unchanged()

    def check_spark_reader(self) -> None:
        spark_rows = rows_by_key(collect_arrow(read(self.spark, str(self.path))), self.key)
        assert sorted(spark_rows) == sorted(self.model)
        for key, row in self.model.items():
            assert {c: spark_rows[key][c] for c in row} == row, key


def _sequence(rng: random.Random, mor: bool) -> list[str]:
    """Every kind of step once, in a random order, the failed write among them."""
    kinds = [*WRITES, "failed", *(["compact"] if mor else [])]
    rng.shuffle(kinds)
    if kinds.index("reinsert") < kinds.index("delete"):  # something to re-insert
        kinds.remove("reinsert")
        kinds.insert(kinds.index("delete") + 1, "reinsert")
    return kinds


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("fixture", MDT_FIXTURES)
def test_random_write_sequences_keep_every_metadata_partition_right(  # type: ignore[no-untyped-def]
    spark, fixture_copy, fixture, seed
) -> None:
    path = fixture_copy(fixture)
    listed = HudiTable.open(str(path)).config.metadata_partitions
    rng = random.Random(f"{fixture}/{seed}")
    workload = Workload(spark, path, rng)
    for kind in _sequence(rng, workload.table.config.is_mor):
        try:
            workload.step(kind)
        except AssertionError as exc:
            raise AssertionError(f"after steps {workload.log}: {exc}") from exc
    workload.check_spark_reader()
    assert HudiTable.open(str(path)).config.metadata_partitions == listed
