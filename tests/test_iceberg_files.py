"""Iceberg data-file statistics and Avro manifests, read back by pyiceberg.

pyiceberg is the independent reader here: it reads the manifests and manifest lists we
write (by field id), and decodes the bounds we serialize; the bounds must equal the
min/max pyarrow computes over the file's actual rows.
"""

from __future__ import annotations

import datetime as dt
import decimal
import io
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyiceberg.conversions import from_bytes
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import ManifestFile as PyManifestFile
from pyiceberg.manifest import read_manifest_list as py_read_manifest_list
from pyiceberg.types import (
    BooleanType,
    DateType,
    DecimalType,
    IntegerType,
    LongType,
    PrimitiveType,
    StringType,
    TimestampType,
    TimestamptzType,
)

from hudi_sync.errors import CorruptTableError
from hudi_sync.manifest.iceberg.avro_files import (
    ADDED,
    DELETED,
    EXISTING,
    ManifestEntry,
    ManifestFile,
    manifest_file,
    read_manifest,
    read_manifest_list,
    write_manifest,
    write_manifest_list,
)
from hudi_sync.manifest.iceberg.data_files import (
    DELETE_FILE_PATH_ID,
    DELETE_POS_ID,
    DataFile,
    arrow_data_file,
    encode_bound,
    parquet_data_file,
    parquet_data_files,
)
from hudi_sync.manifest.iceberg.parquet_footer import parse_footer
from hudi_sync.storage import open_location
from tests.fixture_tables import FixtureTable, fixture_tables

# --- the schema and plan interfaces (schema.py / partitioning.py), minimal local forms


@dataclass(frozen=True)
class Schema:
    schema_id: int
    fields_json: list[dict[str, Any]]
    last_column_id: int

    def to_json(self) -> dict[str, Any]:
        return {"type": "struct", "schema-id": self.schema_id, "fields": self.fields_json}

    def field_ids(self) -> dict[str, int]:
        return {f["name"]: f["id"] for f in self.fields_json}


@dataclass(frozen=True)
class Plan:
    spec_json: dict[str, Any]
    fields: tuple[tuple[str, str], ...]
    reason: str | None = None


def _iceberg_type(arrow_type: pa.DataType) -> Any:
    """Test-only Arrow -> Iceberg type (primitive types; nested as a struct marker)."""
    simple = {
        pa.bool_(): "boolean",
        pa.int8(): "int",
        pa.int16(): "int",
        pa.int32(): "int",
        pa.int64(): "long",
        pa.float32(): "float",
        pa.float64(): "double",
        pa.string(): "string",
        pa.large_string(): "string",
        pa.binary(): "binary",
        pa.date32(): "date",
    }
    if arrow_type in simple:
        return simple[arrow_type]
    if pa.types.is_timestamp(arrow_type):
        return "timestamptz" if arrow_type.tz else "timestamp"
    if pa.types.is_decimal(arrow_type):
        return f"decimal({arrow_type.precision}, {arrow_type.scale})"
    return {"type": "struct", "fields": []}  # nested: never gets statistics


def schema_of(arrow: pa.Schema) -> Schema:
    fields = [
        {"id": i + 1, "name": f.name, "required": False, "type": _iceberg_type(f.type)}
        for i, f in enumerate(arrow)
    ]
    return Schema(0, fields, len(fields))


def plan_of(schema: Schema, names: list[str]) -> Plan:
    ids = schema.field_ids()
    types = {f["name"]: f["type"] for f in schema.fields_json}
    spec = {
        "spec-id": 0,
        "fields": [
            {"source-id": ids[n], "field-id": 1000 + i, "name": n, "transform": "identity"}
            for i, n in enumerate(names)
        ],
    }
    return Plan(spec, tuple((n, types[n]) for n in names))


UNPARTITIONED = Plan({"spec-id": 0, "fields": []}, ())

_PY_TYPES: dict[str, PrimitiveType] = {
    "boolean": BooleanType(),
    "int": IntegerType(),
    "long": LongType(),
    "string": StringType(),
    "date": DateType(),
    "timestamp": TimestampType(),
    "timestamptz": TimestamptzType(),
}


def py_type(iceberg_type: str) -> PrimitiveType:
    if iceberg_type.startswith("decimal("):
        precision, scale = iceberg_type[8:-1].split(",")
        return DecimalType(int(precision), int(scale))
    return _PY_TYPES[iceberg_type]


def expected_bound(column: pa.ChunkedArray, which: str) -> Any:
    """pyarrow's min or max of a column, as pyiceberg's ``from_bytes`` represents it."""
    if pa.types.is_timestamp(column.type):
        column = column.cast(pa.timestamp("us", column.type.tz)).cast(pa.int64())
    if pa.types.is_date32(column.type):
        column = column.cast(pa.int32())
    if pa.types.is_string(column.type):
        # pyarrow orders strings by their UTF-8 bytes, as Iceberg does
        column = column.cast(pa.binary())
        value = pc.min_max(column)[which].as_py()
        return value.decode("utf-8")
    return pc.min_max(column)[which].as_py()


BOUNDED = ("boolean", "int", "long", "string", "date", "timestamp", "timestamptz")


