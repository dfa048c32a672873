"""The columnar decoder and reduction (hudi_sync.debezium.columns) give the rows the
row-by-row decoder and reduction give (events, batch), on the same events; batches it
cannot express are left to the row path (None), never read differently."""

from __future__ import annotations

import datetime
import json
import random
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pytest

from hudi_sync.debezium.batch import align_to_types, reduce_events, to_table
from hudi_sync.debezium.columns import ColumnReduced, decode_columns, reduce_columns
from hudi_sync.debezium.events import EventReader, EventSettings, Position
from hudi_sync.debezium.ingest.writes import _zoned_timestamps
from hudi_sync.errors import BadInputError
from tests.debezium_events import ITEM_FIELDS, MySqlLog, PostgresLog

Message = tuple[bytes | None, bytes | None]  # key, value

WIDE_FIELDS: list[dict[str, Any]] = [
    *ITEM_FIELDS,
    {"type": "int16", "optional": True, "field": "small"},
    {"type": "double", "optional": True, "field": "price"},
    {"type": "boolean", "optional": True, "field": "ok"},
    {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp", "field": "seen"},
    {"type": "int64", "optional": True, "name": "io.debezium.time.Timestamp", "field": "seen_ms"},
    {"type": "int32", "optional": True, "name": "io.debezium.time.Date", "field": "born"},
    {"type": "string", "optional": True, "name": "io.debezium.data.Json", "field": "doc"},
    {"type": "string", "optional": True, "field": "iso"},  # an ISO text stays a string
    {"type": "string", "optional": True, "field": "empty"},  # always null
]
TABLE_TYPES: dict[str, pa.DataType] = {
    "id": pa.int32(),
    "name": pa.string(),
    "note": pa.string(),
    "qty": pa.int64(),
    "small": pa.int16(),
    "price": pa.float64(),
    "ok": pa.bool_(),
    "doc": pa.string(),
    "iso": pa.string(),
    "empty": pa.int64(),  # all-null in the events: keeps the table's type
}
SCHEMA_LESS = dict(TABLE_TYPES)


def _row(rng: random.Random, key: int, i: int, schemas: bool) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": key,
        "name": None if i % 7 == 0 else f'name-{i} "quoted" \u00e9',
        "note": "x" * (i % 5),
        "qty": rng.choice([None, -(2**40), i, 2**62]),
        "small": rng.choice([None, -300, 7]),
        "price": rng.choice([None, 0.1, 3, -2.5e-7, 1e300]),
        "ok": rng.choice([None, True, False]),
        "doc": json.dumps({"a": [i, None]}),
        "iso": "2024-01-02T03:04:05Z",
        "empty": None,
    }
    if schemas:
        row |= {
            "seen": rng.choice([None, 1_700_000_000_123_456, -1]),
            "seen_ms": rng.choice([None, 1_700_000_000_123, 0]),
            "born": rng.choice([None, -1706, 19000]),
        }
    return row


def history(schemas: bool, events: int = 400, seed: int = 3) -> list[Message]:
    """Snapshot reads, creates, updates, deletes (the before image with only the key, as
    REPLICA IDENTITY DEFAULT gives), Kafka tombstones, transactions of several changes,
    and the same change delivered twice."""
    rng = random.Random(seed)
    log = PostgresLog(fields=list(WIDE_FIELDS), schemas=schemas)
    messages: list[Message] = []
    live: list[int] = []
    for key in range(10):
        messages.append(log.snapshot(_row(rng, key, key, schemas)))
        live.append(key)
    next_key = 10
    for i in range(events):
        kind = rng.random()
        if kind < 0.15 or not live:
            live.append(next_key)
            messages.append(log.change("c", None, _row(rng, next_key, i, schemas), commit=False))
            next_key += 1
        elif kind < 0.25:
            key = live.pop(rng.randrange(len(live)))
            before = dict.fromkeys(_row(rng, key, i, schemas)) | {"id": key}
            messages.append(log.change("d", before, None, commit=False))
            messages.append((messages[-1][0], None))  # the Kafka tombstone
        else:
            key = live[rng.randrange(len(live))]
            messages.append(log.change("u", None, _row(rng, key, i, schemas), commit=False))
        if rng.random() < 0.3:
            log.change("u", None, {"id": 0}, commit=True)  # ends the transaction (dropped)
        if rng.random() < 0.05:
            messages.append(messages[-1])  # delivered twice
    return messages


