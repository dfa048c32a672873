"""The copy-on-write merge run by Spark itself: its join, its parquet writer.

Used by ``writer.write`` with ``hudi_sync.write.merge.engine=spark`` when Spark can
open the table path (local tables, or a scheme its Hadoop has a file system for, see
``reader.spark_opens``) and the table does not log CDC; otherwise (and by default)
Spark's Python workers merge each file group with pyarrow
(``merge.merge_file_group``), which is also the reference for the rules here:

1. ``profile``: the incoming keys joined with the stored keys (and ordering values)
   of the partitions they go to: which file groups hold incoming keys, and how many
   updates and deletes each takes; new keys per partition follow by subtraction (the
   workload profile Hudi's upsert partitioner uses to route inserts).
2. ``merged_rows``: the touched file groups' stored rows, full outer joined with the
   incoming rows of their partitions; incoming rows of other partitions are inserts.
   Winning incoming rows get the instant as ``_hoodie_commit_time``, kept rows keep
   their meta fields; inserts go to file groups by key hash (``route``).
3. ``write_file_groups``: one Spark task per file group writes it under a staging
   folder inside the write's marker folder (``.hoodie/.temp/<instant>``), partitioned
   by file id; each file is then renamed to its Hudi name. Every name was announced by
   a marker before the Spark job started, so a rollback finds what was published, and
   removing the marker folder removes the staging files. Write stats come from the
   written files' footers and the profile: no counting job.

Differences from the Python path: Spark's parquet writer cannot put Hudi's footer
metadata (``hoodie_min_record_key`` / ``hoodie_max_record_key``) into the files, so
readers that prune by key range read those files; sequence numbers count all rows of
the task, not only the written ones; a file group whose rows all got deleted is
written as an empty file by the driver.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from hudi_sync.errors import WriteError
from hudi_sync.spark.merge import (
    COMMIT_TIME,
    DELETE_FLAG,
    FILE_NAME,
    PARTITION_PATH,
    RECORD_KEY,
    SEQNO,
)
from hudi_sync.storage import Location
from hudi_sync.table.metadata import WriteStat
from hudi_sync.table.rollback import marker_folder
from hudi_sync.table.schema import META_FIELDS

FILE_ID = "__hudi_sync_file_id"
# Write token of every file this path writes (Hudi's ``task-stage-attempt``): the
# renamed files come from one committed Spark job, so no attempt needs telling apart.
WRITE_TOKEN = "0-0-0"
_NEW = "__hudi_sync_new"
_STAGING_COLUMN = "__hudi_sync_fg"

# Hashes of record keys are mapped onto [0, 1) in steps of 1 / HASH_SPAN.
HASH_SPAN = 1 << 30


@dataclass(frozen=True)
class Bucket:
    """A share ``[low, high)`` of a partition's key-hash range that goes to a file group."""

    partition: str
    low: float
    high: float
    file_id: str


@dataclass(frozen=True)
class GroupProfile:
    """Incoming rows for one stored file group: keys it holds, updates and deletes."""

    matched_upserts: int  # incoming non-delete rows whose key the group holds
    updates: int
    deletes: int


def file_uri(location: Location, path: str) -> str:
    """The URI Spark opens for ``path`` (a path on ``location``'s file system)."""
    if location.is_local:
        return "file://" + os.path.abspath(path)
    return location.uri_of(path[len(location.path.rstrip("/")) :])


def wins(incoming: Column | None, stored: Column | None) -> Column:
    """Incoming replaces stored when its ordering value is >= (a stored null loses to
    anything, an incoming null to any value): ``merge._winning`` as a Spark column."""
    if incoming is None or stored is None:
        return F.lit(True)
    return F.when(stored.isNull(), F.lit(True)).otherwise(
        F.coalesce(incoming >= stored, F.lit(False))
    )


