"""Reading the records of MOR log files, checked against hudi-rs on real Hudi tables.

For every MOR fixture with log files and every completed instant, the snapshot merged
here (base Parquet rows keyed by ``_hoodie_record_key``, then the log records applied
in order: a data record upserts its key, a delete removes it) must equal what hudi-rs
reads as of that instant. Synthetic blocks cover what the fixtures do not: uncommitted
and rolled-back blocks, log compaction, the Hudi 1.1 delete schema, bad bytes.
"""

from __future__ import annotations

import io
import struct
from pathlib import Path
from typing import Any

import fastavro
import hudi
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_sync.errors import CorruptTableError, UnsupportedTableError
from hudi_sync.table.files.fs_view import FileSlice
from hudi_sync.table.records.log_records import (
    LogRecord,
    read_log_records,
    read_slice_log_records,
)
from hudi_sync.table.records.logfile import (
    BlockType,
    HeaderKey,
    encode_avro_block,
    encode_block,
    read_blocks,
)
from hudi_sync.table.table import HudiTable
from hudi_sync.table.timeline.instant import comparable_instant
from tests.fixture_tables import fixture_tables

# MOR tables whose slices have log files (v6_empty has none; the no-meta-fields table
# has none and no _hoodie_record_key to key rows by).
MOR_TABLES = [
    t
    for t in fixture_tables()
    if "/mor/" in t.name and not t.name.endswith(("/v6_empty", "_no_metafields"))
]
VALUE_COLUMNS = ("fare", "amount", "doubleField")  # each table's data column to compare
KEY = "_hoodie_record_key"


@pytest.fixture(params=MOR_TABLES, ids=[t.id for t in MOR_TABLES])
def mor_table(request: pytest.FixtureRequest, unpack_table: Any) -> HudiTable:
    path: Path = unpack_table(request.param)
    return HudiTable.open(str(path))


def _log_path(file_slice: FileSlice, name: str) -> str:
    return f"{file_slice.partition_path}/{name}" if file_slice.partition_path else name


def _value_column(table: HudiTable) -> str:
    names = {field["name"] for field in table.avro_schema["fields"]}
    return next(c for c in VALUE_COLUMNS if c in names)


def _merged_snapshot(
    table: HudiTable, as_of: str, column: str, applied: list[LogRecord]
) -> dict[str, Any]:
    """``record key -> column value`` of the snapshot as of ``as_of``, merged here."""
    limit = comparable_instant(as_of)

    def committed(instant: str) -> bool:
        return table.view.is_committed(instant) and comparable_instant(instant) <= limit

    snapshot: dict[str, Any] = {}
    for file_slice in table.file_slices(as_of=as_of):
        rows: dict[str, Any] = {}
        if file_slice.relative_base_path:
            base = pq.read_table(
                table.location.join(file_slice.relative_base_path), columns=[KEY, column]
            )
            rows = dict(
                zip(base.column(KEY).to_pylist(), base.column(column).to_pylist(), strict=True)
            )
        files = [
            (
                bytes(table.location.fs.cat_file(table.location.join(_log_path(file_slice, n)))),
                _log_path(file_slice, n),
            )
            for n in (log.name for log in file_slice.log_files)
        ]
        for record in read_slice_log_records(files, committed):
            applied.append(record)
            if record.is_delete:
                rows.pop(record.key, None)
            else:
                assert record.values is not None
                rows[record.key] = record.values[column]
        snapshot.update(rows)
    return snapshot


def _hudi_rs_snapshot(table: HudiTable, as_of: str, column: str) -> dict[str, Any]:
    options = hudi.HudiReadOptions().with_as_of_timestamp(as_of)
    result = pa.Table.from_batches(hudi.HudiTable(table.uri).read(options))
    return dict(zip(result.column(KEY).to_pylist(), result.column(column).to_pylist(), strict=True))


def test_merged_snapshots_match_hudi_rs(mor_table: HudiTable) -> None:
    column = _value_column(mor_table)
    applied: list[LogRecord] = []
    for instant in mor_table.completed_commits():
        as_of = instant.requested_time
        ours = _merged_snapshot(mor_table, as_of, column, applied)
        assert ours == _hudi_rs_snapshot(mor_table, as_of, column), as_of
    assert applied, "no log record was applied: the fixture no longer exercises logs"
    for record in applied:
        assert record.is_delete == (record.values is None)
        assert record.partition_path is None or isinstance(record.partition_path, str)


