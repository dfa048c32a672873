"""``delete_partition``: which partitions ``hoodie.datasource.write.partitions.to.delete``
names, and that a value naming none commits nothing.

Hudi takes the option as partition paths (``p=b`` on a hive-style table, ``a/b`` or
``x=a/y=b`` on two levels); the writer also takes the values as a user writes them
(``b``, ``a/b``). Results are read by hudi-rs, on tables the writer made and on copies
of Hudi-written fixtures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from hudi_sync.cli.app import app
from hudi_sync.errors import BadInputError
from hudi_sync.spark import write
from hudi_sync.spark.writing.options import PARTITIONS_TO_DELETE
from hudi_sync.table import HudiTable
from tests import hudi_oracle
from tests.frames import rows_frame
from tests.warehouse_rows import hudi_rs_rows

SCHEMA = "id int, x string, y string, ts long"
ROWS = [(1, "a", "1", 1), (2, "a", "1", 1), (3, "a", "2", 1), (4, "b", "1", 1), (5, "c", "2", 1)]


def _options(fields: str, hive_style: bool, operation: str, **extra: str) -> dict[str, object]:
    return {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": fields,
        "hoodie.datasource.write.hive_style_partitioning": str(hive_style).lower(),
        "hoodie.write.table.version": 8 if hive_style else 6,
        "hoodie.datasource.write.operation": operation,
        **extra,
    }


def _written_table(spark: SparkSession, path: Path, fields: str, hive_style: bool) -> None:
    df = rows_frame(spark, ROWS, SCHEMA)
    write(df, str(path), _options(fields, hive_style, "insert"))


def _partitions(path: Path) -> set[str]:
    """The partitions hudi-rs sees file groups in."""
    return {s["partition_path"] for s in hudi_oracle.slices(str(path))}


def _keys(path: Path, key: str = "id") -> set[Any]:
    return {r[key] for r in hudi_rs_rows(str(path)).to_pylist()}


def _tree(path: Path) -> list[str]:
    """Every file and folder of the table, ``.hoodie`` included."""
    return sorted(p.relative_to(path).as_posix() for p in path.rglob("*"))


def _delete(spark: SparkSession, path: Path, options: dict[str, object], value: str) -> str:
    df = rows_frame(spark, [], "id int")
    options = {**options, "hoodie.datasource.write.operation": "delete_partition"}
    return write(df, str(path), {**options, PARTITIONS_TO_DELETE: value}).instant


def _refused(
    spark: SparkSession,
    path: Path,
    options: dict[str, object],
    value: str,
    culprit: str | None = None,
) -> None:
    """One line naming the table and the value (``culprit``, of several) that names no
    partition; nothing written (no instant file of any state, no marker, no data file)."""
    before = _tree(path)
    with pytest.raises(BadInputError) as caught:
        _delete(spark, path, options, value)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: no partition {(culprit or value)!r} to delete"), message
    assert _tree(path) == before


@pytest.mark.parametrize("hive_style", [True, False], ids=["hive-style", "plain"])
def test_one_level_takes_the_value_or_the_path(  # type: ignore[no-untyped-def]
    spark, tmp_path: Path, hive_style: bool
) -> None:
    path = tmp_path / "t"
    _written_table(spark, path, "x", hive_style)
    options = _options("x", hive_style, "delete_partition")
    named = {v: f"x={v}" if hive_style else v for v in "abc"}
    assert _partitions(path) == set(named.values())

    _delete(spark, path, options, "b")  # as a user writes it
    assert _partitions(path) == {named["a"], named["c"]}
    assert _keys(path) == {1, 2, 3, 5}
    _delete(spark, path, options, "x=c")  # as Hudi's path (the field prefix on plain tables)
    assert _partitions(path) == {named["a"]}
    assert _keys(path) == {1, 2, 3}

    completed = HudiTable.open(str(path)).timeline.completed_writes
    assert [i.action for i in completed] == ["commit", "replacecommit", "replacecommit"]
    _refused(spark, path, options, "zz")
    _refused(spark, path, options, "b")  # deleted already: no file group left to replace
    _refused(spark, path, options, "a/1")  # one level too many
    assert _keys(path) == {1, 2, 3}


def test_without_the_option_the_rows_name_the_partitions(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    _written_table(spark, path, "x", True)
    options = _options("x", True, "delete_partition")
    before = _tree(path)
    missing = rows_frame(spark, [(9, "zz", "1", 1)], SCHEMA)
    with pytest.raises(BadInputError, match=r"^\S+/t: no partition 'x=zz' to delete \("):
        write(missing, str(path), options)
    with pytest.raises(BadInputError, match=f"needs {PARTITIONS_TO_DELETE} or rows naming"):
        write(rows_frame(spark, [], SCHEMA), str(path), options)
    assert _tree(path) == before
    write(rows_frame(spark, [(9, "a", "1", 1)], SCHEMA), str(path), options)
    assert _partitions(path) == {"x=b", "x=c"}


@pytest.mark.parametrize("hive_style", [True, False], ids=["hive-style", "plain"])
def test_two_levels_take_the_values_or_the_path(  # type: ignore[no-untyped-def]
    spark, tmp_path: Path, hive_style: bool
) -> None:
    path = tmp_path / "t"
    _written_table(spark, path, "x,y", hive_style)
    options = _options("x,y", hive_style, "delete_partition")
    named = {v: f"x={v[0]}/y={v[2]}" if hive_style else v for v in ("a/1", "a/2", "b/1", "c/2")}
    assert _partitions(path) == set(named.values())

    _refused(spark, path, options, "a")  # a level is missing
    _refused(spark, path, options, "b/2")
    # Several at once, in either form; naming one twice deletes it once.
    _delete(spark, path, options, "a/1,x=b/y=1,b/1")
    assert _partitions(path) == {named["a/2"], named["c/2"]}
    assert _keys(path) == {3, 5}
    # One value naming no partition refuses the whole write: c/2 stays.
    _refused(spark, path, options, "a/2,c/9", "c/9")
    _delete(spark, path, options, named["c/2"])
    assert _partitions(path) == {named["a/2"]}


@pytest.mark.parametrize(
    ("suffix", "fields", "hive_style", "deletes", "missing"),
    [
        (
            "cow/v6_complexkeygen_hivestyle",
            "byteField,shortField",
            True,
            {"10/300": "byteField=10/shortField=300", "byteField=20/shortField=100": None},
            "10/100",
        ),
        (
            "cow/v6_simplekeygen_nonhivestyle",
            "byteField",
            False,
            {"10": None, "byteField=20": "20"},
            "40",
        ),
    ],
    ids=["hive-style", "plain"],
)
def test_hudi_written_fixture(  # type: ignore[no-untyped-def]
    spark,
    fixture_copy,
    suffix: str,
    fields: str,
    hive_style: bool,
    deletes: dict[str, str | None],
    missing: str,
) -> None:
    """``deletes``: each value and the partition path it names (None: the same)."""
    path = fixture_copy(suffix)
    config = HudiTable.open(str(path)).config
    options: dict[str, object] = {
        "hoodie.table.name": config.name,
        "hoodie.datasource.write.recordkey.field": ",".join(config.record_key_fields),
        "hoodie.datasource.write.precombine.field": config.ordering_fields[0],
        "hoodie.datasource.write.partitionpath.field": fields,
        "hoodie.datasource.write.hive_style_partitioning": str(hive_style).lower(),
    }
    before = _partitions(path)
    gone = {named or value for value, named in deletes.items()}
    assert gone < before
    rows = hudi_rs_rows(str(path)).to_pylist()

    _refused(spark, path, options, missing)
    for value in deletes:
        _delete(spark, path, options, value)
    assert _partitions(path) == before - gone
    kept = {r["id"] for r in rows if r["_hoodie_partition_path"] not in gone}
    assert kept and _keys(path) == kept


def test_cli_exits_2_naming_the_missing_partition(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    table, data = tmp_path / "t", tmp_path / "rows.jsonl"
    data.write_text('{"id": 1, "x": "a", "y": "1", "ts": 1}\n')
    base = ["write", str(table), str(data)]
    conf = [f"{k}={v}" for k, v in _options("x", True, "insert").items()]
    flags = [arg for pair in conf for arg in ("--conf", pair)]
    assert CliRunner().invoke(app, [*base, *flags]).exit_code == 0
    before = _tree(table)
    delete = ["--conf", "hoodie.datasource.write.operation=delete_partition"]
    delete += ["--conf", f"{PARTITIONS_TO_DELETE}=nowhere"]
    result = CliRunner().invoke(app, [*base, *flags, *delete])
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"error: {table}: no partition 'nowhere' to delete (its partitions look like 'x=a')\n"
    )
    assert _tree(table) == before