def assert_stats(file: Any, rows: pa.Table, schema: Schema, has_sizes: bool = True) -> None:
    """A pyiceberg DataFile's (or ours') statistics against the rows of the file."""
    assert file.record_count == rows.num_rows
    bounded = 0
    for field in schema.fields_json:
        field_id, name, iceberg_type = field["id"], field["name"], field["type"]
        column = rows.column(name)
        if not isinstance(iceberg_type, str):
            assert field_id not in file.value_counts
            assert field_id not in file.lower_bounds
            continue
        assert file.value_counts[field_id] == rows.num_rows
        assert file.null_value_counts[field_id] == column.null_count
        if has_sizes:
            assert file.column_sizes[field_id] > 0
        eligible = iceberg_type in BOUNDED or iceberg_type.startswith("decimal(")
        if not eligible or column.null_count == len(column):
            assert field_id not in file.lower_bounds, (name, iceberg_type)
            assert field_id not in file.upper_bounds, (name, iceberg_type)
            continue
        kind = py_type(iceberg_type)
        lower = from_bytes(kind, file.lower_bounds[field_id])
        upper = from_bytes(kind, file.upper_bounds[field_id])
        assert (lower, upper) == (
            expected_bound(column, "min"),
            expected_bound(column, "max"),
        ), name
        bounded += 1
    assert bounded > 0


def pyiceberg_entries(tmp_path: Path, manifest: ManifestFile, data: bytes, listed: bytes) -> Any:
    """What pyiceberg reads of a manifest list naming one manifest (both local files)."""
    Path(manifest.path).write_bytes(data)
    list_path = tmp_path / "snap.avro"
    list_path.write_bytes(listed)
    io_ = PyArrowFileIO()
    (read,) = list(py_read_manifest_list(io_.new_input(str(list_path))))
    return read, read.fetch_manifest_entry(io_, discard_deleted=False)


# --- every fixture base file --------------------------------------------------------


def _base_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.parquet") if ".hoodie" not in p.parts)


@pytest.mark.parametrize("fixture", fixture_tables(), ids=lambda t: t.id)
def test_fixture_base_files_read_back_by_pyiceberg(
    fixture: FixtureTable, unpack_table: Any, tmp_path: Path
) -> None:
    """Every fixture base file's footer statistics, through a manifest pyiceberg reads:
    counts equal the rows', bounds equal pyarrow's min/max of each column, and float,
    double, binary and nested columns have none."""
    root = unpack_table(fixture)
    files = _base_files(root)
    if not files:
        assert fixture.id.endswith("empty") or "mor" in fixture.id
        return
    location = open_location(str(root))
    by_schema: dict[pa.Schema, list[Path]] = {}
    for path in files:
        by_schema.setdefault(pq.read_schema(path), []).append(path)
    for arrow_schema, paths in by_schema.items():
        schema = schema_of(arrow_schema)
        entries = [
            ManifestEntry(
                ADDED,
                None,
                None,
                None,
                parquet_data_file(location, str(p.relative_to(root)), schema, ()),
            )
            for p in paths
        ]
        data = write_manifest(entries, schema, UNPARTITIONED, 0)
        manifest = manifest_file(str(tmp_path / "m0.avro"), data, entries, UNPARTITIONED, 0, 7, 42)
        listed = write_manifest_list([manifest], 42, None, 7)
        _, read = pyiceberg_entries(tmp_path, manifest, data, listed)
        assert [e.data_file.file_path for e in read] == [str(p) for p in paths]
        for entry, path in zip(read, paths, strict=True):
            assert entry.data_file.file_size_in_bytes == path.stat().st_size
            assert (entry.sequence_number, entry.file_sequence_number) == (7, 7)
            assert entry.snapshot_id == 42
            assert_stats(entry.data_file, pq.read_table(path), schema)


@pytest.mark.parametrize("threads", [1, 4])
def test_batch_of_footers_equals_one_by_one(tmp_path: Path, threads: int) -> None:
    """``parquet_data_files`` gives, in the items' order, what ``parquet_data_file``
    gives file by file, though files of different footer schemas alternate (the same
    column at another leaf, another type, more row groups): nothing derived from one
    footer's schema is applied to another's, in a batch or across calls with one
    schema. A bad file in the batch is one line."""
    layouts = [
        TRICKY,
        TRICKY.select(["count", "text", "amount", "day"]),
        TRICKY.select(["text", "count"]).cast(
            pa.schema([("text", pa.string()), ("count", pa.string())])
        ),
    ]
    names = []
    for i in range(9):
        rows = layouts[i % len(layouts)].slice(i % 3)
        _write(rows, tmp_path / f"f{i}.parquet", row_group_size=2 if i % 2 else None)
        names.append(f"f{i}.parquet")
    location = open_location(str(tmp_path))
    schema = schema_of(TRICKY.schema)
    items = [(name, (i,)) for i, name in enumerate(names)]
    batch = parquet_data_files(location, items, schema, threads=threads)
    # File by file, each with a schema object of its own: nothing kept from another file.
    alone = [parquet_data_file(location, n, schema_of(TRICKY.schema), p) for n, p in items]
    assert batch == alone
    assert [parquet_data_file(location, n, schema, p) for n, p in items] == alone
    assert [f.partition for f in batch] == [(i,) for i in range(9)]
    count_id = schema.field_ids()["count"]
    assert count_id in batch[1].lower_bounds and count_id not in batch[2].lower_bounds
    (tmp_path / "bad.parquet").write_bytes(b"PAR1" + b"\x00" * 20 + b"PAR1")
    with pytest.raises(CorruptTableError) as failure:
        parquet_data_files(location, [*items, ("bad.parquet", (9,))], schema, threads=threads)
    _one_line(failure, str(tmp_path / "bad.parquet"))
    with pytest.raises(CorruptTableError, match="inside its table"):
        parquet_data_files(location, [*items, ("../bad.parquet", (9,))], schema, threads=threads)


