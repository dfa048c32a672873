"""Table schema and partition fields, against hudi-rs on every fixture table."""

from __future__ import annotations

import json
from typing import Any

import hudi
import pytest

from hudi_sync.table import HudiTable
from tests.fixture_tables import fixture_tables

TABLES = [t for t in fixture_tables() if "empty" not in t.name]
AVRO_TO_ARROW = {"int": "int32", "long": "int64", "string": "string", "boolean": "bool"}


def _non_null(avro_type: Any) -> Any:
    if isinstance(avro_type, list):
        return next(t for t in avro_type if t != "null")
    return avro_type


@pytest.mark.parametrize("fixture", TABLES, ids=[t.id for t in TABLES])
def test_schema_and_partition_fields_match_hudi_rs(fixture, unpack_table) -> None:  # type: ignore[no-untyped-def]
    path = str(unpack_table(fixture))
    ours = HudiTable.open(path)
    theirs = hudi.HudiTable(path)
    expected = json.loads(theirs.get_schema_in_avro_str())
    assert [f["name"] for f in ours.avro_schema["fields"]] == [
        f["name"] for f in expected["fields"]
    ]
    partition_schema = theirs.get_partition_schema()
    if not ours.config.populate_meta_fields or not ours.config.is_partitioned:
        return
    got = {f.name: AVRO_TO_ARROW.get(_non_null(f.avro_type), "?") for f in ours.partition_fields}
    if "_hoodie_partition_path" in partition_schema.names:
        # hudi-rs exposes a formatted (timestamp key generator) path as the meta column.
        assert got == {name: "string" for name in ours.config.partition_fields}
    else:
        assert got == {f.name: str(f.type) for f in partition_schema}


def test_empty_table_falls_back_to_create_schema(unpack_table) -> None:  # type: ignore[no-untyped-def]
    fixture = next(t for t in fixture_tables() if t.name.endswith("cow/v8_empty"))
    table = HudiTable.open(str(unpack_table(fixture)))
    assert table.completed_commits() == []
    created = json.loads(table.config.create_schema or "{}")
    assert table.avro_schema == created and created["fields"]


def test_falls_back_to_the_parquet_footer(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    path = fixture_copy("cow/v6_nonpartitioned")
    expected = [f["name"] for f in HudiTable.open(str(path)).avro_schema["fields"]]
    for commit in (path / ".hoodie").glob("*.commit"):
        record = json.loads(commit.read_text())
        record["extraMetadata"] = {}
        commit.write_text(json.dumps(record))
    props = path / ".hoodie" / "hoodie.properties"
    props.write_text(
        "\n".join(line for line in props.read_text().splitlines() if "create.schema" not in line)
    )
    table = HudiTable.open(str(path))
    assert table.config.create_schema is None
    names = [f["name"] for f in table.avro_schema["fields"]]
    assert [n for n in names if not n.startswith("_hoodie")] == expected