def row_path(
    messages: list[Message],
    tombstones: Mapping[str, str],
    floor: str | None,
    stored: Mapping[str, pa.DataType] | None,
) -> tuple[pa.Table, dict[str, str], set[str], int]:
    reader = EventReader(EventSettings())
    events = []
    for offset, (key, value) in enumerate(messages):
        event = reader.read(Position("t", 0, offset), key, value)
        if event is not None:
            events.append(event)
    reduced = reduce_events(events, tombstones, floor)
    rows = align_to_types(_zoned_timestamps(to_table(list(reduced.final.values()))), stored)
    return rows, reduced.deletes, reduced.upserted_keys, reduced.dropped


def columnar(
    messages: list[Message],
    tombstones: Mapping[str, str],
    floor: str | None,
    stored: Mapping[str, pa.DataType] | None,
    decode_types: Mapping[str, pa.DataType] | None = None,
) -> ColumnReduced | None:
    decoded = decode_columns(
        [v for _, v in messages],
        [k for k, _ in messages],
        ("id",),
        False,
        decode_types,
        [b"__debezium_unavailable_value"],
    )
    if decoded is None:
        return None
    reduced = reduce_columns(decoded, tombstones, floor)
    reduced.rows = align_to_types(_zoned_timestamps(reduced.rows), stored)
    return reduced


def same(messages: list[Message], stored: Mapping[str, pa.DataType] | None, **kw: Any) -> None:
    tombstones = {"[3]": "0" * 20 + ":" + "9" * 20, "[12]": "0" * 41}
    floor = kw.pop("floor", None)
    rows, deletes, upserted, dropped = row_path(messages, tombstones, floor, stored)
    reduced = columnar(messages, tombstones, floor, stored, kw.get("decode_types"))
    assert reduced is not None
    assert reduced.rows.to_pylist() == rows.to_pylist()
    assert reduced.rows.schema == rows.schema
    assert reduced.rows.equals(rows)
    assert (reduced.deletes, reduced.upserted_keys, reduced.dropped) == (
        deletes,
        upserted,
        dropped,
    )
    assert rows.num_rows and deletes and dropped


@pytest.mark.parametrize("seed", [3, 4])
def test_with_the_envelope_schema_both_decoders_give_the_same_rows(seed: int) -> None:
    messages = history(schemas=True, seed=seed)
    same(messages, None)  # a new table: the schema's types
    same(messages, TABLE_TYPES | {"seen": pa.timestamp("us", "UTC")})  # the table's
    rows = columnar(messages, {}, None, None)
    assert rows is not None
    types = {f.name: f.type for f in rows.rows.schema}
    assert types["seen"] == pa.timestamp("us", "UTC") and types["born"] == pa.date32()
    assert types["iso"] == pa.string()


@pytest.mark.parametrize("seed", [3, 4])
def test_without_schemas_the_table_types_give_the_same_rows(seed: int) -> None:
    messages = history(schemas=False, seed=seed)
    same(messages, SCHEMA_LESS, decode_types=SCHEMA_LESS)
    # A truncate mark drops everything before it, in both.
    middle = sorted(json.loads(v)["source"]["sequence"] for _, v in messages if v is not None)[
        len(messages) // 2
    ]
    commit, change = (int(x or 0) for x in json.loads(middle))
    same(messages, SCHEMA_LESS, decode_types=SCHEMA_LESS, floor=f"{commit:020d}:{change:020d}")


def test_schema_less_events_before_the_first_commit_take_the_row_path() -> None:
    assert columnar(history(schemas=False), {}, None, None) is None


def _modified(messages: list[Message], index: int, change: Any) -> list[Message]:
    key, value = messages[index]
    assert value is not None
    document = json.loads(value)
    change(document)
    return [*messages[:index], (key, json.dumps(document).encode()), *messages[index + 1 :]]


def _payload(document: dict[str, Any]) -> dict[str, Any]:
    return dict(document["payload"]) if "payload" in document else document