# --- tricky values ----------------------------------------------------------------

TRICKY = pa.table(
    {
        # UTF-8 byte order: U+FFFD < U+1F600 (UTF-16 code units would order them reversed)
        "text": pa.array(["é", "z", "\ufffd", "\U0001f600", None, "A", "Ωmega"]),
        "amount": pa.array(
            [decimal.Decimal(v) for v in ("-12.50", "3.25", "-0.01", "0", "99.99", "-99.99")]
            + [None],
            pa.decimal128(6, 2),
        ),
        "day": pa.array(
            [dt.date(1969, 12, 31), dt.date(1900, 1, 1), dt.date(2024, 2, 29)] * 2 + [None],
            pa.date32(),
        ),
        "at_utc": pa.array(
            [dt.datetime(1960, 5, 1, 1, 2, 3, 4, tzinfo=dt.UTC)] * 3
            + [dt.datetime(2030, 1, 1, tzinfo=dt.UTC)] * 4,
            pa.timestamp("us", tz="UTC"),
        ),
        "at_local": pa.array(
            [dt.datetime(1969, 12, 31, 23, 59, 59, 999999), None] * 3 + [None],
            pa.timestamp("us"),
        ),
        "at_millis": pa.array(
            [dt.datetime(2001, 1, 1, 0, 0, 0, 123000)] * 6 + [dt.datetime(1999, 1, 1)],
            pa.timestamp("ms"),
        ),
        "small": pa.array([-128, 127, 0, None, 5, -5, 1], pa.int8()),
        "count": pa.array([-(2**63), 2**63 - 1, 0, 1, 2, 3, 4], pa.int64()),
        "flag": pa.array([False, None, False, False, False, False, True]),
        "ratio": pa.array([1.5, float("nan"), -2.0, None, 0.0, 3.0, 1.0]),
        "score": pa.array([1.5, 2.5, -2.0, None, 0.0, 3.0, 1.0], pa.float32()),
        "blob": pa.array([b"\xff", b"\x00", None, b"a", b"b", b"c", b"d"]),
        "empty": pa.array([None] * 7, pa.string()),
        "nested": pa.array([{"a": 1}] * 7),
    }
)


def _write(rows: pa.Table, path: Path, **options: Any) -> None:
    pq.write_table(rows, path, **options)


@pytest.mark.parametrize("row_group_size", [None, 2])
def test_tricky_values_bounds(tmp_path: Path, row_group_size: int | None) -> None:
    """Non-ASCII strings, negative decimals, dates before 1970, timestamps with and
    without a zone and in milliseconds, the extremes of int8 and int64: pyiceberg decodes
    the bounds of the footer (one or several row groups, one of them all-null in some
    columns) and of the rows to pyarrow's min/max; NaN/float, binary, all-null and
    nested columns get none."""
    _write(TRICKY, tmp_path / "t.parquet", row_group_size=row_group_size)
    schema = schema_of(TRICKY.schema)
    location = open_location(str(tmp_path))
    footer = parquet_data_file(location, "t.parquet", schema, ())
    rows = arrow_data_file(TRICKY, str(tmp_path / "t.parquet"), 123, schema, ())
    assert rows.size == 123 and not rows.column_sizes
    for file, has_sizes in ((footer, True), (rows, False)):
        stats = _py_data_file(tmp_path, file, schema)
        assert_stats(stats, TRICKY, schema, has_sizes=has_sizes)
    assert footer.lower_bounds == rows.lower_bounds
    assert footer.upper_bounds == rows.upper_bounds


def _py_data_file(tmp_path: Path, file: DataFile, schema: Schema) -> Any:
    entries = [ManifestEntry(ADDED, None, None, None, file)]
    data = write_manifest(entries, schema, UNPARTITIONED, file.content)
    manifest = manifest_file(
        str(tmp_path / "m.avro"), data, entries, UNPARTITIONED, file.content, 3, 9
    )
    _, (entry,) = pyiceberg_entries(
        tmp_path, manifest, data, write_manifest_list([manifest], 9, 8, 3)
    )
    return entry.data_file


def test_no_bounds_where_the_file_type_is_not_the_schema_type(tmp_path: Path) -> None:
    """An evolved column (int in the file, long in the schema; a zone the schema lacks;
    another decimal scale) keeps its counts and loses its bounds."""
    rows = pa.table(
        {
            "n": pa.array([1, 2], pa.int32()),
            "at": pa.array([1, 2], pa.timestamp("us", tz="UTC")),
            "d": pa.array([decimal.Decimal("1.5"), None], pa.decimal128(5, 1)),
            "s": pa.array(["a", "b"]),
        }
    )
    _write(rows, tmp_path / "e.parquet")
    schema = Schema(
        1,
        [
            {"id": 1, "name": "n", "required": False, "type": "long"},
            {"id": 2, "name": "at", "required": False, "type": "timestamp"},
            {"id": 3, "name": "d", "required": False, "type": "decimal(5, 2)"},
            {"id": 4, "name": "s", "required": False, "type": "string"},
            {"id": 5, "name": "gone", "required": False, "type": "string"},
        ],
        5,
    )
    for file in (
        parquet_data_file(open_location(str(tmp_path)), "e.parquet", schema, ()),
        arrow_data_file(rows, "x", 1, schema, ()),
    ):
        assert file.value_counts == {1: 2, 2: 2, 3: 2, 4: 2}
        assert file.null_counts == {1: 0, 2: 0, 3: 1, 4: 0}
        assert set(file.lower_bounds) == set(file.upper_bounds) == {4}


