"""Record keys rebuilt from key fields, as Hudi's key generators build them, and the
key generators and key types whose keys cannot be rebuilt exactly (refused)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from hudi_sync import config as cfg
from hudi_sync.errors import CorruptTableError, UnsupportedTableError
from hudi_sync.table import HudiTable
from hudi_sync.table.keys.record_keys import key_fields, record_key, record_keys
from hudi_sync.table.read.snapshot import read_snapshot
from tests import test_mor_read as mor_read
from tests.fixture_tables import fixture_tables


def test_simple_and_complex_keys_are_hudis_text() -> None:
    rows = pa.table(
        {
            "id": pa.array([7, -12, 2**40], pa.int64()),
            "region": pa.array(["eu", None, ""], pa.string()),
        }
    )
    assert record_keys(rows, ["id"], "t").to_pylist() == ["7", "-12", "1099511627776"]
    assert record_keys(rows, ["region", "id"], "t").to_pylist() == [
        "region:eu,id:7",
        "region:__null__,id:-12",
        "region:__empty__,id:1099511627776",
    ]


@pytest.mark.parametrize(
    ("values", "fields"),
    [([None], ["id"]), ([""], ["id"]), ([None, ""], ["a", "b"])],
)
def test_a_record_without_a_key_is_corrupt(values: list[Any], fields: list[str]) -> None:
    with pytest.raises(CorruptTableError, match=r"^t: a record's key field"):
        record_key(values, fields, "t")


@pytest.mark.parametrize(
    "kind", [pa.float64(), pa.decimal128(10, 2), pa.timestamp("us"), pa.date32(), pa.bool_()]
)
def test_key_fields_whose_text_is_uncertain_are_refused(kind: pa.DataType) -> None:
    rows = pa.table({"k": pa.nulls(1, kind)})
    with pytest.raises(UnsupportedTableError, match=r"^t: record key field k is of type"):
        record_keys(rows, ["k"], "t")


@pytest.mark.parametrize(
    ("generator", "fields", "refused"),
    [
        (None, ("id",), None),
        (None, ("a", "b"), None),
        ("org.apache.hudi.keygen.SimpleKeyGenerator", ("id",), None),
        ("SIMPLE", ("id",), None),
        ("org.apache.hudi.keygen.ComplexKeyGenerator", ("a", "b"), None),
        ("COMPLEX_AVRO", ("a", "b"), None),
        ("org.apache.hudi.keygen.NonpartitionedKeyGenerator", ("a",), None),
        ("org.apache.hudi.keygen.ComplexKeyGenerator", ("id",), "depends on the Hudi release"),
        ("org.apache.hudi.keygen.SimpleKeyGenerator", ("a", "b"), "several record key fields"),
        # TIMESTAMP keys as SIMPLE does, CUSTOM by the number of fields
        ("org.apache.hudi.keygen.TimestampBasedKeyGenerator", ("id",), None),
        ("TIMESTAMP_AVRO", ("id",), None),
        ("org.apache.hudi.keygen.TimestampBasedKeyGenerator", ("a", "b"), "several record key"),
        ("org.apache.hudi.keygen.CustomKeyGenerator", ("id",), None),
        ("CUSTOM", ("a", "b"), None),
        ("com.example.OwnKeyGenerator", ("id",), "cannot be rebuilt"),
    ],
)
def test_only_key_generators_of_the_key_fields_alone_are_keyed(
    unpack_table: Any, generator: str | None, fields: tuple[str, ...], refused: str | None
) -> None:
    (fixture,) = [t for t in fixture_tables() if t.name.endswith(mor_read.NO_META)]
    config = HudiTable.open(str(unpack_table(fixture))).config
    config = replace(config, key_generator=generator, record_key_fields=fields)
    if refused is None:
        assert key_fields(config, "t") == fields
    else:
        named = f"^t: key generator {re.escape(str(generator))}"
        with pytest.raises(UnsupportedTableError, match=named):
            key_fields(config, "t")
        with pytest.raises(UnsupportedTableError, match=refused):
            key_fields(config, "t")


def test_a_refused_key_generator_refuses_the_merged_read_only(fixture_copy: Any) -> None:
    path: Path = fixture_copy(mor_read.NO_META)
    custom = "com.example.OwnKeyGenerator"
    mor_read._set_property(path, cfg.KEY_GENERATOR_CLASS.key, custom)
    mor_read.add_no_meta_log(path, mor_read.no_meta_blocks())
    table = HudiTable.open(str(path))
    with pytest.raises(UnsupportedTableError, match=f"key generator {custom}: its record keys"):
        read_snapshot(table)
    assert read_snapshot(table, read_optimized=True).num_rows == 4
