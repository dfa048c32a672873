"""Random write sequences on tables our writer makes, published as Iceberg after each
commit: every Iceberg snapshot (the current one, and each older one by time travel in
pyiceberg and Polars) equals a model of the rows.

Both table types: Copy-on-Write (simple index: rewritten base files) and Merge-on-Read
(bucket index: rows in log files, so snapshots carry live-row files and position
deletes), with late events (an older ordering value loses to the stored row), ties with
the stored row (the later write wins), deletes, re-inserts of deleted keys, a partition
overwritten (COW) and an inline compaction (MOR). Both engines write: the driver's
Arrow engine (``write_arrow``: no JVM) a longer sequence, and the executors' (Spark
jobs, ``hudi_sync.write.driver.max.bytes=0``) a shorter one of each kind of write.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_sync.manifest.iceberg import IcebergStore, PublishedIceberg
from hudi_sync.manifest.iceberg.write_stats import COMMIT, FOOTERS
from hudi_sync.spark.writing.writer import write_arrow
from hudi_sync.sync.job import publish_manifest
from hudi_sync.table import HudiTable
from tests.iceberg_readers import polars_rows, pyiceberg_rows

PARTITIONS = ("a", "b", "c")
COLUMNS = ("id", "p", "name", "ts")


def _options(table_type: str, operation: str) -> dict[str, object]:
    options: dict[str, object] = {
        "hoodie.table.name": "random_iceberg",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.operation": operation,
        "hoodie.write.table.version": 8,
        "hoodie.cleaner.commits.retained": 50,
        "hoodie.keep.min.commits": 60,
        "hoodie.keep.max.commits": 70,
    }
    if table_type == "MERGE_ON_READ":
        options |= {
            "hoodie.index.type": "BUCKET",
            "hoodie.bucket.index.num.buckets": 2,
            # A compaction midway: its new base files replace slices that had logs.
            "hoodie.compact.inline": "true",
            "hoodie.compact.inline.max.delta.commits": 5,
        }
    return options


class Model:
    """The rows a Hudi reader must show: event-time ordering on ``ts`` (a tie with the
    stored row: the later write wins). Batches hold each key once."""

    def __init__(self) -> None:
        self.rows: dict[int, dict[str, Any]] = {}

    def upsert(self, batch: list[dict[str, Any]]) -> None:
        for row in batch:
            stored = self.rows.get(row["id"])
            if stored is None or row["ts"] >= stored["ts"]:
                self.rows[row["id"]] = dict(row)

    def snapshot(self) -> list[tuple[Any, ...]]:
        return sorted(tuple(r[c] for c in COLUMNS) for r in self.rows.values())


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(r[c] for c in COLUMNS) for r in table.select(list(COLUMNS)).to_pylist())


def _frame(batch: list[dict[str, Any]]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([r["id"] for r in batch], pa.int64()),
            "p": pa.array([r["p"] for r in batch]),
            "name": pa.array([r["name"] for r in batch]),
            "ts": pa.array([r["ts"] for r in batch], pa.int64()),
        }
    )


class Writer:
    """Writes a batch through one engine: the driver's (``write_arrow``) or the
    executors' (``write`` of a DataFrame with ``hudi_sync.write.driver.max.bytes=0``)."""

    def __init__(self, engine: str, spark: Any = None) -> None:
        self.engine, self.spark = engine, spark

    def __call__(self, batch: list[dict[str, Any]], path: Path, options: dict[str, object]) -> None:
        if self.engine == "driver":
            write_arrow(_frame(batch), str(path), options)
            return
        from hudi_sync.spark import write
        from hudi_sync.spark.compat import arrow_dataframe

        executors = {**options, "hudi_sync.write.driver.max.bytes": 0}
        write(arrow_dataframe(self.spark, _frame(batch)), str(path), executors)


def _publish(path: Path, metrics: str) -> PublishedIceberg:
    """Every snapshot kept (the writer's cleaner keeps 50 commits)."""
    table = HudiTable.open(str(path))
    store = IcebergStore(table, keep=100, cleaner_retained=50, metrics=metrics)
    return store.publish(publish_manifest(table, keep=100))


