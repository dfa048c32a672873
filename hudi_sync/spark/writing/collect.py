"""A small DataFrame's rows on the driver without a Spark job, where that is exact.

The driver's engine (``engine_choice``) collects a small write's rows; for a batch of a
few rows Spark's job is most of the write (about 0.2 s against the Arrow engine's 0.1 s).
A DataFrame that only reads parquet files as they are (``spark.read.parquet(files)``,
columns selected, nothing else) holds nothing Spark computes, so pyarrow reads the same
rows from the same files in the driver. Only where that is provably Spark's answer:

- the optimized plan is a file relation of parquet files under a projection that only
  selects columns: no filter, no partition columns discovered from paths, no buckets,
  no catalog table (char padding), no renamed or computed column;
- the files are local, and their order is Spark's: one file, or files of distinct sizes
  none of which Spark splits (Spark reads the largest first);
- each file's columns are exactly the types Spark collects (``to_arrow_schema`` of the
  frame's schema) up to the names of list and map children and nullability: a unit, a
  time zone, an unsigned or large type, a dictionary differ and refuse; INT96 columns,
  field ids, case-insensitive matches, files Spark wrote before 3.0 (or with its legacy
  calendar) refuse;
- dates and timestamps need no calendar rebase: the session reads in CORRECTED mode,
  or the file says Spark 3+ wrote it, or every value is on or after 1900-01-01 (Spark
  rebases or refuses only older ones).

A DataFrame made on the driver (from Arrow, pandas or Python rows: a local relation,
whose projections Spark's optimizer folds into it) needs no job either, but Spark's Arrow
collect runs one anyway (about 0.08 s against 0.02 s for its row collect): its rows are
taken by the row collect, with each timestamp column projected to its microseconds
(``unix_micros``, folded into the relation too) so no instant goes through Python's local
time, and built into Arrow with the types Spark's Arrow collect gives. Structs and
maps (whose entries the row collect reorders) and timestamps inside lists are not taken.

Anything else, or any failure on the way, takes Spark's collect (``collected_rows``).
"""

from __future__ import annotations

import datetime
import json
import os
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DataType,
    MapType,
    StructType,
    TimestampType,
)

from hudi_sync.spark.compat import to_arrow_schema
from hudi_sync.spark.writing.incoming import collected_rows

_SPARK_VERSION = b"org.apache.spark.version"
_LEGACY_KEYS = (b"org.apache.spark.legacyDateTime", b"org.apache.spark.legacyINT96")
_REBASE_MODE = "spark.sql.parquet.datetimeRebaseModeInRead"
_FIELD_IDS = "spark.sql.parquet.fieldId.read.enabled"  # columns matched by id
_SAFE_DAY = datetime.date(1900, 1, 1)  # Spark rebases (or refuses) only older values
_SAFE_INSTANT = datetime.datetime(1900, 1, 1, tzinfo=datetime.UTC)
# Rows of a local relation taken by the row collect: beyond a few hundred, converting
# Python values costs more than the Arrow collect's job (measured: 500 rows 1.5x it).
_MOST_LOCAL_ROWS = 256


def driver_collected(df: DataFrame, where: str) -> pa.Table:
    """``df``'s rows as Spark's Arrow collect gives them (``collected_rows``): read from
    its parquet files directly where the module's rules allow, else by Spark."""
    try:
        rows = plain_parquet_rows(df)
        if rows is None:
            rows = local_relation_rows(df)
    except Exception:  # anything unexpected: Spark's own answer
        rows = None
    return collected_rows(df, where) if rows is None else rows


