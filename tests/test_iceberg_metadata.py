"""Issue 53's Iceberg schema, partition spec and table metadata, checked by pyiceberg.

Every fixture table's snapshot schema converts and pyiceberg parses the metadata into
the same columns; its name mapping gives every column of a real base file the id our
schema gives it (pyiceberg's own Arrow conversion applies it); ids survive evolution;
partition values parsed from each path equal the values stored in the files under it;
metadata read back is bounded and strict."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.io.pyarrow import pyarrow_to_schema
from pyiceberg.table.metadata import TableMetadataUtil
from pyiceberg.table.name_mapping import parse_mapping_from_json
from pyiceberg.types import ListType, MapType

from hudi_sync.errors import CorruptTableError, UnsupportedTableError
from hudi_sync.manifest.iceberg.metadata import (
    FILE_ONLY_PROPERTY,
    Snapshot,
    TableMetadata,
    hudi_properties,
)
from hudi_sync.manifest.iceberg.partitioning import PartitionPlan, partition_plan
from hudi_sync.manifest.iceberg.schema import (
    NAME_MAPPING_PROPERTY,
    IcebergSchema,
    file_only_columns,
    iceberg_schema,
    iceberg_type,
)
from hudi_sync.table import HudiTable
from hudi_sync.table.config.schema import META_FIELDS
from hudi_sync.table.read.snapshot import snapshot_schema
from tests.fixture_tables import FixtureTable, fixture_tables

FIXTURES = fixture_tables()
DEEP_JSON = b"[" * 100_000 + b"]" * 100_000
WHERE = "s3://bucket/t"


def _open(unpack_table: Callable[[FixtureTable], Path], table: FixtureTable) -> HudiTable:
    return HudiTable.open(str(unpack_table(table)))


def _snapshot(
    snapshot_id: int, sequence: int, schema_id: int, parent: int | None = None
) -> Snapshot:
    return Snapshot(
        snapshot_id=snapshot_id,
        parent_id=parent,
        sequence=sequence,
        timestamp_ms=1_700_000_000_000 + sequence * 1000,
        manifest_list=f"{WHERE}/.hoodie/manifest/iceberg/metadata/snap-{snapshot_id}-x.avro",
        summary={"operation": "overwrite", "hudi.instant": str(snapshot_id)},
        schema_id=schema_id,
    )


def _metadata(schema: IcebergSchema, plan: PartitionPlan) -> TableMetadata:
    return TableMetadata.create(
        "3f1c9a52-6bc7-4c6a-9a1e-2f0d4b1f7d11",
        WHERE,
        schema,
        plan,
        {"hudi.table.type": "COPY_ON_WRITE"},
        1_700_000_000_000,
    )


def _unpartitioned() -> PartitionPlan:
    return PartitionPlan({"spec-id": 0, "fields": []}, (), None)


def _published(schema: IcebergSchema, plan: PartitionPlan) -> TableMetadata:
    metadata = _metadata(schema, plan)
    return metadata.with_snapshot(
        _snapshot(20240101000000001, 1, schema.schema_id), schema, plan, 1_700_000_100_000, None
    )


def _types_by_id(pyiceberg_schema: Any) -> dict[int, str]:
    """Field id -> (name, type) of every field, nested ones included, as pyiceberg
    reads them."""
    found: dict[int, str] = {}

    def visit(field_id: int, name: str, t: Any) -> None:
        if t.is_primitive:
            found[field_id] = f"{name}:{t}"
            return
        found[field_id] = f"{name}:{type(t).__name__}"
        if isinstance(t, ListType):
            children = [t.element_field]
        elif isinstance(t, MapType):
            children = [t.key_field, t.value_field]
        else:
            children = list(t.fields)
        for child in children:
            visit(child.field_id, child.name, child.field_type)

    for f in pyiceberg_schema.fields:
        visit(f.field_id, f.name, f.field_type)
    return found


# -- schema ----------------------------------------------------------------------------


@pytest.mark.parametrize("table", FIXTURES, ids=lambda t: t.id)
def test_every_fixture_schema_parses_in_pyiceberg_and_maps_its_base_files(
    unpack_table: Callable[[FixtureTable], Path], table: FixtureTable
) -> None:
    hudi = _open(unpack_table, table)
    slices = hudi.file_slices()
    arrow = snapshot_schema(hudi, slices)
    schema = iceberg_schema(arrow, None, hudi.uri, file_only_columns(hudi))
    plan = partition_plan(hudi, schema)
    metadata = TableMetadata.create(
        "3f1c9a52-6bc7-4c6a-9a1e-2f0d4b1f7d11", hudi.uri, schema, plan, hudi_properties(hudi), 1
    ).with_snapshot(_snapshot(20240101000000001, 1, schema.schema_id), schema, plan, 2, None)
    assert TableMetadata.read(metadata.to_json(), "v1.metadata.json") == metadata
    parsed = TableMetadataUtil.parse_raw(metadata.to_json())
    assert parsed.properties["hudi.table.type"] == hudi.config.table_type.value
    ice = parsed.schema()
    assert [f.name for f in ice.fields] == arrow.names
    assert [f.field_id for f in ice.fields] == list(range(1, len(arrow) + 1))
    # A table without meta fields: its files' meta columns are mapped, not shown.
    hidden = {f["name"] for f in schema.file_only_json}
    assert hidden == (set() if hudi.config.populate_meta_fields else set(META_FIELDS))
    # pyiceberg's own conversion of the Arrow schema, ids from our name mapping, gives
    # the same names and types at every id.
    mapping = parse_mapping_from_json(parsed.properties[NAME_MAPPING_PROPERTY])
    converted = pyarrow_to_schema(arrow, name_mapping=mapping)
    assert _types_by_id(converted) == _types_by_id(ice)
    hidden_ids = [f["id"] for f in schema.file_only_json]
    assert schema.last_column_id == max([*_types_by_id(ice), *hidden_ids])
    # Every real base file's columns (legacy list names included) resolve by name.
    for file_slice in slices:
        if file_slice.relative_base_path is None:
            continue
        path = hudi.location.join(file_slice.relative_base_path)
        with hudi.location.fs.open(path, "rb") as handle:
            file_schema = pq.read_schema(handle)
        file_ids = _types_by_id(pyarrow_to_schema(file_schema, name_mapping=mapping))
        ours = _types_by_id(ice)
        shown = {i: t for i, t in file_ids.items() if i in ours}
        assert {i: ours[i] for i in shown} == shown
        assert {t.split(":")[0] for i, t in file_ids.items() if i not in ours} <= hidden


def test_ids_follow_icebergs_fresh_order_and_survive_evolution() -> None:
    first = pa.schema(
        [
            ("a", pa.int32()),
            ("s", pa.struct([("x", pa.string()), ("inner", pa.struct([("z", pa.float32())]))])),
            ("l", pa.list_(pa.int32())),
            ("m", pa.map_(pa.string(), pa.decimal128(10, 2))),
            ("gone", pa.string()),
        ]
    )
    v0 = iceberg_schema(first, None, WHERE)
    ids = {f["name"]: f["id"] for f in v0.fields_json}
    assert ids == {"a": 1, "s": 2, "l": 3, "m": 4, "gone": 5}
    s_fields = v0.fields_json[1]["type"]["fields"]
    assert [(f["name"], f["id"]) for f in s_fields] == [("x", 6), ("inner", 7)]
    assert s_fields[1]["type"]["fields"][0]["id"] == 8
    assert v0.fields_json[2]["type"]["element-id"] == 9
    assert (v0.fields_json[3]["type"]["key-id"], v0.fields_json[3]["type"]["value-id"]) == (10, 11)
    assert v0.last_column_id == 11
    assert iceberg_schema(first, v0, WHERE) is v0

    # Promote int->long, float->double, decimal(10,2)->(12,2), add nested and top-level
    # columns, drop one: kept ids, new ids above 11, last_column_id never goes down.
    second = pa.schema(
        [
            ("new_top", pa.string()),
            ("a", pa.int64()),
            (
                "s",
                pa.struct(
                    [
                        ("x", pa.string()),
                        ("inner", pa.struct([("z", pa.float64())])),
                        ("y", pa.date32()),
                    ]
                ),
            ),
            ("l", pa.list_(pa.int64())),
            ("m", pa.map_(pa.string(), pa.decimal128(12, 2))),
        ]
    )
    v1 = iceberg_schema(second, v0, WHERE)
    assert v1.schema_id == 1
    got = {f["name"]: (f["id"], f["type"]) for f in v1.fields_json}
    assert got["new_top"][0] == 12 and got["a"] == (1, "long")
    inner = {f["name"]: f["id"] for f in got["s"][1]["fields"]}
    assert inner == {"x": 6, "inner": 7, "y": 13}
    assert got["l"][1]["element-id"] == 9 and got["l"][1]["element"] == "long"
    assert got["m"][1]["value"] == "decimal(12, 2)" and got["m"][1]["value-id"] == 11
    assert v1.last_column_id == 13
    # The dropped column's id stays reserved: re-added, it gets a new one.
    v2 = iceberg_schema(pa.schema([*second, ("gone", pa.string())]), v1, WHERE)
    assert {f["name"]: f["id"] for f in v2.fields_json}["gone"] == 14

    # pyiceberg reads all three versions with their ids and promoted types.
    metadata = _metadata(v0, _unpartitioned())
    for sequence, schema in enumerate((v0, v1, v2), start=1):
        metadata = metadata.with_snapshot(
            _snapshot(20240101000000000 + sequence, sequence, schema.schema_id),
            schema,
            _unpartitioned(),
            1_700_000_100_000 + sequence,
            f"{WHERE}/.hoodie/manifest/iceberg/metadata/v{sequence}-x.metadata.json",
        )
    parsed = TableMetadataUtil.parse_raw(metadata.to_json())
    assert [s.schema_id for s in parsed.schemas] == [0, 1, 2]
    assert parsed.last_column_id == 14
    assert str(parsed.schema().find_field("a").field_type) == "long"
    assert str(parsed.schemas[0].find_field("a").field_type) == "int"
    assert parsed.schema().find_field("s.y").field_id == 13
    # The name mapping keeps every version's names (time travel reads old files).
    mapping = parse_mapping_from_json(parsed.properties[NAME_MAPPING_PROPERTY])
    mapped = {f.field_id: f.names for f in mapping}
    assert mapped[1] == ["a"] and mapped[14] == ["gone"] and 5 not in mapped


@pytest.mark.parametrize(
    ("before", "after", "message"),
    [
        (pa.string(), pa.int32(), "column c changed from string to int"),
        (pa.int64(), pa.int32(), "column c changed from long to int"),
        (pa.struct([("x", pa.int32())]), pa.string(), "column c changed from struct to string"),
        (pa.decimal128(10, 2), pa.decimal128(12, 3), "decimal(10, 2) to decimal(12, 3)"),
        (pa.decimal128(12, 2), pa.decimal128(10, 2), "decimal(12, 2) to decimal(10, 2)"),
        (pa.list_(pa.string()), pa.list_(pa.int32()), "column c.element changed from string"),
        (pa.timestamp("us", "UTC"), pa.timestamp("us"), "from timestamptz to timestamp"),
    ],
)
def test_a_change_iceberg_cannot_promote_is_refused_in_one_line(
    before: pa.DataType, after: pa.DataType, message: str
) -> None:
    previous = iceberg_schema(pa.schema([("c", before)]), None, WHERE)
    with pytest.raises(UnsupportedTableError) as caught:
        iceberg_schema(pa.schema([("c", after)]), previous, WHERE)
    text = str(caught.value)
    assert message in text and text.startswith(WHERE) and "\n" not in text


@pytest.mark.parametrize(
    ("arrow_type", "expected"),
    [
        (pa.timestamp("ms", "UTC"), "timestamptz"),
        (pa.timestamp("ms"), "timestamp"),
        (pa.timestamp("us", "+02:00"), "timestamptz"),
        (pa.time64("us"), "time"),
        (pa.binary(16), "fixed[16]"),
        (pa.int8(), "int"),
        (pa.decimal128(38, 0), "decimal(38, 0)"),
        (pa.large_string(), "string"),
    ],
)
def test_mapped_types(arrow_type: pa.DataType, expected: str) -> None:
    assert iceberg_type(arrow_type, "c", WHERE) == expected


@pytest.mark.parametrize(
    "arrow_type",
    [
        pa.null(),
        pa.uint64(),
        pa.timestamp("ns", "UTC"),
        pa.decimal256(40, 2),
        pa.float16(),
        pa.date64(),
        pa.time32("ms"),
        pa.struct([("deep", pa.time64("ns"))]),
    ],
)
def test_unmappable_types_are_refused_in_one_line(arrow_type: pa.DataType) -> None:
    with pytest.raises(UnsupportedTableError) as caught:
        iceberg_schema(pa.schema([("c", arrow_type)]), None, WHERE)
    text = str(caught.value)
    assert text.startswith(f"{WHERE}: column c") and "Iceberg" in text and "\n" not in text


# -- partitioning ----------------------------------------------------------------------


@pytest.mark.parametrize("table", FIXTURES, ids=lambda t: t.id)
def test_partition_values_equal_the_values_stored_in_each_base_file(
    unpack_table: Callable[[FixtureTable], Path], table: FixtureTable
) -> None:
    hudi = _open(unpack_table, table)
    slices = hudi.file_slices()
    schema = iceberg_schema(snapshot_schema(hudi, slices), None, hudi.uri)
    plan = partition_plan(hudi, schema)
    config = hudi.config
    if not config.is_partitioned:
        assert (plan.fields, plan.reason, plan.spec_json["fields"]) == ((), None, [])
        return
    if "timebased" in table.name:
        assert plan.fields == () and plan.spec_json["fields"] == []
        assert plan.reason is not None and "timestamp-based key generator" in plan.reason
        return
    assert plan.reason is None
    assert [name for name, _ in plan.fields] == list(config.partition_fields)
    ids = schema.field_ids()
    assert [(f["source-id"], f["field-id"], f["name"]) for f in plan.spec_json["fields"]] == [
        (ids[name], 1000 + i, name) for i, name in enumerate(config.partition_fields)
    ]
    checked = 0
    for file_slice in slices:
        if file_slice.relative_base_path is None:
            continue
        values = plan.values(file_slice.partition_path)
        assert values is not None, file_slice.partition_path
        path = hudi.location.join(file_slice.relative_base_path)
        with hudi.location.fs.open(path, "rb") as handle:
            stored = pq.read_table(handle, columns=list(config.partition_fields))
        for index, name in enumerate(config.partition_fields):
            assert set(stored.column(name).to_pylist()) == {values[index]}
        checked += 1
    assert checked > 0
    parsed = TableMetadataUtil.parse_raw(_published(schema, plan).to_json())
    partition_type = parsed.spec().partition_type(parsed.schema())
    assert [f.name for f in partition_type.fields] == list(config.partition_fields)


def _plan(fields: tuple[tuple[str, str], ...], hive: bool, encoded: bool) -> PartitionPlan:
    spec = {"spec-id": 0, "fields": []}  # values() needs only the fields
    return PartitionPlan(spec, fields, None, hive, encoded)


@pytest.mark.parametrize(
    ("fields", "hive", "encoded", "path", "expected"),
    [
        ((("d", "date"),), False, False, "2024-02-29", (dt.date(2024, 2, 29),)),
        ((("d", "date"),), False, False, "2023-02-29", None),
        ((("d", "date"),), False, False, "20240229", None),
        ((("n", "int"),), True, False, "n=-7", (-7,)),
        ((("n", "int"),), True, False, "n=007", None),
        ((("n", "int"),), True, False, "n=-0", None),
        ((("n", "int"),), True, False, "n=2147483648", None),
        ((("n", "long"),), True, False, "n=2147483648", (2147483648,)),
        ((("n", "int"),), True, False, "m=7", None),
        ((("n", "int"),), True, False, "n=__HIVE_DEFAULT_PARTITION__", (None,)),
        ((("s", "string"),), True, False, "s=__HIVE_DEFAULT_PARTITION__", None),
        ((("s", "string"),), True, False, "s=default", None),
        ((("n", "long"),), False, False, "default", (None,)),
        ((("d", "date"),), False, True, "__HIVE_DEFAULT_PARTITION__", (None,)),
        ((("b", "boolean"),), False, False, "true", (True,)),
        ((("b", "boolean"),), False, False, "True", None),
        ((("s", "string"),), False, True, "a%2Fb%3Dc d", ("a/b=c d",)),
        ((("s", "string"),), False, True, "a%2fb", None),
        ((("s", "string"),), False, True, "%41", None),
        ((("s", "string"),), False, False, "a%2Fb", ("a%2Fb",)),
        ((("s", "string"),), True, False, "s=x=y", ("x=y",)),
        ((("a", "string"), ("b", "int")), True, False, "a=x/b=1", ("x", 1)),
        ((("a", "string"), ("b", "int")), True, False, "a=x/y/b=1", None),
        ((("a", "string"), ("b", "int")), False, False, "x", None),
    ],
)
def test_a_path_gives_values_only_when_they_print_back_the_same(
    fields: tuple[tuple[str, str], ...],
    hive: bool,
    encoded: bool,
    path: str,
    expected: tuple[Any, ...] | None,
) -> None:
    assert _plan(fields, hive, encoded).values(path) == expected


def test_unparsed_partition_types_and_missing_fields_give_the_reason(
    fixture_copy: Callable[[str], Path],
) -> None:
    from tests.fixture_tables import set_properties

    path = fixture_copy("cow/v8_simplekeygen_nonhivestyle")
    cases = {
        "doubleField": "partition field doubleField is of type double",
        "no_such": "partition field no_such is not a column",
        "byteField,shortField": "the simple key generator writes one path segment",
    }
    for fields, reason in cases.items():
        set_properties(path, {"hoodie.table.partition.fields": fields})
        hudi = HudiTable.open(str(path))
        schema = iceberg_schema(snapshot_schema(hudi, hudi.file_slices()), None, hudi.uri)
        plan = partition_plan(hudi, schema)
        assert plan.fields == () and plan.reason is not None and reason in plan.reason
    set_properties(
        path,
        {
            "hoodie.table.partition.fields": "byteField:simple,shortField:timestamp",
            "hoodie.table.keygenerator.type": "CUSTOM",
        },
    )
    hudi = HudiTable.open(str(path))
    schema = iceberg_schema(snapshot_schema(hudi, hudi.file_slices()), None, hudi.uri)
    plan = partition_plan(hudi, schema)
    assert plan.reason is not None and "formats shortField as dates" in plan.reason
    set_properties(path, {"hoodie.table.partition.fields": "byteField:simple"})
    plan = partition_plan(HudiTable.open(str(path)), schema)
    assert plan.reason is None and plan.fields == (("byteField", "int"),)


# -- metadata --------------------------------------------------------------------------


def _history(count: int) -> TableMetadata:
    schema = iceberg_schema(pa.schema([("a", pa.int32())]), None, WHERE)
    metadata = _metadata(schema, _unpartitioned())
    for sequence in range(1, count + 1):
        snapshot_id = 20240101000000000 + sequence
        metadata = metadata.with_snapshot(
            _snapshot(snapshot_id, sequence, schema.schema_id, metadata.current_snapshot_id),
            schema,
            _unpartitioned(),
            1_700_000_100_000 + sequence,
            f"{WHERE}/.hoodie/manifest/iceberg/metadata/v{sequence}-x.metadata.json",
        )
    return metadata


def test_snapshots_append_and_read_back_the_same() -> None:
    metadata = _history(3)
    assert TableMetadata.read(metadata.to_json(), "v4.metadata.json") == metadata
    parsed = TableMetadataUtil.parse_raw(metadata.to_json())
    assert parsed.current_snapshot_id == 20240101000000003
    assert parsed.last_sequence_number == 3
    assert [s.parent_snapshot_id for s in parsed.snapshots] == [
        None,
        20240101000000001,
        20240101000000002,
    ]
    assert parsed.refs["main"].snapshot_id == 20240101000000003
    assert [e.snapshot_id for e in parsed.snapshot_log] == [s.snapshot_id for s in parsed.snapshots]
    assert len(parsed.metadata_log) == 3
    _check_invariants(metadata)
    assert parsed.snapshots[0].summary["hudi.instant"] == "20240101000000001"
    # The same columns again: the same schema, not a second copy.
    same = metadata.next_schema(pa.schema([("a", pa.int32())]), WHERE)
    assert same.schema_id == 0 and len(metadata.schemas) == 1
    with pytest.raises(ValueError, match="already in the metadata"):
        metadata.with_snapshot(_snapshot(20240101000000003, 4, 0), same, _unpartitioned(), 1, None)
    with pytest.raises(ValueError, match="not above"):
        metadata.with_snapshot(_snapshot(20240101000000009, 3, 0), same, _unpartitioned(), 1, None)


def test_a_schema_seen_before_is_reused_not_added_twice() -> None:
    one = pa.schema([("a", pa.int64())])
    two = pa.schema([("a", pa.int64()), ("b", pa.string())])
    metadata = _metadata(iceberg_schema(one, None, WHERE), _unpartitioned())
    for sequence, arrow in enumerate((two, one, one), start=1):
        schema = metadata.next_schema(arrow, WHERE)
        metadata = metadata.with_snapshot(
            _snapshot(20240101000000000 + sequence, sequence, schema.schema_id),
            schema,
            metadata.next_plan(_unpartitioned()),
            1_700_000_100_000 + sequence,
            None,
        )
    assert [s.schema_id for s in metadata.schemas] == [0, 1]
    assert [s.schema_id for s in metadata.snapshots] == [1, 0, 0]
    parsed = TableMetadataUtil.parse_raw(metadata.to_json())
    assert len(parsed.schemas) == 2 and parsed.current_schema_id == 0
    assert len(parsed.partition_specs) == 1
    # b dropped and added again is a new column (Iceberg's rule): a new id, a new schema.
    again = metadata.next_schema(two, WHERE)
    assert again.schema_id == 2 and again.field_ids() == {"a": 1, "b": 3}


def test_a_new_partition_spec_takes_a_new_id() -> None:
    arrow = pa.schema([("a", pa.int64()), ("p", pa.string())])
    schema = iceberg_schema(arrow, None, WHERE)
    metadata = _published(schema, _unpartitioned())
    identity = PartitionPlan(
        {
            "spec-id": 0,
            "fields": [{"source-id": 2, "field-id": 1000, "name": "p", "transform": "identity"}],
        },
        (("p", "string"),),
        None,
    )
    plan = metadata.next_plan(identity)
    assert plan.spec_id == 1
    metadata = metadata.with_snapshot(
        _snapshot(20240101000000002, 2, 0), schema, plan, 1_700_000_200_000, None
    )
    parsed = TableMetadataUtil.parse_raw(metadata.to_json())
    assert parsed.default_spec_id == 1 and parsed.last_partition_id == 1000
    assert [s.spec_id for s in parsed.partition_specs] == [0, 1]
    # Two fields, p among them: p keeps its partition field id, a takes the next one.
    both = PartitionPlan(
        {
            "spec-id": 0,
            "fields": [
                {"source-id": 1, "field-id": 1000, "name": "a", "transform": "identity"},
                {"source-id": 2, "field-id": 1001, "name": "p", "transform": "identity"},
            ],
        },
        (("a", "long"), ("p", "string")),
        None,
    )
    wider = metadata.next_plan(both)
    assert wider.spec_id == 2
    assert [(f["name"], f["field-id"]) for f in wider.spec_json["fields"]] == [
        ("a", 1001),
        ("p", 1000),
    ]
    metadata = metadata.with_snapshot(
        _snapshot(20240101000000003, 3, 0), schema, wider, 1_700_000_300_000, None
    )
    assert TableMetadataUtil.parse_raw(metadata.to_json()).last_partition_id == 1001
    assert metadata.next_plan(identity).spec_id == 1
    assert metadata.next_plan(_unpartitioned()).spec_id == 0


def test_expiry_keeps_the_current_snapshot_and_a_consistent_log() -> None:
    metadata = _history(5)
    ids = [s.snapshot_id for s in metadata.snapshots]
    kept, removed = metadata.expired(2, lambda s: True)
    assert [s.snapshot_id for s in kept.snapshots] == ids[3:]
    assert [s.snapshot_id for s in removed] == ids[:3]
    assert [sid for _, sid in kept.snapshot_log] == ids[3:]
    # An invalid snapshot (rolled back) goes even when within the count; older valid
    # ones fill the count; the current one stays whatever still_valid says.
    kept, removed = metadata.expired(3, lambda s: s.snapshot_id not in (ids[3], ids[4]))
    assert [s.snapshot_id for s in kept.snapshots] == [ids[1], ids[2], ids[4]]
    assert {s.snapshot_id for s in removed} == {ids[0], ids[3]}
    # The log is an unbroken history of the current snapshot: entries before the last
    # removed one go.
    assert [sid for _, sid in kept.snapshot_log] == [ids[4]]
    parsed = TableMetadataUtil.parse_raw(kept.to_json())
    assert parsed.current_snapshot_id == ids[4] and parsed.refs["main"].snapshot_id == ids[4]
    assert TableMetadata.read(kept.to_json(), "v6.metadata.json") == kept
    _check_invariants(kept)
    assert metadata.expired(10, lambda s: True) == (metadata, [])


def _check_invariants(metadata: TableMetadata) -> None:
    """What Iceberg's Java reader checks on load (TableMetadata's constructor): both logs
    in time order, neither after last-updated-ms, the main branch on the current."""
    snapshot_times = [ts for ts, _ in metadata.snapshot_log]
    metadata_times = [ts for ts, _ in metadata.metadata_log]
    assert snapshot_times == sorted(snapshot_times)
    assert metadata_times == sorted(metadata_times)
    assert all(ts <= metadata.last_updated_ms for ts in snapshot_times + metadata_times)
    held = {s.snapshot_id for s in metadata.snapshots}
    assert all(sid in held for _, sid in metadata.snapshot_log)
    assert max((s.sequence for s in metadata.snapshots), default=0) <= metadata.last_sequence
    doc = json.loads(metadata.to_json())
    if metadata.current_snapshot_id is not None:
        assert doc["refs"] == {
            "main": {"snapshot-id": metadata.current_snapshot_id, "type": "branch"}
        }


def test_an_instant_ahead_of_the_clock_keeps_last_updated_after_the_log() -> None:
    metadata = _history(2)
    ahead = replace(
        _snapshot(20240101000000003, 3, 0, metadata.current_snapshot_id),
        timestamp_ms=metadata.last_updated_ms + 9 * 3_600_000,
    )
    later = metadata.with_snapshot(ahead, metadata.current_schema, _unpartitioned(), 5, "v3")
    _check_invariants(later)
    assert later.last_updated_ms == ahead.timestamp_ms


def test_an_older_instant_published_later_keeps_the_log_in_time_order() -> None:
    """``--as-of``: an older instant added after newer ones, or one already published
    made current again; Iceberg's readers refuse a snapshot log out of time order."""
    metadata = _history(3)
    schema = metadata.current_schema
    older = _snapshot(20231231000000000, 4, 0, metadata.current_snapshot_id)
    older = replace(older, timestamp_ms=1_600_000_000_000)
    added = metadata.with_snapshot(older, schema, _unpartitioned(), 1_700_000_200_000, None)
    times = [ts for ts, _ in added.snapshot_log]
    assert times == sorted(times) and added.snapshot_log[-1][1] == 20231231000000000
    assert TableMetadataUtil.parse_raw(added.to_json()).current_snapshot_id == 20231231000000000
    first = metadata.snapshots[0].snapshot_id
    back = metadata.with_current(first, 1_700_000_300_000, "v4.metadata.json")
    parsed = TableMetadataUtil.parse_raw(back.to_json())
    assert parsed.current_snapshot_id == first and parsed.refs["main"].snapshot_id == first
    assert back.snapshot_log[-1] == (1_700_000_300_000, first)
    assert back.metadata_log[-1] == (metadata.last_updated_ms, "v4.metadata.json")
    assert len(back.snapshots) == 3 and back.last_sequence == 3
    _check_invariants(added)
    _check_invariants(back)
    with pytest.raises(ValueError, match="not in the metadata"):
        metadata.with_current(7, 1, None)