def test_position_delete_file_stats() -> None:
    """A position delete file's stats are keyed by the spec's reserved field ids."""
    rows = pa.table(
        {"file_path": ["s3://b/t/p/f.parquet"] * 3, "pos": pa.array([0, 4, 9], pa.int64())}
    )
    file = arrow_data_file(rows, "s3://b/t/d.parquet", 10, Schema(0, [], 0), (), content=1)
    assert file.content == 1 and file.record_count == 3
    assert file.lower_bounds == {
        DELETE_FILE_PATH_ID: b"s3://b/t/p/f.parquet",
        DELETE_POS_ID: struct.pack("<q", 0),
    }
    assert file.upper_bounds[DELETE_POS_ID] == struct.pack("<q", 9)


def test_encode_bound_forms() -> None:
    assert encode_bound("date", dt.date(1969, 12, 31)) == encode_bound("date", -1)
    assert encode_bound("decimal(9, 2)", decimal.Decimal("-1.00")) == b"\x9c"
    assert encode_bound("decimal(9, 2)", decimal.Decimal("-1.28")) == b"\x80"
    assert encode_bound("decimal(9, 2)", decimal.Decimal("-1.29")) == b"\xff\x7f"
    assert encode_bound("decimal(9, 2)", 128) == b"\x00\x80"
    assert encode_bound("decimal(9, 2)", 0) == b"\x00"
    assert encode_bound("timestamptz", dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.UTC)) == (
        struct.pack("<q", 1_000_000)
    )
    assert encode_bound("timestamp", dt.datetime(1969, 12, 31, 23, 59, 59)) == struct.pack(
        "<q", -1_000_000
    )
    with pytest.raises(ValueError):
        encode_bound("struct", 1)


# --- footers whose statistics are not exact ---------------------------------------


class _Thrift:
    """A minimal Thrift compact encoder, to build footers pyarrow cannot write."""

    def __init__(self) -> None:
        self.out = bytearray()

    def varint(self, value: int) -> None:
        while True:
            byte = value & 0x7F
            value >>= 7
            self.out.append(byte | (0x80 if value else 0))
            if not value:
                return

    def struct(self, fields: list[tuple[int, str, Any]]) -> None:
        last = 0
        for field_id, kind, value in fields:
            code = {"i32": 5, "i64": 6, "bin": 8, "list": 9, "struct": 12}.get(kind)
            if kind == "bool":
                code = 1 if value else 2
            assert code is not None and 0 < field_id - last <= 15
            self.out.append((field_id - last) << 4 | code)
            last = field_id
            self.value(kind, value)
        self.out.append(0)

    def value(self, kind: str, value: Any) -> None:
        if kind in ("i32", "i64"):
            self.varint((value << 1) ^ (value >> 63))
        elif kind == "bin":
            self.varint(len(value))
            self.out += value
        elif kind == "list":
            element_kind, items = value
            code = {"i32": 5, "bin": 8, "struct": 12}[element_kind]
            self.out.append(len(items) << 4 | code)
            for item in items:
                self.value(element_kind, item)
        elif kind == "struct":
            self.struct(value)


def _footer(
    stats: list[tuple[int, str, Any]],
    created_by: bytes = b"parquet-mr version 1.13.1",
    column_orders: bool = True,
) -> bytes:
    """A footer of one string column ``s`` in one row group of 2 rows."""
    string_type = [(1, "struct", [])]  # LogicalType.STRING
    schema = [
        [(4, "bin", b"schema"), (5, "i32", 1)],
        [
            (1, "i32", 6),
            (3, "i32", 1),
            (4, "bin", b"s"),
            (6, "i32", 0),
            (10, "struct", string_type),
        ],
    ]
    meta = [
        (1, "i32", 6),
        (2, "list", ("i32", [0])),
        (3, "list", ("bin", [b"s"])),
        (4, "i32", 0),
        (5, "i64", 2),
        (6, "i64", 10),
        (7, "i64", 10),
        (9, "i64", 4),
        (12, "struct", stats),
    ]
    chunk = [(2, "i64", 4), (3, "struct", meta)]
    group = [(1, "list", ("struct", [chunk])), (2, "i64", 10), (3, "i64", 2)]
    writer = _Thrift()
    fields = [
        (1, "i32", 2),
        (2, "list", ("struct", schema)),
        (3, "i64", 2),
        (4, "list", ("struct", [group])),
        (6, "bin", created_by),
    ]
    if column_orders:
        fields.append((7, "list", ("struct", [[(1, "struct", [])]])))  # TYPE_ORDER
    writer.struct(fields)
    return bytes(writer.out)