def _assert_counts_without_footers(metadata_location: str) -> None:
    """Our writer's base files entered with their footers' record counts, yet no column
    metrics: taken from the commit metadata."""
    from pyiceberg.table import StaticTable

    for task in StaticTable.from_metadata(metadata_location).scan().plan_files():
        data_file = task.file
        if "/.hoodie/manifest/iceberg/" in data_file.file_path:
            continue  # a Merge-on-Read slice's live rows, written by the sync
        local = data_file.file_path.removeprefix("file://")
        assert data_file.record_count == pq.read_metadata(local).num_rows, local
        assert not data_file.lower_bounds, local


@pytest.mark.parametrize(
    "table_type,seed,engine,metrics",
    [
        ("COPY_ON_WRITE", 11, "driver", FOOTERS),
        ("MERGE_ON_READ", 12, "driver", FOOTERS),
        ("COPY_ON_WRITE", 13, "executors", FOOTERS),
        ("MERGE_ON_READ", 14, "executors", FOOTERS),
        # The same writes, base files' record counts and sizes from the commit metadata.
        ("COPY_ON_WRITE", 11, "driver", COMMIT),
        ("MERGE_ON_READ", 12, "driver", COMMIT),
    ],
)
def test_random_writes_published_after_each_commit_equal_the_model(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    table_type: str,
    seed: int,
    engine: str,
    metrics: str,
) -> None:
    """The executors' cases take about 20 s each (Spark jobs a write): each kind of
    write once."""
    writer = Writer(engine, request.getfixturevalue("spark") if engine == "executors" else None)
    path = tmp_path / "table"
    chooser = random.Random(seed)
    model = Model()
    next_key = 0
    history: list[tuple[int, list[tuple[Any, ...]]]] = []
    last: PublishedIceberg | None = None
    # (the bucket index our writer uses for MOR takes no insert_overwrite)
    overwrite = "overwrite" if table_type == "COPY_ON_WRITE" else "upsert"
    operations = ["insert", "upsert", "late", "delete", "upsert", overwrite, "reinsert"]
    if engine == "driver":
        operations += chooser.choices(["upsert", "late", "delete", "upsert"], k=4)
    for step, operation in enumerate(operations):
        existing = sorted(model.rows)
        if operation == "insert":
            batch = [
                {"id": next_key + i, "p": chooser.choice(PARTITIONS), "name": f"i{step}", "ts": 5}
                for i in range(12)
            ]
            next_key += 12
            writer(batch, path, _options(table_type, "upsert"))
            model.upsert(batch)
        elif operation in ("upsert", "late"):
            picked = chooser.sample(existing, min(len(existing), 4))
            # late: loses to the stored rows of ts 5, ties (and so wins) over those of ts 1
            ts = 1 if operation == "late" else 5
            batch = [
                {"id": k, "p": model.rows[k]["p"], "name": f"{operation}{step}", "ts": ts}
                for k in picked
            ]
            writer(batch, path, _options(table_type, "upsert"))
            model.upsert(batch)
        elif operation == "delete":
            picked = chooser.sample(existing, min(len(existing), 3))
            batch = [dict(model.rows[k]) for k in picked]
            writer(batch, path, _options(table_type, "delete"))
            for key in picked:
                del model.rows[key]
        elif operation == "reinsert":  # keys deleted before come back
            batch = [
                {"id": k, "p": chooser.choice(PARTITIONS), "name": f"back{step}", "ts": 9}
                for k in range(next_key)
                if k not in model.rows
            ][:3]
            writer(batch, path, _options(table_type, "upsert"))
            model.upsert(batch)
        elif operation == "overwrite":
            partition = chooser.choice(PARTITIONS)
            batch = [{"id": next_key, "p": partition, "name": f"o{step}", "ts": 1}]
            next_key += 1
            writer(batch, path, _options(table_type, "insert_overwrite"))
            model.rows = {k: r for k, r in model.rows.items() if r["p"] != partition}
            model.upsert(batch)
        last = _publish(path, metrics)
        assert last.snapshot_id is not None
        assert _rows(pyiceberg_rows(last.metadata_location)) == model.snapshot(), operation
        if metrics == COMMIT:
            _assert_counts_without_footers(last.metadata_location)
        history.append((last.snapshot_id, model.snapshot()))
    assert last is not None
    if table_type == "MERGE_ON_READ":
        assert last.delete_files > 0  # the logs' replaced base rows, as position deletes
    for snapshot_id, expected in history:
        assert _rows(pyiceberg_rows(last.metadata_location, snapshot_id)) == expected
        assert _rows(polars_rows(last.metadata_location, snapshot_id)) == expected, snapshot_id
