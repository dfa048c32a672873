"""``--continuous`` into Merge-on-Read: compactions run beside the ingest, which keeps
committing deltacommits while one is pending and executing; the table reads as the
database after several compactions (our readers and hudi-rs)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from hudi_sync.debezium.ingest import IngestSummary, ingest
from hudi_sync.table import HudiTable
from hudi_sync.table.timeline.instant import Action
from hudi_sync.table.write.compaction import pending_compactions
from tests.debezium_events import final_state
from tests.frames import rows_frame
from tests.test_debezium_ingest import MOR, _history, config, new_topic, table_state


@pytest.mark.parametrize("version", ["6", "8"])
def test_continuous_ingest_commits_while_a_compaction_runs(  # type: ignore[no-untyped-def]
    spark, broker, tmp_path: Path, monkeypatch, version: str
) -> None:
    from hudi_sync.debezium.ingest import compactor as compactor_module

    messages, history = _history(seed=11, events=900, keys=120)
    topic = new_topic(broker)
    broker.produce(topic, [(k, v, i % 3) for i, (k, v) in enumerate(messages)])
    path = tmp_path / "items"
    # The first compaction's files are written only once the ingest has committed two
    # deltacommits while its plan is pending: with a compaction that stalls the ingest,
    # this never happens (the run is stopped at the end of the topic, then it proceeds).
    executing = threading.Event()
    go_on = threading.Event()
    real = compactor_module.run_in_process

    def gated(operations: Any, job: Any) -> Any:
        executing.set()
        go_on.wait(timeout=300)
        return real(operations, job)

    monkeypatch.setattr(compactor_module, "run_in_process", gated)
    beside: list[str] = []  # deltacommits completed while the first compaction was pending
    stop = threading.Event()

    def progress(summary: IngestSummary) -> None:
        if executing.is_set() and not go_on.is_set():
            table = HudiTable.open(str(path))
            assert pending_compactions(table)  # still pending: not finished by the write
            beside.append(summary.instants[-1])
            if len(beside) == 2:
                go_on.set()
        if summary.events_read == len(messages):
            go_on.set()
            stop.set()

    settings = config(
        broker,
        topic,
        path,
        MOR,
        max_events=40,
        continuous=True,
        poll_interval_s=0.05,
        options={
            "hoodie.compact.inline.max.delta.commits": "3",
            "hoodie.write.table.version": version,
        },
    )
    summary = ingest(spark, settings, progress, stop)
    assert len(beside) == 2 and summary.batches_committed >= 20
    table = HudiTable.open(str(path))
    assert not pending_compactions(table)
    compactions = [
        i
        for i in table.timeline.completed_writes
        if i.action == Action.COMMIT and table.timeline.commit_metadata(i).compacted
    ]
    assert compactions
    first = compactions[0].requested_time
    assert all(instant > first for instant in beside)  # their logs joined its slice
    # The same rows by Spark, the table core and hudi-rs.
    assert table_state(spark, path) == final_state(history)


def test_a_dataframe_write_refuses_asynchronous_compaction(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Only the bucket index's Arrow writes name their logs for a pending compaction's
    slice: a DataFrame write asking to leave pending plans alone is refused."""
    from hudi_sync.errors import BadInputError
    from hudi_sync.spark import write

    frame = rows_frame(spark, [(1, "a", 1)], "id int, name string, ts int")
    options = {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.datasource.compaction.async.enable": "true",
    }
    with pytest.raises(BadInputError, match=r"compaction\.async\.enable=true is supported"):
        write(frame, str(tmp_path / "t"), options)
