"""The column-wise Avro encoder against fastavro's own per-record encoding, byte for byte."""

from __future__ import annotations

import datetime as dt
import io
import random
from decimal import Decimal

import fastavro
import pyarrow as pa
import pytest

from hudi_sync.table.avro.arrow import encode_rows, length_prefixed
from hudi_sync.table.config.schema import arrow_to_avro_schema


def _random_table(rows: int, seed: int) -> pa.Table:
    rng = random.Random(seed)

    def maybe(value: object) -> object:
        return None if rng.random() < 0.2 else value

    utc = dt.UTC
    return pa.table(
        {
            "long": pa.array(
                [
                    maybe(rng.choice([0, -1, 1, 63, -64, 64, 2**63 - 1, -(2**63)]))
                    for _ in range(rows)
                ],
                pa.int64(),
            ),
            "int": pa.array(
                [maybe(rng.randint(-(2**31), 2**31 - 1)) for _ in range(rows)], pa.int32()
            ),
            "text": pa.array(
                [
                    maybe("".join(rng.choice("aé😀 ") for _ in range(rng.randint(0, 300))))
                    for _ in range(rows)
                ]
            ),
            "double": pa.array([maybe(rng.uniform(-1e9, 1e9)) for _ in range(rows)]),
            "float": pa.array([maybe(rng.uniform(-10, 10)) for _ in range(rows)], pa.float32()),
            "flag": pa.array([maybe(rng.random() < 0.5) for _ in range(rows)]),
            "raw": pa.array([maybe(rng.randbytes(rng.randint(0, 20))) for _ in range(rows)]),
            "day": pa.array(
                [
                    maybe(dt.date(1960, 1, 1) + dt.timedelta(days=rng.randint(0, 40000)))
                    for _ in range(rows)
                ]
            ),
            "at": pa.array(
                [
                    maybe(
                        dt.datetime(1969, 12, 31, tzinfo=utc)
                        + dt.timedelta(microseconds=rng.randint(0, 10**14))
                    )
                    for _ in range(rows)
                ],
                pa.timestamp("us", "UTC"),
            ),
            "local_ms": pa.array(
                [
                    maybe(
                        dt.datetime(2024, 1, 1)
                        + dt.timedelta(milliseconds=rng.randint(-(10**9), 10**9))
                    )
                    for _ in range(rows)
                ],
                pa.timestamp("ms"),
            ),
            "nested": pa.array(
                [
                    maybe({"a": maybe(rng.randint(-5, 5)), "b": maybe("x" * rng.randint(0, 3))})
                    for _ in range(rows)
                ],
                pa.struct([("a", pa.int64()), ("b", pa.string())]),
            ),
        }
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_encoding_equals_fastavro_byte_for_byte(seed: int) -> None:
    table = _random_table(400, seed)
    schema = arrow_to_avro_schema(list(table.schema), "r", "hoodie.r")
    rows = pa.StructArray.from_arrays(
        [c.combine_chunks() for c in table.columns], fields=list(table.schema)
    )
    datums = encode_rows(schema, rows)
    assert datums is not None
    parsed = fastavro.parse_schema(schema)
    expected = []
    for record in table.to_pylist():
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, parsed, record)
        expected.append(buffer.getvalue())
    assert datums.to_pylist() == expected
    prefixed = length_prefixed(datums)
    assert prefixed == b"".join(len(d).to_bytes(4, "big") + d for d in expected)


def test_types_it_lacks_fall_back() -> None:
    table = pa.table({"price": pa.array([Decimal("1.50")], pa.decimal128(10, 2))})
    schema = arrow_to_avro_schema(list(table.schema), "r", "hoodie.r")
    rows = pa.StructArray.from_arrays(
        [c.combine_chunks() for c in table.columns], fields=list(table.schema)
    )
    assert encode_rows(schema, rows) is None