@pytest.mark.parametrize(
    ("stats", "bounded"),
    [
        ([(3, "i64", 0), (5, "bin", b"b"), (6, "bin", b"a")], True),
        (
            [
                (3, "i64", 0),
                (5, "bin", b"b"),
                (6, "bin", b"a"),
                (7, "bool", True),
                (8, "bool", True),
            ],
            True,
        ),
        # the deprecated, signed-order min/max only
        ([(1, "bin", b"b"), (2, "bin", b"a"), (3, "i64", 0)], False),
        # truncated: flagged inexact
        ([(3, "i64", 0), (5, "bin", b"b"), (6, "bin", b"a"), (7, "bool", False)], False),
        ([(3, "i64", 0), (5, "bin", b"b"), (6, "bin", b"a"), (8, "bool", False)], False),
    ],
)
def test_inexact_or_deprecated_statistics_give_no_bounds(
    stats: list[tuple[int, str, Any]], bounded: bool
) -> None:
    from hudi_sync.manifest.iceberg.data_files import _footer_data_file

    footer = parse_footer(_footer(stats), 100, "f.parquet")
    if any(field_id in (5, 6) for field_id, _, _ in stats):  # pyarrow alone would use them
        assert footer.metadata.row_group(0).column(0).statistics.has_min_max
    schema = Schema(0, [{"id": 1, "name": "s", "required": False, "type": "string"}], 1)
    file = _footer_data_file(footer, "f.parquet", schema, ())
    assert file.value_counts == {1: 2} and file.null_counts == {1: 0}
    assert file.lower_bounds == ({1: b"a"} if bounded else {})
    assert file.upper_bounds == ({1: b"b"} if bounded else {})


def test_corrupt_footer_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.parquet").write_bytes(b"PAR1" + b"\x00" * 20 + struct.pack("<I", 10) + b"PAR1")
    (tmp_path / "short.parquet").write_bytes(b"PAR1")
    location = open_location(str(tmp_path))
    schema = Schema(0, [], 0)
    for name in ("bad.parquet", "short.parquet"):
        with pytest.raises(CorruptTableError) as failure:
            parquet_data_file(location, name, schema, ())
        assert "\n" not in str(failure.value) and name in str(failure.value)
    with pytest.raises(CorruptTableError):
        parse_footer(b"\x19\xfc" + b"\x00" * 4, 100, "f")  # a list claiming 15+ items
    with pytest.raises(CorruptTableError, match="inside its table"):
        parquet_data_file(location, "../bad.parquet", schema, ())


# --- manifests with partitions, sequence numbers, status --------------------------

PARTITION_SCHEMA = Schema(
    3,
    [
        {"id": 1, "name": "region", "required": False, "type": "string"},
        {"id": 2, "name": "year", "required": False, "type": "int"},
        {"id": 3, "name": "day", "required": False, "type": "date"},
        {"id": 4, "name": "shard", "required": False, "type": "long"},
        {"id": 5, "name": "hot", "required": False, "type": "boolean"},
        {"id": 6, "name": "value", "required": False, "type": "double"},
    ],
    6,
)
PARTITION_PLAN = plan_of(PARTITION_SCHEMA, ["region", "year", "day", "shard", "hot"])
TABLE = "s3://bucket/warehouse/trips"


def _file(i: int, partition: tuple[Any, ...], content: int = 0) -> DataFile:
    return DataFile(
        content=content,
        path=f"{TABLE}/p{i}/f{i}.parquet",
        record_count=10 + i,
        size=1000 + i,
        partition=partition,
        column_sizes={1: 5 + i, 2: 6},
        value_counts={1: 10 + i, 2: 10 + i},
        null_counts={1: i, 2: 0},
        lower_bounds={1: "ä".encode(), 2: struct.pack("<i", -i)},
        upper_bounds={1: "ü".encode(), 2: struct.pack("<i", i)},
    )


ENTRIES = [
    ManifestEntry(
        ADDED, None, None, None, _file(1, ("eu-west", 2024, dt.date(1969, 7, 20), 2**40, True))
    ),
    ManifestEntry(EXISTING, 11, 4, 5, _file(2, ("ünïcode", -1, dt.date(2024, 2, 29), -3, False))),
    ManifestEntry(DELETED, 12, 6, 6, _file(3, (None, None, None, None, None))),
    ManifestEntry(ADDED, 13, None, 9, _file(4, ("a", 7, dt.date(2000, 1, 1), 0, None))),
]