def profile(
    spark: SparkSession,
    location: Location,
    rows: DataFrame,
    stored_files: Sequence[str],
    ordering: str | None,
) -> dict[tuple[str, str], GroupProfile]:
    """Per stored ``(partition, file id)``: what the incoming rows do to it."""
    if not stored_files:
        return {}
    columns = [
        F.col(PARTITION_PATH).alias("__sp"),
        F.col(RECORD_KEY).alias("__sk"),
        F.split(F.col(FILE_NAME), "_").getItem(0).alias(FILE_ID),
    ]
    if ordering:
        columns.append(F.col(ordering).alias("__so"))
    stored = spark.read.parquet(*[file_uri(location, f) for f in stored_files]).select(*columns)
    incoming = rows.select(
        PARTITION_PATH,
        RECORD_KEY,
        DELETE_FLAG,
        *([F.col(ordering).alias("__io")] if ordering else []),
    )
    joined = incoming.join(
        stored,
        (incoming[PARTITION_PATH] == stored["__sp"]) & (incoming[RECORD_KEY] == stored["__sk"]),
    )
    won = wins(F.col("__io"), F.col("__so")) if ordering else F.lit(True)
    delete = F.col(DELETE_FLAG)
    found = (
        joined.groupBy("__sp", FILE_ID)
        .agg(
            F.sum((~delete).cast("long")).alias("matched"),
            F.sum((won & ~delete).cast("long")).alias("updates"),
            F.sum((won & delete).cast("long")).alias("deletes"),
        )
        .collect()
    )
    return {
        (r["__sp"], r[FILE_ID]): GroupProfile(r["matched"], r["updates"], r["deletes"])
        for r in found
    }


def _aligned(
    frame: DataFrame, schema: pa.Schema, prefix: str, present: Sequence[str]
) -> list[Column]:
    """``frame``'s columns in ``schema`` order and types, renamed ``prefix + name``;
    missing ones (columns added later) as typed nulls."""
    types = {f.name: f.dataType for f in from_arrow_schema(schema).fields}
    columns = []
    for name in schema.names:
        value = frame[name].cast(types[name]) if name in present else F.lit(None).cast(types[name])
        columns.append(value.alias(prefix + name))
    return columns


def merged_rows(
    spark: SparkSession,
    location: Location,
    rows: DataFrame,
    schema: pa.Schema,
    rewritten: Mapping[tuple[str, str], str],
    ordering: str | None,
    tagging: bool,
    instant: str,
) -> DataFrame:
    """Every row of the new base files, with ``FILE_ID`` for the stored ones (null for
    inserts) and ``_NEW`` for the rows this write puts in (their seqno comes later).

    ``rewritten``: the stored file groups to rewrite, ``(partition, file id) -> file``.
    ``tagging``: incoming keys may be stored (upsert, delete): stored and incoming
    rows are joined; else (inserts) the stored rows are kept as they are."""
    data_columns = [n for n in schema.names if n not in META_FIELDS]
    instant_lit = F.lit(instant)
    upserts = rows.where(~F.col(DELETE_FLAG))
    if not rewritten:
        return _inserts(upserts, schema, instant_lit)
    files = [
        file_uri(location, location.join(p, name)) for (p, _), name in sorted(rewritten.items())
    ]
    stored_frame = spark.read.option("mergeSchema", "true").parquet(*files)
    stored = stored_frame.select(
        *_aligned(stored_frame, schema, "__s_", stored_frame.columns),
        F.split(F.col(FILE_NAME), "_").getItem(0).alias(FILE_ID),
    )
    if not tagging:
        kept = stored.select(
            *[F.col("__s_" + n).alias(n) for n in schema.names], FILE_ID, F.lit(False).alias(_NEW)
        )
        return kept.unionByName(_inserts(upserts, schema, instant_lit))
    in_stored = F.col(PARTITION_PATH).isin(sorted({p for p, _ in rewritten}))
    elsewhere = _inserts(upserts.where(~in_stored), schema, instant_lit)
    nearby = _with_meta(rows.where(in_stored), F.lit(None))
    nearby = nearby.select(
        *_aligned(nearby, schema, "__i_", nearby.columns),
        F.col(DELETE_FLAG).alias("__i_delete"),
    )
    joined = stored.join(
        nearby,
        (stored["__s_" + PARTITION_PATH] == nearby["__i_" + PARTITION_PATH])
        & (stored["__s_" + RECORD_KEY] == nearby["__i_" + RECORD_KEY]),
        "full_outer",
    )
    has_stored = F.col("__s_" + RECORD_KEY).isNotNull()
    has_incoming = F.col("__i_" + RECORD_KEY).isNotNull()
    won = wins(
        F.col("__i_" + ordering) if ordering else None,
        F.col("__s_" + ordering) if ordering else None,
    )
    takes_incoming = has_incoming & (~has_stored | won)
    dropped = takes_incoming & F.col("__i_delete")
    merged = joined.where(~dropped).select(
        F.when(takes_incoming, instant_lit)
        .otherwise(F.col("__s_" + COMMIT_TIME))
        .alias(COMMIT_TIME),
        F.col("__s_" + SEQNO).alias(SEQNO),
        F.coalesce(F.col("__i_" + RECORD_KEY), F.col("__s_" + RECORD_KEY)).alias(RECORD_KEY),
        F.coalesce(F.col("__i_" + PARTITION_PATH), F.col("__s_" + PARTITION_PATH)).alias(
            PARTITION_PATH
        ),
        F.lit(None).cast("string").alias(FILE_NAME),
        *[
            F.when(takes_incoming, F.col("__i_" + n)).otherwise(F.col("__s_" + n)).alias(n)
            for n in data_columns
        ],
        FILE_ID,
        takes_incoming.alias(_NEW),
    )
    return merged.unionByName(elsewhere)


