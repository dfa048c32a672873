"""Spark's parquet writer publishing file groups under their Hudi names, and their stats.

The merge plans of ``spark_merge`` hand over rows with ``FILE_ID`` set, each file
group's rows in one task; here one Spark job writes them under a staging folder inside
the write's marker folder (``.hoodie/.temp/<instant>``), partitioned by file id, and each
file is renamed to its Hudi name (announced by a marker before the job started, so a
rollback finds it). Write stats come from the written files' footers and the profile.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_sync.errors import WriteError
from hudi_sync.spark.writing.merge import FILE_NAME, SEQNO
from hudi_sync.spark.writing.spark_merge import (
    FILE_ID,
    NEW_ROW,
    WRITE_TOKEN,
    Bucket,
    GroupProfile,
    by_file_group,
    file_uri,
    insert_rows,
    route,
)
from hudi_sync.storage import Location
from hudi_sync.table.timeline.commit_metadata import WriteStat
from hudi_sync.table.write.rollback import marker_folder, write_marker

_STAGING_COLUMN = "__hudi_sync_fg"


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
    whole_files: int = 0,
) -> dict[str, tuple[str, int, int]]:
    """Write ``rows`` (``FILE_ID`` set, each file group's rows in one task: see
    ``by_file_group`` and ``merged_in_place``) as one base file per file group;
    ``groups``: file id -> partition, each already announced by a marker.
    ``whole_files``: when > 0, stored files up to that size are each read by one task
    (``merged_in_place``). Returns file id -> (relative path, rows, bytes) of the files
    published under their Hudi names."""
    spark = rows.sparkSession
    staging = f"{marker_folder(location, instant)}/.staging"
    task = F.spark_partition_id()
    index = F.monotonically_increasing_id() - F.shiftleft(task.cast("long"), 33)
    seqno = F.concat(F.lit(f"{instant}_"), task.cast("string"), F.lit("_"), index.cast("string"))
    name = F.concat(F.col(FILE_ID), F.lit(f"_{WRITE_TOKEN}_{instant}.parquet"))
    columns = [
        seqno.alias(SEQNO) if n == SEQNO else name.alias(FILE_NAME) if n == FILE_NAME else F.col(n)
        for n in schema.names
    ]
    out = rows.select(
        *[
            F.when(F.col(NEW_ROW), c).otherwise(F.col(SEQNO)).alias(SEQNO) if n == SEQNO else c
            for n, c in zip(schema.names, columns, strict=True)
        ],
        F.col(FILE_ID).alias(_STAGING_COLUMN),
    )
    settings = {
        # Hudi's (and pyarrow's) timestamps: int64 microseconds, not Spark's INT96.
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        # A task holds (nearly always) one file group: no sort by file id before writing,
        # one open writer per file group the task holds instead.
        "spark.sql.optimizer.plannedWrite.enabled": "false",
        "spark.sql.maxConcurrentOutputFileWriters": str(len(groups) + 1),
    }
    if whole_files > 0:
        # A file is never split (split size >= its size), nor packed with another one
        # (each file counts as a whole split on its own).
        settings["spark.sql.files.maxPartitionBytes"] = str(whole_files)
        settings["spark.sql.files.openCostInBytes"] = str(whole_files)
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
        meta = footer(location, parts[0])
        location.ensure_folder(location.join(partition))
        location.move(parts[0], target)  # literal: fsspec's mv expands glob characters
        published[file_id] = (relative, meta.num_rows, location.size(target))
    return published


def write_new_file_groups(
    location: Location,
    rows: DataFrame,
    schema: pa.Schema,
    instant: str,
    buckets: Sequence[Bucket],
    one_task: bool = False,
) -> list[WriteStat]:
    """New keys only (keyed incoming rows), written as the new file groups ``buckets``
    route them to, by Spark's parquet writer: a Merge-on-Read write's inserts, which
    touch no stored file. ``one_task``: one new file group takes most of the rows, so
    one task reads them all rather than have them shuffled to it. Returns their write
    stats."""
    routed = route(rows.sparkSession, insert_rows(rows, schema, F.lit(instant)), buckets)
    groups = {b.file_id: b.partition for b in buckets}
    for file_id, partition in groups.items():
        write_marker(location, instant, partition, base_file_name(file_id, instant))
    if one_task and len(groups) == 1:
        routed = routed.coalesce(1)
    else:
        routed = by_file_group(routed, len(groups))
    published = write_file_groups(location, routed, schema, instant, groups)
    return [
        write_stat(groups[file_id], file_id, path, count, size, None, 0, None)
        for file_id, (path, count, size) in published.items()
    ]


def write_empty(location: Location, schema: pa.Schema, relative: str) -> int:
    """A base file without rows (a file group whose rows all got deleted); its size."""
    sink = pa.BufferOutputStream()
    pq.write_table(schema.empty_table(), sink)
    data = sink.getvalue().to_pybytes()
    location.write_file(location.join(relative), data)
    return len(data)


def footer(location: Location, path: str) -> pq.FileMetaData:
    """A stored parquet file's footer, through the table's file system."""
    if location.is_local:
        return pq.read_metadata(path)
    with location.fs.open(path, "rb") as handle:
        return pq.read_metadata(handle)


@dataclass(frozen=True)
class StoredFile:
    """What a stored base file's footer says: its rows, uncompressed bytes per row and
    columns."""

    rows: int
    row_bytes: int
    schema: pa.Schema


def stored_file(location: Location, path: str) -> StoredFile:
    """A stored base file's rows, uncompressed bytes per row and columns, from its
    footer."""
    meta = footer(location, path)
    total = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    rows = int(meta.num_rows)
    return StoredFile(rows, max(1, int(total) // max(1, rows)), meta.schema.to_arrow_schema())


def write_stat(
    partition: str,
    file_id: str,
    path: str,
    num_writes: int,
    file_size: int,
    stored: str | None,
    stored_count: int,
    group: GroupProfile | None,
    cdc_stats: Mapping[str, int] | None = None,
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
        cdc_stats=dict(cdc_stats or {}),
    )