def _document(**changes: Any) -> bytes:
    doc = json.loads(_history(2).to_json())
    doc.update(changes)
    return json.dumps(doc).encode()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (DEEP_JSON, "nested too deeply"),
        (b"\xff\xfe", "corrupt Iceberg metadata"),
        (b"[]", "document is not an object"),
        (_document(**{"format-version": 3}), "is not format-version 2"),
        (_document(**{"last-sequence-number": "2"}), "no integer last-sequence-number"),
        (_document(**{"last-sequence-number": True}), "no integer last-sequence-number"),
        (_document(**{"last-sequence-number": 1}), "sequence-number 2 is above the last"),
        (_document(**{"current-snapshot-id": 7}), "current-snapshot-id 7 names no snapshot"),
        (_document(**{"current-schema-id": 3}), "current-schema-id 3 names no schema"),
        (_document(snapshots=[0] * 100_001), "has 100001 snapshots"),
        (_document(schemas=[{}] * 10_001), "has 10001 schemas"),
        (_document(snapshots="x"), "snapshots is not a list"),
        (_document(properties={"a": 1}), "properties holds a value that is not text"),
        (
            _document(properties={FILE_ONLY_PROPERTY: DEEP_JSON.decode()}),
            "corrupt hudi.schema.file-only-columns (nested too deeply)",
        ),
        (
            _document(
                properties={
                    FILE_ONLY_PROPERTY: json.dumps(
                        [{"id": 1, "name": "m", "required": False, "type": "string"}]
                    )
                }
            ),
            "names a field id a schema has",
        ),
        (
            _document(schemas=[{"type": "struct", "schema-id": 0, "fields": [{"id": "1"}]}]),
            "a schema field has no name",
        ),
        (
            _document(
                schemas=[
                    {
                        "type": "struct",
                        "schema-id": 0,
                        "fields": [{"id": 99, "name": "a", "required": False, "type": "int"}],
                    }
                ]
            ),
            "not an id up to 1",
        ),
        (
            _document(
                schemas=[
                    {
                        "type": "struct",
                        "schema-id": 0,
                        "fields": [{"id": 1, "name": "a", "required": False, "type": "uuid"}],
                    }
                ]
            ),
            "unknown schema type 'uuid'",
        ),
        (
            _document(**{"snapshot-log": [{"timestamp-ms": 1, "snapshot-id": 5}]}),
            "snapshot-log names a snapshot it does not hold",
        ),
        (
            _document(
                **{
                    "partition-specs": [
                        {
                            "spec-id": 0,
                            "fields": [
                                {
                                    "source-id": 1,
                                    "field-id": 1000,
                                    "name": "a",
                                    "transform": "bucket[4]",
                                }
                            ],
                        }
                    ]
                }
            ),
            "a partition field this writer does not write",
        ),
    ],
)
def test_a_hostile_metadata_file_is_refused_in_one_line(data: bytes, message: str) -> None:
    where = "s3://bucket/t/.hoodie/manifest/iceberg/metadata/v3-x.metadata.json"
    with pytest.raises(CorruptTableError) as caught:
        TableMetadata.read(data, where)
    text = str(caught.value)
    assert text.startswith(where) and message in text and "\n" not in text