def _with_meta(incoming: DataFrame, commit_time: Column) -> DataFrame:
    """Incoming rows (already keyed) with the other meta fields."""
    return (
        incoming.withColumn(COMMIT_TIME, commit_time.cast("string"))
        .withColumn(SEQNO, F.lit(None).cast("string"))
        .withColumn(FILE_NAME, F.lit(None).cast("string"))
    )


def _inserts(incoming: DataFrame, schema: pa.Schema, instant: Column) -> DataFrame:
    """Incoming rows as new rows of file groups to be chosen (``route``)."""
    frame = _with_meta(incoming, instant)
    return frame.select(
        *_aligned(frame, schema, "", frame.columns),
        F.lit(None).cast("string").alias(FILE_ID),
        F.lit(True).alias(_NEW),
    )


def route(spark: SparkSession, merged: DataFrame, buckets: Sequence[Bucket]) -> DataFrame:
    """Inserts (null ``FILE_ID``) to the bucket their key's hash falls in."""
    if not buckets:
        return merged
    ranges = spark.createDataFrame(
        [(b.partition, b.low, b.high, b.file_id) for b in buckets],
        "__bucket_partition string, __lo double, __hi double, __bucket_file string",
    )
    position = F.pmod(F.xxhash64(RECORD_KEY), F.lit(HASH_SPAN)) / F.lit(float(HASH_SPAN))
    hashed = merged.withColumn("__hudi_sync_position", position)
    condition = (
        hashed[FILE_ID].isNull()
        & (hashed[PARTITION_PATH] == ranges["__bucket_partition"])
        & (hashed["__hudi_sync_position"] >= ranges["__lo"])
        & (hashed["__hudi_sync_position"] < ranges["__hi"])
    )
    joined = hashed.join(F.broadcast(ranges), condition, "left")
    return joined.withColumn(FILE_ID, F.coalesce(F.col(FILE_ID), F.col("__bucket_file"))).drop(
        "__hudi_sync_position", "__bucket_partition", "__lo", "__hi", "__bucket_file"
    )


def base_file_name(file_id: str, instant: str) -> str:
    return f"{file_id}_{WRITE_TOKEN}_{instant}.parquet"


