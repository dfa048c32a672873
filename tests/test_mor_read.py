"""Merge-on-Read snapshot reads (base file + log records merged), checked against hudi-rs.

Every Hudi-written MOR fixture is read at its latest snapshot and as of every completed
instant, and must equal hudi-rs's read row for row (as multisets). Hand-written log
blocks cover what the fixtures do not: out-of-order event times, deletes with ordering
values, deletes then re-inserts, ``_hoodie_is_deleted``, log-only slices, damaged log
files. The merge rules themselves are checked on ``hoodie.properties`` mappings.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_sync import config as cfg
from hudi_sync.errors import CorruptTableError, UnsupportedTableError
from hudi_sync.table import HudiTable
from hudi_sync.table.config.properties import TableConfig
from hudi_sync.table.config.schema import META_FIELDS
from hudi_sync.table.files.fs_view import FileSlice
from hudi_sync.table.read.slice_reader import read_file_slice
from hudi_sync.table.read.snapshot import read_snapshot
from hudi_sync.table.records.log_records import OrderingValue
from hudi_sync.table.records.logfile import BlockType, HeaderKey, encode_avro_block, encode_block
from hudi_sync.table.records.merge import (
    DeleteKey,
    LogEntry,
    MergeMode,
    MergeRules,
    NullOrderingError,
    merge_records,
    merge_rules,
)
from tests import hudi_oracle
from tests.fixture_tables import fixture_tables, without_metadata_table
from tests.test_log_records import _ORDERING_UNION as ORDERING_UNION
from tests.warehouse_rows import canonical, hudi_rs_rows

MOR_TABLES = [t for t in fixture_tables() if "/mor/" in t.name]
KEY = "_hoodie_record_key"
MODEL = "org.apache.hudi.common.model."
EVENT = MergeRules(MergeMode.EVENT_TIME_ORDERING, "ts")
COMMIT = MergeRules(MergeMode.COMMIT_TIME_ORDERING)
SF_PARTITION = "city=san_francisco"


@dataclass(frozen=True)
class Group:
    """The San Francisco file group of a quickstart trips fixture, and how a new log
    file joins its latest slice."""

    fixture: str
    file_id: str
    base_instant: str  # the latest slice's base file's
    name_instant: str  # in a new log file's name
    block_instant: str  # a committed deltacommit, for the blocks' INSTANT_TIME


# Version 8 (EVENT_TIME_ORDERING on ts, a metadata table): 4 base rows, no log file; a
# deltacommit that completed after the base file was written owns the new log file.
V8 = Group(
    "mor/avro/v8_trips_8i3u1d",
    "036ded81-9ed4-479f-bcea-7145dfa0079b-0",
    "20251220210129235",
    "20251220210130911",
    "20251220210130911",
)
# Version 6 (OverwriteWithLatestAvroPayload, no metadata table): log files are named
# after their slice's base instant; the second deltacommit appended one already.
V6 = Group(
    "mor/avro/v6_trips_8i1u",
    "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0",
    "20250331030642808",
    "20250331030642808",
    "20250331030645735",
)


@pytest.fixture(params=MOR_TABLES, ids=[t.id for t in MOR_TABLES])
def mor_path(request: pytest.FixtureRequest, unpack_table: Any) -> Path:
    path: Path = unpack_table(request.param)
    return path


# -- every fixture against hudi-rs ------------------------------------------------------


def test_snapshots_match_hudi_rs_at_every_instant(mor_path: Path) -> None:
    table = HudiTable.open(str(mor_path))
    for as_of in [None, *(i.requested_time for i in table.completed_commits())]:
        for read_optimized in (False, True):
            ours = read_snapshot(table, as_of, read_optimized)
            theirs = hudi_rs_rows(str(mor_path), as_of, read_optimized)
            assert canonical(ours) == canonical(theirs), (as_of, read_optimized)


def test_fixtures_exercise_logs_updates_deletes_and_time_travel(unpack_table: Any) -> None:
    """The comparison above means something: logs change what the snapshot shows."""
    changed = 0
    for fixture in MOR_TABLES:
        table = HudiTable.open(str(unpack_table(fixture)))
        for instant in table.completed_commits():
            merged = read_snapshot(table, instant.requested_time)
            base_only = read_snapshot(table, instant.requested_time, read_optimized=True)
            changed += canonical(merged) != canonical(base_only)
    assert changed >= 5


def test_blocks_after_the_query_instant_are_skipped(unpack_table: Any) -> None:
    # v6 trips 8i1u: the update's log block is in the first commit's slice.
    (fixture,) = [t for t in MOR_TABLES if t.name.endswith("v6_trips_8i1u")]
    table = HudiTable.open(str(unpack_table(fixture)))
    first, second = (i.requested_time for i in table.completed_commits())
    assert any(s.log_files for s in table.file_slices(as_of=first))
    at_first = read_snapshot(table, first)
    assert canonical(at_first) == canonical(read_snapshot(table, first, read_optimized=True))
    assert canonical(read_snapshot(table, second)) != canonical(at_first)


# -- hand-written log blocks in a copied fixture ----------------------------------------


# HoodieDeleteRecordList.avsc (Hudi 0.14-1.0): orderingVal is a union of wrapper records.
_AVRO_MODEL = "org.apache.hudi.avro.model"
_DELETE_FIELDS = [("recordKey", ["null", "string"]), ("partitionPath", ["null", "string"])]
_DELETE_FIELDS.append(("orderingVal", ORDERING_UNION))
_DELETE_RECORD = {
    "type": "record",
    "name": f"{_AVRO_MODEL}.HoodieDeleteRecord",
    "fields": [{"name": n, "type": t} for n, t in _DELETE_FIELDS],
}
_DELETE_LIST = fastavro.parse_schema(
    {
        "type": "record",
        "name": f"{_AVRO_MODEL}.HoodieDeleteRecordList",
        "fields": [
            {"name": "deleteRecordList", "type": {"type": "array", "items": _DELETE_RECORD}}
        ],
    }
)


def _delete_datum(records: list[tuple[str, Any]]) -> bytes:
    """A delete block's datum: ``(key, (wrapper name, value) or None)`` records."""
    out = io.BytesIO()
    entries = [
        {
            "recordKey": key,
            "partitionPath": SF_PARTITION,
            "orderingVal": None
            if ordering is None
            else (f"{_AVRO_MODEL}.{ordering[0]}Wrapper", {"value": ordering[1]}),
        }
        for key, ordering in records
    ]
    fastavro.schemaless_writer(out, _DELETE_LIST, {"deleteRecordList": entries})
    return out.getvalue()


