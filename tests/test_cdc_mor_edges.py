"""CDC queries on Merge-on-Read tables (the LOG_FILE case) where a hand-written replay
goes wrong: late events that lose, later writes of the same keys, deletes in delete
blocks and in data blocks, log files rolled over within one deltacommit, an inline
compaction, under event-time and commit-time ordering, in every logging mode.

The model is the definition: a change is emitted exactly when what a snapshot reader
sees changes, with ``before`` what it saw and ``after`` what it sees, taken from the
table core's snapshot reads (time travel, merged by the table's rules) before and after
each commit; those snapshots are checked against hudi-rs where it reads the table."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from hudi_sync import config as cfg
from hudi_sync.spark import read, write
from hudi_sync.table import HudiTable
from hudi_sync.table.cdc.plan import plan_changes
from hudi_sync.table.cdc.read import change_rows
from hudi_sync.table.cdc.splits import InferenceCase
from hudi_sync.table.read.snapshot import read_snapshot
from hudi_sync.table.records.logfile import (
    BlockType,
    HeaderKey,
    encode_avro_block,
    encode_block,
    read_blocks,
)
from tests.test_spark_writer import frame, options
from tests.warehouse_rows import hudi_rs_rows

DATA = ("id", "p", "name", "ts")
CDC_READ = {
    "hoodie.datasource.query.type": "incremental",
    "hoodie.datasource.query.incremental.format": "cdc",
    "hoodie.datasource.read.begin.instanttime": "earliest",
}
BIG = "x" * 400  # rows this wide roll a 1500-byte log file over within one deltacommit
# (operation, rows (id, name, ts, _hoodie_is_deleted)); partition p is "a" for even ids.
STEPS: list[tuple[str, list[tuple[int, str, int, bool]]]] = [
    ("insert", [(i, f"n{i}", 10, False) for i in range(30)]),
    (
        "upsert",
        [
            (1, "late1", 5, False),  # late event: loses under event time
            (2, "new2", 20, False),
            (3, "gone3", 5, True),  # late soft delete: loses under event time
            (4, "gone4", 30, True),  # soft delete that wins
            *[(i, f"{BIG}{i}", 11, False) for i in range(5, 25)],  # rollover
            (40, "n40", 1, False),  # a new key
        ],
    ),
    (
        "upsert",
        [
            (1, "u1b", 15, False),  # event time: before is n1, never late1
            (2, "late2", 12, False),  # loses under event time
            (3, "u3", 40, False),  # event time: an update; commit time: back after delete
            (4, "back4", 31, False),  # back after its delete
            *[(i, f"{BIG}{i}y", 12, False) for i in range(5, 25)],  # rollover again
        ],
    ),  # then an inline compaction (three deltacommits)
    ("delete", [(6, "", 0, False), (7, "", 0, False), (99, "", 0, False)]),
    # After the write, key 8's and key 9's records in its data block are marked
    # _hoodie_is_deleted: deletes carried in a data block (9's is late).
    ("upsert", [(1, "late1b", 2, False), (8, "gone8", 50, False), (9, "gone9", 1, False)]),
]
DATA_BLOCK_DELETES = {"8", "9"}


def _settings(mode: str, ordering: str, version: int, bucket: bool) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.table.cdc.enabled": "true",
        "hoodie.table.cdc.supplemental.logging.mode": mode,
        "hoodie.logfile.max.size": 1500,
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": 3,
    }
    if bucket:  # new keys go to log files too (log-only slices)
        settings |= {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": 2}
    return settings


def _order_by_commit_time(path: Path, version: int) -> None:
    """The table's merge mode set to commit time as each version declares it: Hudi
    0.x's OverwriteWithLatestAvroPayload (version 6), the merge mode (version 8)."""
    if version == 6:
        key, value = (
            cfg.PAYLOAD_CLASS.key,
            "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload",
        )
    else:
        key, value = cfg.RECORD_MERGE_MODE.key, "COMMIT_TIME_ORDERING"
    properties = path / ".hoodie" / cfg.PROPERTIES_FILE
    lines = [line for line in properties.read_text().splitlines() if not line.startswith(f"{key}=")]
    properties.write_text("\n".join([*lines, f"{key}={value}"]) + "\n")