def _table(unpack_table: Any, suffix: str) -> HudiTable:
    (match,) = [t for t in MOR_TABLES if t.name.endswith(suffix)]
    return HudiTable.open(str(unpack_table(match)))


def _first_log(table: HudiTable, with_type: int) -> tuple[bytes, str]:
    """The bytes and table-relative path of the first log file with a block of a type."""
    for file_slice in table.view.slices_as_of(None):
        for log in file_slice.log_files:
            path = _log_path(file_slice, log.name)
            data = bytes(table.location.fs.cat_file(table.location.join(path)))
            if any(b.block_type == with_type for b in read_blocks(data, path)):
                return data, path
    raise AssertionError(f"no log file with a block of type {with_type}")


def _all_logs(table: HudiTable) -> list[tuple[bytes, str]]:
    found = []
    for partition, files in table.view.partitions.items():
        for log in files.log_files:
            path = f"{partition}/{log.name}" if partition else log.name
            found.append((bytes(table.location.fs.cat_file(table.location.join(path))), path))
    return found


def test_delete_records_decode_from_real_delete_blocks(unpack_table: Any) -> None:
    table = _table(unpack_table, "v8_trips_8i3u1d")
    deletes = [
        r for data, where in _all_logs(table) for r in read_log_records(data, where) if r.is_delete
    ]
    assert deletes
    for record in deletes:
        assert record.values is None and record.key
        assert record.partition_path and record.partition_path.startswith("city=")


