"""``ingest``: Debezium events through a real Kafka-protocol broker into a Hudi table,
read back with our readers, hudi-rs and the synced DuckDB view. The tests whose
behaviour depends on the table type run on Copy-on-Write and Merge-on-Read tables."""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path
from typing import Any

import duckdb
import pytest

from hudi_sync.debezium.events import EventError
from hudi_sync.debezium.ingest import IngestConfig, ingest
from hudi_sync.debezium.state import CHECKPOINT_KEY, load_state, parse_checkpoint
from hudi_sync.errors import BadInputError
from hudi_sync.spark import read
from hudi_sync.spark.compat import collect_arrow
from hudi_sync.table import HudiTable
from hudi_sync.table.read.snapshot import read_snapshot
from tests.debezium_events import ITEM_FIELDS, PostgresLog, final_state
from tests.kafka_broker import KafkaBroker
from tests.warehouse_rows import hudi_rs_rows

COLUMNS = ("id", "name", "note", "qty")
COW, MOR = "COPY_ON_WRITE", "MERGE_ON_READ"
TABLE_TYPES = pytest.mark.parametrize("table_type", [COW, MOR])


def new_topic(broker: KafkaBroker, partitions: int = 3) -> str:
    topic = f"pg.public.items_{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, partitions=partitions)
    return topic


def config(
    broker: KafkaBroker, topic: str, table: Path, table_type: str = COW, **extra: Any
) -> IngestConfig:
    """Copy-on-Write tables are synced to DuckDB after each commit; Merge-on-Read ones
    are not (their warehouse views are another piece of work), and ask for their type
    by the CLI flag's keyword."""
    options = {"hoodie.table.name": "items"}
    if table_type == COW:
        options |= {
            "hoodie.datasource.meta.sync.enable": "true",
            "hoodie.meta.sync.client.tool.class": "duckdb",
            "hoodie.duckdb.sync.database": str(table.parent / "warehouse.duckdb"),
        }
    else:
        extra.setdefault("table_type", table_type)
    options |= extra.pop("options", {})
    return IngestConfig.from_options(
        str(table), options, bootstrap_servers=broker.bootstrap_servers, topics=(topic,), **extra
    )


def rows_of(table: Any) -> dict[int, dict[str, Any]]:
    return {r["id"]: {c: r[c] for c in COLUMNS} for r in table.to_pylist()}


def table_state(spark: Any | None, path: Path) -> dict[int, dict[str, Any]]:
    """The table's rows, the same by Spark, by the table core's reader, by hudi-rs and
    (Copy-on-Write) in the synced DuckDB view, each key once. Without ``spark`` (a
    state before the test's last, whose Spark reader check comes at the end): the same
    without Spark's reader, whose tasks read through the core."""
    table = HudiTable.open(str(path))
    core = read_snapshot(table)
    ours = rows_of(core)
    assert core.num_rows == len(ours)
    if spark is not None:
        stored = collect_arrow(read(spark, str(path)))
        assert rows_of(stored) == ours and stored.num_rows == len(ours)
    theirs = hudi_rs_rows(str(path))
    assert rows_of(theirs) == ours and theirs.num_rows == len(ours)
    if table.config.is_mor:
        return ours
    view = duckdb.connect(str(path.parent / "warehouse.duckdb"), read_only=True)
    try:
        synced = view.sql("SELECT * FROM items").to_arrow_table()
    finally:
        view.close()
    assert rows_of(synced) == ours
    assert synced.num_rows == len(ours)  # no duplicates in the warehouse view
    return ours


def _history(seed: int, events: int, keys: int) -> tuple[list[tuple[bytes | None, bytes]], list]:  # type: ignore[type-arg]
    from tests.test_debezium_events import _history as history

    return history(seed, events, keys)


