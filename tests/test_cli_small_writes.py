"""``hudi-sync write`` of small parquet files: read with pyarrow and written by the
driver's Arrow engine (``write_arrow``), with no JVM; the rows read as Spark's reader
gives them, and everything else still goes to Spark."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_sync.errors import BadInputError
from hudi_sync.spark.compat import collect_arrow
from hudi_sync.spark.writing.files import arrow_rows, load_files
from tests.warehouse_rows import hudi_rs_rows

ROOT = Path(__file__).resolve().parents[1]
BUCKET_MOR = [
    "hoodie.table.name=items",
    "hoodie.datasource.write.recordkey.field=id",
    "hoodie.datasource.write.precombine.field=ts",
    "hoodie.datasource.write.table.type=MERGE_ON_READ",
    "hoodie.index.type=BUCKET",
]


def _write_without_java(table: Path, source: Path, *conf: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a process where Spark cannot start: its Java is missing, so any
    JVM launch fails the command."""
    env = dict(os.environ, JAVA_HOME=str(table.parent / "no-java"), PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "hudi_sync.cli.app", "write", str(table), str(source)]
    for pair in (*BUCKET_MOR, *conf):
        command += ["--conf", pair]
    return subprocess.run(
        [*command, "--json"], capture_output=True, text=True, check=False, env=env, cwd=ROOT
    )


def _parquet(path: Path, rows: dict[str, list[object]]) -> Path:
    pq.write_table(pa.table(rows), path)
    return path


def test_small_parquet_files_are_written_without_a_jvm(tmp_path: Path) -> None:
    table = tmp_path / "items"
    first = _parquet(tmp_path / "a.parquet", {"id": [1, 2, 3], "name": list("abc"), "ts": [1] * 3})
    second = _parquet(tmp_path / "b.parquet", {"id": [2, 4], "name": ["B", "d"], "ts": [2, 2]})
    for source, inserts in ((first, 3), (second, 1)):
        done = _write_without_java(table, source)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["inserts"] == inserts
    rows = hudi_rs_rows(str(table)).select(["id", "name", "ts"]).sort_by("id").to_pylist()
    assert rows == [
        {"id": 1, "name": "a", "ts": 1},
        {"id": 2, "name": "B", "ts": 2},
        {"id": 3, "name": "c", "ts": 1},
        {"id": 4, "name": "d", "ts": 2},
    ]


def test_files_over_the_driver_share_go_to_spark(tmp_path: Path) -> None:
    source = _parquet(tmp_path / "a.parquet", {"id": [1], "name": ["a"], "ts": [1]})
    done = _write_without_java(tmp_path / "items", source, "hudi_sync.write.driver.max.bytes=10")
    assert done.returncode == 1 and "cannot start Spark" in done.stderr  # Spark was asked
    assert not (tmp_path / "items").exists()


def test_arrow_rows_are_the_rows_spark_reads(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    moment = dt.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=dt.UTC)
    columns = {
        "flag": pa.array([True, None]),
        "tiny": pa.array([1, -2], pa.int8()),
        "small": pa.array([300, None], pa.int16()),
        "int": pa.array([1, 2], pa.int32()),
        "long": pa.array([2**40, -1], pa.int64()),
        "real": pa.array([1.5, None], pa.float32()),
        "double": pa.array([2.25, -0.5], pa.float64()),
        "text": pa.array(["é", None]),
        "bytes": pa.array([b"\x00\xff", b""]),
        "day": pa.array([dt.date(2024, 2, 29), None], pa.date32()),
        "amount": pa.array([decimal.Decimal("12.345"), None], pa.decimal128(9, 3)),
        "at_ms": pa.array([moment, None], pa.timestamp("ms", "UTC")),
        "at_zoned": pa.array([moment, moment], pa.timestamp("us", "America/New_York")),
    }
    source = str(_parquet(tmp_path / "typed.parquet", columns))
    ours = arrow_rows([source], "parquet", 1 << 20)
    theirs = collect_arrow(load_files(spark, [source], "parquet"))
    assert ours is not None
    assert ours.schema.equals(theirs.schema) and ours.equals(theirs)


@pytest.mark.parametrize(
    "column",
    [
        pa.array([dt.datetime(2024, 1, 1)], pa.timestamp("us")),  # Spark: TIMESTAMP_NTZ rules
        pa.array([dt.datetime(2024, 1, 1)], pa.timestamp("ns", "UTC")),
        pa.array([1], pa.uint32()),  # Spark: a long
        pa.array([[1]], pa.list_(pa.int64())),
    ],
)
def test_columns_pyarrow_may_read_otherwise_go_to_spark(tmp_path: Path, column: pa.Array) -> None:
    source = _parquet(tmp_path / "a.parquet", {"id": [1], "value": column})
    assert arrow_rows([str(source)], "parquet", 1 << 20) is None


def test_what_stays_on_spark_and_unreadable_files(tmp_path: Path) -> None:
    source = _parquet(tmp_path / "a.parquet", {"id": [1], "ID": [2]})  # one name to Spark
    assert arrow_rows([str(source)], "parquet", 1 << 20) is None
    source = _parquet(tmp_path / "b.parquet", {"id": [1]})
    other = _parquet(tmp_path / "c.parquet", {"id": [1], "more": [2]})
    assert arrow_rows([str(source), str(other)], "parquet", 1 << 20) is None
    assert arrow_rows([str(source)], "parquet", source.stat().st_size - 1) is None
    assert arrow_rows([str(tmp_path)], "parquet", 1 << 20) is None  # a folder
    csv = tmp_path / "d.csv"
    csv.write_text("id\n1\n")
    assert arrow_rows([str(csv)], "csv", 1 << 20) is None
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 not parquet")
    with pytest.raises(BadInputError, match=r"^source .*broken\.parquet: "):
        arrow_rows([str(broken)], "parquet", 1 << 20)