def local_relation_rows(df: DataFrame) -> pa.Table | None:
    """The rows of a frame Spark holds as a local relation, collected without a Spark
    job and typed as Spark's Arrow collect types them; None for any other frame, or one
    with a struct, a map or a nested timestamp."""
    plan = df._jdf.queryExecution().optimizedPlan()
    if plan.nodeName() != "LocalRelation" or plan.data().size() > _MOST_LOCAL_ROWS:
        return None
    schema: StructType = df.schema
    names = schema.fieldNames()
    if len(set(names)) != len(names):
        return None
    columns = []
    for field in schema.fields:
        column = F.col("`" + field.name.replace("`", "``") + "`")
        if isinstance(field.dataType, TimestampType):
            column = F.unix_micros(column).alias(field.name)
        elif not _rows_keep_exactly(field.dataType):
            return None
        columns.append(column)
    exact = df
    if any(isinstance(field.dataType, TimestampType) for field in schema.fields):
        exact = df.select(columns)
        if exact._jdf.queryExecution().optimizedPlan().nodeName() != "LocalRelation":
            return None  # the projection did not fold: collecting it would run a job
    rows = exact.collect()
    expected = to_arrow_schema(schema)
    arrays = []
    for index, field in enumerate(expected):
        values = [row[index] for row in rows]
        if pa.types.is_timestamp(field.type) and field.type.tz is not None:
            arrays.append(pa.array(values, pa.int64()).cast(field.type))
        else:
            arrays.append(pa.array(values, field.type))
    return pa.Table.from_arrays(arrays, schema=expected)


def _rows_keep_exactly(kind: DataType) -> bool:
    """Whether the row collect's Python values of ``kind`` convert back to Arrow exactly:
    no struct (rows, not mappings), no map (its entries come back in a Java hash map's
    order), no zoned timestamp inside a list (Python datetimes in local time). A
    top-level zoned timestamp is taken by its microseconds."""
    if isinstance(kind, StructType | MapType | TimestampType):
        return False
    if isinstance(kind, ArrayType):
        return _rows_keep_exactly(kind.elementType)
    return True


def plain_parquet_rows(df: DataFrame) -> pa.Table | None:
    """The rows of ``df`` read by pyarrow from its parquet files, in Spark's order and
    Arrow schema; None when the module's rules do not prove them Spark's."""
    relation = _plain_parquet_relation(df._jdf.queryExecution().optimizedPlan())
    if relation is None:
        return None
    schema: StructType = df.schema
    names = schema.fieldNames()
    data_names = set(StructType.fromJson(json.loads(relation.dataSchema().json())).fieldNames())
    if len(set(names)) != len(names) or not set(names) <= data_names:
        return None  # a metadata column, or a column twice
    if any("." in name for name in names):
        return None  # pyarrow would take it for a nested column's path
    conf = df.sparkSession.conf
    files = _ordered_files(df, conf)
    if files is None or str(conf.get(_FIELD_IDS)).lower() != "false":
        return None
    corrected = str(conf.get(_REBASE_MODE)).upper() == "CORRECTED"
    expected = to_arrow_schema(schema)
    tables = []
    for path in files:
        table = _file_rows(path, expected, corrected)
        if table is None:
            return None
        tables.append(table)
    return pa.concat_tables(tables) if tables else expected.empty_table()


def _plain_parquet_relation(plan: Any) -> Any | None:
    """The ``HadoopFsRelation`` under ``plan`` when the plan only reads its parquet files
    and selects columns of them as they are; None otherwise."""
    node = plan
    if node.nodeName() == "Project":
        projections = node.projectList()
        for i in range(projections.size()):
            if projections.apply(i).nodeName() != "AttributeReference":
                return None
        node = node.child()
    if node.nodeName() != "LogicalRelation":
        return None
    if node.catalogTable().isDefined():
        return None
    relation = node.relation()
    if relation.getClass().getSimpleName() != "HadoopFsRelation":
        return None
    if relation.fileFormat().getClass().getSimpleName() != "ParquetFileFormat":
        return None
    if relation.partitionSchema().length() or relation.bucketSpec().isDefined():
        return None
    return relation


def _ordered_files(df: DataFrame, conf: Any) -> list[str] | None:
    """The frame's files as local paths in the order Spark reads them: one file, or
    files of distinct sizes, none large enough for Spark to split, largest first
    (Spark's file partitions); None otherwise."""
    paths = []
    for uri in df.inputFiles():
        parsed = urlparse(uri)
        if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
            return None
        path = unquote(parsed.path)
        if not os.path.isfile(path):
            return None
        paths.append(path)
    if len(paths) <= 1:
        return paths
    sizes = {path: os.path.getsize(path) for path in paths}
    if len(set(sizes.values())) != len(paths):
        return None  # Spark's order of equal sizes is its listing's
    unsplit = min(
        _bytes(str(conf.get("spark.sql.files.maxPartitionBytes"))),
        _bytes(str(conf.get("spark.sql.files.openCostInBytes"))),
    )
    if max(sizes.values()) > unsplit:
        return None
    return sorted(paths, key=lambda path: -sizes[path])


