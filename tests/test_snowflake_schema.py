"""The Snowflake external table's column expressions, run in fakesnow over real files.

fakesnow (Snowflake's SQL translated onto DuckDB, through the real
snowflake-connector-python) cannot create external tables or read stages. So these
tests stand in for the external table: a fakesnow table ``src`` holds, for every parquet
base file of a real Hudi fixture table, each row as the variant ``VALUE`` and the file's
path relative to the table as ``METADATA$FILENAME``, which is what a Snowflake external
table over the table's stage exposes. Our generated column expressions then run over it
as a view, the published manifest's ``files.csv`` is the manifest table, and the view
query must return hudi-rs's snapshot. Every expression is also parsed with sqlglot's
Snowflake dialect. fakesnow deviation noted where met: ``GET(v, k)::VARCHAR`` keeps JSON
quotes there, so the columns use bracket paths (``VALUE['k']``), which Snowflake and
fakesnow read alike.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fakesnow
import pyarrow.parquet as pq
import pytest
import snowflake.connector
import sqlglot

from hudi_sync.errors import UnsupportedTableError
from hudi_sync.sync.job import publish_manifest
from hudi_sync.table import HudiTable
from hudi_sync.table.config.schema import PartitionField
from hudi_sync.warehouse.snowflake.schema import (
    Column,
    history_columns,
    quote_identifier,
    snowflake_type,
    value_column,
)
from tests.snowflake_emulation import create_source_table, insert_rows
from tests.test_snowflake_target import COW, SCALAR_PREFIXES, _text
from tests.warehouse_rows import hudi_rs_rows


@pytest.fixture
def cursor() -> Iterator[Any]:
    with fakesnow.patch():
        connection = snowflake.connector.connect(database="hudi", schema="lake")
        yield connection.cursor()
        connection.close()


def _load_files(cursor: Any, root: Path) -> int:
    create_source_table(cursor, "src")
    rows = 0
    for file in sorted(root.rglob("*.parquet")):
        relative = file.relative_to(root).as_posix()
        if not relative.startswith(".hoodie"):
            rows += insert_rows(cursor, "src", pq.read_table(file).to_pylist(), relative)
    return rows


@pytest.mark.parametrize("fixture", COW, ids=[t.id for t in COW])
def test_view_over_generated_columns_equals_hudi_rs(  # type: ignore[no-untyped-def]
    fixture, unpack_table, cursor, tmp_path
) -> None:
    root = tmp_path / fixture.id  # a copy: publishing the manifest writes under .hoodie
    shutil.copytree(unpack_table(fixture), root)
    table = HudiTable.open(str(root))
    with_meta = table.config.populate_meta_fields
    columns = history_columns(
        table.avro_schema,
        table.partition_fields,
        table.config.hive_style_partitioning,
        with_meta,
    )
    select = ", ".join(f"{c.expression} AS {quote_identifier(c.name)}" for c in columns)
    sqlglot.parse_one(f"SELECT {select} FROM src", read="snowflake")
    assert _load_files(cursor, root) > 0
    cursor.execute(f"CREATE VIEW history AS SELECT {select} FROM src")

    published = publish_manifest(table)
    names = Path(published.files_uri.removeprefix("file://")).read_text().split()
    cursor.execute("CREATE TABLE manifest (filename VARCHAR)")
    cursor.executemany("INSERT INTO manifest VALUES (%s)", [(n,) for n in names])
    # Scalar columns hudi-rs also has (without meta fields, the file name is ours alone).
    compared = [
        c
        for c in columns
        if c.type.startswith(SCALAR_PREFIXES) and (with_meta or c.name != "_hoodie_file_name")
    ]
    listed = ", ".join(quote_identifier(c.name) for c in compared)
    cursor.execute(
        f"SELECT {listed} FROM history WHERE _hoodie_file_name IN (SELECT filename FROM manifest)"
    )
    ours = sorted(tuple(_text(v) for v in row) for row in cursor.fetchall())

    expected = hudi_rs_rows(str(root))
    theirs = sorted(
        tuple(_text(row[c.name]) if c.name in row else _partition_of(row, c.name) for c in compared)
        for row in expected.to_pylist()
    )
    assert len(ours) == expected.num_rows > 0
    assert ours == theirs


def _partition_of(row: dict[str, Any], name: str) -> str | None:
    """A formatted partition column (``<field>_partition``): the row's partition path."""
    assert name.endswith("_partition"), name
    return str(row["_hoodie_partition_path"])