@pytest.mark.parametrize(
    "what",
    [
        "toast",
        "schema change",
        "new column",
        "number in a string column",
        "float in an integer column",
        "truncate",
        "decimal",
        "zoned timestamp",
        "single-precision float",
        "no key",
    ],
)
def test_what_the_columnar_decoder_cannot_express_goes_to_the_row_path(what: str) -> None:
    schemas = what in ("schema change", "decimal", "zoned timestamp", "single-precision float")
    messages = history(schemas=schemas, events=40)
    types = None if schemas else SCHEMA_LESS
    assert columnar(messages, {}, None, types, types) is not None
    last = max(i for i, (_, v) in enumerate(messages) if v is not None and b'"op":"u"' in v)

    def after(change: Any) -> Any:
        return lambda d: change(_payload(d)["after"]) or d

    if what == "toast":
        changed = _modified(
            messages, last, after(lambda a: a.update(note="__debezium_unavailable_value"))
        )
    elif what == "schema change":
        changed = _modified(messages, last, lambda d: d["schema"]["fields"][0]["fields"].pop())
    elif what == "new column":
        changed = _modified(messages, last, after(lambda a: a.update(added=1)))
    elif what == "number in a string column":
        changed = _modified(messages, last, after(lambda a: a.update(name=5)))
    elif what == "float in an integer column":
        changed = _modified(messages, last, after(lambda a: a.update(qty=1.5)))
    elif what == "truncate":
        changed = _modified(messages, last, lambda d: _payload(d).update(op="t", after=None))
    elif what in ("decimal", "zoned timestamp", "single-precision float"):
        retyped = {
            "decimal": {"name": "org.apache.kafka.connect.data.Decimal", "type": "string"},
            "zoned timestamp": {"name": "io.debezium.time.ZonedTimestamp", "type": "string"},
            "single-precision float": {"type": "float", "field": "price"},
        }[what]
        column = 2 if what != "single-precision float" else 5

        def retype(document: dict[str, Any]) -> None:
            for image in document["schema"]["fields"][:2]:
                image["fields"][column] |= retyped

        changed = []
        for k, v in messages:
            if v is None:
                changed.append((k, v))
                continue
            document = json.loads(v)
            retype(document)
            changed.append((k, json.dumps(document, separators=(",", ":")).encode()))
    else:
        changed = [(None, v) for _, v in messages]
    assert columnar(changed, {}, None, types, types) is None


def test_mysql_events_take_the_row_path() -> None:
    log = MySqlLog()
    messages: list[Message] = [
        log.change("c", None, {"id": i, "name": "n"}, file="mysql-bin.000001", pos=i * 10)
        for i in range(1, 5)
    ]
    assert columnar(messages, {}, None, None, {"id": pa.int64(), "name": pa.string()}) is None


REAL_SCHEMA = """
CREATE TABLE plain (
    id int PRIMARY KEY, name text, qty bigint, small smallint, price double precision,
    ok boolean, seen timestamp(6), born date, doc jsonb, uid uuid, note varchar(20)
);
CREATE TABLE money (id int PRIMARY KEY, balance numeric(12, 2));
"""


def _captured(broker: Any, topic: str) -> list[Message]:
    return [(r.key, r.value) for r in broker.consume(topic)]


def _schema_less(messages: list[Message]) -> list[Message]:
    """The same events as ``schemas.enable=false`` writes them: the payloads alone."""

    def strip(raw: bytes | None) -> bytes | None:
        return None if raw is None else json.dumps(json.loads(raw)["payload"]).encode()

    return [(strip(key), strip(value)) for key, value in messages]