def test_a_deeply_nested_schema_is_refused() -> None:
    nested: Any = "int"
    for level in range(150):
        nested = {"type": "list", "element-id": level + 2, "element": nested}
        nested["element-required"] = False
    doc = {
        "type": "struct",
        "schema-id": 0,
        "fields": [{"id": 1, "name": "a", "required": False, "type": nested}],
    }
    with pytest.raises(CorruptTableError, match="nested more than 100 levels"):
        IcebergSchema.from_json(doc, 1000, "v1.metadata.json")


def test_a_metadata_file_past_the_size_bound_is_not_parsed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hudi_sync.manifest.iceberg import metadata as module

    data = _history(1).to_json()
    monkeypatch.setattr(module, "MAX_METADATA_BYTES", len(data) - 1)
    with pytest.raises(CorruptTableError, match="bytes"):
        TableMetadata.read(data, "v2.metadata.json")


# -- a real read -----------------------------------------------------------------------

COW_TABLES = [t for t in FIXTURES if "/cow/" in t.name and "empty" not in t.name]


def _rows(table: pa.Table) -> list[str]:
    """Rows as comparable text, column order and Arrow string/list widths aside."""
    names = sorted(table.column_names)
    return sorted(repr([row[n] for n in names]) for row in table.to_pylist())