def _delete_block(instant: str, records: list[tuple[str, Any]]) -> bytes:
    datum = _delete_datum(records)
    content = struct.pack(">ii", 3, len(datum)) + datum
    return encode_block(BlockType.DELETE, {HeaderKey.INSTANT_TIME: instant}, content)


_TRIP_FIELDS = [(name, "string") for name in META_FIELDS] + [
    ("ts", "long"),
    *((name, "string") for name in ("uuid", "rider", "driver")),
    ("fare", "double"),
    ("city", "string"),
]
_TRIP_SCHEMA = {
    "type": "record",
    "name": "trips_record",
    "fields": [{"name": n, "type": ["null", t], "default": None} for n, t in _TRIP_FIELDS],
}


def _trip(key: str, ts: int, fare: float, instant: str = V8.block_instant) -> dict[str, Any]:
    meta = [instant, f"{instant}_0_1", key, SF_PARTITION, "file-id"]
    values = [*meta, ts, key, "rider-X", "driver-X", fare, "san_francisco"]
    return dict(zip((name for name, _ in _TRIP_FIELDS), values, strict=True))


def _trip_block(rows: list[dict[str, Any]], instant: str = V8.block_instant) -> bytes:
    return encode_avro_block(rows, _TRIP_SCHEMA, {HeaderKey.INSTANT_TIME: instant})


def _add_log(table_path: Path, blocks: bytes, group: Group = V8) -> Path:
    """A new log file in the latest slice of the San Francisco file group. The metadata
    table, which does not record a hand-written file (Hudi and the table core would not
    see it), is removed: the table is then listed from storage."""
    without_metadata_table(table_path)
    name = f".{group.file_id}_{group.name_instant}.log.9_0-99-99"
    path = table_path / SF_PARTITION / name
    path.write_bytes(blocks)
    return path


def _set_property(table_path: Path, key: str, value: str) -> None:
    properties = table_path / ".hoodie" / cfg.PROPERTIES_FILE
    lines = [line for line in properties.read_text().splitlines() if not line.startswith(f"{key}=")]
    properties.write_text("\n".join([*lines, f"{key}={value}"]) + "\n")


