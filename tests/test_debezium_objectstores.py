"""``ingest`` into a table on an object store (moto S3, fake-gcs-server): Debezium events
through the real Kafka-protocol broker, the table, its tombstone side index and its
commits all on the store, the sync hook reading it from there into DuckDB."""

from __future__ import annotations

import random
from pathlib import Path

import duckdb
import hudi
import pyarrow as pa
import pytest

from hudi_sync.debezium.ingest import IngestConfig, ingest
from hudi_sync.debezium.state import FOLDER, load_state
from hudi_sync.errors import BadInputError
from hudi_sync.spark import read
from hudi_sync.spark.compat import collect_arrow
from hudi_sync.table import HudiTable
from tests.debezium_events import final_state
from tests.objectstores import ObjectStore
from tests.test_debezium_ingest import _history, new_topic, rows_of

STORES = ["s3_server", "gcs_server"]


def hudi_rs_rows(uri: str, store: ObjectStore) -> pa.Table:
    table = (
        hudi.HudiTableBuilder.from_base_uri(uri)
        .with_storage_options(store.object_store_options)
        .build()
    )
    return pa.Table.from_batches(table.read(hudi.HudiReadOptions()))


@pytest.mark.parametrize("store_name", STORES)
def test_ingest_into_an_object_store_table_matches_the_database(  # type: ignore[no-untyped-def]
    spark, broker, tmp_path, request, store_name
) -> None:
    """Shuffled delivery over four batches, with deletes and re-creates: the table on
    the store equals the history applied in order, for our reader, hudi-rs and the
    synced view; nothing of the table lands on the local disk."""
    store: ObjectStore = request.getfixturevalue(store_name)
    uri = f"{store.scheme}://{store.make_bucket()}/items"
    messages, model = _history(seed=11, events=800, keys=60)
    assert any(op == "d" for op, _, _ in model)  # the history deletes, so tombstones matter
    shuffled = list(messages)
    random.Random(4).shuffle(shuffled)
    topic = new_topic(broker)
    broker.produce(topic, [(k, v, i % 3) for i, (k, v) in enumerate(shuffled)])
    database = tmp_path / "warehouse.duckdb"
    config = IngestConfig.from_options(
        uri,
        {
            "hoodie.table.name": "items",
            "hoodie.datasource.meta.sync.enable": "true",
            "hoodie.meta.sync.client.tool.class": "duckdb",
            "hoodie.duckdb.sync.database": str(database),
        },
        bootstrap_servers=broker.bootstrap_servers,
        topics=(topic,),
        max_events=-(-len(messages) // 4),
        storage_options=store.storage_options,
    )

    summary = ingest(spark, config)

    assert summary.batches_committed == 4 and summary.events_read == len(messages)
    assert not summary.sync_errors
    expected = final_state(model)
    ours = rows_of(collect_arrow(read(spark, uri, storage_options=store.storage_options)))
    assert ours == expected
    assert rows_of(hudi_rs_rows(uri, store)) == expected
    table = HudiTable.open(uri, store.storage_options)
    with duckdb.connect(str(database), read_only=True) as view:
        view.register_filesystem(table.location.fs)  # the view's files are on the store
        synced = view.sql("SELECT * FROM items").to_arrow_table()
    assert rows_of(synced) == expected and synced.num_rows == len(expected)
    # The Kafka offsets and the tombstone index are on the store, read back from there.
    state = load_state(uri, store.storage_options)
    assert state.offsets == {topic: broker.end_offsets(topic)}
    assert state.tombstone_files
    assert set(state.tombstone_files) <= set(table.location.names(table.location.join(FOLDER)))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["warehouse.duckdb"]
    assert not any(Path.cwd().glob(f"{store.scheme}:*"))


def test_a_dead_letter_file_on_an_object_store_is_refused_before_reading() -> None:
    """Skipped events are appended one by one; object stores cannot append, so the
    option is refused in one line instead of failing at the first bad event."""
    with pytest.raises(BadInputError, match=r"dead\.letter\.path=s3://b/dead\.jsonl: .*local path"):
        IngestConfig.from_options(
            "s3://b/items",
            {"hoodie.streamer.debezium.dead.letter.path": "s3://b/dead.jsonl"},
            bootstrap_servers="127.0.0.1:9",
            topics=("t",),
        )