def _static_table(
    tmp_path: Path,
    metadata: TableMetadata,
    schema: IcebergSchema,
    plan: PartitionPlan,
    files: list[tuple[str, tuple[Any, ...]]],
) -> Any:
    """A pyiceberg table over ``files`` (path, partition values): one snapshot whose
    manifest and list pyiceberg's own writer writes (the store's are another part's),
    in metadata ``with_snapshot`` extends from ``metadata``."""
    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg.manifest import (
        DataFile,
        DataFileContent,
        FileFormat,
        ManifestEntry,
        ManifestEntryStatus,
        write_manifest,
        write_manifest_list,
    )
    from pyiceberg.table import StaticTable
    from pyiceberg.typedef import Record

    sequence = metadata.last_sequence + 1
    snapshot_id = 20240101000000000 + sequence
    parsed = TableMetadataUtil.parse_raw(
        replace(
            metadata,
            schemas=(*[s for s in metadata.schemas if s.schema_id != schema.schema_id], schema),
            current_schema_id=schema.schema_id,
        ).to_json()
    )
    io = PyArrowFileIO()
    manifest_path = str(tmp_path / f"m{sequence}.avro")
    with write_manifest(
        2, parsed.spec(), parsed.schema(), io.new_output(manifest_path), snapshot_id, "null"
    ) as writer:
        for path, values in files:
            data_file = DataFile.from_args(
                content=DataFileContent.DATA,
                file_path=path,
                file_format=FileFormat.PARQUET,
                partition=Record(*values),
                record_count=pq.read_metadata(path).num_rows,
                file_size_in_bytes=Path(path).stat().st_size,
            )
            data_file.spec_id = plan.spec_id
            writer.add(
                ManifestEntry.from_args(
                    status=ManifestEntryStatus.ADDED, snapshot_id=snapshot_id, data_file=data_file
                )
            )
    list_path = str(tmp_path / f"snap-{snapshot_id}.avro")
    parent = metadata.current_snapshot_id
    with write_manifest_list(
        2, io.new_output(list_path), snapshot_id, parent, sequence, "null"
    ) as lists:
        lists.add_manifests([writer.to_manifest_file()])
    snapshot = replace(
        _snapshot(snapshot_id, sequence, schema.schema_id, parent), manifest_list=list_path
    )
    published = metadata.with_snapshot(snapshot, schema, plan, 1_700_000_100_000, None)
    metadata_path = tmp_path / f"v{sequence}.metadata.json"
    metadata_path.write_bytes(published.to_json())
    return StaticTable.from_metadata(str(metadata_path)), published


