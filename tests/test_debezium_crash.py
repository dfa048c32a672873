"""An ingest process killed (no cleanup, exit by ``os._exit``) at each step of a batch,
then restarted: no event lost or applied twice, offsets at the end of the topic, the
warehouse view equal to the database."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from hudi_sync.debezium.ingest import ingest
from hudi_sync.debezium.state import load_state
from hudi_sync.table import HudiTable
from tests.debezium_events import final_state
from tests.test_debezium_events import _history
from tests.test_debezium_ingest import config, table_state

CHILD = textwrap.dedent(
    """
    import os, sys
    from hudi_sync.debezium import ingest as ingest_module
    from hudi_sync.debezium.kafka_source import KafkaSource
    from hudi_sync.spark import local_session
    from hudi_sync.table.write.timeline import TimelineWriter
    from hudi_sync.warehouse.duckdb_target import DuckDBTarget
    from tests.test_debezium_ingest import config

    servers, topic, path, step = sys.argv[1:5]

    def die(*args, **kwargs):
        os._exit(9)

    if step == "before-write":
        ingest_module.write = die
    elif step == "during-write":  # files written, the commit not completed
        TimelineWriter.complete = die
    elif step == "after-commit":  # completed, offsets not told to Kafka, no sync
        KafkaSource.commit_offsets = die
    elif step == "during-sync":  # the batch's sync (the first is the start's catch-up):
        calls = []  # manifest published, warehouse objects not yet
        synced = DuckDBTarget.sync

        def die_in_second(self, *args, **kwargs):
            calls.append(1)
            return die() if len(calls) == 2 else synced(self, *args, **kwargs)

        DuckDBTarget.sync = die_in_second

    class Broker:
        bootstrap_servers = servers

    from pathlib import Path
    ingest_module.ingest(local_session("child", cores=1), config(Broker, topic, Path(path)))
    os._exit(0)
    """
)


@pytest.mark.parametrize("step", ["before-write", "during-write", "after-commit", "during-sync"])
def test_killed_at_each_step_resumes_exactly_once(spark, broker, tmp_path, step) -> None:  # type: ignore[no-untyped-def]
    messages, model = _history(seed=11, events=600, keys=80)
    topic = f"pg.public.items_{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, partitions=3)
    broker.produce(topic, messages[:300])
    path = tmp_path / "items"
    ingest(spark, config(broker, topic, path))  # batch 1 committed normally
    broker.produce(topic, messages[300:])
    child = subprocess.run(
        [sys.executable, "-c", CHILD, broker.bootstrap_servers, topic, str(path), step],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 9, child.stderr[-3000:]
    committed = len(HudiTable.open(str(path)).completed_commits())
    assert committed == (2 if step in ("after-commit", "during-sync") else 1)
    summary = ingest(spark, config(broker, topic, path))  # the restart
    expected_batches = 0 if step in ("after-commit", "during-sync") else 1
    assert summary.batches_committed == expected_batches
    assert table_state(spark, path) == final_state(model)  # includes the DuckDB view
    assert load_state(str(path)).offsets == {topic: broker.end_offsets(topic)}
    assert not HudiTable.open(str(path)).timeline.pending
