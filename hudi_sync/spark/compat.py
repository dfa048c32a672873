"""The one place that knows which PySpark line is running (3.5, 4.0-4.3).

Every API that differs between Spark lines is wrapped here, so the writer, the reader and
the data source call one function and never test a version themselves."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import cache
from typing import Any

import pyarrow as pa
import pyspark
from pyspark.sql.pandas import types as spark_arrow
from pyspark.sql.types import ArrayType, DataType, MapType, StructField, StructType


def spark_line() -> tuple[int, int]:
    """The running PySpark's (major, minor), e.g. ``(4, 1)``."""
    major, minor = pyspark.__version__.split(".")[:2]
    return int(major), int(minor)


@cache
def _parameters(function: Callable[..., Any]) -> frozenset[str]:
    return frozenset(inspect.signature(function).parameters)


def to_arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema in which Spark exchanges ``schema``'s rows with Python: TIMESTAMP
    columns as UTC instants (every session hudi_sync writes from or reads into runs in
    UTC), strings and binaries not large.

    PySpark up to 4.1 takes ``timestamp_utc=True`` for the UTC zone; 4.2 replaced it by
    ``timezone=`` (keyword-only), which a schema with a TIMESTAMP column must name (else an
    ``AssertionError``): passing the old keyword there is a ``TypeError``."""
    known = _parameters(spark_arrow.to_arrow_schema)
    options: dict[str, Any] = {}
    if "timezone" in known:
        options["timezone"] = "UTC"
    elif "timestamp_utc" in known:
        options["timestamp_utc"] = True
    if "prefers_large_types" in known:
        options["prefers_large_types"] = False
    return spark_arrow.to_arrow_schema(schema, **options)


def from_arrow_schema(schema: pa.Schema) -> StructType:
    """The Spark schema of Arrow columns as PySpark 4.0 derives it: a timestamp without a
    zone is a TIMESTAMP (an instant, in the UTC sessions hudi_sync runs), and arrays and
    maps may hold nulls whatever the Arrow type says.

    PySpark 4.1 takes an array's ``containsNull`` (a map's ``valueContainsNull``) from the
    Arrow element's nullability, and Spark refuses to cast the nullable array it reads from
    parquet to that type (``DATATYPE_MISMATCH.CAST_WITHOUT_SUGGESTION``, an upsert of rows
    read back from a table). PySpark 4.2 makes ``prefer_timestamp_ntz`` default to true,
    turning a zone-less timestamp into ``TIMESTAMP_NTZ``: the same table would be read and
    written as another type than on 4.0."""
    derived = _nullable_elements(spark_arrow.from_arrow_schema(schema, prefer_timestamp_ntz=False))
    assert isinstance(derived, StructType)
    return derived


def _nullable_elements(data_type: DataType) -> DataType:
    """``data_type`` with every array's and map's elements nullable, at any depth."""
    if isinstance(data_type, ArrayType):
        return ArrayType(_nullable_elements(data_type.elementType), containsNull=True)
    if isinstance(data_type, MapType):
        return MapType(
            _nullable_elements(data_type.keyType),
            _nullable_elements(data_type.valueType),
            valueContainsNull=True,
        )
    if isinstance(data_type, StructType):
        return StructType(
            [
                StructField(f.name, _nullable_elements(f.dataType), f.nullable, f.metadata)
                for f in data_type.fields
            ]
        )
    return data_type


def batch_schema(schema: StructType) -> pa.Schema:
    """The exact Arrow schema Spark requires of the record batches a Python data source
    reader yields for ``schema`` (names, types and nullability).

    PySpark up to 4.2 checks the names only, and converts; 4.3 refuses a batch whose
    schema is not equal to Spark's own Arrow form of the declared schema
    (``DATA_SOURCE_RETURN_SCHEMA_MISMATCH``), e.g. a timestamp in another zone, a column
    that is nullable where the declared one is not."""
    return to_arrow_schema(schema)