def test_manifest_read_by_pyiceberg_field_by_field(tmp_path: Path) -> None:
    """pyiceberg reads every entry as we wrote it: status, snapshot ids and sequence
    numbers (ADDED ones inherited from the manifest, the others explicit), partition
    values, counts, stats maps; and the manifest list's counts and partition
    summaries."""
    entries = [
        ManifestEntry(
            e.status, e.snapshot_id, e.data_sequence, e.file_sequence, _local(e.file, tmp_path)
        )
        for e in ENTRIES
    ]
    data = write_manifest(entries, PARTITION_SCHEMA, PARTITION_PLAN, 0)
    manifest = manifest_file(str(tmp_path / "m.avro"), data, entries, PARTITION_PLAN, 0, 10, 99)
    listed = write_manifest_list([manifest], 99, 98, 10)
    read_list, read = pyiceberg_entries(tmp_path, manifest, data, listed)
    assert isinstance(read_list, PyManifestFile)
    assert (read_list.manifest_path, read_list.manifest_length) == (manifest.path, len(data))
    assert (read_list.sequence_number, read_list.min_sequence_number) == (10, 4)
    assert read_list.added_snapshot_id == 99 and read_list.content == 0
    assert (read_list.added_files_count, read_list.existing_files_count) == (2, 1)
    assert read_list.deleted_files_count == 1
    assert (read_list.added_rows_count, read_list.existing_rows_count) == (11 + 14, 12)
    assert read_list.deleted_rows_count == 13
    summaries = [
        (p.contains_null, p.contains_nan, p.lower_bound, p.upper_bound)
        for p in read_list.partitions or ()
    ]
    assert summaries == [
        (True, None, b"a", "ünïcode".encode()),
        (True, None, struct.pack("<i", -1), struct.pack("<i", 2024)),
        (
            True,
            None,
            encode_bound("date", dt.date(1969, 7, 20)),
            encode_bound("date", dt.date(2024, 2, 29)),
        ),
        (True, None, struct.pack("<q", -3), struct.pack("<q", 2**40)),
        (True, None, b"\x00", b"\x01"),
    ]
    expected_sequences = [(99, 10, 10), (11, 4, 5), (12, 6, 6), (13, 10, 9)]
    assert len(read) == len(entries)
    for got, entry, sequences in zip(read, entries, expected_sequences, strict=True):
        file = entry.file
        assert int(got.status) == entry.status
        assert (got.snapshot_id, got.sequence_number, got.file_sequence_number) == sequences
        data_file = got.data_file
        assert int(data_file.content) == 0 and str(data_file.file_format) == "FileFormat.PARQUET"
        assert data_file.file_path == file.path
        assert (data_file.record_count, data_file.file_size_in_bytes) == (
            file.record_count,
            file.size,
        )
        days = None if file.partition[2] is None else (file.partition[2] - dt.date(1970, 1, 1)).days
        assert tuple(data_file.partition) == (*file.partition[:2], days, *file.partition[3:])
        assert data_file.column_sizes == file.column_sizes
        assert data_file.value_counts == file.value_counts
        assert data_file.null_value_counts == file.null_counts
        assert data_file.lower_bounds == file.lower_bounds
        assert data_file.upper_bounds == file.upper_bounds


def _local(file: DataFile, tmp_path: Path) -> DataFile:
    return DataFile(**{**file.__dict__, "path": str(tmp_path / file.path.rsplit("/", 1)[1])})


def test_round_trip_is_identity() -> None:
    """read_manifest(write_manifest(...)) gives the entries back, sequence numbers and
    snapshot ids materialized; the same for manifest lists; a delete manifest too."""
    data = write_manifest(ENTRIES, PARTITION_SCHEMA, PARTITION_PLAN, 0)
    read = read_manifest(data, PARTITION_PLAN, "m.avro", 10, 99, TABLE)
    assert read == [
        ManifestEntry(
            e.status,
            99 if e.snapshot_id is None else e.snapshot_id,
            10 if e.data_sequence is None else e.data_sequence,
            10 if e.file_sequence is None else e.file_sequence,
            e.file,
        )
        for e in ENTRIES
    ]
    deletes = [
        ManifestEntry(ADDED, None, None, None, _file(5, ("x", 1, dt.date(2020, 1, 1), 1, True), 1))
    ]
    data = write_manifest(deletes, PARTITION_SCHEMA, PARTITION_PLAN, 1)
    assert read_manifest(data, PARTITION_PLAN, "d.avro", 3, 5, TABLE)[0].file == deletes[0].file
    manifests = [
        manifest_file(f"{TABLE}/.hoodie/m{i}.avro", data, deletes, PARTITION_PLAN, 1, 3 + i, 5)
        for i in range(3)
    ]
    listed = write_manifest_list(manifests, 5, None, 5)
    assert read_manifest_list(listed, "snap.avro", TABLE) == manifests


def test_timestamp_partitions_round_trip() -> None:
    schema = Schema(
        0,
        [
            {"id": 1, "name": "at", "type": "timestamp"},
            {"id": 2, "name": "tz", "type": "timestamptz"},
        ],
        2,
    )
    plan = plan_of(schema, ["at", "tz"])
    value = (dt.datetime(1969, 1, 1, 0, 0, 0, 5), dt.datetime(2030, 1, 1, tzinfo=dt.UTC))
    entries = [ManifestEntry(ADDED, 1, 1, 1, DataFile(0, f"{TABLE}/a.parquet", 1, 1, value))]
    data = write_manifest(entries, schema, plan, 0)
    assert read_manifest(data, plan, "m", 1, 1, TABLE) == entries
    summary = manifest_file("m", data, entries, plan, 0, 1, 1).partitions
    assert summary[0][2] == struct.pack("<q", -365 * 86_400_000_000 + 5)


def _bare(entry: ManifestEntry, path: str | None = None, size: int | None = None) -> ManifestEntry:
    """``entry`` without column metrics (a ``commit``-metrics publication's entries)."""
    file = entry.file
    return ManifestEntry(
        entry.status,
        entry.snapshot_id,
        entry.data_sequence,
        entry.file_sequence,
        DataFile(
            0,
            path or file.path,
            file.record_count,
            file.size if size is None else size,
            file.partition,
        ),
    )