def _fares(table_path: Path) -> dict[str, float]:
    rows = read_snapshot(HudiTable.open(str(table_path))).to_pylist()
    fares = {r[KEY]: r["fare"] for r in rows if r["_hoodie_partition_path"] == SF_PARTITION}
    assert len(fares) == sum(r["_hoodie_partition_path"] == SF_PARTITION for r in rows)
    return fares


def _base_sf(table_path: Path, group: Group = V8) -> dict[str, tuple[int, float]]:
    (base,) = (table_path / SF_PARTITION).glob(f"{group.file_id}_*{group.base_instant}.parquet")
    rows = pq.read_table(base, columns=[KEY, "ts", "fare"]).to_pylist()
    return {r[KEY]: (r["ts"], r["fare"]) for r in rows}


@pytest.mark.parametrize("mode", ["EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"])
def test_written_log_blocks_merge_by_the_tables_mode(fixture_copy: Any, mode: str) -> None:
    path: Path = fixture_copy(V8.fixture)
    _set_property(path, cfg.RECORD_MERGE_MODE.key, mode)
    base = _base_sf(path)
    late, updated, *_ = sorted(base)
    blocks = (
        # an event older than the stored one (a late arrival), written later
        _trip_block([_trip(late, base[late][0] - 1000, 111.0)])
        # a newer event, then a delete whose ordering value is below that event's
        + _trip_block([_trip(updated, base[updated][0] + 1, 222.0)])
        + _delete_block(V8.block_instant, [(updated, ("Long", base[updated][0]))])
        # insert, delete (Hudi's default ordering value: by commit time), re-insert lower
        + _trip_block([_trip("new-key", 5, 5.0)])
        + _delete_block(V8.block_instant, [("new-key", ("Int", 0))])
        + _trip_block([_trip("new-key", 1, 1.0)])
    )
    _add_log(path, blocks)
    fares = _fares(path)
    expected = {k: fare for k, (_, fare) in base.items()}
    if mode == "EVENT_TIME_ORDERING":
        expected.update({updated: 222.0, "new-key": 1.0})  # late event and late delete lose
    else:
        expected.update({late: 111.0, "new-key": 1.0})  # the last write wins
        del expected[updated]
    assert fares == expected


def _late_event_table(fixture_copy: Any, payload: str) -> tuple[Path, str]:
    """The version 6 fixture with ``payload`` and a log record for one key whose event
    time is older than the stored one's; returns the table and that key."""
    path: Path = fixture_copy(V6.fixture)
    _set_property(path, cfg.PAYLOAD_CLASS.key, payload)
    base = _base_sf(path, V6)
    late = sorted(base)[0]
    row = _trip(late, base[late][0] - 1, 1.0, V6.block_instant)
    _add_log(path, _trip_block([row], V6.block_instant), V6)
    return path, late


def test_written_late_events_match_hudi_rs(fixture_copy: Any) -> None:
    """With DefaultHoodieRecordPayload both Hudi and hudi-rs order by event time."""
    path, late = _late_event_table(fixture_copy, MODEL + "DefaultHoodieRecordPayload")
    listed = [name for s in hudi_oracle.slices(str(path)) for name in s["log_files"]]
    assert any(".log.9_" in name for name in listed)  # hudi-rs reads the new log file
    ours = read_snapshot(HudiTable.open(str(path)))
    assert canonical(ours) == canonical(hudi_rs_rows(str(path)))
    assert _fares(path)[late] != 1.0


def test_overwrite_with_latest_payload_orders_by_commit_time(fixture_copy: Any) -> None:
    """Hudi 1.x reads OverwriteWithLatestAvroPayload as COMMIT_TIME_ORDERING: the late
    event, written last, wins; hudi-rs reads the table the same."""
    path, late = _late_event_table(fixture_copy, MODEL + "OverwriteWithLatestAvroPayload")
    ours = canonical(read_snapshot(HudiTable.open(str(path))))
    assert _fares(path)[late] == 1.0
    assert ours == canonical(hudi_rs_rows(str(path)))


def test_blocks_of_uncommitted_writes_are_skipped(fixture_copy: Any) -> None:
    path: Path = fixture_copy(V8.fixture)
    before = _fares(path)
    key = sorted(before)[0]
    pending = "29991231235959999"  # a write that never completed
    _add_log(path, _trip_block([_trip(key, 10**15, 1.0, pending)], pending))
    assert _fares(path) == before


