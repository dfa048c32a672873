"""The Avro → BigQuery type map and the BigQuery sync options (no server needed)."""

from __future__ import annotations

import pytest

from hudi_sync.errors import BadInputError, UnsupportedTableError
from hudi_sync.table.config.schema import META_FIELDS
from hudi_sync.warehouse.bigquery import BigQuerySyncConfig
from hudi_sync.warehouse.bigquery.schema import (
    decimal_type,
    partition_key_type,
    table_schema,
)


def _schema(*fields: dict[str, object]) -> dict[str, object]:
    return {"type": "record", "name": "r", "fields": list(fields)}


@pytest.mark.parametrize(
    ("precision", "scale", "expected"),
    [
        (10, 2, "NUMERIC"),
        (38, 9, "NUMERIC"),  # 29 integer digits, scale 9: NUMERIC's exact limits
        (39, 9, "BIGNUMERIC"),  # one integer digit too many
        (20, 10, "BIGNUMERIC"),  # scale 10 > 9
        (76, 38, "BIGNUMERIC"),
    ],
)
def test_decimal_goes_to_numeric_or_bignumeric_by_precision_and_scale(
    precision: int, scale: int, expected: str
) -> None:
    assert decimal_type(precision, scale, "amount") == expected


def test_decimal_too_wide_for_bignumeric_names_the_column() -> None:
    with pytest.raises(UnsupportedTableError, match="'amount'"):
        decimal_type(77, 38, "amount")


def test_every_avro_type_maps_to_a_precise_bigquery_field() -> None:
    nullable = lambda t: ["null", t]  # noqa: E731
    schema = _schema(
        {"name": "id", "type": "long"},
        {"name": "flag", "type": nullable("boolean")},
        {"name": "small", "type": "int"},
        {"name": "ratio", "type": nullable("float")},
        {"name": "name", "type": nullable("string")},
        {"name": "blob", "type": "bytes"},
        {"name": "kind", "type": {"type": "enum", "name": "k", "symbols": ["A"]}},
        {"name": "day", "type": nullable({"type": "int", "logicalType": "date"})},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "clock", "type": {"type": "long", "logicalType": "time-micros"}},
        {
            "name": "price",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3},
        },
        {
            "name": "big",
            "type": {
                "type": "fixed",
                "name": "f",
                "size": 16,
                "logicalType": "decimal",
                "precision": 40,
                "scale": 12,
            },
        },
        {"name": "tags", "type": nullable({"type": "array", "items": "string"})},
        {"name": "attrs", "type": {"type": "map", "values": nullable("long")}},
        {
            "name": "address",
            "type": nullable(
                {"type": "record", "name": "a", "fields": [{"name": "zip", "type": "string"}]}
            ),
        },
    )
    fields = {f["name"]: f for f in table_schema(schema, with_meta_fields=False)}
    simple = {n: (f["type"], f["mode"]) for n, f in fields.items()}
    assert simple == {
        "id": ("INTEGER", "REQUIRED"),
        "flag": ("BOOLEAN", "NULLABLE"),
        "small": ("INTEGER", "REQUIRED"),
        "ratio": ("FLOAT", "NULLABLE"),
        "name": ("STRING", "NULLABLE"),
        "blob": ("BYTES", "REQUIRED"),
        "kind": ("STRING", "REQUIRED"),
        "day": ("DATE", "NULLABLE"),
        "at": ("TIMESTAMP", "REQUIRED"),
        "local": ("DATETIME", "REQUIRED"),
        "clock": ("TIME", "REQUIRED"),
        "price": ("NUMERIC", "REQUIRED"),
        "big": ("BIGNUMERIC", "REQUIRED"),
        "tags": ("STRING", "REPEATED"),
        "attrs": ("RECORD", "REQUIRED"),
        "address": ("RECORD", "NULLABLE"),
    }
    assert fields["attrs"]["fields"] == [
        {
            "name": "key_value",
            "type": "RECORD",
            "mode": "REPEATED",
            "fields": [
                {"name": "key", "type": "STRING", "mode": "REQUIRED"},
                {"name": "value", "type": "INTEGER", "mode": "NULLABLE"},
            ],
        }
    ]
    assert fields["address"]["fields"] == [{"name": "zip", "type": "STRING", "mode": "REQUIRED"}]


def test_meta_fields_lead_and_partition_columns_can_be_left_out() -> None:
    schema = _schema({"name": "id", "type": "long"}, {"name": "dt", "type": "string"})
    names = [f["name"] for f in table_schema(schema, True, exclude=frozenset({"dt"}))]
    assert names == [*META_FIELDS, "id"]


@pytest.mark.parametrize(
    ("avro", "expected"),
    [
        ("string", "STRING"),
        (["null", "long"], "INTEGER"),
        ({"type": "int", "logicalType": "date"}, "DATE"),
        ("double", "STRING"),  # BigQuery cannot type a hive key as FLOAT
    ],
)
def test_partition_key_types(avro: object, expected: str) -> None:
    assert partition_key_type(avro, "p") == expected


def test_unsupported_avro_shapes_are_refused_with_the_column_name() -> None:
    nested = {"type": "array", "items": {"type": "array", "items": "int"}}
    with pytest.raises(UnsupportedTableError, match="'grid'"):
        table_schema(_schema({"name": "grid", "type": nested}), False)
    with pytest.raises(UnsupportedTableError, match="union"):
        table_schema(_schema({"name": "either", "type": ["int", "string"]}), False)


def test_options_use_hudis_names_and_the_prefix_is_optional() -> None:
    config = BigQuerySyncConfig.from_options(
        {
            "hoodie.gcp.bigquery.sync.project_id": "my-project",
            "dataset_name": "lake",
            "hoodie.gcp.bigquery.sync.table_name": "trips",
            "hoodie.gcp.bigquery.sync.use_bq_manifest_file": "TRUE",
            "hoodie.gcp.bigquery.sync.partition_fields": "region, dt",
            "hoodie.gcp.bigquery.sync.billing.project.id": "billing-project",
        }
    )
    assert (config.project_id, config.dataset_name, config.table_name) == (
        "my-project",
        "lake",
        "trips",
    )
    assert config.use_bq_manifest_file and config.mode == "manifest"
    assert config.partition_fields == ("region", "dt")
    assert config.billing_project_id == "billing-project"


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("table_name", "trips`; DROP TABLE x; --", "table_name"),
        ("table_name", 'tri"ps', "table_name"),
        ("dataset_name", "lake.other", "dataset_name"),
        ("project_id", "Bad_Project", "project_id"),
        ("use_bq_manifest_file", "yes", "use_bq_manifest_file"),
        ("source_uri", "s3://bucket/t/*.parquet", "gs://"),
        ("no_such_option", "1", "no_such_option"),
    ],
)
def test_bad_options_are_refused_naming_the_option(key: str, value: str, message: str) -> None:
    options = {"project_id": "my-project", "dataset_name": "lake", "table_name": "trips"}
    with pytest.raises(BadInputError, match=message):
        BigQuerySyncConfig.from_options({**options, key: value})


def test_missing_required_option_is_named() -> None:
    with pytest.raises(BadInputError, match=r"hoodie\.gcp\.bigquery\.sync\.dataset_name"):
        BigQuerySyncConfig.from_options({"project_id": "my-project", "table_name": "t"})