def _mark_deleted_in_data_blocks(path: Path, instant: str, keys: set[str]) -> int:
    """Rewrite the Avro data blocks ``instant`` wrote with ``keys``' records flagged
    ``_hoodie_is_deleted`` (as a writer that keeps deletes in data blocks leaves them);
    returns how many records were flagged."""
    flagged = 0
    for log in path.rglob(".*.log.*"):
        out = b""
        changed = False
        for block in read_blocks(log.read_bytes(), str(log)):
            if block.block_type == BlockType.AVRO_DATA and block.instant_time == instant:
                records = block.avro_records()
                for record in records:
                    if record["_hoodie_record_key"] in keys:
                        record["_hoodie_is_deleted"] = True
                        flagged += 1
                        changed = True
                header = {k: v for k, v in block.header.items() if k != HeaderKey.SCHEMA}
                schema = json.loads(block.header[HeaderKey.SCHEMA])
                out += encode_avro_block(records, schema, header)
            else:
                out += encode_block(block.block_type, block.header, block.content, block.footer)
        if changed:
            log.write_bytes(out)
    return flagged


def _snapshot(path: Path, instant: str | None) -> dict[str, dict[str, Any]]:
    if instant is None:
        return {}
    rows = read_snapshot(HudiTable.open(str(path)), instant).to_pylist()
    return {r["_hoodie_record_key"]: r for r in rows}


