"""The column-wise CDC read against the record-by-record one it replaces: the Avro
decoder against fastavro, the JSON images against ``image_json`` (byte for byte), and
whole splits in every logging mode (lookups, parts, fallbacks) against the row path."""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_sync.errors import CorruptTableError
from hudi_sync.storage import open_location
from hudi_sync.table.avro.arrow import (
    AvroDecodeError,
    datum_bounds,
    decode_rows,
    encode_rows,
    length_prefixed,
)
from hudi_sync.table.cdc import read as cdc_read
from hudi_sync.table.cdc.log import (
    CdcChanges,
    CdcMode,
    arrow_rows,
    encode_cdc_file,
    image_json,
    image_json_column,
    read_cdc_columns,
    read_cdc_file,
)
from hudi_sync.table.cdc.read import read_split
from hudi_sync.table.cdc.splits import ChangeSplit, InferenceCase
from hudi_sync.table.config.schema import META_FIELDS, arrow_to_avro_schema
from tests.test_avro_arrow import _random_table


def _fastavro_datums(schema: dict[str, Any], records: list[dict[str, Any]]) -> list[bytes]:
    parsed = fastavro.parse_schema(schema)
    out = []
    for record in records:
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, parsed, record)
        out.append(buffer.getvalue())
    return out


def _decode(schema: dict[str, Any], datums: list[bytes]) -> pa.StructArray | None:
    content = b"".join(len(d).to_bytes(4, "big") + d for d in datums)
    starts, ends = datum_bounds(content, 0, len(datums))
    return decode_rows(schema, content, starts, ends)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_decoding_equals_fastavro_and_reencodes_byte_for_byte(seed: int) -> None:
    table = _random_table(300, seed)
    schema = arrow_to_avro_schema(list(table.schema), "r", "hoodie.r")
    rows = pa.StructArray.from_arrays(
        [c.combine_chunks() for c in table.columns], fields=list(table.schema)
    )
    datums = encode_rows(schema, rows)
    assert datums is not None
    content = length_prefixed(datums)
    starts, ends = datum_bounds(content, 0, len(datums))
    decoded = decode_rows(schema, content, starts, ends)
    assert decoded is not None
    parsed = fastavro.parse_schema(schema)
    expected = [fastavro.schemaless_reader(io.BytesIO(d), parsed, None) for d in datums.to_pylist()]
    assert decoded.to_pylist() == expected
    again = encode_rows(schema, decoded)
    assert again is not None and again.to_pylist() == datums.to_pylist()


def test_enums_decimals_and_named_types_decode_as_fastavro() -> None:
    rng = random.Random(7)
    inner = {
        "type": "record",
        "name": "Inner",
        "namespace": "x.y",
        "fields": [{"name": "v", "type": ["null", "long"]}],
    }
    schema = {
        "type": "record",
        "name": "R",
        "fields": [
            {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}},
            {
                "name": "d",
                "type": [
                    "null",
                    {
                        "type": "fixed",
                        "name": "D",
                        "size": 9,
                        "logicalType": "decimal",
                        "precision": 20,
                        "scale": 3,
                    },
                ],
            },
            {"name": "first", "type": ["null", inner]},
            {"name": "second", "type": ["x.y.Inner", "null"]},
            {"name": "t", "type": {"type": "int", "logicalType": "time-millis"}},
            {"name": "u", "type": {"type": "long", "logicalType": "time-micros"}},
        ],
    }
    records = [
        {
            "e": rng.choice("ABC"),
            "d": None if rng.random() < 0.3 else Decimal(rng.randint(-(10**17), 10**17)).scaleb(-3),
            "first": None if rng.random() < 0.3 else {"v": rng.choice([None, -5, 2**40])},
            "second": None if rng.random() < 0.3 else {"v": 1},
            "t": dt.time(rng.randint(0, 23), 1, 2, 3000),
            "u": dt.time(4, 5, 6, rng.randint(0, 999_999)),
        }
        for _ in range(200)
    ]
    datums = _fastavro_datums(schema, records)
    decoded = _decode(schema, datums)
    assert decoded is not None
    parsed = fastavro.parse_schema(schema)
    expected = [fastavro.schemaless_reader(io.BytesIO(d), parsed, None) for d in datums]
    assert decoded.to_pylist() == expected


@pytest.mark.parametrize(
    "field_type",
    [
        {"type": "array", "items": "long"},
        {"type": "map", "values": "string"},
        ["null", "long", "string"],
        {"type": "string", "logicalType": "uuid"},
        {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2},
    ],
)
def test_types_the_decoder_lacks_return_none(field_type: Any) -> None:
    schema = {"type": "record", "name": "R", "fields": [{"name": "f", "type": field_type}]}
    assert _decode(schema, []) is None