def test_entries_without_metrics_are_the_bytes_fastavro_writes() -> None:
    """Entries with no column metrics are encoded directly (``entry_encoding``): each
    entry's bytes equal fastavro's encoding of the record the metrics path builds, for
    every status, sequence numbers null or set, partition values null or of each type,
    sizes past one varint byte and past 32 bits, non-ASCII paths; a manifest of more
    entries than a block holds reads back with fastavro as the same records."""
    from hudi_sync.manifest.iceberg.avro_files import _encoder, _entry_record, _parsed
    from hudi_sync.manifest.iceberg.avro_files import manifest_entry_schema as entry_schema

    schema = entry_schema(PARTITION_PLAN)
    partition = schema["fields"][4]["type"]["fields"][3]["type"]
    names = [f["name"] for f in partition["fields"]]
    encoder = _encoder(partition, names)
    sizes = [0, 1, 127, 128, 16_383, 16_384, 2**31, 2**62]
    entries = [
        _bare(e, f"{TABLE}/p/ü{i}-{size}.parquet", size)
        for i, e in enumerate(ENTRIES)
        for size in sizes
    ]
    for entry in entries:
        expected = io.BytesIO()
        fastavro.schemaless_writer(expected, _parsed(schema), _entry_record(entry, names))
        file = entry.file
        got = encoder.entry(
            entry.status, entry.snapshot_id, entry.data_sequence, entry.file_sequence, file
        )
        assert got == expected.getvalue(), entry
    many = [entries[i % len(entries)] for i in range(16_001)]  # two blocks
    data = write_manifest(many, PARTITION_SCHEMA, PARTITION_PLAN, 0)
    records = list(fastavro.reader(io.BytesIO(data)))
    assert records == [_entry_record(e, names) for e in many]


def test_entries_without_metrics_read_by_pyiceberg(tmp_path: Path) -> None:
    """A manifest of entries without column metrics, read by pyiceberg: statuses,
    sequence numbers, partition values, counts and sizes as written, no metrics."""
    entries = [_bare(e, str(tmp_path / f"f{i}.parquet")) for i, e in enumerate(ENTRIES)]
    data = write_manifest(entries, PARTITION_SCHEMA, PARTITION_PLAN, 0)
    manifest = manifest_file(str(tmp_path / "m.avro"), data, entries, PARTITION_PLAN, 0, 10, 99)
    listed = write_manifest_list([manifest], 99, 98, 10)
    _, read = pyiceberg_entries(tmp_path, manifest, data, listed)
    expected_sequences = [(99, 10, 10), (11, 4, 5), (12, 6, 6), (13, 10, 9)]
    for got, entry, sequences in zip(read, entries, expected_sequences, strict=True):
        file = entry.file
        assert int(got.status) == entry.status
        assert (got.snapshot_id, got.sequence_number, got.file_sequence_number) == sequences
        data_file = got.data_file
        assert (data_file.file_path, data_file.record_count, data_file.file_size_in_bytes) == (
            file.path,
            file.record_count,
            file.size,
        )
        days = None if file.partition[2] is None else (file.partition[2] - dt.date(1970, 1, 1)).days
        assert tuple(data_file.partition) == (*file.partition[:2], days, *file.partition[3:])
        assert not data_file.column_sizes and not data_file.lower_bounds
    assert read_manifest(data, PARTITION_PLAN, "m", 10, 99, str(tmp_path)) == [
        ManifestEntry(
            e.status,
            99 if e.snapshot_id is None else e.snapshot_id,
            10 if e.data_sequence is None else e.data_sequence,
            10 if e.file_sequence is None else e.file_sequence,
            e.file,
        )
        for e in entries
    ]


# --- hostile files ----------------------------------------------------------------


def _one_line(failure: pytest.ExceptionInfo[CorruptTableError], where: str) -> None:
    message = str(failure.value)
    assert "\n" not in message and message.startswith(where), message


