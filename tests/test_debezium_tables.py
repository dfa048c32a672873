"""Multi-table ingest (``--base-path``, ``ingest_tables``): one Hudi table per topic,
named after the topic, keyed by its events' key, each with its own checkpoint; a table
that fails is reported on one line and does not stop the others. The table-type flag
and its option must agree."""

from __future__ import annotations

import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hudi_sync import config as cfg
from hudi_sync.cli.app import app
from hudi_sync.debezium.ingest import (
    IngestConfig,
    TablesConfig,
    ingest_tables,
    parse_table_options,
    table_name_of,
)
from hudi_sync.debezium.state import load_state
from hudi_sync.errors import BadInputError
from hudi_sync.spark import read
from hudi_sync.spark.compat import collect_arrow
from hudi_sync.table import HudiTable
from hudi_sync.table.read.snapshot import read_snapshot
from tests.debezium_capture import DebeziumCapture
from tests.debezium_events import PostgresLog
from tests.postgres_server import PostgresServer
from tests.warehouse_rows import hudi_rs_rows

runner = CliRunner()
TABLE_TYPE = cfg.WRITE_TABLE_TYPE.key


def test_table_names_per_table_options_and_refusals(tmp_path: Path) -> None:
    assert table_name_of("dbserver1.inventory.customers") == "customers"
    assert table_name_of("customers") == "customers"
    assert parse_table_options(
        ["customers:hoodie.datasource.write.recordkey.field=id", "db.public.orders:a=b=c"]
    ) == {
        "customers": {"hoodie.datasource.write.recordkey.field": "id"},
        "db.public.orders": {"a": "b=c"},
    }
    for bad in ("customers=1", ":k=v", "customers:=v", "customers:key"):
        with pytest.raises(BadInputError, match="is not TABLE:KEY=VALUE"):
            parse_table_options([bad])
    base = f"{tmp_path}/lake/"
    config = TablesConfig.from_options(
        base,
        {"bootstrap.servers": "127.0.0.1:1", "hoodie.datasource.write.recordkey.field": "id"},
        {
            "customers": {cfg.TABLE_NAME.key: "clients", cfg.MAX_EVENTS.key: "7"},
            "db.public.customers": {cfg.RECORD_KEY.key: "email"},
            "orders": {cfg.WRITE_TABLE_TYPE.key: "COPY_ON_WRITE"},
        },
        topic_pattern=r"db\.public\..*",
        table_type="MERGE_ON_READ",
        max_events=100,
        continuous=True,
        poll_interval_s=0.5,
    )
    customers = config.table_config("db.public.customers")
    assert customers.table_path == f"{tmp_path}/lake/clients"
    assert customers.kafka.topics == ("db.public.customers",)
    assert customers.kafka.topic_pattern is None and not customers.continuous
    assert customers.record_key_fields == ("email",)  # by topic, over the shared option
    assert customers.max_events == 7  # the table's own setting, over the flag
    assert customers.write_options[cfg.TABLE_NAME.key] == "clients"
    assert customers.write_options[cfg.WRITE_TABLE_TYPE.key] == "MERGE_ON_READ"
    orders = config.table_config("db.public.orders")
    assert orders.table_path == f"{tmp_path}/lake/orders" and orders.max_events == 100
    assert orders.record_key_fields == ("id",)
    assert orders.write_options[cfg.WRITE_TABLE_TYPE.key] == "COPY_ON_WRITE"  # its own
    assert config.unknown_tables(["db.public.orders"]) == ["customers", "db.public.customers"]
    assert config.continuous and config.poll_interval_s == 0.5
    secret = TablesConfig.from_options(
        base, {"sasl.password": "pw1"}, {"t": {"sasl.password": "pw2"}}, topics=("a.t",)
    )
    assert "pw" not in repr(secret) and "'sasl.password': '***'" in repr(secret)
    with pytest.raises(BadInputError, match="cannot be a folder name"):
        TablesConfig.from_options(
            base, {}, {"x": {cfg.TABLE_NAME.key: "../up"}}, topics=("db.x",)
        ).table_config("db.x")
    with pytest.raises(BadInputError, match="names one table"):
        TablesConfig.from_options(base, {cfg.TABLE_NAME.key: "t"}, topic_pattern=".*")
    with pytest.raises(BadInputError, match="no topic to read"):
        TablesConfig.from_options(base, {})
    # The table-type flag and the option must agree (any case; the option's older
    # spelling has none).
    same = IngestConfig.from_options(
        base, {cfg.WRITE_TABLE_TYPE.key: "merge_on_read"}, table_type="MERGE_ON_READ"
    )
    assert same.write_options[cfg.WRITE_TABLE_TYPE.key] == "MERGE_ON_READ"
    with pytest.raises(BadInputError) as caught:
        IngestConfig.from_options(
            base, {cfg.WRITE_TABLE_TYPE.key: "COPY_ON_WRITE"}, table_type="MERGE_ON_READ"
        )
    assert str(caught.value) == (
        "--table-type MERGE_ON_READ disagrees with "
        "hoodie.datasource.write.table.type=COPY_ON_WRITE (give one, or the same)"
    )
    with pytest.raises(BadInputError, match="is not one of COPY_ON_WRITE, MERGE_ON_READ"):
        IngestConfig.from_options(base, {}, table_type="MOR")


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--table-path", "t", "--base-path", "b"], "give --table-path (one table) or --base"),
        (["--topic", "x"], "give --table-path (one table) or --base-path"),
        (["--table-path", "t", "--table-conf", "t:k=v"], "--table-conf needs --base-path"),
        (["--base-path", "b", "--table-conf", "oops"], "--table-conf 'oops' is not TABLE:KEY"),
        (
            ["--table-path", "t", "--table-type", "MERGE_ON_READ", "-c", f"{TABLE_TYPE}=cow"],
            "hoodie.datasource.write.table.type='cow' is not one of",
        ),
        (
            [
                "--table-path",
                "t",
                "--table-type",
                "MERGE_ON_READ",
                "-c",
                f"{TABLE_TYPE}=COPY_ON_WRITE",
            ],
            "--table-type MERGE_ON_READ disagrees with",
        ),
    ],
)
def test_cli_refusals_are_one_line(args: list[str], error: str) -> None:
    result = runner.invoke(app, ["ingest", "debezium", "--topic", "x", *args])
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert "\n" not in line and line.startswith(f"error: {error}"), line