def test_real_debezium_events_decode_the_same_in_columns(broker) -> None:  # type: ignore[no-untyped-def]
    """Events of the real PostgreSQL connector: the snapshot, inserts, updates, deletes
    with their Kafka tombstones, a key change, nulls, a transaction of many changes; a
    table with decimals goes to the row path."""
    from tests.debezium_capture import DebeziumCapture
    from tests.postgres_server import PostgresServer

    with PostgresServer() as pg:
        with pg.connect() as conn:
            conn.execute(REAL_SCHEMA)
            conn.execute(
                "INSERT INTO plain VALUES (1, 'ada', 5000000000, -3, 0.1, true, "
                "'2024-01-02 03:04:05.678901', '1965-05-01', '{\"a\": [1, null]}', "
                "'5f0c3a2e-8f43-4c59-9a52-16a0cb7c1a31', '2024-01-02T03:04:05Z'), "
                "(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"
            )
            conn.execute("INSERT INTO money VALUES (1, 10.50)")
        with DebeziumCapture(pg, broker, "cols", partitions=2) as capture:
            capture.wait_for("cols.public.plain", 2)
            capture.wait_for("cols.public.money", 1)
            with pg.connect() as conn:
                conn.execute("INSERT INTO plain (id, name, price) VALUES (3, 'cy', 3)")
                conn.execute("UPDATE plain SET qty = qty + 1, ok = false WHERE id = 1")
                conn.execute("DELETE FROM plain WHERE id = 2")
                conn.execute("UPDATE plain SET id = 30 WHERE id = 3")  # a key change
                with conn.transaction():
                    for i in range(100, 160):
                        conn.execute(
                            "INSERT INTO plain (id, name, seen) VALUES (%s, %s, now())",
                            (i, f"n{i}"),
                        )
                    conn.execute("UPDATE plain SET small = id WHERE id >= 100")
                    conn.execute("DELETE FROM plain WHERE id >= 150")
                conn.execute("UPDATE money SET balance = 11.75 WHERE id = 1")
            # 2 snapshot, insert, update, delete + tombstone, key change (d, tombstone, c),
            # 60 inserts, 60 updates, 10 deletes + 10 tombstones
            capture.wait_for("cols.public.plain", 2 + 1 + 1 + 2 + 3 + 60 + 60 + 20)
            capture.wait_for("cols.public.money", 2)
    plain = _captured(broker, "cols.public.plain")
    assert sum(1 for _, v in plain if v is None) == 12  # Kafka tombstones
    same(plain, None)
    rows, _, _, _ = row_path(plain, {}, None, None)
    types = {f.name: f.type for f in rows.schema if not f.name.startswith("_")}
    assert types["seen"] == pa.timestamp("us", "UTC") and types["born"] == pa.date32()
    assert types["doc"] == types["uid"] == pa.string()
    same(plain, types)  # a table that exists: its types
    schema_less = _schema_less(plain)
    # A table the schema-less events created (their JSON types), its timestamp column
    # then declared as a timestamp (the row path casts the integers to it).
    inferred = row_path(schema_less, {}, None, None)[0].schema
    less = {f.name: f.type for f in inferred if not f.name.startswith("_")}
    less |= {"seen": pa.timestamp("us", "UTC")}
    same(schema_less, less, decode_types=less)
    money = _captured(broker, "cols.public.money")
    assert columnar(money, {}, None, None) is None  # decimals: the row path


def test_a_schema_less_date_is_stored_as_the_tables_date() -> None:
    """Without schemas a Debezium ``Date`` arrives as days since the epoch, a JSON
    number; a table that keeps the column as a date stores those days as dates (Arrow
    casts no integer to a date directly)."""
    log = PostgresLog(fields=list(WIDE_FIELDS), schemas=False)
    days = [-1706, 0, 19000, None]
    messages = [log.snapshot({"id": key, "name": "n", "born": day}) for key, day in enumerate(days)]
    rows, _, _, _ = row_path(messages, {}, None, {**SCHEMA_LESS, "born": pa.date32()})
    by_key = dict(zip(rows.column("id").to_pylist(), rows.column("born").to_pylist(), strict=True))
    epoch = datetime.date(1970, 1, 1)
    expected = {
        k: None if d is None else epoch + datetime.timedelta(days=d) for k, d in enumerate(days)
    }
    assert by_key == expected


def test_values_the_tables_type_cannot_hold_are_refused_naming_the_column() -> None:
    log = PostgresLog(fields=list(WIDE_FIELDS), schemas=False)
    messages = [log.snapshot({"id": 1, "name": "not a number"})]
    with pytest.raises(BadInputError) as refused:
        row_path(messages, {}, None, {**SCHEMA_LESS, "name": pa.int64()})
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("column name: the events' string values cannot be stored")
