"""The one place that knows which PySpark line is running (3.5, 4.0-4.3).

Every API that differs between Spark lines is wrapped here, so the writer, the reader and
the data source call one function and never test a version themselves. On 3.5 the
Arrow paths 4.0 added (``toArrow``, ``applyInArrow``, ``createDataFrame`` of an Arrow
table) are built from what 3.5 has: the same Arrow collect, ``mapInArrow`` and Arrow
stream hand-over that 4.0's own implementations use, so every type survives."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cache
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyspark
from pyspark import SparkContext
from pyspark.errors import PySparkAttributeError, PySparkException, PySparkNotImplementedError
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas import types as spark_arrow
from pyspark.sql.types import (
    ArrayType,
    DataType,
    MapType,
    StructField,
    StructType,
    TimestampType,
)

from hudi_sync.errors import BadInputError

# The Python Data Source API (``pyspark.sql.datasource``) behind ``format("hudi")`` and
# ``readStream``: PySpark 4.0 added it, with ``toArrow``, ``applyInArrow`` and
# ``createDataFrame(pyarrow.Table)``.
ARROW_NATIVE_LINE = (4, 0)


class SparkLineError(BadInputError):
    """The running PySpark line cannot carry the feature asked for."""


def spark_line() -> tuple[int, int]:
    """The running PySpark's (major, minor), e.g. ``(4, 1)``."""
    major, minor = pyspark.__version__.split(".")[:2]
    return int(major), int(minor)


def _arrow_native() -> bool:
    return spark_line() >= ARROW_NATIVE_LINE


def has_data_source_api() -> bool:
    """Whether ``format("hudi")`` can be registered: PySpark 4.0+."""
    return _arrow_native()


def require_data_source_api() -> None:
    """Refuse ``format("hudi")`` / ``readStream`` in one line on a line without the API."""
    if not has_data_source_api():
        raise SparkLineError(
            'format("hudi") and readStream need PySpark 4.0+ (the Python Data Source API); '
            f"this is PySpark {pyspark.__version__}: use hudi_sync.spark.read / write"
        )


def error_condition(exc: PySparkException) -> str | None:
    """A PySpark error's condition (``getCondition`` from 4.0, ``getErrorClass`` on 3.5)."""
    if _arrow_native():
        return exc.getCondition()
    return exc.getErrorClass()


def minimum_java() -> int:
    """The oldest Java the running PySpark starts on: 17 from 4.0, 8 on 3.5."""
    return 17 if _arrow_native() else 8