def _image(row: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if row is None else {k: row[k] for k in DATA}


def _canonical(op: str, key: str, before: Any, after: Any) -> str:
    return json.dumps([key, op, before, after], sort_keys=True)


def _expected(path: Path, previous: str | None, instant: str) -> Counter[str]:
    """What a snapshot reader sees change at ``instant``: keys that appear, go, or show
    another record (one this commit wrote)."""
    before, after = _snapshot(path, previous), _snapshot(path, instant)
    want: Counter[str] = Counter()
    for key in before.keys() | after.keys():
        old, new = before.get(key), after.get(key)
        if old is None:
            want[_canonical("i", key, None, _image(new))] += 1
        elif new is None:
            want[_canonical("d", key, _image(old), None)] += 1
        elif new["_hoodie_commit_time"] == instant or _image(old) != _image(new):
            want[_canonical("u", key, _image(old), _image(new))] += 1
    return want


def _observed(rows: list[dict[str, Any]]) -> Counter[str]:
    got: Counter[str] = Counter()
    for r in rows:
        before = json.loads(r["before"]) if r["before"] else None
        after = json.loads(r["after"]) if r["after"] else None
        key = str((after or before or {}).get("id"))
        got[_canonical(r["op"], key, _image(before), _image(after))] += 1
    return got


def _changes_of(got: Counter[str], key: int) -> list[tuple[str, Any, Any]]:
    return [
        (op, (b or {}).get("name"), (a or {}).get("name"))
        for text in got.elements()
        for k, op, b, a in [json.loads(text)]
        if k == str(key)
    ]


@pytest.mark.parametrize(
    ("mode", "ordering", "version", "bucket"),
    [
        ("op_key_only", "event", 8, False),
        ("data_before", "event", 6, True),
        ("data_before_after", "event", 6, False),
        ("op_key_only", "commit", 6, False),
        ("data_before", "commit", 8, False),
        ("data_before_after", "commit", 8, True),
    ],
)
@pytest.mark.spark4  # format("hudi"): the Python Data Source API
def test_merge_on_read_changes_equal_the_snapshot_model(  # type: ignore[no-untyped-def]
    spark: SparkSession, tmp_path: Path, mode: str, ordering: str, version: int, bucket: bool
) -> None:
    path = tmp_path / "t"
    settings = _settings(mode, ordering, version, bucket)
    instants: list[str] = []
    compactions: list[str] = []
    for number, (operation, rows) in enumerate(STEPS):
        records = [
            {"id": i, "p": "a" if i % 2 == 0 else "b", "name": name, "ts": ts}
            for i, name, ts, _ in rows
        ]
        flags = {i: deleted for i, _, _, deleted in rows}
        df = frame(spark, records, False)
        df = df.selectExpr(
            "*",
            f"id in ({','.join(str(i) for i, f in flags.items() if f) or 'null'})"
            " as _hoodie_is_deleted",
        )
        result = write(df, str(path), options("t", version, operation, **settings))
        instants.append(result.instant)
        compactions += result.compactions
        if number == 0 and ordering == "commit":
            _order_by_commit_time(path, version)
    assert compactions, "the sequence wants an inline compaction"
    assert _mark_deleted_in_data_blocks(path, instants[-1], DATA_BLOCK_DELETES) == 2

    table = HudiTable.open(str(path))
    plan = plan_changes(table, "earliest")
    assert [i.requested_time for i in plan.instants] == instants
    # Rollover: a deltacommit wrote several log files to one file group.
    rolled = table.timeline.commit_metadata(plan.instants[1]).write_stats
    groups = Counter((s.partition_path, s.file_id) for s in rolled if s.file_name.startswith("."))
    assert max(groups.values()) >= 2
    assert sum(s.case is InferenceCase.LOG_FILE for s in plan.splits) >= 4

    everything: Counter[str] = Counter()
    later: Counter[str] = Counter()  # after the first commit's inserts
    previous = None
    for instant in instants:
        want = _expected(path, previous, instant)
        splits = [s for s in plan.splits if s.instant == instant]
        got = _observed(change_rows(table.location, splits).to_pylist())
        assert got == want, instant
        everything += want
        if previous is not None:
            later += want
        previous = instant
    # The edges happened, and the model says what Hudi's merge says.
    late_then_newer = _changes_of(later, 1)
    if ordering == "event":
        assert late_then_newer == [("u", "n1", "u1b")]
        assert _changes_of(later, 3) == [("u", "n3", "u3")]
        assert _changes_of(later, 2) == [("u", "n2", "new2")]
        assert _changes_of(later, 9)[-1] == ("u", f"{BIG}9", f"{BIG}9y")  # late delete
    else:
        assert late_then_newer == [
            ("u", "n1", "late1"),
            ("u", "late1", "u1b"),
            ("u", "u1b", "late1b"),
        ]
        assert _changes_of(later, 3) == [("d", "n3", None), ("i", None, "u3")]
        assert _changes_of(later, 9)[-1] == ("d", f"{BIG}9y", None)
    assert _changes_of(later, 4) == [("d", "n4", None), ("i", None, "back4")]
    assert _changes_of(later, 8)[-1] == ("d", f"{BIG}8y", None)
    assert _changes_of(later, 99) == []
    # Each rolled-over change once.
    assert _changes_of(later, 10) == [
        ("u", "n10", f"{BIG}10"),
        ("u", f"{BIG}10", f"{BIG}10y"),
    ]

    # Spark: read(), the whole range at once; format("hudi") serves the same plan through
    # the Python Data Source API's worker processes (seconds a query), proven on the two
    # bucket-index cases, one of each table version.
    through_read = read(spark, str(path), CDC_READ).collect()
    assert _observed([r.asDict() for r in through_read]) == everything
    if bucket:
        through_format = spark.read.format("hudi").options(**CDC_READ).load(str(path)).collect()
        assert _observed([r.asDict() for r in through_format]) == everything

    # The model's snapshots are hudi-rs's where hudi-rs reads the table as Hudi does
    # (it has no data-block deletes: the last commit is left out).
    for instant in instants[:-1]:
        ours = {k: _image(r) for k, r in _snapshot(path, instant).items()}
        theirs = {
            r["_hoodie_record_key"]: _image(r)
            for r in hudi_rs_rows(str(path), as_of=instant).to_pylist()
        }
        assert ours == theirs, instant


def test_a_small_merge_on_read_cdc_query_is_sized_and_read_on_the_driver(  # type: ignore[no-untyped-def]
    spark: SparkSession, tmp_path: Path, monkeypatch
) -> None:
    """A deltacommit's changes are read from its file group's slice, whose files the
    plan sizes: a small Merge-on-Read CDC query is read on the driver (no Python
    workers to start) and equals the workers' read of the same plan."""
    from hudi_sync.spark.reading import reader

    path = tmp_path / "t"
    settings = {"hoodie.table.cdc.enabled": "true", cfg.WRITE_TABLE_TYPE.key: "MERGE_ON_READ"}
    for version in range(3):
        rows = [{"id": i, "p": "ab"[i % 2], "name": f"v{version}", "ts": version} for i in range(6)]
        write(frame(spark, rows, False), str(path), options("t", 8, "upsert", **settings))
    plan = plan_changes(HudiTable.open(str(path)), "earliest")
    logs = [s for s in plan.splits if s.case is InferenceCase.LOG_FILE]
    assert logs
    for split in logs:
        files = [f for f in (split.before_file, *split.log_files) if f is not None]
        assert split.read_bytes == sum(os.path.getsize(path / f) for f in files), split
    assert plan.read_bytes is not None and plan.read_bytes <= reader.DRIVER_READ_MAX_BYTES
    on_driver = [r.asDict() for r in read(spark, str(path), CDC_READ).collect()]
    monkeypatch.setattr(reader, "DRIVER_READ_MAX_BYTES", 0)
    in_workers = [r.asDict() for r in read(spark, str(path), CDC_READ).collect()]
    assert _observed(on_driver) == _observed(in_workers)
    assert Counter(r["op"] for r in on_driver) == {"i": 6, "u": 12}
