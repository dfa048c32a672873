"""The real pipeline: SQL on PostgreSQL 15 -> Debezium (embedded engine, pgoutput) ->
the Tansu broker -> ``ingest`` -> the Hudi table and its DuckDB view, which must equal
``SELECT * FROM`` the database table after inserts, updates, deletes, a TOASTed column
left out of an update, a primary-key change, a large transaction and a truncate. One
capture feeds two tables, Copy-on-Write and Merge-on-Read (compacting every second
deltacommit), each ingested from the same topic and checked at every step."""

from __future__ import annotations

import datetime as dt
import json
import random
import string
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from hudi_sync.debezium.ingest import IngestConfig, ingest
from hudi_sync.spark import read
from hudi_sync.spark.compat import collect_arrow
from hudi_sync.table import HudiTable
from hudi_sync.table.read.snapshot import read_snapshot
from tests.debezium_capture import DebeziumCapture
from tests.postgres_server import PostgresServer
from tests.warehouse_rows import hudi_rs_rows

TOPIC = "dbz.public.accounts"
DATABASE = "hoodie.duckdb.sync.database"  # one DuckDB file per table: both name views accounts
COLUMNS = ("id", "name", "balance", "score", "born", "seen", "seen_tz", "doc", "uid", "tags")
COLUMNS += ("raw", "mood", "big")
SCHEMA = """
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE accounts (
    id int PRIMARY KEY, name text, balance numeric(12, 2), score numeric, born date,
    seen timestamp, seen_tz timestamptz, doc jsonb, uid uuid, tags int[], raw bytea,
    mood mood, big text
);
"""


def _plain(column: str, value: Any) -> Any:
    """One value as both sides can spell it."""
    if value is None:
        return None
    if column == "seen":
        return value.replace(tzinfo=None)
    if column == "seen_tz":
        return value.astimezone(dt.UTC)
    if column == "score":
        return Decimal(value).normalize()
    if column == "doc":
        return json.loads(value) if isinstance(value, str) else value
    if column in ("uid", "mood"):
        return str(value)
    if column == "raw":
        return bytes(value)
    return value


def _rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = [{c: _plain(c, r[c]) for c in COLUMNS} for r in records]
    return sorted(rows, key=lambda r: r["id"])


def database_rows(pg: PostgresServer) -> list[dict[str, Any]]:
    with pg.connect() as conn:
        cursor = conn.execute(f"SELECT {', '.join(COLUMNS)} FROM accounts")
        return _rows([dict(zip(COLUMNS, row, strict=True)) for row in cursor.fetchall()])


def _noise(rng: random.Random, size: int) -> str:
    """Text that does not compress, so PostgreSQL stores it out of line (TOAST)."""
    return "".join(rng.choice(string.ascii_letters) for _ in range(size))