def test_a_log_only_slice_reads_its_log_records(fixture_copy: Any) -> None:
    path: Path = fixture_copy(V8.fixture)
    _add_log(path, _trip_block([_trip("a", 1, 1.0), _trip("b", 2, 2.0), _trip("a", 3, 3.0)]))
    table = HudiTable.open(str(path))
    (full,) = [s for s in table.file_slices() if s.file_id == V8.file_id]
    log_only = FileSlice(full.partition_path, full.file_id, full.base_instant, None, full.log_files)
    schema = pq.read_schema(path / str(full.relative_base_path)).remove_metadata()
    rows = read_file_slice(
        table.location, log_only, EVENT, table.view.is_committed, schema=schema
    ).to_pylist()
    assert sorted((r[KEY], r["fare"]) for r in rows) == [("a", 3.0), ("b", 2.0)]


def test_a_truncated_log_file_is_one_line_naming_it(fixture_copy: Any) -> None:
    path: Path = fixture_copy(V8.fixture)
    log = _add_log(path, _trip_block([_trip("a", 1, 1.0)]) + _trip_block([_trip("b", 2, 2.0)]))
    log.write_bytes(log.read_bytes()[:-40])
    with pytest.raises(CorruptTableError) as caught:
        read_snapshot(HudiTable.open(str(path)))
    message = str(caught.value)
    assert log.name in message and "\n" not in message


def test_an_unknown_log_block_type_is_one_line_naming_the_file(fixture_copy: Any) -> None:
    path: Path = fixture_copy(V8.fixture)
    unknown = encode_block(9, {HeaderKey.INSTANT_TIME: V8.block_instant}, b"\x00\x01")
    log = _add_log(path, _trip_block([_trip("a", 1, 1.0)]) + unknown)
    with pytest.raises(UnsupportedTableError) as caught:
        read_snapshot(HudiTable.open(str(path)))
    message = str(caught.value)
    assert log.name in message and "type 9" in message and "\n" not in message


def test_a_custom_merge_mode_is_refused_before_reading(fixture_copy: Any) -> None:
    path: Path = fixture_copy(V8.fixture)
    _set_property(path, cfg.RECORD_MERGE_MODE.key, "CUSTOM")
    table = HudiTable.open(str(path))
    with pytest.raises(UnsupportedTableError) as caught:
        read_snapshot(table)
    assert str(caught.value) == (
        f"{table.uri}: {cfg.RECORD_MERGE_MODE.key}=CUSTOM: only EVENT_TIME_ORDERING and "
        "COMMIT_TIME_ORDERING are supported"
    )
    assert read_snapshot(table, read_optimized=True).num_rows  # base files need no merge


# The no-meta-fields fixture: records keyed by ``id`` (SimpleKeyGenerator), ordering
# field longField; its byteField=10 file group holds ids 3 and 1.
NO_META = "mor/parquet/v6_simplekeygen_hivestyle_no_metafields"
NO_META_PARTITION = "byteField=10"
NO_META_INSTANT = "20250123001302994"
# A data block of such a table: the bare records, no _hoodie_* field (Hudi's block
# header names the key field; readers rebuild the key with the key generator).
_NO_META_SCHEMA = {
    "type": "record",
    "name": "no_meta_record",
    "fields": [
        {"name": n, "type": ["null", t], "default": None}
        for n, t in (("id", "int"), ("name", "string"), ("longField", "long"), ("byteField", "int"))
    ],
}


def no_meta_block(rows: list[tuple[int, str, int]]) -> bytes:
    """A data block of ``(id, name, longField)`` records in partition byteField=10."""
    records = [{"id": i, "name": n, "longField": o, "byteField": 10} for i, n, o in rows]
    header = {HeaderKey.INSTANT_TIME: NO_META_INSTANT}
    return encode_avro_block(records, _NO_META_SCHEMA, header)


def no_meta_delete_block(keys: list[str]) -> bytes:
    """A delete block of built keys, with Hudi's default ordering value (Int 0)."""
    out = io.BytesIO()
    entries = [
        {
            "recordKey": key,
            "partitionPath": NO_META_PARTITION,
            "orderingVal": (f"{_AVRO_MODEL}.IntWrapper", {"value": 0}),
        }
        for key in keys
    ]
    fastavro.schemaless_writer(out, _DELETE_LIST, {"deleteRecordList": entries})
    datum = out.getvalue()
    content = struct.pack(">ii", 3, len(datum)) + datum
    return encode_block(BlockType.DELETE, {HeaderKey.INSTANT_TIME: NO_META_INSTANT}, content)


