"""MySQL change events (recorded in Debezium's exact MySQL format: MySQL cannot run
here, see tests/data/debezium/README.md) through the broker into a Hudi table, in
order and out of order, against a final table written by hand."""

from __future__ import annotations

import datetime as dt
import json
import random
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from hudi_sync.debezium.ingest import IngestConfig, ingest
from hudi_sync.spark import read
from tests.warehouse_rows import hudi_rs_rows

DATA = Path(__file__).parent / "data" / "debezium"
EXPECTED = json.loads((DATA / "mysql_inventory_expected.json").read_text())


def _messages() -> list[tuple[bytes | None, bytes | None, int]]:
    lines = [json.loads(line) for line in (DATA / "mysql_inventory.jsonl").read_text().splitlines()]
    return [
        (
            m["key"].encode() if m["key"] is not None else None,
            m["value"].encode() if m["value"] is not None else None,
            m["partition"],
        )
        for m in lines
    ]


def _plain(value: Any, column: str) -> Any:
    """A stored value in the expected file's spelling."""
    if value is None:
        return None
    if column == "updated_at":
        return value.replace(tzinfo=None).isoformat(timespec="microseconds")
    if column == "created_at":
        return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if column == "released":
        return value.isoformat()
    if column == "price":
        return str(value)
    return value


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    columns = list(EXPECTED[0])
    rows = [{c: _plain(r[c], c) for c in columns} for r in table.to_pylist()]
    return sorted(rows, key=lambda r: r["id"])


@pytest.mark.parametrize("delivery", ["in-order", "shuffled"])
def test_mysql_events_in_any_order_give_the_recorded_table(
    spark, broker, tmp_path, delivery
) -> None:  # type: ignore[no-untyped-def]
    messages = _messages()
    if delivery == "shuffled":
        random.Random(4).shuffle(messages)
    topic = f"dbserver1.inventory.products_{uuid.uuid4().hex[:6]}"
    broker.create_topic(topic, partitions=2)
    broker.produce(topic, messages)
    path = tmp_path / "products"
    options = {"hoodie.table.name": "products"}
    config = IngestConfig.from_options(
        str(path),
        options,
        bootstrap_servers=broker.bootstrap_servers,
        topics=(topic,),
        max_events=6 if delivery == "shuffled" else 100,
    )
    summary = ingest(spark, config)
    assert summary.batches_committed == (4 if delivery == "shuffled" else 1)
    ours = read(spark, str(path)).toArrow()
    assert _rows(ours) == EXPECTED
    assert _rows(hudi_rs_rows(str(path))) == EXPECTED
    types = {f.name: f.type for f in ours.schema}
    assert pa.types.is_decimal(types["price"]) and types["price"].scale == 2
    assert types["released"] == pa.date32() and pa.types.is_timestamp(types["updated_at"])
    assert types["made"] == pa.int32() and types["weight"] == pa.float64()
    gtids = {r["id"]: r["_event_gtid"] for r in ours.to_pylist()}
    create_40 = next(
        json.loads(v)["payload"]["source"]
        for _, v, _ in messages
        if v and (json.loads(v)["payload"]["after"] or {}).get("id") == 40
    )
    assert gtids[40] == create_40["gtid"] and gtids[40].startswith("3e11fa47")
    seqs = {r["id"]: r["_event_seq"] for r in ours.to_pylist()}
    assert seqs[1] == "4.2316"  # Hudi's _event_seq: binlog file number . position
