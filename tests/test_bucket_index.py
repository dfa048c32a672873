"""Hudi's bucket index on Merge-on-Read tables (``hudi_sync.spark.writing.bucket_index``).

Keys hash to buckets as Java does (``List<String>.hashCode()``, checked on strings whose
Java hash codes are well known) over the values Hudi's ``KeyGenUtils`` reads out of a
record key (whole unless ``f1:v1,f2:v2``; values holding ``:`` and ``,``; ``__null__``
and ``__empty__``; ``hoodie.bucket.index.hash.field``), the expected buckets computed
here from Java's rules, not by the code under test; a bucket's file group id starts
with its number, and
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
from hudi_sync.spark.writing.bucket_index import (
    bucket_ids,
    bucket_of_file_id,
    java_string_hashes,
    new_bucket_file_id,
)
from hudi_sync.spark.writing.writer import write, write_arrow
from hudi_sync.sync.job import sync_table
from hudi_sync.table import HudiTable
from hudi_sync.table.read.snapshot import read_snapshot
from hudi_sync.warehouse.duckdb import DuckDBTarget
from tests.frames import rows_frame
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


def java_hash(text: str) -> int:
    """Java's ``String.hashCode()`` (unsigned): ``31 * h + c`` over UTF-16 code units."""
    encoded = text.encode("utf-16-be")
    value = 0
    for unit in (int.from_bytes(encoded[i : i + 2], "big") for i in range(0, len(encoded), 2)):
        value = (31 * value + unit) % 2**32
    return value


def hudi_bucket(hashed: list[str | None], num_buckets: int) -> int:
    """``BucketIdentifier.getBucketId``: ``(List.hashCode() & Integer.MAX_VALUE) % n``,
    where ``List.hashCode()`` is 1, then ``31 * h + e`` (a null element 0)."""
    value = 1
    for element in hashed:
        value = (31 * value + (0 if element is None else java_hash(element))) % 2**32
    return (value & 0x7FFFFFFF) % num_buckets


