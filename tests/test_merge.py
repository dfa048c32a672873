"""One file group's merge (pure pyarrow): ordering rule, deletes, before/after images."""

from __future__ import annotations

import pyarrow as pa

from hudi_sync.spark.writing.merge import DELETE_FLAG, merge_file_group
from hudi_sync.table.config.schema import META_FIELDS

SCHEMA = pa.schema(
    [pa.field(n, pa.string()) for n in META_FIELDS]
    + [pa.field("id", pa.int32()), pa.field("v", pa.string()), pa.field("ts", pa.int64())]
)


def _stored(rows: list[tuple[int, str, int]]) -> pa.Table:
    return pa.table(
        {
            "_hoodie_commit_time": ["c1"] * len(rows),
            "_hoodie_commit_seqno": [f"c1_0_{i}" for i in range(len(rows))],
            "_hoodie_record_key": [str(r[0]) for r in rows],
            "_hoodie_partition_path": [""] * len(rows),
            "_hoodie_file_name": ["old.parquet"] * len(rows),
            "id": pa.array([r[0] for r in rows], pa.int32()),
            "v": [r[1] for r in rows],
            "ts": pa.array([r[2] for r in rows], pa.int64()),
        },
        schema=SCHEMA,
    )


def _incoming(rows: list[tuple[int, str, int, bool]]) -> pa.Table:
    return pa.table(
        {
            "_hoodie_record_key": [str(r[0]) for r in rows],
            "_hoodie_partition_path": [""] * len(rows),
            "id": pa.array([r[0] for r in rows], pa.int32()),
            "v": [r[1] for r in rows],
            "ts": pa.array([r[2] for r in rows], pa.int64()),
            DELETE_FLAG: [r[3] for r in rows],
        }
    )


def test_merge_applies_hudi_ordering_and_reports_each_change() -> None:
    old = _stored([(1, "a", 5), (2, "b", 5), (3, "c", 5), (4, "d", 5)])
    incoming = _incoming(
        [
            (1, "a-tie", 5, False),  # tie: the incoming row wins
            (2, "b-old", 4, False),  # lower ordering value: ignored
            (3, "", 6, True),  # delete that wins by ordering
            (4, "", 1, True),  # delete that loses: the row stays
            (9, "new", 0, False),  # insert
        ]
    )
    result = merge_file_group(
        old,
        incoming,
        SCHEMA,
        instant="c2",
        file_name="new.parquet",
        seqno_prefix="c2_0",
        ordering_field="ts",
    )
    rows = {r["id"]: r for r in result.table.to_pylist()}
    assert {k: (r["v"], r["_hoodie_commit_time"]) for k, r in rows.items()} == {
        1: ("a-tie", "c2"),
        2: ("b", "c1"),
        4: ("d", "c1"),
        9: ("new", "c2"),
    }
    assert rows[2]["_hoodie_commit_seqno"] == "c1_0_1"
    assert {r["_hoodie_file_name"] for r in rows.values()} == {"new.parquet"}
    assert (result.num_inserts, result.num_updates, result.num_deletes) == (1, 1, 1)
    changes = {c.key: c for c in result.changes()}
    assert set(changes) == {"1", "3", "9"}
    new_rows = result.table.to_pylist()
    old_rows = old.to_pylist()
    assert changes["1"].op == "u"
    assert old_rows[changes["1"].before]["v"] == "a"
    assert new_rows[changes["1"].after]["v"] == "a-tie"
    assert changes["3"].op == "d" and old_rows[changes["3"].before]["v"] == "c"
    assert changes["3"].after is None
    assert changes["9"].op == "i" and changes["9"].before is None
    assert new_rows[changes["9"].after]["v"] == "new"


def test_new_nullable_columns_read_as_null_in_old_rows() -> None:
    wider = SCHEMA.append(pa.field("extra", pa.string()))
    result = merge_file_group(
        _stored([(1, "a", 1)]),
        _incoming([(2, "b", 1, False)]).append_column("extra", pa.array(["x"])),
        wider,
        instant="c2",
        file_name="f.parquet",
        seqno_prefix="c2_0",
        ordering_field="ts",
    )
    assert {r["id"]: r["extra"] for r in result.table.to_pylist()} == {1: None, 2: "x"}