def add_no_meta_log(path: Path, blocks: bytes) -> None:
    (base,) = (path / NO_META_PARTITION).glob("*.parquet")
    file_id = base.name.split("_", 1)[0]
    (path / NO_META_PARTITION / f".{file_id}_{NO_META_INSTANT}.log.1_0-99-99").write_bytes(blocks)


# Upserts of a base key and a new one, a late event of the base key, the new key and
# another base key deleted, a third new key inserted, deleted and inserted again.
NO_META_LOG = [
    ("upsert", (1, "Alice-2", 1234567891)),
    ("upsert", (7, "Grace", 5)),
    ("upsert", (1, "Alice-late", 1)),
    ("delete", "7"),
    ("delete", "3"),
    ("upsert", (8, "Heidi", 8)),
    ("delete", "8"),
    ("upsert", (8, "Heidi-2", 2)),
]


def no_meta_blocks() -> bytes:
    return b"".join(
        no_meta_block([item]) if op == "upsert" else no_meta_delete_block([item])  # type: ignore[list-item]
        for op, item in NO_META_LOG
    )


def no_meta_model(base: dict[int, tuple[str, int]], event_time: bool) -> dict[int, tuple[str, int]]:
    """What Hudi's merge gives, written out for these records: the log's records of a
    key fold first, then meet the base row. Commit time: the later one wins. Event time:
    an upsert wins when its longField is at least the other's. These deletes carry
    Hudi's default ordering value (by commit time): they win, and a later upsert wins
    over them."""
    folded: dict[int, tuple[str, int] | None] = {}
    for op, item in NO_META_LOG:
        if op == "delete":
            folded[int(str(item))] = None
            continue
        key, name, ordering = item  # type: ignore[misc]
        old = folded.get(key)
        if not event_time or old is None or ordering >= old[1]:
            folded[key] = (name, ordering)
    rows = dict(base)
    for key, version in folded.items():
        if version is None:
            rows.pop(key, None)
        elif not event_time or key not in rows or version[1] >= rows[key][1]:
            rows[key] = version
    return rows


def _no_meta_rows(rows: pa.Table) -> dict[int, tuple[str, int]]:
    listed = rows.select(["id", "name", "longField"]).to_pylist()
    found = {r["id"]: (r["name"], r["longField"]) for r in listed}
    assert len(found) == len(listed)
    return found


@pytest.mark.parametrize(
    "payload", ["OverwriteWithLatestAvroPayload", "DefaultHoodieRecordPayload"]
)
def test_logs_without_meta_fields_merge_by_the_key_generators_keys(
    fixture_copy: Any, payload: str
) -> None:
    """A table without meta fields: its log records are keyed as its key generator keys
    them (``id``'s value as text) and merged with the base rows by the table's rules."""
    path: Path = fixture_copy(NO_META)
    _set_property(path, cfg.PAYLOAD_CLASS.key, MODEL + payload)
    before = read_snapshot(HudiTable.open(str(path)))
    assert not any(c.startswith("_hoodie") for c in before.column_names)
    add_no_meta_log(path, no_meta_blocks())
    after = read_snapshot(HudiTable.open(str(path)))
    assert after.column_names == before.column_names
    expected = no_meta_model(_no_meta_rows(before), payload == "DefaultHoodieRecordPayload")
    assert _no_meta_rows(after) == expected
    assert expected != _no_meta_rows(before)


# -- the merge itself, on constructed inputs --------------------------------------------

SCHEMA = pa.schema({KEY: pa.string(), "ts": pa.int64(), "v": pa.string()})
SCHEMA = SCHEMA.append(pa.field("_hoodie_is_deleted", pa.bool_())).append(
    pa.field("op", pa.string())
)


def _rows(*rows: tuple[str, int | None, str] | tuple[str, int | None, str, bool]) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {KEY: r[0], "ts": r[1], "v": r[2], "_hoodie_is_deleted": len(r) > 3 and r[3]}
            for r in rows
        ],
        schema=SCHEMA,
    )


def _merged(
    base: pa.Table | None, log: pa.Table, entries: list[LogEntry], rules: MergeRules
) -> dict[str, str]:
    result = merge_records(base, log, entries, rules).to_pylist()
    assert len({r[KEY] for r in result}) == len(result)
    return {r[KEY]: r["v"] for r in result}


