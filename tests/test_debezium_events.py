"""Debezium events to change events, column types, and the batch reduction rules."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import random

import pyarrow as pa
import pytest

from hudi_sync.debezium.batch import reduce_events, to_table
from hudi_sync.debezium.events import EventError, EventReader, EventSettings, Position
from hudi_sync.errors import BadInputError
from tests.debezium_events import MySqlLog, PostgresLog, final_state

POS = Position("pg.public.items", 0, 7)


def read(key: bytes | None, value: bytes | None, reader: EventReader | None = None):  # type: ignore[no-untyped-def]
    return (reader or EventReader(EventSettings())).read(POS, key, value)


@pytest.mark.parametrize("schemas", [True, False])
def test_postgres_meta_fields_and_images(schemas: bool) -> None:
    log = PostgresLog(schemas=schemas)
    row = {"id": 1, "name": "a", "note": "n", "qty": 3}
    created = read(*log.change("c", None, row))
    deleted = read(*log.change("d", row, None))
    snap = read(*log.snapshot({"id": 2, "name": "b", "note": None, "qty": 1}))
    assert created.op == "c" and created.row == row
    assert deleted.op == "d" and deleted.row == row  # the before image
    assert created.meta["_change_operation_type"] == "c"
    assert created.meta["_event_lsn"] == 1008
    assert created.meta["_event_tx_id"] == 500 and deleted.meta["_event_tx_id"] == 501
    assert created.meta["db_schema_source_partition"] == "public"
    assert created.meta["db_shard_source_partition"] == "pg"
    assert (
        created.meta["_upstream_event_processed_ts_ms"] == created.meta["_event_origin_ts_ms"] + 5
    )
    # Log order: (commit LSN, LSN); a snapshot read has no commit LSN and sorts first.
    assert snap.order < created.order < deleted.order
    assert snap.op == "r" and snap.key == "[2]"


def test_interleaved_transactions_order_by_commit_then_lsn() -> None:
    """A change with a lower LSN in a transaction that committed later is newer."""
    log = PostgresLog()
    first = read(*log.change("u", None, {"id": 1, "name": "late-lsn", "note": None, "qty": 1}))
    log.lsn = 500  # the next transaction began earlier, committed later
    second = read(*log.change("u", None, {"id": 1, "name": "low-lsn", "note": None, "qty": 2}))
    assert second.meta["_event_lsn"] < first.meta["_event_lsn"]
    assert first.order < second.order
    reduced = reduce_events([second, first], {}, None)
    assert reduced.final["[1]"].row["name"] == "low-lsn"


def test_flattened_events() -> None:
    value = {"id": 4, "name": "x", "__op": "u", "__lsn": 77, "__source_ts_ms": 5, "__ts_ms": 6}
    event = read(b'{"id": 4}', json.dumps(value).encode())
    assert event.op == "u" and event.row == {"id": 4, "name": "x"}
    assert event.meta["_event_lsn"] == 77 and event.meta["_event_origin_ts_ms"] == 5
    deleted = read(b'{"id": 4}', json.dumps({**value, "__deleted": "true", "__lsn": 78}).encode())
    assert deleted.op == "d" and deleted.order > event.order
    with pytest.raises(EventError, match=r"add\.fields"):
        read(b'{"id": 4}', json.dumps({"id": 4, "__op": "c"}).encode())


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (b"{not json", "neither JSON nor Avro"),
        (
            b'{"before": null, "after": {"id": 1}, '
            b'"source": {"connector": "postgresql", "lsn": 1}}',
            "no op",
        ),
        (
            b'{"after": {"id": 1}, "op": "x", "source": {"connector": "postgresql", "lsn": 1}}',
            "unknown op 'x'",
        ),
        (b'{"after": {"id": 1}}', "has no op"),
    ],
)
def test_bad_events_name_topic_partition_and_offset(value: bytes, message: str) -> None:
    with pytest.raises(EventError, match=message) as caught:
        read(b'{"id": 1}', value)
    assert str(caught.value).startswith("topic pg.public.items partition 0 offset 7: ")


def test_a_missing_key_is_refused_and_a_kafka_tombstone_skipped() -> None:
    log = PostgresLog()
    _, value = log.change("c", None, {"id": 1, "name": "a", "note": None, "qty": 1})
    with pytest.raises(EventError, match="no key"):
        read(None, value)
    assert read(b'{"id": 1}', None) is None
    keyed = EventReader(EventSettings(record_key_fields=("name",)))
    assert read(None, value, keyed).key == '["a"]'


def _micro_ts(moment: dt.datetime) -> int:
    return int((moment - dt.datetime(1970, 1, 1)).total_seconds() * 1_000_000)


def test_logical_types_become_proper_types() -> None:
    fields = [
        {"type": "int32", "optional": False, "field": "id"},
        {"type": "int32", "optional": True, "name": "io.debezium.time.Date", "field": "d"},
        {
            "type": "int64",
            "optional": True,
            "name": "io.debezium.time.MicroTimestamp",
            "field": "mt",
        },
        {
            "type": "int64",
            "optional": True,
            "name": "io.debezium.time.NanoTimestamp",
            "field": "nt",
        },
        {"type": "int64", "optional": True, "name": "io.debezium.time.Timestamp", "field": "ms"},
        {
            "type": "string",
            "optional": True,
            "name": "io.debezium.time.ZonedTimestamp",
            "field": "zt",
        },
        {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTime", "field": "t"},
        {
            "type": "bytes",
            "optional": True,
            "name": "org.apache.kafka.connect.data.Decimal",
            "parameters": {"scale": "2", "connect.decimal.precision": "10"},
            "field": "price",
        },
        {
            "type": "struct",
            "optional": True,
            "name": "io.debezium.data.VariableScaleDecimal",
            "fields": [{"type": "int32", "field": "scale"}, {"type": "bytes", "field": "value"}],
            "field": "num",
        },
        {"type": "string", "optional": True, "name": "io.debezium.data.Json", "field": "doc"},
        {"type": "string", "optional": True, "name": "io.debezium.data.Uuid", "field": "uid"},
        {"type": "string", "optional": True, "name": "io.debezium.data.Enum", "field": "mood"},
        {"type": "array", "optional": True, "items": {"type": "int32"}, "field": "tags"},
        {"type": "bytes", "optional": True, "field": "raw"},
        {
            "type": "string",
            "optional": True,
            "parameters": {"__debezium.source.column.type": "BYTEA"},
            "field": "raw_text",
        },
    ]
    moment = dt.datetime(2024, 2, 29, 13, 14, 15, 123456)
    after = {
        "id": 1,
        "d": (dt.date(2024, 2, 29) - dt.date(1970, 1, 1)).days,
        "mt": _micro_ts(moment),
        "nt": _micro_ts(moment) * 1000 + 789,
        "ms": _micro_ts(moment) // 1000,
        "zt": "2024-02-29T15:14:15.5+02:00",
        "t": ((13 * 60 + 14) * 60 + 15) * 1_000_000 + 42,
        "price": base64.b64encode((-12345).to_bytes(2, "big", signed=True)).decode(),
        "num": {"scale": 3, "value": base64.b64encode((7001).to_bytes(2, "big")).decode()},
        "doc": '{"a": [1, 2]}',
        "uid": "5f0c3a2e-8f43-4c59-9a52-16a0cb7c1a31",
        "mood": "happy",
        "tags": [3, 1],
        "raw": base64.b64encode(b"\x00\xffbin").decode(),
        "raw_text": "00ff62696e",
    }
    log = PostgresLog(fields=fields)
    event = read(*log.change("c", None, after))
    table = to_table([event], binary_mode="hex")
    row = table.to_pylist()[0]
    types = {f.name: f.type for f in table.schema}
    assert types["d"] == pa.date32() and row["d"] == dt.date(2024, 2, 29)
    assert types["mt"] == pa.timestamp("us") and row["mt"] == moment
    assert row["nt"] == moment and row["ms"] == moment.replace(microsecond=123000)
    assert types["zt"] == pa.timestamp("us", tz="UTC")
    assert row["zt"] == dt.datetime(2024, 2, 29, 13, 14, 15, 500000, tzinfo=dt.UTC)
    assert row["t"] == "13:14:15.000042"
    assert types["price"] == pa.decimal128(10, 2) and row["price"] == decimal.Decimal("-123.45")
    assert row["num"] == decimal.Decimal("7.001")
    assert (
        row["doc"] == '{"a": [1, 2]}' and row["uid"].startswith("5f0c") and row["mood"] == "happy"
    )
    assert types["tags"] == pa.list_(pa.int32()) and row["tags"] == [3, 1]
    assert types["raw"] == pa.binary() and row["raw"] == b"\x00\xffbin"
    assert types["raw_text"] == pa.binary() and row["raw_text"] == b"\x00\xffbin"
    base64_mode = to_table(
        [read(*log.change("c", None, {**after, "raw_text": "AP9iaW4="}))], "base64"
    )
    assert base64_mode.column("raw_text").to_pylist() == [b"\x00\xffbin"]


def _decimal_field(name: str, precision: int, scale: int) -> dict[str, object]:
    return {
        "type": "bytes",
        "optional": True,
        "name": "org.apache.kafka.connect.data.Decimal",
        "parameters": {"scale": str(scale), "connect.decimal.precision": str(precision)},
        "field": name,
    }


@pytest.mark.parametrize("compact", [True, False])
def test_decimals_written_as_json_numbers_are_read_exactly(compact: bool) -> None:
    """The JSON converter's decimal.format=NUMERIC (and Flink CDC's debezium-json) write
    a Decimal as a JSON number while the schema still says Decimal: its text is the
    value, never a binary float (38 digits survive, with or without a fraction)."""
    fields = [
        {"type": "int32", "optional": False, "field": "id"},
        _decimal_field("amount", 10, 3),
        _decimal_field("wide", 38, 10),
        _decimal_field("whole", 38, 0),
    ]
    numbers = {
        "amount": "12345.110",
        "wide": "1234567890123456789012345678.1234567890",
        "whole": "12345678901234567890123456789012345678",  # past 64 bits
    }
    before = {"amount": "100", "wide": "0.1000000001", "whole": "-7"}
    key, value = PostgresLog(fields=fields).change(
        "u",
        {k: f"@{k}-before" for k in numbers} | {"id": 1},
        {k: f"@{k}" for k in numbers} | {"id": 1},
    )
    for name, text in numbers.items():  # the literal numbers in place of placeholders
        value = value.replace(f'"@{name}"'.encode(), text.encode())
        value = value.replace(f'"@{name}-before"'.encode(), before[name].encode())
    if not compact:  # another layout than the split fast path's
        value = json.dumps(json.loads(value, parse_float=str), indent=1).encode()
        for text in [*numbers.values(), *before.values()]:
            value = value.replace(f'"{text}"'.encode(), text.encode())
    event = read(key, value)
    row = to_table([event]).to_pylist()[0]
    assert {k: row[k] for k in numbers} == {k: decimal.Decimal(v) for k, v in numbers.items()}
    assert str(row["wide"]) == numbers["wide"]

    # More fraction digits than the column's scale: refused, naming the column.
    bad = value.replace(numbers["amount"].encode(), b"1.23456", 1)
    with pytest.raises(BadInputError, match="amount"):
        to_table([read(key, bad)])


def test_a_bad_value_names_its_column() -> None:
    fields = [
        {"type": "int32", "optional": False, "field": "id"},
        {
            "type": "string",
            "optional": True,
            "name": "io.debezium.time.ZonedTimestamp",
            "field": "zt",
        },
    ]
    event = read(*PostgresLog(fields=fields).change("c", None, {"id": 1, "zt": "yesterday"}))
    with pytest.raises(Exception, match="column zt"):
        to_table([event])


def _history(seed: int, events: int, keys: int) -> tuple[list[tuple[bytes | None, bytes]], list]:  # type: ignore[type-arg]
    """A random history of creates, updates and deletes (some keys deleted and
    created again), with the messages and the (op, before, after) model."""
    rng = random.Random(seed)
    log = PostgresLog()
    live: dict[int, dict] = {}  # type: ignore[type-arg]
    messages, model = [], []
    for i in range(events):
        key = rng.randrange(keys)
        if key in live and rng.random() < 0.15:
            before = live.pop(key)
            messages.append(log.change("d", before, None, commit=rng.random() < 0.7))
            model.append(("d", before, None))
            continue
        row = {"id": key, "name": f"v{i}", "note": None, "qty": i}
        op = "u" if key in live else "c"
        messages.append(log.change(op, live.get(key), row, commit=rng.random() < 0.7))
        model.append((op, live.get(key), row))
        live[key] = row
    return messages, model


def _apply(batches: list[list[tuple[bytes | None, bytes]]]) -> dict[int, dict]:  # type: ignore[type-arg]
    """Reduce batch after batch, keeping rows and tombstones as the ingest does (the
    writer's rule: the newer log position wins against the stored row)."""
    reader = EventReader(EventSettings())
    stored: dict[str, tuple[str, dict | None]] = {}  # type: ignore[type-arg]
    tombstones: dict[str, str] = {}
    for batch in batches:
        events = [reader.read(POS, k, v) for k, v in batch]
        reduced = reduce_events([e for e in events if e], tombstones, None)
        for key, event in reduced.final.items():
            if key not in stored or event.order >= stored[key][0]:
                stored[key] = (event.order, None if event.op == "d" else event.row)
        for key in reduced.upserted_keys:
            tombstones.pop(key, None)
        tombstones.update(reduced.deletes)
    return {json.loads(k)[0]: row for k, (_, row) in stored.items() if row is not None}


def test_shuffled_delivery_in_any_batching_gives_the_in_order_table() -> None:
    messages, model = _history(seed=3, events=10_000, keys=700)
    expected = final_state(model)
    assert _apply([messages]) == expected
    shuffled = list(messages)
    random.Random(9).shuffle(shuffled)
    for parts in (1, 2, 7):
        size = -(-len(shuffled) // parts)
        batches = [shuffled[i : i + size] for i in range(0, len(shuffled), size)]
        assert _apply(batches) == expected, parts


def test_a_late_insert_after_a_delete_does_not_resurrect() -> None:
    log = PostgresLog()
    row = {"id": 1, "name": "a", "note": None, "qty": 1}
    insert = log.change("c", None, row)
    delete = log.change("d", row, None)
    assert _apply([[delete, insert]]) == {}
    assert _apply([[delete], [insert]]) == {}
    again = log.change("c", None, {**row, "name": "back"})
    assert _apply([[delete], [insert, again]]) == {1: {**row, "name": "back"}}


def test_toast_placeholder_keeps_the_earlier_value_across_a_chain() -> None:
    log = PostgresLog()
    big = "x" * 9000
    created = log.change("c", None, {"id": 1, "name": "a", "note": big, "qty": 1})
    upd1 = log.change(
        "u", None, {"id": 1, "name": "b", "note": "__debezium_unavailable_value", "qty": 2}
    )
    upd2 = log.change(
        "u", None, {"id": 1, "name": "c", "note": "__debezium_unavailable_value", "qty": 3}
    )
    reader = EventReader(EventSettings())
    events = [reader.read(POS, k, v) for k, v in (upd2, created, upd1)]
    reduced = reduce_events(events, {}, None)
    assert reduced.final["[1]"].row == {"id": 1, "name": "c", "note": big, "qty": 3}
    assert reduced.unresolved == {}
    # Without the earlier value in the batch, the column is left for the stored row.
    alone = reduce_events([reader.read(POS, *upd2)], {}, None)
    assert alone.unresolved == {"[1]": frozenset({"note"})}
    assert alone.final["[1]"].row["note"] is None


def test_truncate_policies() -> None:
    log = PostgresLog()
    reader = EventReader(EventSettings())
    before = reader.read(
        POS, *log.change("c", None, {"id": 1, "name": "a", "note": None, "qty": 1})
    )
    truncate = reader.read(POS, None, log.change("t", None, None)[1])
    after = reader.read(POS, *log.change("c", None, {"id": 2, "name": "b", "note": None, "qty": 1}))
    with pytest.raises(EventError, match="truncated"):
        reduce_events([before, truncate, after], {}, None)
    ignored = reduce_events([before, truncate, after], {}, None, "ignore")
    assert set(ignored.final) == {"[1]", "[2]"} and ignored.truncated_at is None
    deleted = reduce_events([after, truncate, before], {}, None, "delete")
    assert set(deleted.final) == {"[2]"} and deleted.truncated_at == truncate.order
    # An event older than an earlier batch's truncate is dropped.
    late = reduce_events([before], {}, deleted.truncated_at, "delete")
    assert late.final == {} and late.dropped == 1


def test_primary_key_change_leaves_only_the_new_key() -> None:
    log = PostgresLog()
    old = {"id": 4, "name": "a", "note": None, "qty": 1}
    new = {**old, "id": 40}
    history = [log.change("c", None, old), log.change("d", old, None, commit=False)]
    history.append(log.change("c", None, new))
    assert _apply([history]) == {40: new}
    assert _apply([[history[0]], [history[2], history[1]]]) == {40: new}


def test_checkpoint_text_is_hudis_format() -> None:
    from hudi_sync.debezium.state import format_checkpoint, parse_checkpoint

    offsets = {"db.public.a": {0: 12, 1: 30}, "db.public.b": {0: 4}}
    text = format_checkpoint(offsets)
    assert text == "db.public.a,0:12,1:30;db.public.b,0:4"
    assert parse_checkpoint(text) == offsets
    assert parse_checkpoint("topic,0:5") == {"topic": {0: 5}}
    with pytest.raises(Exception, match="is not topic,partition:offset"):
        parse_checkpoint("topic,0-5")


@pytest.mark.parametrize(
    "key", [b"customer-1", b"\x00\x00\x00\x00\x07\xff", b"\xff\xfeopaque", b"1", b'"1"']
)
def test_a_record_key_takes_the_key_from_the_row_and_never_parses_the_kafka_key(
    key: bytes,
) -> None:
    log = PostgresLog(schemas=False)
    row = {"id": 1, "name": "a", "note": None, "qty": 1}
    created, deleted = log.change("c", None, row)[1], log.change("d", row, None)[1]
    keyed = EventReader(EventSettings(record_key_fields=("id",)))
    assert read(key, created, keyed).key == "[1]"
    assert read(key, deleted, keyed).key == "[1]"  # from the before image
    assert read(key, deleted, keyed).row == row
    # Without key fields the Kafka key is the key: unreadable, one line naming the message.
    with pytest.raises(EventError) as caught:
        read(key, created)
    text = str(caught.value)
    assert text.startswith("topic pg.public.items partition 0 offset 7: ") and "\n" not in text
    # Every unreadable key names the way out, also one shaped like Avro in Confluent
    # wire format that no registry can decode (an opaque key may look like that).
    assert "--record-key" in text


def test_mysql_snapshot_reads_without_a_binlog_position_order_before_the_binlog() -> None:
    log = MySqlLog()
    reader = EventReader(EventSettings())
    first = {"id": 1, "name": "snap-a"}
    snap_a = reader.read(Position("t", 0, 5), *log.change("r", None, first))
    snap_b = reader.read(Position("t", 0, 9), *log.change("r", None, {**first, "name": "b"}))
    change = log.change("u", first, {**first, "name": "bin"}, file="mysql-bin.000001", pos=4)
    update = reader.read(Position("t", 1, 0), *change)
    assert snap_a is not None and snap_b is not None and update is not None
    # Before every binlog position, and among themselves by Kafka offset.
    assert snap_a.order < snap_b.order < update.order
    assert snap_a.meta["_event_bin_file"] is None and snap_a.meta["_event_seq"] is None
    assert update.meta["_event_seq"] == "1.4"
    reduced = reduce_events([update, snap_b, snap_a], {}, None)
    assert reduced.final["[1]"].row["name"] == "bin"
    assert reduce_events([snap_b, snap_a], {}, None).final["[1]"].row["name"] == "b"
    # A delete's tombstone drops a later-delivered snapshot read of the key.
    delete = reader.read(
        Position("t", 1, 1), *log.change("d", first, None, file="mysql-bin.000001", pos=9)
    )
    assert delete is not None
    assert reduce_events([snap_b], {"[1]": delete.order}, None).dropped == 1
    # Flattened by ExtractNewRecordState with add.fields=op,file,pos,row.
    flat = {"id": 2, "name": "x", "__op": "r", "__file": "", "__pos": 0, "__row": 0}
    flattened = reader.read(POS, b'{"id": 2}', json.dumps(flat).encode())
    assert flattened is not None and flattened.order < update.order


@pytest.mark.parametrize("op", ["c", "u", "d"])
def test_a_mysql_change_without_a_binlog_position_is_refused(op: str) -> None:
    row = {"id": 1, "name": "a"}
    key, value = MySqlLog().change(op, row if op != "c" else None, row if op != "d" else None)
    with pytest.raises(EventError, match=rf"a MySQL '{op}' event has no binlog file and position"):
        read(key, value)
