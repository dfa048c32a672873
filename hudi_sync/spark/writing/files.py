"""Load data files for a write, what ``hudi-sync write`` runs: small parquet files as
Arrow rows read in this process (``arrow_rows``, for the driver's Arrow engine: no
Spark session), anything else into a DataFrame by Spark's reader (``load_files``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from hudi_sync.errors import BadInputError, first_line
from hudi_sync.storage import open_location, read_parquet

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

FORMATS = ("parquet", "json", "csv")
_SUFFIXES = {".parquet": "parquet", ".json": "json", ".jsonl": "json", ".csv": "csv"}
# Parquet columns pyarrow reads as Spark's reader does (``toArrow`` of its DataFrame):
# timestamps are Spark's microseconds in the session's zone (UTC), all else as read.
_SAME_AS_SPARK = (
    pa.types.is_boolean,
    pa.types.is_int8,
    pa.types.is_int16,
    pa.types.is_int32,
    pa.types.is_int64,
    pa.types.is_float32,
    pa.types.is_float64,
    pa.types.is_string,
    pa.types.is_binary,
    pa.types.is_date32,
    pa.types.is_decimal128,
)


def source_format(sources: Sequence[str], declared: str | None) -> str:
    """The declared format, else the one every source's suffix names."""
    if declared is not None:
        if declared not in FORMATS:
            raise BadInputError(f"--format {declared!r} is not one of {', '.join(FORMATS)}")
        return declared
    found = {_SUFFIXES.get(os.path.splitext(s)[1].lower()) for s in sources}
    if len(found) != 1 or None in found:
        raise BadInputError(
            f"cannot tell the format of {', '.join(sources)} from their names; pass --format"
        )
    return str(found.pop())


def check_sources(sources: Sequence[str]) -> None:
    """Refuse a missing source by name (cheap: no Spark session needed)."""
    if not sources:
        raise BadInputError("no source files given")
    for source in sources:
        if not os.path.exists(source):
            raise BadInputError(f"source {source}: no such file or folder")


def arrow_rows(sources: Sequence[str], fmt: str, max_bytes: int) -> pa.Table | None:
    """The sources as the Arrow rows Spark's reader would give, read in this process
    (fsspec, pyarrow), when they are parquet files (not folders) of at most
    ``max_bytes`` on storage together, with one schema of columns pyarrow reads as
    Spark does; None otherwise (Spark reads them: CSV and JSON types come from Spark's
    own inference, which pyarrow's differs from)."""
    if fmt != "parquet" or any(os.path.isdir(s) for s in sources):
        return None
    locations = [open_location(os.path.abspath(s)) for s in sources]
    if sum(location.size(location.path) for location in locations) > max_bytes:
        return None
    tables = []
    for source, location in zip(sources, locations, strict=True):
        try:
            with location.fs.open(location.path, "rb") as handle:
                tables.append(read_parquet(handle))
        except (pa.ArrowException, OSError) as exc:
            raise BadInputError(f"source {source}: {first_line(exc)}") from None
    schema = _spark_schema(tables[0].schema)
    if schema is None or any(not t.schema.equals(tables[0].schema) for t in tables[1:]):
        return None  # Spark's rules for differing files stand
    return pa.concat_tables([t.replace_schema_metadata().cast(schema) for t in tables])


def _spark_schema(schema: pa.Schema) -> pa.Schema | None:
    """The schema Spark's reader gives these parquet columns (all nullable, no
    metadata); None when a column's type, or a name Spark would take for a duplicate
    (its names ignore case), may read otherwise."""
    if len({name.lower() for name in schema.names}) != len(schema.names):
        return None
    fields = []
    for column in schema:
        kind = column.type
        if pa.types.is_timestamp(kind) and kind.tz is not None and kind.unit in ("ms", "us"):
            kind = pa.timestamp("us", "UTC")
        elif not any(same(kind) for same in _SAME_AS_SPARK):
            return None
        fields.append(pa.field(column.name, kind, nullable=True))
    return pa.schema(fields)


def load_files(spark: SparkSession, sources: Sequence[str], fmt: str | None = None) -> DataFrame:
    """Read local data files (or folders of them): CSV with a header row and inferred
    types, JSON lines, or parquet."""
    from pyspark.errors import AnalysisException

    check_sources(sources)
    kind = source_format(sources, fmt)
    reader = spark.read.format(kind)
    if kind == "csv":
        reader = reader.option("header", "true").option("inferSchema", "true")
    if kind == "json":
        reader = reader.option("mode", "FAILFAST")
    try:
        df = reader.load([os.path.abspath(s) for s in sources])
        df.schema  # noqa: B018 - resolve now so that unreadable sources fail here
    except AnalysisException as exc:
        raise BadInputError(f"source {', '.join(sources)}: {first_line(exc)}") from None
    return df