def test_event_time_keeps_the_highest_ordering_value_commit_time_the_last_write() -> None:
    base = _rows(("k1", 5, "base"), ("k2", 5, "base"), ("k3", 5, "base"))
    log = _rows(("k1", 3, "late"), ("k2", 9, "new"), ("k2", 4, "later-but-older"), ("k3", 5, "tie"))
    entries: list[LogEntry] = [0, 1, 2, 3]
    assert _merged(base, log, entries, EVENT) == {"k1": "base", "k2": "new", "k3": "tie"}
    assert _merged(base, log, entries, COMMIT) == {
        "k1": "late",
        "k2": "later-but-older",
        "k3": "tie",
    }


def _typed(kind: pa.DataType, *rows: tuple[str, Any, str]) -> pa.Table:
    """Rows of ``SCHEMA`` with the ordering column ``ts`` of type ``kind``."""
    schema = SCHEMA.set(SCHEMA.get_field_index("ts"), pa.field("ts", kind))
    return pa.Table.from_pylist([{KEY: k, "ts": ts, "v": v} for k, ts, v in rows], schema=schema)


def test_a_null_ordering_value_is_hudis_int_zero() -> None:
    """Hudi reads a null ordering value as ``Integer 0`` (``RecordContext
    .getOrderingValue``): in an int column it orders as 0, not lowest."""
    base = _typed(pa.int32(), ("k1", 5, "base"), ("k2", -3, "base"), ("k3", None, "base"))
    base = pa.concat_tables([base, _typed(pa.int32(), ("k4", None, "base"))])
    log = _typed(pa.int32(), ("k1", None, "null"), ("k2", None, "null"), ("k3", -1, "low"))
    log = pa.concat_tables([log, _typed(pa.int32(), ("k4", None, "null"))])
    expected = {"k1": "base", "k2": "null", "k3": "base", "k4": "null"}
    assert _merged(base, log, [0, 1, 2, 3], EVENT) == expected
    # A delete block's int value compares with a null stored value as with 0.
    lower = DeleteKey("k3", OrderingValue("int", -2))
    assert _merged(base, log.slice(0, 0), [lower], EVENT)["k3"] == "base"
    assert "k3" not in _merged(
        base, log.slice(0, 0), [DeleteKey("k3", OrderingValue("int", 2))], EVENT
    )


@pytest.mark.parametrize("kind", [pa.int64(), pa.float64(), pa.string()])
def test_a_null_ordering_value_against_another_class_is_refused(kind: pa.DataType) -> None:
    """Against a long, double or string value Java's ``compareTo`` of ``Integer 0``
    fails, so Hudi's merge fails: the merge refuses in one line naming the column."""
    value = {pa.int64(): 5, pa.float64(): 5.0, pa.string(): "5"}[kind]
    cases = [
        (_typed(kind, ("k", value, "base")), _typed(kind, ("k", None, "null"))),
        (_typed(kind, ("k", None, "base")), _typed(kind, ("k", value, "set"))),
    ]
    for base, log in cases:
        with pytest.raises(NullOrderingError) as refused:
            merge_records(base, log, [0], EVENT)
        assert "ordering field ts" in str(refused.value) and "\n" not in str(refused.value)
        # Two log records of the key meet the same way.
        with pytest.raises(NullOrderingError):
            merge_records(None, pa.concat_tables([base, log]), [0, 1], EVENT)
    # Two nulls are two int 0s: the later record wins; a delete block's long value
    # is of another class than the null's int 0, so the delete wins (no comparison).
    base, log = _typed(kind, ("k", None, "base")), _typed(kind, ("k", None, "null"))
    assert _merged(base, log, [0], EVENT) == {"k": "null"}
    assert _merged(base, log.slice(0, 0), [DeleteKey("k", OrderingValue("long", -9))], EVENT) == {}
    # Commit-time ordering compares nothing.
    assert _merged(_typed(kind, ("k", value, "b")), log, [0], COMMIT) == {"k": "null"}


NAN, NEG_ZERO = float("nan"), -0.0


@pytest.mark.parametrize(
    ("stored", "logged", "log_wins"),
    [
        (1.0, NAN, True),  # NaN is above every double
        (NAN, 1e300, False),
        (NAN, NAN, True),  # and equal to itself: the later record wins the tie
        (0.0, NEG_ZERO, False),  # -0.0 is below 0.0
        (NEG_ZERO, 0.0, True),
        (NEG_ZERO, NEG_ZERO, True),
        (2.0, 1.0, False),
    ],
)
def test_doubles_order_as_javas_double_compare_to(
    stored: float, logged: float, log_wins: bool
) -> None:
    for kind, java in ((pa.float64(), "double"), (pa.float32(), "float")):
        base, log = _typed(kind, ("k", stored, "base")), _typed(kind, ("k", logged, "log"))
        assert _merged(base, log, [0], EVENT) == {"k": "log" if log_wins else "base"}
        # A delete block's value stays deleted unless the stored value is greater.
        delete = DeleteKey("k", OrderingValue(java, logged))
        assert bool(_merged(None, base, [0, delete], EVENT)) is not log_wins


