"""Debezium PostgreSQL change events as the connector writes them with Kafka Connect's
JSON converter (``schemas.enable`` true or false), for tests that need many events
or exact control of log positions. The PostgreSQL test (tests/test_debezium_postgres.py)
checks the same reader against events the real connector produced."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# Connect field schemas of the test table ``shop.items``.
ITEM_FIELDS: list[dict[str, Any]] = [
    {"type": "int32", "optional": False, "field": "id"},
    {"type": "string", "optional": True, "field": "name"},
    {"type": "string", "optional": True, "field": "note"},
    {"type": "int64", "optional": True, "field": "qty"},
]


def _source_schema() -> dict[str, Any]:
    fields = [
        ("version", "string", False),
        ("connector", "string", False),
        ("name", "string", False),
        ("ts_ms", "int64", False),
        ("db", "string", False),
        ("sequence", "string", True),
        ("schema", "string", False),
        ("table", "string", False),
        ("txId", "int64", True),
        ("lsn", "int64", True),
        ("xmin", "int64", True),
    ]
    return {
        "type": "struct",
        "fields": [{"type": t, "optional": o, "field": f} for f, t, o in fields],
        "optional": False,
        "name": "io.debezium.connector.postgresql.Source",
        "field": "source",
    }


def envelope_schema(fields: Sequence[Mapping[str, Any]], table: str = "items") -> dict[str, Any]:
    row = {
        "type": "struct",
        "fields": list(fields),
        "optional": True,
        "name": f"pg.shop.{table}.Value",
    }
    return {
        "type": "struct",
        "fields": [
            {**row, "field": "before"},
            {**row, "field": "after"},
            _source_schema(),
            {"type": "string", "optional": False, "field": "op"},
            {"type": "int64", "optional": True, "field": "ts_ms"},
        ],
        "optional": False,
        "name": f"pg.shop.{table}.Envelope",
    }


@dataclass
class PostgresLog:
    """Builds a PostgreSQL change history: each transaction gets a commit LSN, each
    change an LSN, as the connector's ``source.sequence`` reports them."""

    fields: list[dict[str, Any]] = field(default_factory=lambda: list(ITEM_FIELDS))
    schemas: bool = True
    table: str = "items"
    key_fields: tuple[str, ...] = ("id",)
    lsn: int = 1000
    last_commit: int = 900
    txid: int = 500
    ts_ms: int = 1_700_000_000_000

    def change(
        self,
        op: str,
        before: Mapping[str, Any] | None,
        after: Mapping[str, Any] | None,
        *,
        commit: bool = True,
    ) -> tuple[bytes | None, bytes]:
        """One event (key, value); ``commit`` ends its transaction."""
        self.lsn += 8
        self.ts_ms += 1
        row = after if after is not None else before
        assert row is not None or op == "t"
        source = {
            "version": "3.6.3.Final",
            "connector": "postgresql",
            "name": "pg",
            "ts_ms": self.ts_ms,
            "db": "shop",
            "sequence": json.dumps([str(self.last_commit), str(self.lsn)]),
            "schema": "public",
            "table": self.table,
            "txId": self.txid,
            "lsn": self.lsn,
            "xmin": None,
        }
        payload = {
            "before": before,
            "after": after,
            "source": source,
            "op": op,
            "ts_ms": self.ts_ms + 5,
        }
        if commit:
            self.last_commit = self.lsn + 4
            self.txid += 1
        key = None if row is None else {k: row[k] for k in self.key_fields}
        return self._encode_key(key), self._encode(
            payload, envelope_schema(self.fields, self.table)
        )

    def snapshot(self, after: Mapping[str, Any]) -> tuple[bytes | None, bytes]:
        """An ``r`` event: ``sequence`` has no commit LSN yet."""
        key, value = self.change("r", None, after, commit=False)
        payload = json.loads(value)
        source = (payload["payload"] if self.schemas else payload)["source"]
        source["sequence"] = json.dumps([None, str(source["lsn"])])
        return key, self._encode(
            payload["payload"] if self.schemas else payload,
            envelope_schema(self.fields, self.table),
        )

    def _encode(self, payload: Mapping[str, Any], schema: Mapping[str, Any]) -> bytes:
        document = {"schema": schema, "payload": payload} if self.schemas else payload
        return json.dumps(document, separators=(",", ":")).encode()  # compact, as Jackson

    def _encode_key(self, key: Mapping[str, Any] | None) -> bytes | None:
        if key is None:
            return None
        key_fields = [f for f in self.fields if f["field"] in key]
        schema = {"type": "struct", "fields": key_fields, "optional": False, "name": "pg.Key"}
        return self._encode(key, schema)


def final_state(
    history: Sequence[tuple[str, Mapping[str, Any] | None, Mapping[str, Any] | None]],
) -> dict[Any, dict[str, Any]]:
    """The table a history leaves, applied in order: the model the ingest must match."""
    rows: dict[Any, dict[str, Any]] = {}
    for op, before, after in history:
        if op == "d":
            assert before is not None
            rows.pop(before["id"], None)
        else:
            assert after is not None
            rows[after["id"]] = dict(after)
    return rows


@dataclass
class MySqlLog:
    """MySQL change events in the Debezium envelope without the JSON converter's schema
    (as Flink CDC's ``debezium-json`` writes them). Snapshot reads may carry no binlog
    position (``file: ""``, ``pos: 0``), as Flink CDC's snapshot phase and incremental
    snapshots write them; binlog changes carry their file, position and row."""

    table: str = "items"
    ts_ms: int = 1_700_000_000_000

    def change(
        self,
        op: str,
        before: Mapping[str, Any] | None,
        after: Mapping[str, Any] | None,
        *,
        file: str = "",
        pos: int = 0,
        row: int = 0,
    ) -> tuple[bytes, bytes]:
        """One event (key, value); ``file`` empty for a snapshot read without position."""
        self.ts_ms += 1
        image = after if after is not None else before
        assert image is not None
        source = {
            "version": "1.9.8.Final",
            "connector": "mysql",
            "name": "mysql_binlog_source",
            "ts_ms": self.ts_ms if file else 0,
            "snapshot": "false",
            "db": "shop",
            "sequence": None,
            "table": self.table,
            "server_id": 223344 if file else 0,
            "gtid": None,
            "file": file,
            "pos": pos,
            "row": row,
            "thread": None,
            "query": None,
        }
        payload = {"before": before, "after": after, "source": source, "op": op}
        payload["ts_ms"] = self.ts_ms + 5
        key = json.dumps({"id": image["id"]}, separators=(",", ":")).encode()
        return key, json.dumps(payload, separators=(",", ":")).encode()