def test_corrupt_datums_are_refused() -> None:
    schema = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "s", "type": "string"}, {"name": "n", "type": "long"}],
    }
    (datum,) = _fastavro_datums(schema, [{"s": "hello", "n": 300}])
    for broken in (datum[:-1], datum + b"\x00", b"\x7f" + datum[1:], b"\x04\xff\xfe" + datum[3:]):
        with pytest.raises(AvroDecodeError):
            _decode(schema, [broken])
    with pytest.raises(AvroDecodeError):
        datum_bounds(b"\x00\x00\x00\x09abc", 0, 1)
    one_byte = b"\x04ab\x02"  # "ab" (zig-zag length 2), then the long 1
    eleven = b"\x04ab" + b"\xff" * 10 + b"\x01"  # a long of 11 bytes after a short one
    assert _decode(schema, [one_byte]).to_pylist() == [{"s": "ab", "n": 1}]
    with pytest.raises(AvroDecodeError, match="longer than 10 bytes"):
        _decode(schema, [one_byte, eleven])


def _tricky_table() -> pa.Table:
    return pa.table(
        {
            "_hoodie_record_key": pa.array(["k1", "k2", "k3", "k4"]),
            "s": pa.array(["plain", 'quote " back \\ slash', "ctl \x00\x1f\n\t\x7f é😀", None]),
            "i": pa.array([0, -(2**63), 2**63 - 1, None], pa.int64()),
            "small": pa.array([1, -1, None, 7], pa.int8()),
            "f": pa.array([1.0, float("nan"), 1e16, None]),
            "g": pa.array([0.1, float("inf"), -0.0, 1.5e-7], pa.float32()),
            "b": pa.array([True, False, None, True]),
            "d": pa.array([dt.date(2020, 1, 2), None, dt.date(1, 1, 1), dt.date(9999, 12, 31)]),
            "ts": pa.array(
                [dt.datetime(2020, 1, 1, 1, 2, 3, 4), None, dt.datetime(1969, 1, 1), None],
                pa.timestamp("us", "UTC"),
            ),
            "local": pa.array([dt.datetime(2020, 1, 1), None, None, None], pa.timestamp("ms")),
            "t": pa.array([dt.time(1, 2, 3), None, dt.time(0, 0, 0, 5), None], pa.time64("us")),
            "dec": pa.array([Decimal("1.50"), Decimal("2.00"), None, Decimal("-3.25")]),
            "raw": pa.array([b"\x00\xff", None, b"", b"abc"]),
            "nested": pa.array(
                [{"a": 1, "b": "x,y"}, None, {"a": None, "b": '"'}, {"a": 2, "b": None}],
                pa.struct([("a", pa.int64()), ("b", pa.string())]),
            ),
            "items": pa.array([[1, 2], None, [], [None]], pa.list_(pa.int64())),
            "tags": pa.array(
                [[("k", "v")], None, [], [("a,b", None)]], pa.map_(pa.string(), pa.string())
            ),
            "span": pa.array([dt.timedelta(days=1, seconds=2), None, None, None]),
            "dict": pa.array(["x", "y", None, "x"]).dictionary_encode(),
        }
    )


def test_image_json_column_equals_image_json_byte_for_byte() -> None:
    table = _tricky_table()
    expected = [image_json(row, META_FIELDS) for row in arrow_rows(table)]
    assert image_json_column(table, META_FIELDS).to_pylist() == expected
    rows = pa.StructArray.from_arrays(
        [c.combine_chunks() for c in table.columns],
        fields=list(table.schema),
        mask=pa.array([False, True, False, False]),
    )
    got = image_json_column(rows, META_FIELDS).to_pylist()
    assert got == [expected[0], None, expected[2], expected[3]]


# -- whole splits: column-wise against row by row -----------------------------------------
DATA = pa.schema([("id", pa.string()), ("p", pa.string()), ("n", pa.int64()), ("x", pa.float64())])