def spark_context(spark: SparkSession) -> SparkContext | None:
    """The session's SparkContext; None on Spark Connect, which has none (4.x raises
    ``PySparkAttributeError`` for it, 3.5 ``PySparkNotImplementedError``)."""
    try:
        return spark.sparkContext
    except (PySparkAttributeError, PySparkNotImplementedError):
        return None


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
    written as another type than on 4.0. PySpark 3.5 knows no fixed-size binary, large
    list or fixed-size list: they are read as binary and list, which
    ``arrow_columns.align`` casts to."""
    if not _arrow_native():
        schema = pa.schema([f.with_type(_plain(f.type)) for f in schema])
    options: dict[str, Any] = {}
    if "prefer_timestamp_ntz" in _parameters(spark_arrow.from_arrow_schema):
        options["prefer_timestamp_ntz"] = False
    derived = _nullable_elements(spark_arrow.from_arrow_schema(schema, **options))
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


def _plain(kind: pa.DataType) -> pa.DataType:
    """``kind`` with the Arrow types PySpark 3.5 cannot map replaced by ones it can."""
    if pa.types.is_fixed_size_binary(kind):
        return pa.binary()
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return pa.list_(kind.value_field.with_type(_plain(kind.value_type)))
    if pa.types.is_map(kind):
        return pa.map_(
            kind.key_field.with_type(_plain(kind.key_type)),
            kind.item_field.with_type(_plain(kind.item_type)),
        )
    if pa.types.is_struct(kind):
        return pa.struct([f.with_type(_plain(f.type)) for f in kind])
    return kind


def collect_arrow(df: DataFrame) -> pa.Table:
    """``df.toArrow()``: every row on the driver as one Arrow table, timestamps in UTC.
    3.5 has the same Arrow collect underneath (``_collect_as_arrow``), without the
    wrapper."""
    if _arrow_native():
        return df.toArrow()
    schema = to_arrow_schema(df.schema)
    frame: Any = df  # 4.0's stubs type unknown attributes as columns
    batches = frame._collect_as_arrow()
    if not batches:
        return schema.empty_table()
    return pa.Table.from_batches(batches).cast(schema)


def arrow_dataframe(spark: SparkSession, table: pa.Table) -> DataFrame:
    """``spark.createDataFrame(table)``: every Arrow type kept (timestamps, decimals,
    binary, nested). 3.5 takes only pandas there (which loses them), so its Arrow stream
    hand-over to the JVM, the one 4.0's implementation uses, is called directly.

    Empty record batches are left out: Spark's Arrow stream reader takes one for the
    stream's end, silently dropping every row after it (a table concatenated from
    per-file reads, one of them empty, lost its later rows)."""
    batches = [b for b in table.to_batches() if b.num_rows]
    if batches:  # an empty table goes as it is (PySpark needs a chunk to type its columns)
        table = pa.Table.from_batches(batches, table.schema)
    if _arrow_native():
        return spark.createDataFrame(table)
    from pyspark.sql.pandas.serializers import ArrowStreamSerializer

    schema = from_arrow_schema(table.schema)
    table = table.cast(pa.schema([f.with_type(_plain(f.type)) for f in table.schema]))
    zone = spark.conf.get("spark.sql.session.timeZone") or "UTC"
    table = pa.Table.from_arrays(
        [
            _localized(column, f.dataType, zone)
            for column, f in zip(table.columns, schema.fields, strict=True)
        ],
        names=table.column_names,
    ).cast(to_arrow_schema(schema))
    chunk = int(spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch") or 10000)
    jvm: Any = spark._jvm

    def reader(temp_filename: str) -> Any:
        return jvm.PythonSQLUtils.readArrowStreamFromFile(temp_filename)

    def iterator_server() -> Any:
        return jvm.ArrowIteratorServer()

    batches = table.to_batches(max_chunksize=chunk)
    stream = spark.sparkContext._serialize_to_jvm(
        batches, ArrowStreamSerializer(), reader, iterator_server
    )
    frame = jvm.PythonSQLUtils.toDataFrame(stream, schema.json(), spark._jsparkSession)
    return DataFrame(frame, spark)


def _localized(column: Any, kind: DataType, zone: str) -> Any:
    """Zone-less timestamps bound for a Spark TimestampType read as wall-clock times of
    the session's zone, nanoseconds floored to microseconds, at any depth: what 4.0's
    ``createDataFrame`` does before it hands a table over."""
    if not _has_timestamp(column.type):
        return column
    if isinstance(column, pa.ChunkedArray):
        chunks = [_localized(chunk, kind, zone) for chunk in column.chunks]
        return pa.chunked_array(chunks) if chunks else column
    if pa.types.is_timestamp(column.type):
        if column.type.unit == "ns":
            column = pc.floor_temporal(column, unit="microsecond")
        if column.type.tz is None and isinstance(kind, TimestampType):
            column = pc.assume_timezone(column, zone)
        return column
    mask = column.is_null() if column.null_count else None
    if isinstance(kind, StructType):
        children = [
            _localized(column.field(i), f.dataType, zone) for i, f in enumerate(kind.fields)
        ]
        return pa.StructArray.from_arrays(children, names=kind.names, mask=mask)
    if isinstance(kind, MapType):
        keys = _localized(column.keys, kind.keyType, zone)
        items = _localized(column.items, kind.valueType, zone)
        return pa.MapArray.from_arrays(column.offsets, keys, items, mask=mask)
    if isinstance(kind, ArrayType):
        values = _localized(column.values, kind.elementType, zone)
        return pa.ListArray.from_arrays(column.offsets, values, mask=mask)
    return column


def _has_timestamp(kind: pa.DataType) -> bool:
    if pa.types.is_timestamp(kind):
        return True
    if pa.types.is_map(kind):
        return _has_timestamp(kind.key_type) or _has_timestamp(kind.item_type)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return _has_timestamp(kind.value_type)
    if pa.types.is_struct(kind):
        return any(_has_timestamp(f.type) for f in kind)
    return False


def apply_in_arrow(
    df: DataFrame,
    keys: Sequence[str],
    fn: Callable[[pa.Table], pa.Table],
    schema: StructType,
) -> DataFrame:
    """``df.groupBy(*keys).applyInArrow(fn, schema)``: ``fn`` once per group of equal
    keys, on the whole group. 3.5 has no ``applyInArrow``: there the rows are shuffled by
    the keys, sorted by them within each task, and ``mapInArrow`` cuts the sorted stream
    into groups (one group in memory at a time, as ``applyInArrow`` holds it)."""
    if _arrow_native():
        return df.groupBy(*keys).applyInArrow(fn, schema)
    grouped = df.repartition(*keys).sortWithinPartitions(*keys)
    return grouped.mapInArrow(_by_group(list(keys), fn), schema)


def _by_group(
    keys: list[str], fn: Callable[[pa.Table], pa.Table]
) -> Callable[[Iterable[pa.RecordBatch]], Iterable[pa.RecordBatch]]:
    """A ``mapInArrow`` function calling ``fn`` on each run of equal ``keys`` in a
    stream sorted by them."""

    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        pending: list[pa.RecordBatch] = []  # the current group's rows so far
        for batch in batches:
            if not batch.num_rows:
                continue
            if pending and not _same_keys(pending[-1], batch, keys):
                yield from fn(pa.Table.from_batches(pending)).to_batches()
                pending = []
            start = 0
            for cut in _key_changes(batch, keys):
                pending.append(batch.slice(start, cut - start))
                yield from fn(pa.Table.from_batches(pending)).to_batches()
                pending, start = [], cut
            pending.append(batch.slice(start))
        if pending:
            yield from fn(pa.Table.from_batches(pending)).to_batches()

    return run


def _key_changes(batch: pa.RecordBatch, keys: list[str]) -> list[int]:
    """The rows of a sorted batch whose keys differ from the row before (nulls equal)."""
    changed = pa.array([False] * (batch.num_rows - 1), pa.bool_())
    for key in keys:
        column = batch.column(key)
        before, after = column.slice(0, len(column) - 1), column.slice(1)
        differs = pc.fill_null(pc.not_equal(before, after), False)
        one_null = pc.xor(pc.is_null(before), pc.is_null(after))
        changed = pc.or_(changed, pc.or_(differs, one_null))
    return [i + 1 for i in pc.indices_nonzero(changed).to_pylist()]


def _same_keys(last: pa.RecordBatch, batch: pa.RecordBatch, keys: list[str]) -> bool:
    """Whether ``last``'s final row and ``batch``'s first row have equal keys."""
    return all(
        last.column(k)[last.num_rows - 1].as_py() == batch.column(k)[0].as_py() for k in keys
    )
