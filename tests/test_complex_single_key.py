"""A complex key generator over one record key field keys records ``field:value``, as
Hudi's ``ComplexKeyGenerator`` does (0.14.0 and older; 0.14.2, 0.15.1, 1.0.3 on, where
``hoodie.write.complex.keygen.new.encoding=true`` keeps the value alone of 0.14.1 to
1.0.2 on table version 8 and below; version 9 always names the field). Hudi infers that
key generator for one key field with several partition fields. A table's stored keys
decide its later writes, so one table never holds both forms (an upsert would then
duplicate every row)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from hudi_sync.spark import write, write_arrow
from hudi_sync.spark.compat import arrow_dataframe
from hudi_sync.table import HudiTable
from tests.warehouse_rows import hudi_rs_rows

NEW_ENCODING = "hoodie.write.complex.keygen.new.encoding"


def _options(version: int, **extra: object) -> dict[str, object]:
    return {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "p,q",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.index.type": "BUCKET",
        "hoodie.bucket.index.num.buckets": 2,
        "hoodie.write.table.version": version,
        "hoodie.datasource.write.operation": "upsert",
        **extra,
    }


def _rows(ts: int) -> pa.Table:
    return pa.Table.from_pylist(
        [{"id": i, "p": "a", "q": "b", "name": f"n{i}-{ts}", "ts": ts} for i in (1, 2)]
    )


def _keys(path: Path) -> dict[str, str]:
    """hudi-rs's snapshot: record key -> name."""
    rows = hudi_rs_rows(str(path)).to_pylist()
    assert len(rows) == len({r["_hoodie_record_key"] for r in rows})  # no duplicate key
    return {r["_hoodie_record_key"]: r["name"] for r in rows}


@pytest.mark.parametrize(
    ("version", "extra", "named"),
    [
        (6, {}, True),  # Hudi's default since 0.14.2 / 0.15.1 / 1.0.3
        (8, {}, True),
        (6, {NEW_ENCODING: "true"}, False),  # as Hudi 0.14.1 to 1.0.2 wrote them
        (9, {NEW_ENCODING: "true"}, True),  # version 9 always names the field
    ],
)
def test_one_key_field_of_a_complex_key_generator_is_named_as_hudi_names_it(
    tmp_path: Path, version: int, extra: dict[str, Any], named: bool
) -> None:
    path = tmp_path / "t"
    write_arrow(_rows(1), str(path), _options(version, **extra))
    assert HudiTable.open(str(path)).config.key_generator.endswith(  # type: ignore[union-attr]
        ("ComplexKeyGenerator", "COMPLEX")
    )
    key = {1: "id:1", 2: "id:2"} if named else {1: "1", 2: "2"}
    assert _keys(path) == {key[1]: "n1-1", key[2]: "n2-1"}
    # A later write stating nothing about the encoding keys as the table's stored keys
    # are: the same keys, updated in place.
    write_arrow(_rows(2), str(path), _options(version))
    assert _keys(path) == {key[1]: "n1-2", key[2]: "n2-2"}


def test_the_spark_writer_names_one_complex_key_field(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t"
    options = {**_options(6), "hoodie.datasource.write.table.type": "COPY_ON_WRITE"}
    del options["hoodie.index.type"], options["hoodie.bucket.index.num.buckets"]
    write(arrow_dataframe(spark, _rows(1)), str(path), options)
    write(arrow_dataframe(spark, _rows(2)), str(path), options)
    assert _keys(path) == {"id:1": "n1-2", "id:2": "n2-2"}