@TABLE_TYPES
def test_shuffled_delivery_over_seven_batches_matches_the_database(  # type: ignore[no-untyped-def]
    spark, broker, tmp_path, table_type
) -> None:
    """Events spread over partitions in random order (what a topic repartitioned or
    re-keyed delivers); 7 batches; the table equals the history applied in order.
    Merge-on-Read: 7 deltacommits, compacted inline after the fifth by default."""
    messages, model = _history(seed=5, events=2000, keys=150)
    topic = new_topic(broker)
    shuffled = list(messages)
    random.Random(2).shuffle(shuffled)
    broker.produce(
        topic, [(k, v, random.Random(i).randrange(3)) for i, (k, v) in enumerate(shuffled)]
    )
    path = tmp_path / "items"
    batch = -(-len(messages) // 7)
    summary = ingest(spark, config(broker, topic, path, table_type, max_events=batch))
    assert summary.batches_committed == 7 and summary.events_read == len(messages)
    # Spark's reader (its rows, each key once) is checked with the stored columns below.
    assert table_state(None, path) == final_state(model)
    # The last commit holds the end of the topic, in Hudi's checkpoint format.
    ends = broker.end_offsets(topic)
    state = load_state(str(path))
    assert state.offsets == {topic: ends}
    table = HudiTable.open(str(path))
    assert table.config.table_type.value == table_type
    actions = [i.action for i in table.completed_commits()]
    if table_type == MOR:  # the compaction (a commit) carries no checkpoint
        assert actions == ["deltacommit"] * 5 + ["commit"] + ["deltacommit"] * 2
        assert table.timeline.commit_metadata(table.completed_commits()[5]).compacted
    else:
        assert actions == ["commit"] * 7
    last = table.timeline.commit_metadata(table.completed_commits()[-1])
    assert last.extra_metadata[CHECKPOINT_KEY] == topic + "," + ",".join(
        f"{p}:{o}" for p, o in sorted(ends.items())
    )
    # Hudi's Debezium columns are stored; deletes are not rows.
    stored = collect_arrow(read(spark, str(path)))
    assert {"_change_operation_type", "_event_lsn", "_event_tx_id", "_event_order"} <= set(
        stored.column_names
    )
    assert "d" not in set(stored.column("_change_operation_type").to_pylist())
    assert rows_of(stored) == final_state(model) and stored.num_rows == len(final_state(model))
    # Nothing new: no commit. The table's own type is used when none is asked for.
    again = ingest(spark, config(broker, topic, path, options={}, table_type=None))
    assert again.batches_committed == 0 and again.events_read == 0
    # Asking for the other type: one line, exit 2, before anything is read.
    from typer.testing import CliRunner

    from hudi_sync.cli.app import app

    other = COW if table_type == MOR else MOR
    args = ["ingest", "debezium", "--table-path", str(path), "--topic", topic]
    args += ["--bootstrap-servers", broker.bootstrap_servers, "--table-type", other]
    refused = CliRunner().invoke(app, args)
    assert refused.exit_code == 2, refused.output
    assert refused.stderr.strip() == (
        f"error: {path}: hoodie.datasource.write.table.type={other} but the table is "
        f"{table_type} (a table's type is fixed when it is created)"
    )
    assert len(HudiTable.open(str(path)).completed_commits()) == len(actions)


@TABLE_TYPES
def test_deletes_never_resurrect_and_toast_keeps_the_stored_value(  # type: ignore[no-untyped-def]
    spark, broker, tmp_path, table_type
) -> None:
    topic = new_topic(broker, partitions=2)
    path = tmp_path / "items"
    log = PostgresLog()
    big = "t" * 9000
    a = {"id": 1, "name": "a", "note": big, "qty": 1}
    b = {"id": 2, "name": "b", "note": "short", "qty": 1}
    insert_b = log.change("c", None, b)
    batch1 = [log.change("c", None, a), insert_b]
    broker.produce(topic, batch1)
    assert ingest(spark, config(broker, topic, path, table_type)).batches_committed == 1
    placeholder = "__debezium_unavailable_value"
    delete_b = log.change("d", b, None)
    toast = log.change("u", a, {**a, "name": "a2", "note": placeholder, "qty": 2})
    toast2 = log.change("u", a, {**a, "name": "a3", "note": placeholder, "qty": 3})
    # The delete, then (redelivered late, in a later batch) b's older insert.
    broker.produce(topic, [delete_b, toast])
    ingest(spark, config(broker, topic, path, table_type))
    broker.produce(topic, [insert_b, (delete_b[0], None), toast2])
    summary = ingest(spark, config(broker, topic, path, table_type))
    assert summary.events_dropped == 1
    assert table_state(spark, path) == {1: {"id": 1, "name": "a3", "note": big, "qty": 3}}
    # One tombstone file (the only batch with a delete), holding b's delete position.
    from hudi_sync.debezium.state import TombstoneStore

    files = load_state(str(path)).tombstone_files
    assert list(TombstoneStore(str(path)).load(files)) == ["[2]"] and len(files) == 1


@TABLE_TYPES
def test_truncate_policy_delete_and_schema_evolution(  # type: ignore[no-untyped-def]
    spark, broker, tmp_path, table_type
) -> None:
    topic = new_topic(broker, partitions=1)
    path = tmp_path / "items"
    log = PostgresLog()
    rows = [{"id": i, "name": f"n{i}", "note": None, "qty": i} for i in range(5)]
    early = log.change("u", None, {**rows[0], "name": "before-truncate"})
    broker.produce(topic, [log.change("c", None, r) for r in rows])
    ingest(spark, config(broker, topic, path, table_type))
    truncate = log.change("t", None, None)
    broker.produce(topic, [truncate])
    with pytest.raises(EventError, match="truncated"):
        ingest(spark, config(broker, topic, path, table_type))
    assert len(table_state(None, path)) == 5  # the batch was not committed
    # An added nullable column arrives after the truncate; an older event arrives late.
    log.fields = [*ITEM_FIELDS, {"type": "string", "optional": True, "field": "color"}]
    new_row = {"id": 9, "name": "n9", "note": None, "qty": 9, "color": "red"}
    broker.produce(topic, [log.change("c", None, new_row), early])
    summary = ingest(spark, config(broker, topic, path, table_type, truncate_policy="delete"))
    assert summary.events_dropped == 1
    stored = collect_arrow(read(spark, str(path)))  # Spark's reader, the new column too
    assert [{c: r[c] for c in (*COLUMNS, "color")} for r in stored.to_pylist()] == [new_row]
    assert table_state(None, path) == {9: {c: new_row[c] for c in COLUMNS}}


def test_bad_events_stop_or_go_to_the_dead_letter_file(spark, broker, tmp_path) -> None:  # type: ignore[no-untyped-def]
    topic = new_topic(broker, partitions=1)
    path = tmp_path / "items"
    log = PostgresLog()
    good = log.change("c", None, {"id": 1, "name": "a", "note": None, "qty": 1})
    broker.produce(topic, [good, (b'{"id": 2}', b"not json"), (b'{"id": 3}', b'{"op": "z"}')])
    with pytest.raises(EventError) as caught:
        ingest(spark, config(broker, topic, path))
    assert str(caught.value).startswith(f"topic {topic} partition 0 offset 1: ")
    assert not path.exists() or not HudiTable.open(str(path)).completed_commits()
    dead = tmp_path / "dead.jsonl"
    summary = ingest(
        spark, config(broker, topic, path, on_error="skip", dead_letter_path=str(dead))
    )
    assert summary.events_skipped == 2 and summary.batches_committed == 1
    logged = [json.loads(line) for line in dead.read_text().splitlines()]
    assert [(r["partition"], r["offset"]) for r in logged] == [(0, 1), (0, 2)]
    assert "unknown op 'z'" in logged[1]["error"]
    assert table_state(spark, path) == {1: {"id": 1, "name": "a", "note": None, "qty": 1}}
    assert parse_checkpoint(f"{topic},0:3") == load_state(str(path)).offsets


def test_unreachable_broker_and_unknown_topic(spark, broker, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from hudi_sync.debezium import kafka_source
    from tests.kafka_broker import free_port

    path = tmp_path / "items"
    nowhere = IngestConfig.from_options(
        str(path), {}, bootstrap_servers=f"127.0.0.1:{free_port()}", topics=("t",)
    )
    # A port nobody listens on answers nothing for as long as the source asks (10 s by
    # default): the error's text, not the wait, is what is checked.
    with monkeypatch.context() as patch:
        patch.setattr(kafka_source, "METADATA_TIMEOUT_S", 1.0)
        with pytest.raises(BadInputError, match="cannot reach a Kafka broker"):
            ingest(spark, nowhere)
    with pytest.raises(BadInputError, match=r"topic missing\.topic does not exist"):
        ingest(spark, config(broker, "missing.topic", path))
    assert not path.exists()


def test_a_topic_pattern_reads_every_matching_topic(spark, broker, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Two shards' topics by one pattern: both land in the table, and the checkpoint
    holds both topics' offsets."""
    suffix = uuid.uuid4().hex[:6]
    topics = [f"shard{n}.public.items_{suffix}" for n in (1, 2)]
    log = PostgresLog()
    for n, topic in enumerate(topics):
        broker.create_topic(topic, partitions=2)
        row = {"id": n, "name": topic, "note": None, "qty": n}
        broker.produce(topic, [log.change("c", None, row)])
    path = tmp_path / "items"
    config = IngestConfig.from_options(
        str(path),
        {"hoodie.table.name": "items"},
        bootstrap_servers=broker.bootstrap_servers,
        topic_pattern=rf"shard\d\.public\.items_{suffix}",
    )
    summary = ingest(spark, config)
    assert summary.batches_committed == 1
    assert sorted(r["name"] for r in collect_arrow(read(spark, str(path))).to_pylist()) == topics
    assert set(load_state(str(path)).offsets) == set(topics)
    assert summary.checkpoint.count(";") == 1


def test_plain_string_and_opaque_kafka_keys_with_a_record_key(spark, broker, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Topics keyed by plain strings or opaque bytes: with --record-key the key comes from
    the row (``before`` for a delete) and the Kafka key is never parsed; without it the
    unreadable key is a one-line error and nothing is written."""
    from typer.testing import CliRunner

    from hudi_sync.cli.app import app

    topic = new_topic(broker, partitions=3)
    log = PostgresLog(schemas=False)
    keys = {
        1: b"customer-1",  # a plain string
        2: b"\x00\x00\x00\x00\x2a\x91\xfe",  # opaque, yet shaped like Confluent wire format
        3: b"\xff\xfe\x00opaque",  # not even UTF-8
        4: b"4",  # valid JSON, but no record of key fields
        5: b"customer-5",
    }
    rows = {i: {"id": i, "name": f"n{i}", "note": None, "qty": i} for i in range(1, 6)}
    history = [("c", None, rows[i]) for i in (1, 2, 3, 4)]
    history += [("u", rows[1], {**rows[1], "name": "one"}), ("d", rows[2], None)]
    history += [("u", rows[3], {**rows[3], "qty": 33}), ("c", None, rows[5]), ("d", rows[4], None)]
    messages: list[tuple[bytes | None, bytes | None, int]] = []
    for op, before, after in history:
        ident = (after or before or {})["id"]
        messages.append((keys[ident], log.change(op, before, after)[1], ident % 3))
        if op == "d":
            messages.append((keys[ident], None, ident % 3))  # the Kafka tombstone
    broker.produce(topic, messages)
    path = tmp_path / "items"
    runner = CliRunner()
    args = ["ingest", "debezium", "--table-path", str(path), "--topic", topic]
    args += ["--bootstrap-servers", broker.bootstrap_servers, "--json"]
    refused = runner.invoke(app, args)
    assert refused.exit_code == 2, refused.output
    line = refused.stderr.strip()
    assert "\n" not in line and line.startswith(f"error: topic {topic} partition ")
    assert "--record-key" in line
    assert not path.exists() or not HudiTable.open(str(path)).completed_commits()
    result = runner.invoke(app, [*args, "--record-key", "id"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["events_read"] == len(messages)
    expected = final_state(history)
    stored = collect_arrow(read(spark, str(path)))
    assert expected == {1: {**rows[1], "name": "one"}, 3: {**rows[3], "qty": 33}, 5: rows[5]}
    assert rows_of(stored) == expected
    assert rows_of(hudi_rs_rows(str(path))) == expected
    assert sorted(stored.column("_hoodie_record_key").to_pylist()) == ["1", "3", "5"]