@pytest.mark.parametrize("table", COW_TABLES, ids=lambda t: t.id)
def test_pyiceberg_reads_a_copy_on_write_snapshot_through_this_metadata(
    unpack_table: Callable[[FixtureTable], Path], table: FixtureTable, tmp_path: Path
) -> None:
    """The schema, name mapping and partition spec ours: pyiceberg's scan gives
    hudi_sync's snapshot rows, and a filter on a partition column prunes to that
    partition's files (a wrong partition value would prune the wrong ones)."""
    from pyiceberg.expressions import EqualTo

    from hudi_sync.table.read.snapshot import read_snapshot

    hudi = _open(unpack_table, table)
    slices = hudi.file_slices()
    schema = iceberg_schema(snapshot_schema(hudi, slices), None, hudi.uri, file_only_columns(hudi))
    plan = partition_plan(hudi, schema)
    files = []
    by_partition: dict[tuple[Any, ...], int] = {}
    for file_slice in slices:
        assert file_slice.relative_base_path is not None
        values = plan.values(file_slice.partition_path)
        assert values is not None
        by_partition[values] = by_partition.get(values, 0) + 1
        files.append((hudi.location.join(file_slice.relative_base_path), values))
    iceberg, _ = _static_table(tmp_path, _metadata(schema, plan), schema, plan, files)
    assert _rows(iceberg.scan().to_arrow()) == _rows(read_snapshot(hudi))
    if plan.fields:
        name = plan.fields[0][0]
        (first, *_) = sorted(by_partition, key=repr)
        matching = sum(n for v, n in by_partition.items() if v[0] == first[0])
        scan = iceberg.scan(row_filter=EqualTo(name, first[0]))
        assert len(list(scan.plan_files())) == matching
        assert len(by_partition) == 1 or matching < len(slices)
        expected = read_snapshot(hudi).filter(pa.compute.field(name) == first[0])
        assert _rows(scan.to_arrow()) == _rows(expected)