def test_delete_then_reinsert() -> None:
    base = _rows(("k", 10, "base"))
    natural = DeleteKey("k", OrderingValue("int", 0))  # what Spark deletes write
    log = _rows(("k", 1, "again"), ("k", 20, "again-later"))
    assert _merged(base, log, [natural, 0], COMMIT) == {"k": "again"}
    assert _merged(base, log, [0, natural], EVENT) == {}
    assert _merged(base, log, [natural, 1], EVENT) == {"k": "again-later"}
    # Hudi folds the log first: the re-insert replaces the delete, then meets the base
    # record, whose event time is higher, and loses to it. (hudi-rs deletes the key.)
    assert _merged(base, log, [natural, 0], EVENT) == {"k": "base"}
    # A delete with an ordering value: a re-insert below it stays deleted.
    ordered = DeleteKey("k", OrderingValue("long", 15))
    assert _merged(base, log, [ordered, 0], EVENT) == {}
    assert _merged(base, log, [ordered, 1], EVENT) == {"k": "again-later"}
    assert _merged(base, log, [ordered, 0], COMMIT) == {"k": "again"}


def test_a_delete_with_a_lower_ordering_value_loses_under_event_time() -> None:
    base = _rows(("k", 10, "base"))
    empty = _rows()
    lower = DeleteKey("k", OrderingValue("long", 5))
    assert _merged(base, empty, [lower], EVENT) == {"k": "base"}
    assert _merged(base, empty, [lower], COMMIT) == {}
    # Equal ordering values: the delete, written later, wins.
    assert _merged(base, empty, [DeleteKey("k", OrderingValue("long", 10))], EVENT) == {}
    # Hudi compares only values of one class: an int 5 against a long column deletes,
    # and so do a missing ordering value and Hudi's default (int 0).
    for ordering in (OrderingValue("int", 5), None, OrderingValue("int", 0)):
        assert _merged(base, empty, [DeleteKey("k", ordering)], EVENT) == {}, ordering
    # Between log records too: a later delete below the stored update loses.
    log = _rows(("k", 12, "update"))
    assert _merged(base, log, [0, lower], EVENT) == {"k": "update"}
    assert _merged(None, log, [0, lower], EVENT) == {"k": "update"}


def test_is_deleted_records_delete_by_their_own_ordering_value() -> None:
    base = _rows(("k1", 5, "base"), ("k2", 5, "base"))
    log = _rows(("k1", 7, "gone", True), ("k2", 3, "late-delete", True), ("k3", 1, "x", True))
    assert _merged(base, log, [0, 1, 2], EVENT) == {"k2": "base"}
    assert _merged(base, log, [0, 1, 2], COMMIT) == {}


def test_operation_and_delete_marker_fields_mark_deletes() -> None:
    base = _rows(("k1", 5, "base"), ("k2", 5, "base"))
    op = pa.array(["d", None])
    log = _rows(("k1", 6, "marked"), ("k2", 6, "kept")).set_column(4, "op", op)
    marked = MergeRules(MergeMode.EVENT_TIME_ORDERING, "ts", "op", "d")
    assert _merged(base, log, [0, 1], marked) == {"k2": "kept"}
    assert _merged(base, log, [0, 1], EVENT) == {"k1": "marked", "k2": "kept"}
    with_operation = pa.schema([*SCHEMA, ("_hoodie_operation", pa.string())])
    rows = [{KEY: "k1", "ts": 6, "v": "d", "_hoodie_operation": "D"}]
    log = pa.Table.from_pylist(rows, schema=with_operation)
    base = base.append_column("_hoodie_operation", pa.nulls(2, pa.string()))
    assert _merged(base, log, [0], EVENT) == {"k2": "base"}


# -- merge rules from hoodie.properties ------------------------------------------------