# Record keys and the values Hudi's KeyGenUtils.extractRecordKeysByFields reads out of
# them for the bucket hash (hash fields -> key -> values), by Hudi 1.x's rules: a key
# without both "," and ":" is hashed whole; else each "field:value" pair's value runs to
# the last "," before the next ":" that has a "," after the pair's ":" (or to the end).
HASHED: dict[tuple[str, ...], dict[str, list[str | None]]] = {
    ("id",): {
        "user:42": ["user:42"],
        "abc": ["abc"],
        "user:1": ["user:1"],
        "x:1,y:2": ["x:1,y:2"],  # no pair named id: the whole key
        "id:7,z": ["7,z"],
        "日本:1,x": ["日本:1,x"],
    },
    ("a", "b"): {
        "a:x:1,b:y,z": ["x:1", "y,z"],
        "a:2014-10-22 13:50:42,b:v": ["2014-10-22 13:50:42", "v"],
        "a:p,q:r,b:s": ["p", "s"],  # Hudi reads "p" out of the value "p,q:r"
        "a:__null__,b:7": [None, "7"],
        "a:__empty__,b:7": ["", "7"],
        "a:é,b:日本": ["é", "日本"],
    },
    ("b",): {
        "a:1,b:2": ["2"],
        "a:x:1,b:y,z": ["y,z"],
        "a:__null__,b:__empty__": [""],
    },
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
    assert [java_hash(text) for text in JAVA_HASHES] == [h % 2**32 for h in JAVA_HASHES.values()]
    # A one-field key hashes as the singleton list [key]: 31 * 1 + key.hashCode().
    expected = [((31 + h) & 0x7FFFFFFF) % 8 for h in JAVA_HASHES.values()]
    assert bucket_ids(pa.array(list(JAVA_HASHES)), ["id"], 8).tolist() == expected
    assert expected[-1] == 31 % 8  # MIN_VALUE + 31 wraps to a positive hash


@pytest.mark.parametrize("hash_fields", list(HASHED))
def test_keys_hash_the_values_hudi_reads_out_of_them(hash_fields: tuple[str, ...]) -> None:
    """One batch mixes whole keys with keys holding ":" and ","; each lands where Hudi
    puts it (today every key of a batch is split once any holds ":")."""
    keys = list(HASHED[hash_fields])
    for buckets in (1000, 7):
        expected = [hudi_bucket(HASHED[hash_fields][k], buckets) for k in keys]
        assert bucket_ids(pa.array(keys), hash_fields, buckets).tolist() == expected
    # "user:42" hashes whole: its bucket is not the one of its part after ":".
    assert hudi_bucket(["user:42"], 1000) != hudi_bucket(["42"], 1000)


def test_many_complex_keys_hash_their_values() -> None:
    """Random ``a:..,b:..,c:..`` keys (values without separators, some null or empty,
    some not ASCII) in one batch with odd ones: each hashes the values of its hashed
    fields, in the key's order."""
    rng = random.Random(7)
    alphabet = ["x", "7", "é", "日", "-", " "]
    stand_ins = {"__null__": None, "__empty__": ""}
    keys, expected = [], []
    for _ in range(500):
        values = [
            rng.choice(list(stand_ins))
            if rng.random() < 0.2
            else "".join(rng.choices(alphabet, k=rng.randrange(1, 9)))
            for _ in "abc"
        ]
        keys.append(",".join(f"{f}:{v}" for f, v in zip("abc", values, strict=True)))
        expected.append([stand_ins.get(values[0], values[0]), stand_ins.get(values[2], values[2])])
    keys.append("a:x:1,b:y,c:z")  # read one at a time: ["x:1", "z"]
    expected.append(["x:1", "z"])
    keys.append("plain")
    expected.append(["plain"])
    assert bucket_ids(pa.array(keys), ["a", "c"], 1009).tolist() == [
        hudi_bucket(values, 1009) for values in expected
    ]


def test_a_key_hudi_cannot_hash_is_refused(tmp_path: Path) -> None:
    """Hudi's walk over a key never ends when its last pair is not hashed and its value
    holds ":" (no "," comes before a later ":"): refused rather than guessed, before
    the write touches the timeline."""
    with pytest.raises(BadInputError, match=r"record key 'a:1,b:x:y'.*holds ':'"):
        bucket_ids(pa.array(["a:1,b:2", "a:1,b:x:y"]), ["a"], 4)
    path = tmp_path / "t"
    rows = pa.Table.from_pylist([{"a": "1", "b": "x:y", "p": "a", "name": "x", "ts": 1}])
    with pytest.raises(BadInputError, match=r"/t: record key 'a:1,b:x:y'"):
        write_arrow(rows, str(path), complex_options(**{"hoodie.bucket.index.hash.field": "a"}))
    assert not HudiTable.open(str(path)).timeline.instants


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
        "hoodie.index.type": ("SIMPLE", "hoodie.index.type=SIMPLE (table: BUCKET)"),
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
    frame = rows_frame(spark, [(2, "a", "df", 3)], "id long, p string, name string, ts long")
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


def complex_options(**extra: object) -> dict[str, object]:
    return {
        **options(8),
        "hoodie.datasource.write.recordkey.field": "a,b",
        "hoodie.bucket.index.num.buckets": 8,
        **extra,
    }


def _placed(path: Path) -> dict[str, tuple[int | None, Any]]:
    """Each record key hudi-rs reads: the bucket of its file group, and its row."""
    rows = hudi_rs_rows(str(path)).to_pylist()
    assert len({r["_hoodie_record_key"] for r in rows}) == len(rows)
    return {r["_hoodie_record_key"]: (bucket_of_file_id(r["_hoodie_file_name"]), r) for r in rows}


def test_rows_land_in_the_file_groups_hudi_picks(tmp_path: Path) -> None:
    """Simple keys holding ":" (mixed with plain ones in one batch) hash whole; complex
    keys are written with Hudi's ``__null__``/``__empty__`` and hash the values Hudi
    reads out of them; hudi-rs reads every row back from the bucket Hudi would pick."""
    simple = list(HASHED[("id",)])
    rows = [{"id": key, "p": "a", "name": f"n{i}", "ts": 1} for i, key in enumerate(simple)]
    settings = {"hoodie.bucket.index.num.buckets": 8}
    write_arrow(pa.Table.from_pylist(rows), str(tmp_path / "s"), options(8, **settings))
    again = [{"id": "user:42", "p": "a", "name": "later", "ts": 2}]
    write_arrow(pa.Table.from_pylist(again), str(tmp_path / "s"), options(8, **settings))
    placed = _placed(tmp_path / "s")
    assert sorted(placed) == sorted(simple)
    for key, (bucket, _row) in placed.items():
        assert bucket == hudi_bucket(HASHED[("id",)][key], 8), key
    assert placed["user:42"][1]["name"] == "later"  # the upsert found its bucket

    values = {  # (a, b) -> the record key Hudi's ComplexKeyGenerator writes
        ("x:1", "y,z"): "a:x:1,b:y,z",
        ("2014-10-22 13:50:42", "v"): "a:2014-10-22 13:50:42,b:v",
        ("p,q:r", "s"): "a:p,q:r,b:s",
        (None, "7"): "a:__null__,b:7",
        ("", "7"): "a:__empty__,b:7",
        ("é", "日本"): "a:é,b:日本",
    }
    rows = [{"a": a, "b": b, "p": "a", "name": "x", "ts": 1} for a, b in values]
    write_arrow(pa.Table.from_pylist(rows), str(tmp_path / "c"), complex_options())
    placed = _placed(tmp_path / "c")
    assert sorted(placed) == sorted(values.values())
    for (a, b), key in values.items():
        bucket, row = placed[key]
        assert (row["a"], row["b"]) == (a, b)
        assert bucket == hudi_bucket(HASHED[("a", "b")][key], 8), key
    assert len({bucket for bucket, _ in placed.values()}) > 1


def test_keys_hudi_refuses_are_refused(tmp_path: Path) -> None:
    blank = pa.Table.from_pylist([{"a": None, "b": "", "p": "a", "name": "x", "ts": 1}])
    with pytest.raises(BadInputError, match=r"every record key field \(a, b\) null or empty"):
        write_arrow(blank, str(tmp_path / "c"), complex_options())
    empty = pa.Table.from_pylist([{"id": "", "p": "a", "name": "x", "ts": 1}])
    with pytest.raises(BadInputError, match="null or empty record key field id"):
        write_arrow(empty, str(tmp_path / "s"), options(8))
    assert not (tmp_path / "c").exists() or not list((tmp_path / "c").glob("a/*.log*"))


def test_the_hash_field_is_honoured_or_refused(tmp_path: Path) -> None:
    """``hoodie.bucket.index.hash.field=b``: a key's bucket is its b value's, kept by
    the table for later writes that leave it unsaid; another one, or a field outside
    the record key, is refused in one line."""
    path = tmp_path / "t"
    rows = [{"a": f"k{i}", "b": f"v{i % 5}", "p": "a", "name": "x", "ts": 1} for i in range(20)]
    rows.append({"a": "x:1", "b": "y,z", "p": "a", "name": "x", "ts": 1})
    hashed = complex_options(**{"hoodie.bucket.index.hash.field": "b"})
    write_arrow(pa.Table.from_pylist(rows), str(path), hashed)
    properties = (path / ".hoodie" / "hoodie.properties").read_text()
    assert "hoodie.bucket.index.hash.field=b" in properties
    later = [{"a": "k1", "b": "v1", "p": "a", "name": "later", "ts": 2}]
    write_arrow(pa.Table.from_pylist(later), str(path), complex_options())
    placed = _placed(path)
    assert len(placed) == len(rows)
    for bucket, row in placed.values():
        assert bucket == hudi_bucket([row["b"]], 8), row
    assert placed["a:k1,b:v1"][1]["name"] == "later"
    refusals = {"a": "hash.field=a (table: b)", "c": "c is not a record key field"}
    for value, words in refusals.items():
        with pytest.raises(BadInputError) as refused:
            write_arrow(
                pa.Table.from_pylist(later),
                str(path),
                complex_options(**{"hoodie.bucket.index.hash.field": value}),
            )
        assert words in str(refused.value) and "\n" not in str(refused.value)


def test_a_write_naming_the_index_takes_the_tables_bucket_count(tmp_path: Path) -> None:
    """``hoodie.index.type=BUCKET`` said and the bucket count unsaid: the table's count,
    not the option's default (which would hash keys to buckets the table lacks)."""
    path = tmp_path / "t"
    rows = [{"id": i, "p": "a", "name": "x", "ts": 1} for i in range(40)]
    write_arrow(
        pa.Table.from_pylist(rows), str(path), options(8, **{"hoodie.bucket.index.num.buckets": 2})
    )
    unsaid = {k: v for k, v in options(8).items() if k != "hoodie.bucket.index.num.buckets"}
    later = [dict(row, name="y", ts=2) for row in rows]
    write_arrow(pa.Table.from_pylist(later), str(path), unsaid)
    placed = _placed(path)
    assert len(placed) == len(rows) and all(row["name"] == "y" for _, row in placed.values())
    assert {bucket for bucket, _ in placed.values()} == {0, 1}
    for key, (bucket, _row) in placed.items():
        assert bucket == hudi_bucket([key], 2)