@contextmanager
def _session_conf(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """Session settings for the duration of one Spark job, then restored."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, previous in before.items():
            if previous is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, previous)


def write_file_groups(
    location: Location,
    rows: DataFrame,
    schema: pa.Schema,
    instant: str,
    groups: Mapping[str, str],
) -> dict[str, tuple[str, int, int]]:
    """Write ``rows`` (``FILE_ID`` set) as one base file per file group; ``groups``:
    file id -> partition, each already announced by a marker. Returns file id ->
    (relative path, rows, bytes) of the files published under their Hudi names."""
    spark = rows.sparkSession
    staging = f"{marker_folder(location, instant)}/.staging"
    # One task per file group: each file group becomes exactly one file.
    grouped = rows.repartition(max(1, len(groups)), FILE_ID)
    task = F.spark_partition_id()
    index = F.monotonically_increasing_id() - F.shiftleft(task.cast("long"), 33)
    seqno = F.concat(F.lit(f"{instant}_"), task.cast("string"), F.lit("_"), index.cast("string"))
    name = F.concat(F.col(FILE_ID), F.lit(f"_{WRITE_TOKEN}_{instant}.parquet"))
    columns = [
        seqno.alias(SEQNO) if n == SEQNO else name.alias(FILE_NAME) if n == FILE_NAME else F.col(n)
        for n in schema.names
    ]
    out = grouped.select(
        *[
            F.when(F.col(_NEW), c).otherwise(F.col(SEQNO)).alias(SEQNO) if n == SEQNO else c
            for n, c in zip(schema.names, columns, strict=True)
        ],
        F.col(FILE_ID).alias(_STAGING_COLUMN),
    )
    settings = {
        # Hudi's (and pyarrow's) timestamps: int64 microseconds, not Spark's INT96.
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        # A task holds (nearly always) one file group: no sort by file id before writing.
        "spark.sql.optimizer.plannedWrite.enabled": "false",
        "spark.sql.maxConcurrentOutputFiles": str(len(groups) + 1),
    }
    with _session_conf(spark, settings):
        out.write.partitionBy(_STAGING_COLUMN).mode("overwrite").parquet(
            file_uri(location, staging)
        )
    published: dict[str, tuple[str, int, int]] = {}
    prefix = f"{_STAGING_COLUMN}="
    for folder in location.fs.ls(staging, detail=False):
        base = folder.rstrip("/").rsplit("/", 1)[-1]
        if not base.startswith(prefix):
            continue
        file_id = unquote(base[len(prefix) :])
        parts = [p for p in location.fs.ls(folder, detail=False) if p.endswith(".parquet")]
        if file_id not in groups or len(parts) != 1:
            raise WriteError(f"{location.uri}: unexpected Spark output {folder}: {parts}")
        partition = groups[file_id]
        relative = f"{partition}/{base_file_name(file_id, instant)}".lstrip("/")
        target = location.join(relative)
        meta = _footer(location, parts[0])
        location.fs.makedirs(location.join(partition), exist_ok=True)
        location.fs.mv(parts[0], target)
        published[file_id] = (relative, meta.num_rows, location.size(target))
    return published


def write_empty(location: Location, schema: pa.Schema, relative: str) -> int:
    """A base file without rows (a file group whose rows all got deleted); its size."""
    sink = pa.BufferOutputStream()
    pq.write_table(schema.empty_table(), sink)
    data = sink.getvalue().to_pybytes()
    location.write_file(location.join(relative), data)
    return len(data)


def _footer(location: Location, path: str) -> pq.FileMetaData:
    if location.is_local:
        return pq.read_metadata(path)
    with location.fs.open(path, "rb") as handle:
        return pq.read_metadata(handle)


def stored_rows(location: Location, relative: str) -> int:
    """Rows of a stored base file, from its footer."""
    return int(_footer(location, location.join(relative)).num_rows)


def write_stat(
    partition: str,
    file_id: str,
    path: str,
    num_writes: int,
    file_size: int,
    stored: str | None,
    stored_count: int,
    group: GroupProfile | None,
) -> WriteStat:
    """One file's write stat: inserts are what is left once kept and updated rows are
    accounted for."""
    updates = group.updates if group else 0
    deletes = group.deletes if group else 0
    return WriteStat(
        partition_path=partition,
        file_id=file_id,
        path=path,
        prev_commit=stored.rsplit("_", 1)[1].split(".")[0] if stored else None,
        num_writes=num_writes,
        num_deletes=deletes,
        num_updates=updates,
        num_inserts=num_writes - (stored_count - deletes),
        total_write_bytes=file_size,
        file_size=file_size,
        prev_base_file=stored,
        cdc_stats={},
    )
