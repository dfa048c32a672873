"""Hudi's bucket index on Merge-on-Read tables (``hudi_sync.spark.bucket_index``).

Keys hash to buckets as Java does (``List<String>.hashCode()``, checked on strings whose
Java hash codes are well known), a bucket's file group id starts with its number, and
random upsert/delete sequences with compactions (versions 6 and 8) read the same in the
table core, in hudi-rs and in the warehouse's snapshot view as in a model. Bad options
are refused in one line before anything is written.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from hudi_sync.errors import BadInputError
from hudi_sync.spark.bucket_index import (
    bucket_ids,
    bucket_of_file_id,
    java_string_hashes,
    new_bucket_file_id,
)
from hudi_sync.spark.writer import write, write_arrow
from hudi_sync.sync.job import sync_table
from hudi_sync.table import HudiTable
from hudi_sync.table.snapshot_read import read_snapshot
from hudi_sync.warehouse.duckdb_target import DuckDBTarget
from tests.test_mor_sync import view_rows
from tests.warehouse_rows import hudi_rs_rows

# Java's String.hashCode() of these strings (the last is famously Integer.MIN_VALUE).
JAVA_HASHES = {
    "": 0,
    "a": 97,
    "abc": 96354,
    "hello": 99162322,
    "é": 233,
    "日本": 26085 * 31 + 26412,
    "polygenelubricants": -(2**31),
}


def options(version: int, operation: str = "upsert", **extra: object) -> dict[str, object]:
    return {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.index.type": "BUCKET",
        "hoodie.bucket.index.num.buckets": 4,
        "hoodie.write.table.version": version,
        "hoodie.datasource.write.operation": operation,
        **extra,
    }


def test_keys_hash_as_java_does() -> None:
    hashes = java_string_hashes(pa.array(list(JAVA_HASHES)))
    assert [int(h) for h in hashes.view("int32")] == list(JAVA_HASHES.values())
    # A one-field key hashes as the singleton list [key]: 31 * 1 + key.hashCode().
    expected = [((31 + h) & 0x7FFFFFFF) % 8 for h in JAVA_HASHES.values()]
    assert bucket_ids([pa.array(list(JAVA_HASHES))], 8).tolist() == expected
    assert expected[-1] == 31 % 8  # MIN_VALUE + 31 wraps to a positive hash


def test_bucket_file_ids_carry_their_bucket() -> None:
    file_id = new_bucket_file_id(13)
    assert file_id.startswith("00000013-") and file_id.endswith("-0") and len(file_id) == 38
    assert bucket_of_file_id(file_id) == 13
    assert bucket_of_file_id("d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0") is None


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["p"], r["name"], r["ts"]) for r in table.to_pylist())


@pytest.mark.parametrize("version", [6, 8])
def test_random_upserts_and_deletes_read_the_same_everywhere(tmp_path: Path, version: int) -> None:
    """Later steps carry higher event times; some rows of live keys arrive late (a low
    event time) and must lose; inline compaction runs every third delta commit."""
    path, database = tmp_path / "t", tmp_path / "w.duckdb"
    settings = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": 3}
    rng = random.Random(version)
    model: dict[int, tuple[Any, ...]] = {}
    compactions = 0
    for step in range(1, 9):
        batch = []
        for _ in range(40):
            key = rng.randrange(60)
            late = key in model and rng.random() < 0.2
            ts = rng.randrange(5) if late else step * 10 + rng.randrange(5)
            batch.append(
                {"id": key, "p": "ab"[key % 2], "name": f"s{step}-{rng.randrange(99)}", "ts": ts}
            )
        result = write_arrow(pa.Table.from_pylist(batch), str(path), options(version, **settings))
        compactions += len(result.compactions)
        for row in batch:
            stored = model.get(row["id"])
            if stored is None or row["ts"] >= stored[3]:
                model[row["id"]] = (row["id"], row["p"], row["name"], row["ts"])
        gone = [k for k in sorted(model) if rng.random() < 0.1]
        if gone:
            deletes = [{"id": k, "p": "ab"[k % 2], "name": "", "ts": 0} for k in gone]
            write_arrow(pa.Table.from_pylist(deletes), str(path), options(version, "delete"))
            for key in gone:
                del model[key]
        expected = sorted(model.values())
        table = HudiTable.open(str(path))
        assert _rows(read_snapshot(table)) == expected, step
        assert _rows(hudi_rs_rows(str(path))) == expected, step
        assert sync_table(str(path), [DuckDBTarget(str(database), "t")]).ok
        assert _rows(view_rows(database, "t_rt")) == expected, step
    assert compactions >= 2
    table = HudiTable.open(str(path))
    for file_slice in table.file_slices():
        assert bucket_of_file_id(file_slice.file_id) is not None
    groups = {(s.partition_path, s.file_id[:8]) for s in table.file_slices()}
    assert len(groups) == len(table.file_slices()) <= 2 * 4  # one group per bucket


def test_a_first_write_makes_log_only_file_groups(tmp_path: Path) -> None:
    path = tmp_path / "t"
    rows = [{"id": i, "p": "a", "name": "x", "ts": 1} for i in range(20)]
    write_arrow(pa.Table.from_pylist(rows), str(path), options(8))
    slices = HudiTable.open(str(path)).file_slices()
    assert slices and all(s.base_file is None and s.log_files for s in slices)
    assert _rows(hudi_rs_rows(str(path))) == _rows(pa.Table.from_pylist(rows))


def test_options_the_bucket_index_cannot_honour_are_refused(  # type: ignore[no-untyped-def]
    tmp_path: Path, spark
) -> None:
    path = tmp_path / "t"
    # Key 3 is in bucket (31 + "3".hashCode()) % 4 = (31 + 51) % 4 = 2.
    one = pa.Table.from_pylist([{"id": 3, "p": "a", "name": "x", "ts": 1}])
    write_arrow(one, str(path), options(8))
    refusals = {
        "hoodie.bucket.index.num.buckets": (2, "hoodie.bucket.index.num.buckets=2"),
        "hoodie.datasource.write.operation": ("insert_overwrite", "insert_overwrite"),
        "hoodie.index.type": ("SIMPLE", "bucket index only"),
    }
    for key, (value, words) in refusals.items():
        with pytest.raises(BadInputError) as refused:
            # Bucket 2 does not exist among 2 buckets; the others are refused outright.
            write_arrow(
                pa.Table.from_pylist([{"id": 5, "p": "a", "name": "y", "ts": 2}]),
                str(path),
                {**options(8), key: value},
            )
        assert words in str(refused.value) and "\n" not in str(refused.value)
    floats = pa.Table.from_pylist([{"id": 1.5, "p": "a", "name": "x", "ts": 1}])
    with pytest.raises(BadInputError, match="string and integer keys"):
        write_arrow(floats, str(tmp_path / "f"), options(8))
    cow = {**options(8), "hoodie.datasource.write.table.type": "COPY_ON_WRITE"}
    with pytest.raises(BadInputError, match="Merge-on-Read tables only"):
        write_arrow(one, str(tmp_path / "cow"), cow)
    assert _rows(read_snapshot(HudiTable.open(str(path)))) == _rows(one)  # nothing written
    # The table keeps its index: a DataFrame write that does not name it takes the same path.
    properties = (path / ".hoodie" / "hoodie.properties").read_text()
    assert "hoodie.index.type=BUCKET" in properties
    assert "hoodie.bucket.index.num.buckets=4" in properties
    unsaid = {k: v for k, v in options(8).items() if "index" not in k}
    frame = spark.createDataFrame([(2, "a", "df", 3)], "id long, p string, name string, ts long")
    result = write(frame, str(path), unsaid)
    assert result.stats and all(
        s.path.endswith(tuple("0123456789")) or ".log." in s.path for s in result.stats
    )
    assert (2, "a", "df", 3) in _rows(hudi_rs_rows(str(path)))
    # A table written without the bucket index cannot take it.
    simple = {**options(8), "hoodie.index.type": "SIMPLE"}
    write(frame, str(tmp_path / "simple"), simple)
    with pytest.raises(BadInputError, match="written without the bucket index"):
        write_arrow(one, str(tmp_path / "simple"), options(8))