_KEYS = {"mode": cfg.RECORD_MERGE_MODE, "payload": cfg.PAYLOAD_CLASS}
_KEYS |= {"strategy": cfg.MERGE_STRATEGY_ID, "ordering": cfg.PRECOMBINE_FIELD}
_KEYS |= {"partial": cfg.PARTIAL_UPDATE_MODE, "delete_field": cfg.MERGE_DELETE_FIELD}
_KEYS |= {"delete_marker": cfg.MERGE_DELETE_MARKER}


def _config(version: int, **props: str) -> TableConfig:
    """A MOR table's properties; ``props`` by the short names of ``_KEYS``."""
    mapping = {_KEYS[k].key: v for k, v in props.items()}
    mapping |= {cfg.TABLE_NAME.key: "t", cfg.TABLE_VERSION_PROPERTY.key: str(version)}
    mapping[cfg.TABLE_TYPE.key] = "MERGE_ON_READ"
    return TableConfig.from_mapping(mapping, "t/.hoodie/hoodie.properties")


@pytest.mark.parametrize(
    ("version", "props", "expected"),
    [
        (6, {"payload": MODEL + "OverwriteWithLatestAvroPayload", "ordering": "ts"}, COMMIT),
        (6, {"payload": MODEL + "DefaultHoodieRecordPayload", "ordering": "ts"}, EVENT),
        (6, {"payload": MODEL + "EventTimeAvroPayload", "ordering": "ts"}, EVENT),
        (6, {"payload": "com.uber.hoodie.common.model.DefaultHoodieRecordPayload"}, COMMIT),
        (6, {"ordering": "ts"}, EVENT),  # Hudi's default payload orders by event time
        (6, {}, COMMIT),  # ... and without an ordering field, by commit time
        (8, {"mode": "EVENT_TIME_ORDERING", "ordering": "ts"}, EVENT),
        (8, {"mode": "commit_time_ordering", "ordering": "ts"}, COMMIT),
        (8, {"strategy": "ce9acb64-bde0-424c-9b91-f6ebba25356d", "ordering": "ts"}, COMMIT),
        (8, {"payload": MODEL + "OverwriteWithLatestAvroPayload", "ordering": "ts"}, COMMIT),
        (8, {"ordering": "ts"}, EVENT),
        (9, {"mode": "EVENT_TIME_ORDERING", "ordering": "ts", "partial": "NONE"}, EVENT),
        (
            9,
            {"mode": "EVENT_TIME_ORDERING", "delete_field": "Op", "delete_marker": "D"},
            MergeRules(MergeMode.COMMIT_TIME_ORDERING, None, "Op", "D"),
        ),
    ],
)
def test_merge_rules_from_table_properties(
    version: int, props: dict[str, str], expected: MergeRules
) -> None:
    assert merge_rules(_config(version, **props)) == expected


@pytest.mark.parametrize(
    ("version", "props", "message"),
    [
        (8, {"mode": "CUSTOM"}, "hoodie.record.merge.mode=CUSTOM: only EVENT_TIME"),
        (6, {"payload": "com.acme.MyPayload"}, "hoodie.compaction.payload.class=com.acme"),
        (8, {"strategy": "1897ef5f-18bc-4557-939c-9d6a8afd1519"}, "strategy.id=1897ef5f"),
        (9, {"mode": "EVENT_TIME_ORDERING", "partial": "IGNORE_DEFAULTS"}, "partial"),
        (9, {"ordering": "a,b"}, "hoodie.table.precombine.field=a,b: merging on several"),
    ],
)
def test_unsupported_merge_rules_are_one_line(
    version: int, props: dict[str, str], message: str
) -> None:
    with pytest.raises(UnsupportedTableError) as caught:
        merge_rules(_config(version, **props), "s3://b/t")
    text = str(caught.value)
    assert text.startswith("s3://b/t: ") and message in text and "\n" not in text


def test_a_delete_field_without_a_marker_is_refused() -> None:
    with pytest.raises(CorruptTableError, match="go together"):
        merge_rules(_config(9, delete_field="Op"))


def test_the_fixtures_merge_rules(unpack_table: Any) -> None:
    rules = {
        t.name.rsplit("/", 1)[-1]: merge_rules(HudiTable.open(str(unpack_table(t))).config)
        for t in MOR_TABLES
    }
    # Version 6 tables name OverwriteWithLatestAvroPayload: commit time in Hudi 1.x.
    assert rules["v6_nonpartitioned"] == COMMIT
    assert rules["v8_trips_8i3u1d"] == EVENT
    assert rules["v9_txns_simple_meta"] == MergeRules(MergeMode.EVENT_TIME_ORDERING, "txn_ts")