COLUMNS = {
    "customers": ("id", "name", "email"),
    "orders": ("order_id", "customer_id", "amount"),
    "notes": ("note_id", "body"),
}


def _rows(records: list[dict[str, Any]], table: str) -> dict[Any, dict[str, Any]]:
    key, *_ = COLUMNS[table]
    return {r[key]: {c: r[c] for c in COLUMNS[table]} for r in records}


def table_rows(spark: Any, base: Path, table: str) -> dict[Any, dict[str, Any]]:
    """The table's rows by Spark, the same by the table core's reader and hudi-rs."""
    path = str(base / table)
    ours = collect_arrow(read(spark, path))
    rows = _rows(ours.to_pylist(), table)
    assert ours.num_rows == len(rows)
    assert _rows(read_snapshot(HudiTable.open(path)).to_pylist(), table) == rows
    assert _rows(hudi_rs_rows(path).to_pylist(), table) == rows
    return rows


def database_rows(pg: PostgresServer, table: str) -> dict[Any, dict[str, Any]]:
    with pg.connect() as conn:
        cursor = conn.execute(f"SELECT {', '.join(COLUMNS[table])} FROM {table}")
        return _rows([dict(zip(COLUMNS[table], row, strict=True)) for row in cursor], table)


SCHEMA = """
CREATE TABLE customers (id int PRIMARY KEY, name text, email text);
CREATE TABLE orders (order_id int PRIMARY KEY, customer_id int, amount numeric(10, 2));
CREATE TABLE notes (note_id int NOT NULL, body text);
ALTER TABLE notes REPLICA IDENTITY FULL;
INSERT INTO customers VALUES (1, 'ann', 'ann@x'), (2, 'bo', 'bo@x'), (3, 'cy', 'cy@x');
INSERT INTO orders VALUES (10, 1, 5.50), (11, 2, 7.25);
INSERT INTO notes VALUES (1, 'first'), (2, 'second');
"""