def test_truncated_log_file_names_the_file(unpack_table: Any) -> None:
    table = _table(unpack_table, "v6_trips_8i3d")
    data, where = _first_log(table, BlockType.DELETE)
    for cut in (len(data) - 5, len(data) // 2, 10):
        with pytest.raises(CorruptTableError) as caught:
            read_log_records(data[:cut], where)
        message = str(caught.value)
        assert where in message and "\n" not in message


def _avro_block(instant: str, rows: list[dict[str, Any]], **header: str) -> bytes:
    schema = {
        "type": "record",
        "name": "t_record",
        "fields": [
            {"name": "_hoodie_record_key", "type": "string"},
            {"name": "_hoodie_partition_path", "type": "string"},
            {"name": "v", "type": "int"},
        ],
    }
    full = {HeaderKey.INSTANT_TIME: instant, **{HeaderKey[k]: v for k, v in header.items()}}
    return encode_avro_block(rows, schema, full)


def _row(key: str, value: int) -> dict[str, Any]:
    return {"_hoodie_record_key": key, "_hoodie_partition_path": "p=1", "v": value}


def test_uncommitted_block_is_skipped(unpack_table: Any) -> None:
    table = _table(unpack_table, "v6_trips_8i1u")
    data, where = _first_log(table, BlockType.AVRO_DATA)
    committed = table.view.is_committed
    original = read_log_records(data, where, committed)
    assert original
    pending = "29991231235959999"  # a write that never completed
    assert not committed(pending)
    extended = data + _avro_block(pending, [_row(original[0].key, 1)])
    assert read_log_records(extended, where, committed) == original
    unfiltered = read_log_records(extended, where)
    assert unfiltered[:-1] == original and unfiltered[-1].instant == pending


def test_rollback_block_cancels_earlier_blocks_of_its_target() -> None:
    data = (
        _avro_block("001", [_row("a", 1)])
        + _avro_block("002", [_row("b", 2)])
        + encode_block(
            BlockType.COMMAND,
            {
                HeaderKey.INSTANT_TIME: "003",
                HeaderKey.TARGET_INSTANT_TIME: "002",
                HeaderKey.COMMAND_BLOCK_TYPE: "0",
            },
            b"",
        )
        + _avro_block("004", [_row("b", 4)])
    )
    got = [
        (r.instant, r.key, r.values["v"] if r.values else None) for r in read_log_records(data, "f")
    ]
    assert got == [("001", "a", 1), ("004", "b", 4)]


def test_rollback_in_a_later_file_cancels_real_blocks(unpack_table: Any) -> None:
    table = _table(unpack_table, "v6_nonpartitioned_rollback")
    (file_slice,) = [s for s in table.file_slices() if s.log_files]
    files = [
        (bytes(table.location.fs.cat_file(table.location.join(log.name))), log.name)
        for log in file_slice.log_files
    ]
    targets = {
        b.header[HeaderKey.TARGET_INSTANT_TIME]
        for data, where in files
        for b in read_blocks(data, where)
        if b.block_type == BlockType.COMMAND
    }
    assert targets
    per_file = [r for data, where in files for r in read_log_records(data, where)]
    assert {r.instant for r in per_file} & targets  # each file alone cannot see the rollback
    slice_records = read_slice_log_records(files)
    assert slice_records and not {r.instant for r in slice_records} & targets
    # The timeline agrees: the rolled-back write is not committed.
    assert read_slice_log_records(files, table.view.is_committed) == slice_records


def test_log_compacted_block_replaces_its_instants() -> None:
    data = (
        _avro_block("001", [_row("a", 1)])
        + _avro_block("002", [_row("a", 2), _row("b", 2)])
        + _avro_block("003", [_row("a", 3)])
        # a log compaction of 001 and 002, appended after 003 (multi-writer)
        + _avro_block("004", [_row("a", 2), _row("b", 2)], COMPACTED_BLOCK_TIMES="001,002")
    )
    got = [
        (r.instant, r.key, r.values["v"] if r.values else None) for r in read_log_records(data, "f")
    ]
    assert got == [("004", "a", 2), ("004", "b", 2), ("003", "a", 3)]


def _delete_block(instant: str, datum: bytes, version: int = 3) -> bytes:
    content = struct.pack(">ii", version, len(datum)) + datum
    return encode_block(BlockType.DELETE, {HeaderKey.INSTANT_TIME: instant}, content)


# Hudi's HoodieDeleteRecordList.avsc, written out here independently of the module:
# orderingVal is a union of wrapper records up to Hudi 1.0, an array of it in 1.1.
_WRAPPED = [
    ("Boolean", "boolean"),
    ("Int", "int"),
    ("Long", "long"),
    ("Float", "float"),
    ("Double", "double"),
    ("Bytes", "bytes"),
    ("String", "string"),
    ("Date", {"type": "int", "logicalType": "date"}),
    ("Decimal", {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15}),
    ("TimeMicros", {"type": "long", "logicalType": "time-micros"}),
    ("TimestampMicros", {"type": "long", "logicalType": "timestamp-micros"}),
]
_ORDERING_UNION = [
    "null",
    *(
        {
            "type": "record",
            "name": f"{name}Wrapper",
            "namespace": "org.apache.hudi.avro.model",
            "fields": [{"name": "value", "type": value}],
        }
        for name, value in _WRAPPED
    ),
]
_ORDERING_TYPES = {
    "union": _ORDERING_UNION,
    "array": ["null", {"type": "array", "items": _ORDERING_UNION}],
}


def _delete_datum(schema_kind: str, ordering: Any) -> bytes:
    schema = fastavro.parse_schema(
        {
            "type": "record",
            "name": "HoodieDeleteRecordList",
            "namespace": "org.apache.hudi.avro.model",
            "fields": [
                {
                    "name": "deleteRecordList",
                    "type": {
                        "type": "array",
                        "items": {
                            "type": "record",
                            "name": "HoodieDeleteRecord",
                            "fields": [
                                {"name": "recordKey", "type": ["null", "string"]},
                                {"name": "partitionPath", "type": ["null", "string"]},
                                {"name": "orderingVal", "type": _ORDERING_TYPES[schema_kind]},
                            ],
                        },
                    },
                }
            ],
        }
    )
    out = io.BytesIO()
    record = {"recordKey": "k1", "partitionPath": "p=1", "orderingVal": ordering}
    fastavro.schemaless_writer(
        out,
        schema,
        {
            "deleteRecordList": [
                record,
                {**record, "recordKey": "k2", "partitionPath": None, "orderingVal": None},
            ]
        },
    )
    return out.getvalue()


@pytest.mark.parametrize(
    ("schema_kind", "ordering"),
    [
        ("union", ("org.apache.hudi.avro.model.LongWrapper", {"value": 7})),
        ("union", ("org.apache.hudi.avro.model.StringWrapper", {"value": "x"})),
        ("union", ("org.apache.hudi.avro.model.TimestampMicrosWrapper", {"value": 10**15})),
        ("array", [("org.apache.hudi.avro.model.DecimalWrapper", {"value": b"\x01\x02"})]),
        ("array", [("org.apache.hudi.avro.model.IntWrapper", {"value": 3}), None]),
        ("array", []),
    ],
)
def test_delete_block_schemas_of_each_hudi_version(schema_kind: str, ordering: Any) -> None:
    data = _delete_block("001", _delete_datum(schema_kind, ordering))
    got = [(r.key, r.partition_path, r.is_delete, r.values) for r in read_log_records(data, "f")]
    assert got == [("k1", "p=1", True, None), ("k2", None, True, None)]


def test_bad_delete_blocks_are_refused_with_the_file_name() -> None:
    good = _delete_datum("union", None)
    with pytest.raises(CorruptTableError, match=r"^some/file\.log: delete block does not decode"):
        read_log_records(_delete_block("001", good + b"\x00"), "some/file.log")
    with pytest.raises(CorruptTableError, match=r"^some/file\.log: delete block truncated"):
        read_log_records(
            encode_block(
                BlockType.DELETE,
                {HeaderKey.INSTANT_TIME: "001"},
                struct.pack(">ii", 3, len(good) + 4) + good,
            ),
            "some/file.log",
        )
    with pytest.raises(UnsupportedTableError, match=r"^some/file\.log: delete block version 2"):
        read_log_records(_delete_block("001", good, version=2), "some/file.log")


def test_cdc_blocks_are_skipped_and_hfile_blocks_refused() -> None:
    cdc = _avro_block("001", [_row("a", 1)])
    cdc_block = encode_avro_block(
        [{"op": "i"}],
        {"type": "record", "name": "cdc", "fields": [{"name": "op", "type": "string"}]},
        {HeaderKey.INSTANT_TIME: "002"},
        BlockType.CDC_DATA,
    )
    assert [r.instant for r in read_log_records(cdc + cdc_block, "f")] == ["001"]
    hfile = encode_block(BlockType.HFILE_DATA, {HeaderKey.INSTANT_TIME: "001"}, b"x")
    with pytest.raises(UnsupportedTableError, match=r"^f: HFILE_DATA log blocks are not supported"):
        read_log_records(hfile, "f")


def test_unreadable_parquet_block_names_the_file() -> None:
    block = encode_block(BlockType.PARQUET_DATA, {HeaderKey.INSTANT_TIME: "001"}, b"PAR1xx")
    with pytest.raises(CorruptTableError, match=r"^dir/f\.log: cannot read Parquet log block"):
        read_log_records(block, "dir/f.log")


def test_written_delete_blocks_read_back_with_their_ordering_values() -> None:
    """Writer and reader of delete blocks agree on every wrapper kind (and the natural
    order of a DELETE operation), and the block's trailing size is Hudi's."""
    import datetime as dt
    import decimal
    import struct

    import pyarrow as pa

    from hudi_sync.table.records.log_records import read_log_records
    from hudi_sync.table.write.log_writer import (
        NATURAL_ORDER,
        encode_delete_block,
        ordering_wrapper,
    )

    values = [
        (pa.int64(), 7, "long", 7),
        (pa.int32(), 7, "int", 7),
        (pa.float64(), 1.5, "double", 1.5),
        (pa.string(), "x", "string", "x"),
        (pa.bool_(), True, "boolean", True),
        (pa.date32(), dt.date(1970, 1, 11), "date", 10),
        (
            pa.timestamp("us", "UTC"),
            dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.UTC),
            "timestamp",
            10**6,
        ),
    ]
    deletes = [(f"k{i}", "p", ordering_wrapper(t, v)) for i, (t, v, _, _) in enumerate(values)]
    deletes.append(("natural", "p", NATURAL_ORDER))
    deletes.append(("decimal", "p", ordering_wrapper(pa.decimal128(10, 2), decimal.Decimal("1.5"))))
    block = encode_delete_block(
        deletes, {"type": "record", "name": "r", "fields": []}, "20250101000000000"
    )
    (length,) = struct.unpack(">q", block[6:14])
    assert struct.unpack(">q", block[-8:])[0] == length + 6
    records = read_log_records(block, "test")
    assert [r.key for r in records] == [k for k, _, _ in deletes]
    for record, (_, _, kind, raw) in zip(records, values, strict=False):
        assert record.is_delete and record.ordering is not None
        assert (record.ordering.kind, record.ordering.value) == (kind, raw)
    assert records[-2].ordering is not None and records[-2].ordering.value == 0
    unscaled = int.from_bytes(records[-1].ordering.value, "big", signed=True)  # type: ignore[union-attr]
    assert decimal.Decimal(unscaled).scaleb(-15) == decimal.Decimal("1.5")