def _base_file(path: Path, instant: str, ids: list[int], version: int) -> None:
    rows = pa.table(
        {
            "_hoodie_commit_time": [instant] * len(ids),
            "_hoodie_commit_seqno": [f"{instant}_{i}" for i in ids],
            "_hoodie_record_key": [f"k{i}" for i in ids],
            "_hoodie_partition_path": ["a"] * len(ids),
            "_hoodie_file_name": [path.name] * len(ids),
            "id": [f"k{i}" for i in ids],
            "p": ["a" if i % 3 else 'q"uote' for i in ids],
            "n": [i * version for i in ids],
            "x": [i / 7 if i % 5 else None for i in ids],
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(rows, path, row_group_size=7)


def _images(ids: list[int | None], version: int) -> pa.StructArray:
    values = [
        None
        if i is None
        else {
            "id": f"k{i}",
            "p": "a" if i % 3 else 'q"uote',
            "n": i * version,
            "x": i / 7 if i % 5 else None,
        }
        for i in ids
    ]
    return pa.array(values, pa.struct(list(DATA)))  # type: ignore[return-value]


@pytest.mark.parametrize("mode", list(CdcMode))
def test_as_is_splits_read_column_wise_equal_the_row_path(tmp_path: Path, mode: CdcMode) -> None:
    old, new = "20240101000000000", "20240102000000000"
    before_ids = list(range(40))
    after_ids = [i for i in before_ids if i % 4] + [100, 101]  # deletes and inserts
    _base_file(tmp_path / "a" / "f1_0-1-0_old.parquet", old, before_ids, 1)
    _base_file(tmp_path / "a" / "f1_0-1-0_new.parquet", new, after_ids, 2)
    changed = [i for i in before_ids if i % 2 == 0] + [100, 101]
    ops = ["i" if i >= 100 else "d" if i % 4 == 0 else "u" for i in changed]
    changes = CdcChanges(
        ops=pa.array(ops),
        keys=pa.array([f"k{i}" for i in changed]),
        before=_images([None if op == "i" else i for op, i in zip(ops, changed, strict=True)], 1),
        after=_images([None if op == "d" else i for op, i in zip(ops, changed, strict=True)], 2),
    )
    avro = arrow_to_avro_schema(list(DATA), "r", "hoodie.r")
    # Two CDC files of the same split: records of both, in order.
    first, second = len(changed) // 3, len(changed)
    for name, (lo, hi) in (("c1", (0, first)), ("c2", (first, second))):
        part = CdcChanges(
            changes.ops[lo:hi], changes.keys[lo:hi], changes.before[lo:hi], changes.after[lo:hi]
        )
        (tmp_path / "a" / f".{name}.cdc").write_bytes(encode_cdc_file(mode, avro, new, part))
    split = ChangeSplit(
        instant=new,
        case=InferenceCase.AS_IS,
        partition_path="a",
        file_id="f1",
        mode=mode.value,
        cdc_files=("a/.c1.cdc", "a/.c2.cdc"),
        before_file="a/f1_0-1-0_old.parquet",
        after_file="a/f1_0-1-0_new.parquet",
    )
    location = open_location(str(tmp_path))
    rows = cdc_read._rows_table(split, cdc_read._split_changes(location, split))
    columns = read_split(location, split)
    assert columns.equals(rows)
    assert columns.num_rows == len(changed)
    assert columns.column("before").null_count == ops.count("i")
    for parts in (2, 3, len(changed) + 2):
        pieces = [
            read_split(location, dataclasses.replace(split, part=k, parts=parts))
            for k in range(parts)
        ]
        assert pa.concat_tables(pieces).equals(rows), parts

    # Decoded one by one, the same records.
    files = [((tmp_path / f).read_bytes(), f) for f in ("a/.c1.cdc", "a/.c2.cdc")]
    decoded = read_cdc_columns(files)
    assert decoded is not None
    assert decoded.to_pylist() == [r for data, where in files for r in read_cdc_file(data, where)]


def test_base_file_cases_and_truncated_logs(tmp_path: Path) -> None:
    _base_file(tmp_path / "a" / "f1_0-1-0_old.parquet", "1", list(range(9)), 1)
    location = open_location(str(tmp_path))
    for case, field in (
        (InferenceCase.BASE_FILE_INSERT, "after_file"),
        (InferenceCase.BASE_FILE_DELETE, "before_file"),
    ):
        split = ChangeSplit("2", case, "a", "f1", **{field: "a/f1_0-1-0_old.parquet"})
        rows = cdc_read._rows_table(split, cdc_read._split_changes(location, split))
        assert read_split(location, split).equals(rows) and rows.num_rows == 9

    avro = arrow_to_avro_schema(list(DATA), "r", "hoodie.r")
    changes = CdcChanges(pa.array(["i"]), pa.array(["k1"]), _images([None], 1), _images([1], 1))
    data = encode_cdc_file(CdcMode.DATA_BEFORE_AFTER, avro, "2", changes)
    (tmp_path / "a" / ".c.cdc").write_bytes(data[:-20])
    split = ChangeSplit("2", InferenceCase.AS_IS, "a", "f1", cdc_files=("a/.c.cdc",))
    with pytest.raises(CorruptTableError, match=r"\.c\.cdc"):
        read_split(location, split)