def _avro(schema: dict[str, Any], records: list[dict[str, Any]], metadata: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    fastavro.writer(buffer, schema, records, codec="deflate", metadata=metadata)
    return buffer.getvalue()


def test_hostile_manifests_are_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Truncated files, another schema, a block claiming 2^60 records, blocks inflating
    past the cap, a header claiming more entries than bytes: one line each, naming the
    file, for manifests and manifest lists alike."""
    from hudi_sync.manifest.iceberg import avro_files

    monkeypatch.setattr(avro_files, "MAX_INFLATED_BYTES", 1 << 20)
    good = write_manifest(ENTRIES, PARTITION_SCHEMA, PARTITION_PLAN, 0)
    listed = write_manifest_list(
        [manifest_file(f"{TABLE}/m.avro", good, ENTRIES, PARTITION_PLAN, 0, 1, 1)], 1, None, 1
    )
    sync = good[-16:]
    header_end = good.index(sync) + 16
    bomb = zlib.compressobj(9, zlib.DEFLATED, -15)
    payload = bomb.compress(b"\x00" * (1 << 22)) + bomb.flush()
    other = {"type": "record", "name": "x", "fields": [{"name": "a", "type": "int"}]}
    cases = [
        (good[: len(good) // 2], "ends inside"),
        (good[:-20], "ends inside"),
        (b"", "not an Avro file"),
        (b"Obj\x01" + b"\xff" * 12, "longer than 10 bytes"),
        (b"Obj\x01" + _zigzag(1 << 40), "claims"),
        (_avro(other, [{"a": 1}], {}), "not the Avro schema"),
        (good[:header_end] + _zigzag(1 << 60) + good[header_end + 1 :], "claim"),
        (good[:header_end] + _zigzag(1) + _zigzag(len(payload)) + payload + sync, "inflate"),
        (good[:header_end] + _zigzag(4) + _zigzag(5) + b"\xff" * 5 + sync, "corrupt Avro"),
    ]
    for case, reason in cases:
        with pytest.raises(CorruptTableError, match=reason) as failure:
            read_manifest(case, PARTITION_PLAN, "m.avro", 1, 1, TABLE)
        _one_line(failure, "m.avro")
        with pytest.raises(CorruptTableError) as failure_list:
            read_manifest_list(case, "snap.avro", TABLE)
        _one_line(failure_list, "snap.avro")
    # the manifest read under another partition spec: not the schema it was written with
    with pytest.raises(CorruptTableError, match="not the Avro schema") as failure:
        read_manifest(good, UNPARTITIONED, "m.avro", 1, 1, TABLE)
    _one_line(failure, "m.avro")
    with pytest.raises(CorruptTableError, match="not the Avro schema") as failure:
        read_manifest(listed, PARTITION_PLAN, "m.avro", 1, 1, TABLE)
    _one_line(failure, "m.avro")


def _zigzag(value: int) -> bytes:
    value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


@pytest.mark.parametrize(
    "path",
    [
        f"{TABLE}/p/../../other/f.parquet",
        f"{TABLE}/../trips-other/f.parquet",
        "s3://bucket/warehouse/tripsX/f.parquet",
        "/etc/passwd",
        f"{TABLE}/p//f.parquet",
        f"{TABLE}/",
    ],
)
def test_paths_outside_the_table_are_refused(path: str) -> None:
    entry = ManifestEntry(ADDED, None, None, None, DataFile(0, path, 1, 1, ("a", 1, None, 1, True)))
    data = write_manifest([entry], PARTITION_SCHEMA, PARTITION_PLAN, 0)
    with pytest.raises(CorruptTableError) as failure:
        read_manifest(data, PARTITION_PLAN, "m.avro", 1, 1, TABLE)
    _one_line(failure, "m.avro")
    listed = write_manifest_list(
        [manifest_file(path, data, [entry], PARTITION_PLAN, 0, 1, 1)], 1, None, 1
    )
    with pytest.raises(CorruptTableError) as failure_list:
        read_manifest_list(listed, "snap.avro", TABLE)
    _one_line(failure_list, "snap.avro")


def test_bad_entry_values_are_refused() -> None:
    """An existing entry without sequence numbers, a status outside 0..2, a data file
    in a delete manifest: one line each."""
    bad = [
        ManifestEntry(EXISTING, 1, None, None, _file(1, ("a", 1, None, 1, True))),
        ManifestEntry(7, 1, 1, 1, _file(1, ("a", 1, None, 1, True))),
    ]
    for entry in bad:
        data = write_manifest([entry], PARTITION_SCHEMA, PARTITION_PLAN, 0)
        with pytest.raises(CorruptTableError) as failure:
            read_manifest(data, PARTITION_PLAN, "m.avro", 1, 1, TABLE)
        _one_line(failure, "m.avro")
    with pytest.raises(ValueError):
        write_manifest([ENTRIES[0]], PARTITION_SCHEMA, PARTITION_PLAN, 1)


def test_footer_through_an_object_store(tmp_path: Path) -> None:
    """Through fsspec (not a local path): ranged reads of the tail, the size from the
    store or from the caller's listing (a footer larger than the first read takes a
    second); a wrong size is one line."""
    import fsspec

    from hudi_sync.manifest.iceberg import parquet_footer

    wide = pa.table({f"c{i}": pa.array([i, -i]) for i in range(400)})
    _write(wide, tmp_path / "w.parquet")
    data = (tmp_path / "w.parquet").read_bytes()
    fs = fsspec.filesystem("memory")
    fs.pipe_file("/h1b-store/t/p/w.parquet", data)
    location = open_location("memory://h1b-store/t")
    assert not location.is_local
    schema = schema_of(wide.schema)
    assert pq.read_metadata(tmp_path / "w.parquet").serialized_size > 4096
    original = parquet_footer._TAIL_GUESS
    try:
        parquet_footer._TAIL_GUESS = 4096  # the footer does not fit in the first read
        for size in (None, len(data)):
            file = parquet_data_file(location, "p/w.parquet", schema, (), size=size)
            assert file.path == "memory://h1b-store/t/p/w.parquet" and file.size == len(data)
            assert_stats(_py_data_file(tmp_path, file, schema), wide, schema)
        with pytest.raises(CorruptTableError) as failure:
            parquet_data_file(location, "p/w.parquet", schema, (), size=len(data) - 3)
        _one_line(failure, "memory://h1b-store/t/p/w.parquet")
    finally:
        parquet_footer._TAIL_GUESS = original
        fs.rm("/h1b-store", recursive=True)


def test_string_statistics_that_are_not_utf8_give_no_bounds(tmp_path: Path) -> None:
    rows = pa.table({"s": pa.array([b"\xff\xfe", b"a"], pa.binary()).view(pa.string())})
    _write(rows, tmp_path / "u.parquet")
    schema = Schema(0, [{"id": 1, "name": "s", "required": False, "type": "string"}], 1)
    file = parquet_data_file(open_location(str(tmp_path)), "u.parquet", schema, ())
    assert file.value_counts == {1: 2} and file.lower_bounds == {} and file.upper_bounds == {}
