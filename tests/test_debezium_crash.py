"""An ingest process killed (no cleanup, exit by ``os._exit``) at each step of a batch,
then restarted: no event lost or applied twice, offsets at the end of the topic, the
warehouse view equal to the database. Merge-on-Read tables (compacting every second
deltacommit here) are also killed while the inline compaction runs: the deltacommit
before it holds the batch and its offsets, and the next run finishes the compaction."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest

from hudi_sync.debezium.ingest import IngestConfig, ingest
from hudi_sync.debezium.state import load_state
from hudi_sync.spark import read
from hudi_sync.spark.compat import collect_arrow
from hudi_sync.table import HudiTable
from hudi_sync.table.write.compaction import pending_compactions
from tests.debezium_events import final_state
from tests.test_debezium_events import _history
from tests.test_debezium_ingest import COW, MOR, config, rows_of, table_state

CHILD = textwrap.dedent(
    """
    import functools, os, sys
    from hudi_sync.debezium import ingest as ingest_module
    from hudi_sync.debezium.ingest import writes as writes_module
    from hudi_sync.debezium.kafka_source import KafkaSource
    from hudi_sync.spark import local_session
    from hudi_sync.spark.writing import writer as writer_module
    from hudi_sync.table.write.timeline import TimelineWriter
    from hudi_sync.warehouse.duckdb import DuckDBTarget
    from tests.test_debezium_crash import crash_config

    servers, topic, path, step, table_type = sys.argv[1:6]

    def die(*args, **kwargs):
        os._exit(9)

    if step == "before-write":  # Arrow rows (write_arrow) or a DataFrame (write)
        writes_module.write = die
        writes_module.write_arrow = die
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
    elif step == "during-compaction":  # the deltacommit completed, the compaction
        executor = writer_module.spark_executor  # planned, half its files written

        def half_then_die(spark):
            run = executor(spark)

            def partly(operations, job):
                assert operations
                run(operations[: max(1, len(operations) // 2)], job)
                die()

            return partly

        writer_module.spark_executor = half_then_die
        in_process = writer_module.run_in_process  # the bucket index's, in this process

        def half_in_process(operations, job):
            assert operations
            in_process(operations[: max(1, len(operations) // 2)], job)
            die()

        writer_module.run_in_process = half_in_process

    class Broker:
        bootstrap_servers = servers

    from pathlib import Path
    config = crash_config(Broker, topic, Path(path), table_type)
    # As the CLI does: the session is started by the first batch that needs Spark (one
    # written as Arrow rows needs none).
    ingest_module.ingest(functools.cache(lambda: local_session("child", cores=1)), config)
    os._exit(0)
    """
)


def crash_config(broker: Any, topic: str, path: Path, table_type: str) -> IngestConfig:
    """Merge-on-Read: a compaction after every second deltacommit, so the batch the
    child writes (the second) is compacted inline."""
    options = {"hoodie.compact.inline.max.delta.commits": "2"} if table_type == MOR else {}
    return config(broker, topic, path, table_type, options=options)


STEPS = [(step, COW) for step in ("before-write", "during-write", "after-commit", "during-sync")]
# Merge-on-Read differs where files are written: log files and the compaction.
STEPS += [(step, MOR) for step in ("during-write", "after-commit", "during-compaction")]


@pytest.mark.parametrize(("step", "table_type"), STEPS)
def test_killed_at_each_step_resumes_exactly_once(  # type: ignore[no-untyped-def]
    spark, broker, tmp_path, step, table_type
) -> None:
    messages, model = _history(seed=11, events=600, keys=80)
    topic = f"pg.public.items_{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, partitions=3)
    broker.produce(topic, messages[:300])
    path = tmp_path / "items"
    ingest(spark, crash_config(broker, topic, path, table_type))  # batch 1 committed normally
    broker.produce(topic, messages[300:])
    child = subprocess.run(
        [sys.executable, "-c", CHILD, broker.bootstrap_servers, topic, str(path), step, table_type],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 9, child.stderr[-3000:]
    table = HudiTable.open(str(path))
    committed = len(table.completed_commits())
    batch_committed = step in ("after-commit", "during-sync", "during-compaction")
    # after-commit on Merge-on-Read: the deltacommit, then the compaction it triggered
    assert committed == (1 + batch_committed + (step == "after-commit" and table_type == MOR))
    if step == "during-compaction":
        # The batch is in the deltacommit; readers merge it beside the pending plan.
        assert pending_compactions(table)
        assert rows_of(collect_arrow(read(spark, str(path)))) == final_state(model)
    summary = ingest(spark, crash_config(broker, topic, path, table_type))  # the restart
    assert summary.batches_committed == (0 if batch_committed else 1)
    assert table_state(spark, path) == final_state(model)  # includes the DuckDB view (COW)
    assert load_state(str(path)).offsets == {topic: broker.end_offsets(topic)}
    table = HudiTable.open(str(path))
    assert not table.timeline.pending
    if table_type == MOR:  # compacted once, whether the crash came before or during it
        actions = [i.action for i in table.completed_commits()]
        assert actions == ["deltacommit", "deltacommit", "commit"]