def _bytes(text: str) -> int:
    """A Spark byte size (``134217728``, ``128m``, ``4MB``) in bytes."""
    value = text.strip().lower().removesuffix("b")
    units = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
    if value and value[-1] in units:
        return int(value[:-1]) * units[value[-1]]
    return int(value)


def _file_rows(path: str, expected: pa.Schema, corrected: bool) -> pa.Table | None:
    """The ``expected`` columns of one file, when the module's rules prove them Spark's."""
    file = pq.ParquetFile(path)
    metadata = file.metadata.metadata or {}
    if any(key in metadata for key in _LEGACY_KEYS):
        return None
    version = metadata.get(_SPARK_VERSION)
    if version is not None and not _spark_3_or_later(version):
        return None
    if any(file.schema.column(i).physical_type == "INT96" for i in range(len(file.schema))):
        return None
    stored = file.schema_arrow
    lowered = [name.lower() for name in stored.names]
    if len(set(lowered)) != len(lowered):
        return None  # Spark matches names case-insensitively
    for field in expected:
        if field.name not in stored.names or _has_case_twins(stored.field(field.name).type):
            return None
        if _shape(stored.field(field.name).type) != _shape(field.type):
            return None
    table = file.read(columns=expected.names, use_threads=False).select(expected.names)
    table = table.cast(expected)
    rebased = not corrected and version is None
    if rebased and not all(_after_rebase_switch(table.column(name)) for name in expected.names):
        return None
    return table


def _spark_3_or_later(version: bytes) -> bool:
    major = version.decode("ascii", "replace").split(".", 1)[0]
    return major.isdigit() and int(major) >= 3


def _shape(kind: pa.DataType) -> Any:
    """``kind`` with the names of list and map children and nullability left out: what
    must equal between a file's column and Spark's collected one for a cast to only
    rename. Struct field names and every leaf type (unit, zone, width) are kept."""
    if pa.types.is_list(kind):
        return ("list", _shape(kind.value_type))
    if pa.types.is_map(kind):
        return ("map", _shape(kind.key_type), _shape(kind.item_type))
    if pa.types.is_struct(kind):
        return ("struct", tuple((f.name, _shape(f.type)) for f in kind))
    if pa.types.is_nested(kind) or pa.types.is_dictionary(kind):
        return ("other", str(kind), id(kind))  # equal to nothing
    return kind


def _has_case_twins(kind: pa.DataType) -> bool:
    """Whether a struct inside ``kind`` has two fields whose names differ only in case."""
    if pa.types.is_struct(kind):
        lowered = [f.name.lower() for f in kind]
        return len(set(lowered)) != len(lowered) or any(_has_case_twins(f.type) for f in kind)
    if pa.types.is_list(kind):
        return _has_case_twins(kind.value_type)
    if pa.types.is_map(kind):
        return _has_case_twins(kind.key_type) or _has_case_twins(kind.item_type)
    return False


def _after_rebase_switch(column: pa.ChunkedArray) -> bool:
    """Whether no date or timestamp in ``column`` is one Spark would rebase from the
    hybrid calendar or refuse (none before 1900-01-01); a nested one counts as old."""
    kind = column.type
    if pa.types.is_date(kind):
        least = pc.min(column).as_py()
        return least is None or least >= _SAFE_DAY
    if pa.types.is_timestamp(kind):
        least = pc.min(column.cast(pa.int64())).as_py()
        floor = int(_SAFE_INSTANT.timestamp() * 1_000_000)
        return least is None or least >= floor
    return not _holds_time(kind)


def _holds_time(kind: pa.DataType) -> bool:
    if pa.types.is_date(kind) or pa.types.is_timestamp(kind):
        return True
    if pa.types.is_list(kind):
        return _holds_time(kind.value_type)
    if pa.types.is_map(kind):
        return _holds_time(kind.key_type) or _holds_time(kind.item_type)
    if pa.types.is_struct(kind):
        return any(_holds_time(f.type) for f in kind)
    return False
