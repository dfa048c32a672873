"""MySQL change events (recorded in Debezium's exact MySQL format: MySQL cannot run
here, see tests/data/debezium/README.md) through the broker into a Hudi table, in
order and out of order, against a final table written by hand; and snapshot reads
without a binlog position (built by tests/debezium_events.py's ``MySqlLog``) mixed with
binlog changes of the same keys."""

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
from hudi_sync.spark.compat import collect_arrow
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
    ours = collect_arrow(read(spark, str(path)))
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


def _snapshot_then_binlog() -> tuple[list[tuple[bytes, bytes | None, int]], list[int]]:
    """Snapshot reads without a binlog position (Flink CDC, incremental snapshots) and
    binlog changes of the same keys; returns the messages in log order (key id % 2 is
    the partition) and the indexes of the snapshot reads."""
    from tests.debezium_events import MySqlLog

    log = MySqlLog(table="products")

    def row(ident: int, name: str) -> dict[str, Any]:
        return {"id": ident, "name": name, "qty": ident}

    snapshot = [log.change("r", None, row(i, "snap")) for i in (1, 2, 3, 4, 5)]
    snapshot.insert(5, log.change("r", None, row(6, "snap-a")))
    snapshot.append(log.change("r", None, row(6, "snap-b")))  # re-read later: it wins

    def binlog(op: str, ident: int, name: str | None, file: int, pos: int) -> tuple[bytes, bytes]:
        image = row(ident, name or "old")
        return log.change(
            op,
            image if op != "c" else None,
            image if op != "d" else None,
            file=f"mysql-bin.{file:06d}",
            pos=pos,
        )

    changes = [
        binlog("u", 1, "bin-1", 1, 500),
        binlog("u", 8, "bin-8", 1, 550),  # id 8's snapshot read is delivered later
        binlog("d", 2, None, 1, 600),
        binlog("d", 3, None, 1, 700),
        binlog("u", 4, "bin-4", 1, 800),
        binlog("c", 3, "back", 2, 100),  # a new binlog file: positions start again
        binlog("d", 4, None, 2, 200),
        binlog("c", 7, "new", 2, 300),
    ]
    ordered = [*snapshot, *changes, log.change("r", None, row(8, "snap"))]
    messages = [(k, v, json.loads(k)["id"] % 2) for k, v in ordered]
    reads = [i for i, (_, v, _) in enumerate(messages) if json.loads(v or b"{}")["op"] == "r"]
    return messages, reads


@pytest.mark.parametrize("delivery", ["binlog-first", "shuffled"])
def test_snapshot_reads_without_a_binlog_position_order_before_binlog_changes(
    spark, broker, tmp_path, delivery
) -> None:  # type: ignore[no-untyped-def]
    """Such reads are valid and order before every binlog change of their key (and among
    themselves by Kafka offset): delivered after the changes, or shuffled over batches,
    they neither resurrect a deleted row nor undo an update."""
    messages, reads = _snapshot_then_binlog()
    snapshot = [messages[i] for i in reads]
    changes = [m for i, m in enumerate(messages) if i not in reads]
    if delivery == "binlog-first":  # every change first, newest first, then the reads
        delivered = [*reversed(changes), *snapshot]
    else:
        delivered = list(messages)
        random.Random(11).shuffle(delivered)
        # Only the reads of one key keep their Kafka order (that is their order).
        sixes = [i for i, m in enumerate(delivered) if m in snapshot and b'"id":6' in m[0]]
        first, second = (delivered[i] for i in sixes)
        if first[1] and b"snap-b" in first[1]:
            delivered[sixes[0]], delivered[sixes[1]] = second, first
    topic = f"flink.shop.products_{uuid.uuid4().hex[:6]}"
    broker.create_topic(topic, partitions=2)
    broker.produce(topic, delivered)
    path = tmp_path / "products"
    config = IngestConfig.from_options(
        str(path),
        {"hoodie.table.name": "products"},
        bootstrap_servers=broker.bootstrap_servers,
        topics=(topic,),
        max_events=4,
    )
    summary = ingest(spark, config)
    assert summary.batches_committed == 4 and summary.events_read == len(messages)
    expected = {1: "bin-1", 3: "back", 5: "snap", 6: "snap-b", 7: "new", 8: "bin-8"}
    ours = collect_arrow(read(spark, str(path))).to_pylist()
    assert {r["id"]: r["name"] for r in ours} == expected
    assert {r["id"]: r["name"] for r in hudi_rs_rows(str(path)).to_pylist()} == expected
    meta = {r["id"]: (r["_event_bin_file"], r["_event_seq"]) for r in ours}
    assert meta[5] == (None, None) and meta[8] == ("mysql-bin.000001", "1.550")
    # A change event without a position is still refused, and nothing is committed.
    from hudi_sync.debezium.events import EventError
    from hudi_sync.table import HudiTable
    from tests.debezium_events import MySqlLog

    broker.produce(topic, [(*MySqlLog().change("u", None, {"id": 5, "name": "x"}), 1)])
    with pytest.raises(EventError, match=r"partition 1 offset \d+: a MySQL 'u' event has no"):
        ingest(spark, config)
    assert len(HudiTable.open(str(path)).completed_commits()) == 4