@pytest.mark.parametrize(
    "avro,expected",
    [
        ("int", "NUMBER(10,0)"),
        (["null", "long"], "NUMBER(19,0)"),
        ({"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 9}, "NUMBER(38,9)"),
        ({"type": "long", "logicalType": "timestamp-micros"}, "TIMESTAMP_TZ(6)"),
        ({"type": "long", "logicalType": "local-timestamp-millis"}, "TIMESTAMP_NTZ(3)"),
        ({"type": "int", "logicalType": "date"}, "DATE"),
        ({"type": "array", "items": "int"}, "ARRAY"),
        ({"type": "map", "values": "string"}, "VARIANT"),
        ({"type": "record", "name": "r", "fields": []}, "OBJECT"),
    ],
)
def test_type_map(avro: Any, expected: str) -> None:
    assert snowflake_type(avro, "c") == expected


def test_unmappable_types_name_the_column() -> None:
    too_wide = {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 2}
    with pytest.raises(UnsupportedTableError, match=r"column 'price'.*NUMBER\(38\)"):
        snowflake_type(too_wide, "price")
    with pytest.raises(UnsupportedTableError, match="column 'u'"):
        snowflake_type(["null", "int", "string"], "u")


@pytest.mark.parametrize(
    "name", ['we"ird', "it's", "a.b", "with space", "back\\slash", "x']::VARCHAR, 1 AS y --"]
)
def test_hostile_column_names_stay_one_column(name: str, cursor) -> None:  # type: ignore[no-untyped-def]
    column: Column = value_column(name, "VARCHAR")
    sql = f"SELECT {column.expression} AS {quote_identifier(name)} FROM src"
    parsed = sqlglot.parse_one(sql, read="snowflake")
    assert len(parsed.expressions) == 1 and parsed.expressions[0].alias == name
    cursor.execute('CREATE TABLE src (VALUE VARIANT, "METADATA$FILENAME" VARCHAR)')
    cursor.execute("INSERT INTO src SELECT PARSE_JSON(%s), 'f'", (json.dumps({name: "v"}),))
    cursor.execute(sql)
    assert cursor.fetchall() == [("v",)]
    assert [d.name for d in cursor.description] == [name]


def test_partition_columns_come_from_the_path(cursor) -> None:  # type: ignore[no-untyped-def]
    fields = [PartitionField("year", "int"), PartitionField("re.gion", "string")]
    hive = history_columns({"fields": []}, fields, True, True)[-2:]
    plain = history_columns({"fields": []}, fields, False, True)[-2:]
    single = history_columns({"fields": []}, fields[1:], False, True)[-1:]
    cursor.execute('CREATE TABLE src (VALUE VARIANT, "METADATA$FILENAME" VARCHAR)')
    cursor.execute(
        "INSERT INTO src SELECT PARSE_JSON('{}'), 'year=2024/re.gion=eu/f.parquet' "
        "UNION ALL SELECT PARSE_JSON('{}'), '2024/eu/f.parquet'"
    )
    for columns, where, expected in (
        (hive, "year=%", (2024, "eu")),
        (plain, "2024/%", (2024, "eu")),
        (single, "2024/%", ("2024/eu",)),
    ):
        select = ", ".join(c.expression for c in columns)
        cursor.execute(f'SELECT {select} FROM src WHERE "METADATA$FILENAME" LIKE %s', (where,))
        assert cursor.fetchall() == [expected]