def test_pyiceberg_reads_old_and_evolved_files_by_the_ids_kept(tmp_path: Path) -> None:
    """Millisecond timestamps (with and without zone) read as Iceberg's microsecond
    types; after int->long, float->double, a widened decimal, an added nested field and a
    dropped column, both the old file and the new one read under the new schema, and
    time travel to the first snapshot reads the old one with its own schema."""
    old = pa.table(
        {
            "n": pa.array([1, None], pa.int32()),
            "f": pa.array([1.5, 2.5], pa.float32()),
            "d": pa.array([Decimal("1.25"), None], pa.decimal128(5, 2)),
            "ts": pa.array([1_700_000_000_123, None], pa.timestamp("ms", "UTC")),
            "local": pa.array([1_700_000_000_456, 5], pa.timestamp("ms")),
            "s": pa.array([{"x": "a"}, None], pa.struct([("x", pa.string())])),
            "gone": pa.array(["g1", "g2"]),
        }
    )
    new = pa.table(
        {
            "n": pa.array([2**40], pa.int64()),
            "f": pa.array([3.25], pa.float64()),
            "d": pa.array([Decimal("123456.78")], pa.decimal128(9, 2)),
            "ts": pa.array([1_800_000_000_000_001], pa.timestamp("us", "UTC")),
            "local": pa.array([7], pa.timestamp("us")),
            "s": pa.array([{"x": "b", "y": 4}], pa.struct([("x", pa.string()), ("y", pa.int64())])),
        }
    )
    pq.write_table(old, tmp_path / "old.parquet")
    pq.write_table(new, tmp_path / "new.parquet")
    first = iceberg_schema(old.schema, None, WHERE)
    table, metadata = _static_table(
        tmp_path,
        _metadata(first, _unpartitioned()),
        first,
        _unpartitioned(),
        [(str(tmp_path / "old.parquet"), ())],
    )
    assert table.scan().to_arrow().to_pylist() == old.to_pylist()
    second = metadata.next_schema(new.schema, WHERE)
    table, _ = _static_table(
        tmp_path,
        metadata,
        second,
        _unpartitioned(),
        [(str(tmp_path / "old.parquet"), ()), (str(tmp_path / "new.parquet"), ())],
    )
    read = table.scan().to_arrow()
    assert read.schema.field("ts").type == pa.timestamp("us", "UTC")
    assert read.schema.field("n").type == pa.int64()
    widened = old.drop_columns(["gone"]).to_pylist()
    for row in widened:
        row["s"] = None if row["s"] is None else {**row["s"], "y": None}
    assert sorted(map(repr, read.to_pylist())) == sorted(map(repr, widened + new.to_pylist()))
    back = table.scan(snapshot_id=20240101000000001).to_arrow()
    assert back.column_names == old.column_names
    assert back.column("gone").to_pylist() == ["g1", "g2"]
