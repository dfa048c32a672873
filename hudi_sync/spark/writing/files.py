"""Load data files into a DataFrame for a write: what ``hudi-sync write`` runs."""

from __future__ import annotations

import os
from collections.abc import Sequence

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession

from hudi_sync.errors import BadInputError

FORMATS = ("parquet", "json", "csv")
_SUFFIXES = {".parquet": "parquet", ".json": "json", ".jsonl": "json", ".csv": "csv"}


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


def load_files(spark: SparkSession, sources: Sequence[str], fmt: str | None = None) -> DataFrame:
    """Read local data files (or folders of them): CSV with a header row and inferred
    types, JSON lines, or parquet."""
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
        first_line = (str(exc).strip().splitlines() or ["unreadable"])[0]
        raise BadInputError(f"source {', '.join(sources)}: {first_line}") from None
    return df