def test_postgres_changes_through_debezium_and_kafka_equal_the_database(
    spark, broker, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """About 30 s by nature: a real PostgreSQL's changes go through Debezium's engine
    and the Kafka broker before they are ingested and compared."""
    rng = random.Random(7)
    big = _noise(rng, 20_000)
    options = {
        "hoodie.table.name": "accounts",
        "binary.handling.mode": "hex",
        "hoodie.streamer.debezium.truncate.policy": "delete",
    }
    sync = {
        "hoodie.datasource.meta.sync.enable": "true",
        "hoodie.meta.sync.client.tool.class": "duckdb",
    }
    configs = {
        tmp_path / "cow" / "accounts": IngestConfig.from_options(
            str(tmp_path / "cow" / "accounts"),
            {**options, **sync, DATABASE: str(tmp_path / "cow" / "w.duckdb")},
            bootstrap_servers=broker.bootstrap_servers,
            topics=(TOPIC,),
        ),
        tmp_path / "mor" / "accounts": IngestConfig.from_options(
            str(tmp_path / "mor" / "accounts"),
            {
                **options,
                **sync,
                DATABASE: str(tmp_path / "mor" / "w.duckdb"),
                "hoodie.compact.inline.max.delta.commits": "2",
            },
            bootstrap_servers=broker.bootstrap_servers,
            topics=(TOPIC,),
            table_type="MERGE_ON_READ",
        ),
    }

    def ingest_each() -> list[int]:
        """Each table's batches committed."""
        return [ingest(spark, config).batches_committed for config in configs.values()]

    def each_table(pg: PostgresServer) -> list[list[dict[str, Any]]]:
        expected = database_rows(pg)
        rows = [_table_rows(spark, path, path.parent / "w.duckdb") for path in configs]
        assert rows == [expected] * len(configs)
        return rows

    properties = {
        "binary.handling.mode": "hex",
        "column.propagate.source.type": ".*",
        "skipped.operations": "none",  # Debezium skips truncates by default
    }
    with PostgresServer() as pg:
        with pg.connect() as conn:
            conn.execute(SCHEMA)
            conn.execute(
                "INSERT INTO accounts VALUES (1, 'ada', 10.50, 3.14159, '1990-02-03', "
                "'2024-01-02 03:04:05.678901', '2024-01-02 03:04:05+02', '{\"a\": [1, 2]}', "
                "'5f0c3a2e-8f43-4c59-9a52-16a0cb7c1a31', '{1,2,3}', '\\x00ff10', 'happy', %s),"
                "(2, 'bob', -3.25, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'sad', 'b')",
                (big,),
            )
        with DebeziumCapture(pg, broker, "dbz", properties=properties) as capture:
            capture.wait_for(TOPIC, 2)
            with pg.connect() as conn:
                conn.execute("INSERT INTO accounts (id, name, balance) VALUES (3, 'cy', 7)")
                # The TOASTed column is left out of these updates (placeholder events).
                conn.execute("UPDATE accounts SET balance = 11.75 WHERE id = 1")
                conn.execute("UPDATE accounts SET name = 'ada2', mood = 'ok' WHERE id = 1")
                conn.execute("DELETE FROM accounts WHERE id = 2")
                conn.execute("UPDATE accounts SET id = 30 WHERE id = 3")  # a key change
                with conn.transaction():
                    for i in range(100, 300):
                        conn.execute(
                            "INSERT INTO accounts (id, name) VALUES (%s, %s)", (i, f"n{i}")
                        )
                    conn.execute("UPDATE accounts SET balance = id WHERE id >= 100")
            # snapshot 2, insert 1, updates 2, delete + tombstone 2, key change 3, transaction 400
            capture.wait_for(TOPIC, 410)
            assert ingest_each() == [1, 1]
            # Across batches: the TOASTed value now comes from the stored row.
            each_table(pg)
            toast_events = _count_placeholders(broker)
            assert toast_events >= 2
            with pg.connect() as conn:
                conn.execute("UPDATE accounts SET balance = 99 WHERE id = 1")
                conn.execute("TRUNCATE accounts")
                conn.execute("INSERT INTO accounts (id, name, big) VALUES (7, 'after', %s)", (big,))
                conn.execute("UPDATE accounts SET name = 'after2' WHERE id = 7")
            capture.wait_for(TOPIC, 414)  # update, truncate, insert, update
            assert ingest_each() == [1, 1]  # Merge-on-Read: then compacted
            each_table(pg)
            assert [r["id"] for r in database_rows(pg)] == [7]
            with pg.connect() as conn:  # TOAST across batches, on a stored row
                conn.execute("UPDATE accounts SET name = 'after3' WHERE id = 7")
            capture.wait_for(TOPIC, 415)
            assert ingest_each() == [1, 1]  # Merge-on-Read: a log over the compacted row
            assert [rows[0]["big"] for rows in each_table(pg)] == [big, big]
    mor = HudiTable.open(str(tmp_path / "mor" / "accounts"))
    actions = [i.action for i in mor.completed_commits()]
    assert actions == ["deltacommit", "deltacommit", "commit", "deltacommit"]


def _count_placeholders(broker: Any) -> int:
    return sum(
        1
        for record in broker.consume(TOPIC)
        if record.value and b"__debezium_unavailable_value" in record.value
    )


def _table_rows(spark: Any, path: Path, database: Path) -> list[dict[str, Any]]:
    """The table's rows by Spark, the same by the table core's reader, hudi-rs and the
    synced DuckDB view (``accounts_rt`` for Merge-on-Read, whose view merges the log
    records; that table is written through the bucket index, the ingest's default)."""
    ours = collect_arrow(read(spark, str(path)))
    rows = _rows(ours.to_pylist())
    table = HudiTable.open(str(path))
    assert _rows(read_snapshot(table).to_pylist()) == rows
    assert _rows(hudi_rs_rows(str(path)).to_pylist()) == rows
    assert ours.schema.field("balance").type == pa.decimal128(12, 2)
    view_name = "accounts_rt" if table.config.is_mor else "accounts"
    view = duckdb.connect(str(database), read_only=True)
    try:
        synced = view.sql(f"SELECT id, name, balance, big FROM {view_name}").to_arrow_table()
    finally:
        view.close()
    assert sorted(synced.to_pylist(), key=lambda r: r["id"]) == [
        {c: r[c] for c in ("id", "name", "balance", "big")} for r in rows
    ]
    return rows