def test_one_table_per_topic_from_postgres(spark, broker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """PostgreSQL -> Debezium -> Kafka, three tables by one pattern: customers
    (Merge-on-Read by its own option), notes (no primary key: Debezium sends no key, so
    its record key is given for it) and orders, whose truncate fails it on the first
    run while the other two commit; the second run, told to apply truncates to orders,
    catches it up, and the others take only their new changes."""
    prefix = f"mt{uuid.uuid4().hex[:8]}"
    topics = {t: f"{prefix}.public.{t}" for t in ("customers", "orders", "notes")}
    base = tmp_path / "lake"
    args = ["ingest", "debezium", "--base-path", str(base), "--json"]
    args += ["--topic-pattern", rf"{prefix}\.public\..*"]
    args += ["--bootstrap-servers", broker.bootstrap_servers]
    args += ["--table-conf", f"notes:{cfg.RECORD_KEY.key}=note_id"]
    args += ["--table-conf", f"{topics['customers']}:{cfg.WRITE_TABLE_TYPE.key}=MERGE_ON_READ"]
    with PostgresServer() as pg:
        with pg.connect() as conn:
            conn.execute(SCHEMA)
        properties = {
            "skipped.operations": "none",  # Debezium skips truncates by default
            # A delete's tombstone has the key as its only content: keyless notes' would
            # be an empty Kafka message (and the ingest skips tombstones anyway).
            "tombstones.on.delete": "false",
        }
        with DebeziumCapture(pg, broker, prefix, properties=properties) as capture:
            for table, count in (("customers", 3), ("orders", 2), ("notes", 2)):
                capture.wait_for(topics[table], count)
            with pg.connect() as conn:
                conn.execute("UPDATE customers SET email = 'ann@y' WHERE id = 1")
                conn.execute("DELETE FROM customers WHERE id = 2")
                conn.execute("UPDATE notes SET body = 'second!' WHERE note_id = 2")
                conn.execute("DELETE FROM notes WHERE note_id = 1")
                conn.execute("TRUNCATE orders")
                conn.execute("INSERT INTO orders VALUES (12, 3, 1.00)")
            capture.wait_for(topics["customers"], 5)  # + update, delete
            capture.wait_for(topics["notes"], 4)  # + update, delete
            capture.wait_for(topics["orders"], 4)  # + truncate, insert
            first = runner.invoke(app, args)
            assert first.exit_code == 1, first.output
            errors = first.stderr.strip().splitlines()
            assert len(errors) == 1, errors
            assert errors[0].startswith(f"error: table orders (topic {topics['orders']}): ")
            assert "truncated" in errors[0]
            report = {row["table"]: row for row in json.loads(first.stdout)}
            assert sorted(report) == ["customers", "notes", "orders"]
            assert report["customers"]["batches_committed"] == 1
            assert report["notes"]["batches_committed"] == 1
            assert report["orders"]["error"] in errors[0]
            assert report["orders"]["path"] == f"{base}/orders"
            orders_path = base / "orders"
            assert not orders_path.exists() or not HudiTable.open(str(orders_path)).instants()
            customers, notes = base / "customers", base / "notes"
            for table in ("customers", "notes"):
                assert table_rows(spark, base, table) == database_rows(pg, table)
            assert HudiTable.open(str(customers)).config.is_mor
            assert not HudiTable.open(str(notes)).config.is_mor
            stored = collect_arrow(read(spark, str(notes))).column("_hoodie_record_key").to_pylist()
            assert stored == ["2"]
            # One checkpoint per table: each table's commits hold its own topic's offsets.
            for table in ("customers", "notes"):
                offsets = load_state(str(base / table)).offsets
                assert offsets == {topics[table]: broker.end_offsets(topics[table])}

            with pg.connect() as conn:
                conn.execute("UPDATE customers SET name = 'cyd' WHERE id = 3")
                conn.execute("INSERT INTO notes VALUES (3, 'third')")
            capture.wait_for(topics["customers"], 6)
            capture.wait_for(topics["notes"], 5)
            policy = f"orders:{cfg.TRUNCATE_POLICY.key}=delete"
            second = runner.invoke(app, [*args, "--table-conf", policy])
            assert second.exit_code == 0, second.output
            report = {row["table"]: row for row in json.loads(second.stdout)}
            assert {t: r["batches_committed"] for t, r in report.items()} == {
                "customers": 1,
                "notes": 1,
                "orders": 1,
            }
            assert {t: r["events_read"] for t, r in report.items()} == {
                "customers": 1,
                "notes": 1,
                "orders": 4,
            }
            for table in ("customers", "notes", "orders"):
                assert table_rows(spark, base, table) == database_rows(pg, table)
            assert list(database_rows(pg, "orders")) == [12]
            offsets = load_state(str(orders_path)).offsets
            assert offsets == {topics["orders"]: broker.end_offsets(topics["orders"])}


def test_topics_sharing_a_name_and_new_topics_in_continuous_mode(spark, broker, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Two shards' ``items`` topics: the second fails (it would share the first's
    table) until it is given a name of its own. In continuous mode a topic created
    later that matches the pattern gets its table."""
    suffix = uuid.uuid4().hex[:6]
    topics = [f"s{n}{suffix}.public.items" for n in (1, 2)]
    log = PostgresLog()
    for n, topic in enumerate(topics):
        broker.create_topic(topic, partitions=2)
        row = {"id": n, "name": topic, "note": None, "qty": n}
        broker.produce(topic, [log.change("c", None, row)])
    base = tmp_path / "lake"
    options = {"bootstrap.servers": broker.bootstrap_servers}
    pattern = rf"s\d{suffix}\.public\..*"
    failures: list[tuple[str, str, str]] = []
    result = ingest_tables(
        spark,
        TablesConfig.from_options(str(base), options, topic_pattern=pattern),
        on_failure=lambda *failure: failures.append(failure),
    )
    assert list(result.tables) == ["items"]
    assert result.tables["items"].batches_committed == 1
    assert failures == [
        (
            f"items ({topics[1]})",
            topics[1],
            f"topic {topics[1]} would share table items with topic {topics[0]} (name one of "
            f"them with --table-conf {topics[1]}:{cfg.TABLE_NAME.key}=NAME)",
        )
    ]
    assert [r["table"] for r in result.rows()] == ["items", f"items ({topics[1]})"]
    with pytest.raises(BadInputError, match="--table-conf names no table of the topics read: nope"):
        ingest_tables(
            spark,
            TablesConfig.from_options(
                str(base), options, {"nope": {"a": "b"}}, topic_pattern=pattern
            ),
        )

    named = {topics[1]: {cfg.TABLE_NAME.key: "items_s2"}}
    config = TablesConfig.from_options(
        str(base), options, named, topic_pattern=pattern, continuous=True, poll_interval_s=0.2
    )
    stop = threading.Event()
    done: dict[str, Any] = {}

    def run() -> None:
        try:
            done["result"] = ingest_tables(spark, config, stop=stop)
        except BaseException as exc:  # handed to the test's thread
            done["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    try:
        _wait_for(lambda: (base / "items_s2").exists() and _commits(base / "items_s2") == 1)
        third = f"s3{suffix}.public.items3"
        broker.create_topic(third, partitions=1)
        late = {"id": 7, "name": "late", "note": None, "qty": 7}
        broker.produce(third, [log.change("c", None, late)])
        _wait_for(lambda: (base / "items3").exists() and _commits(base / "items3") == 1)
    finally:
        stop.set()
        thread.join(120)
    assert "error" not in done, done.get("error")
    result = done["result"]
    assert not result.failures
    assert {t: s.batches_committed for t, s in result.tables.items()} == {
        "items": 0,
        "items_s2": 1,
        "items3": 1,
    }
    names = {
        t: [r["name"] for r in collect_arrow(read(spark, str(base / t))).to_pylist()]
        for t in result.tables
    }
    assert names == {"items": [topics[0]], "items_s2": [topics[1]], "items3": ["late"]}


def _commits(path: Path) -> int:
    try:
        return len(HudiTable.open(str(path)).completed_commits())
    except BadInputError:
        return 0


def _wait_for(condition: Any, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)
