"""Only decimal columns take the exact (``decimal.Decimal``) path: a payload parsed again
exactly for its decimals, or at once because orjson refuses it (an integer past 64
bits), keeps every other number a binary float, as a FLOAT/DOUBLE column needs."""

from __future__ import annotations

import base64
import decimal
import json
import re
from pathlib import Path

import pyarrow as pa
import pytest

from hudi_sync.debezium.batch import to_table
from hudi_sync.debezium.events import EventReader, EventSettings, Position
from tests.debezium_events import MySqlLog

DATA = Path(__file__).parent / "data" / "debezium"
EXPECTED = {r["id"]: r for r in json.loads((DATA / "mysql_inventory_expected.json").read_text())}


def _numeric(value: str, scale: int) -> str:
    """A Connect Decimal's base64 bytes as the JSON converter's ``decimal.format=NUMERIC``
    writes it: the plain number, all ``scale`` digits kept."""
    unscaled = int.from_bytes(base64.b64decode(value), "big", signed=True)
    return str(decimal.Decimal(unscaled).scaleb(-scale))


def _numeric_messages(compact: bool) -> list[tuple[bytes | None, bytes]]:
    """The recorded MySQL events (DECIMAL(10,2) price, DOUBLE weight) with their prices
    as JSON numbers; the schema still says Decimal. Not ``compact``: laid out another
    way than the JSON converter's, so that the whole document is parsed, not the
    payload alone."""
    messages = []
    for line in (DATA / "mysql_inventory.jsonl").read_text().splitlines():
        message = json.loads(line)
        if message["value"] is None:
            continue
        value = message["value"]
        if not compact:
            value = json.dumps(json.loads(value), indent=1)
        value = re.sub(
            r'"price": ?"([A-Za-z0-9+/=]+)"',
            lambda m: f'"price":{_numeric(m.group(1), 2)}',
            value,
        )
        messages.append((message["key"].encode(), value.encode()))
    return messages


def _table(messages: list[tuple[bytes | None, bytes]]) -> pa.Table:
    reader = EventReader(EventSettings())
    events = [reader.read(Position("t", 0, n), k, v) for n, (k, v) in enumerate(messages)]
    return to_table([e for e in events if e is not None])


@pytest.mark.parametrize("compact", [True, False])
def test_a_mysql_double_beside_a_numeric_decimal_stays_a_double(compact: bool) -> None:
    messages = _numeric_messages(compact)
    assert any(b'"price":19.99' in v for _, v in messages)  # decimals as JSON numbers
    table = _table(messages)
    assert table.schema.field("weight").type == pa.float64()
    assert table.schema.field("price").type == pa.decimal128(10, 2)
    rows = {r["id"]: r for r in table.to_pylist()}  # each key's last image, in log order
    assert {k: rows[k]["weight"] for k in EXPECTED} == {k: r["weight"] for k, r in EXPECTED.items()}
    assert {k: rows[k]["price"] for k in EXPECTED} == {
        k: None if r["price"] is None else decimal.Decimal(r["price"]) for k, r in EXPECTED.items()
    }


def test_a_schema_less_double_in_a_payload_orjson_refuses_stays_a_double() -> None:
    """Flink CDC's debezium-json (no schema) with a NaN, which orjson refuses: Python's
    parser reads the payload, and its fractions stay binary floats (no column is known
    to be a decimal)."""
    after = {"id": 1, "weight": 1.5, "ratio": 2.5e-7, "score": float("nan")}
    key, value = MySqlLog().change("c", None, after, file="mysql-bin.000001", pos=4)
    assert b"NaN" in value
    table = _table([(key, value)])
    assert table.schema.field("weight").type == pa.float64()
    assert table.schema.field("ratio").type == pa.float64()
    assert table.column("weight").to_pylist() == [1.5]
    assert table.column("ratio").to_pylist() == [2.5e-7]
