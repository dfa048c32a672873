"""Hudi's simple index on Spark: which stored file group holds each incoming key.

The stored keys of the partitions the write touches are read once, by one Spark job
that joins them with the incoming keys of those partitions only (narrow columns; the
incoming keys broadcast when they fit, so the stored keys stream through one task per
file and are never shuffled). That job keeps the matches (partition, key, file id)
cached and counts each partition's matched keys: the new keys of a partition are its
incoming upserts less those, and a partition without stored files needs no join at
all. The merge jobs then join the (cached) incoming rows with the cached matches,
broadcast when they fit: the stored files are not read again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_sync.errors import CorruptTableError
from hudi_sync.spark.parallelism import default_parallelism
from hudi_sync.spark.writing.file_groups import WriteTarget
from hudi_sync.spark.writing.merge import DELETE_FLAG, FILE_NAME, PARTITION_PATH, RECORD_KEY
from hudi_sync.spark.writing.spark_files import footer
from hudi_sync.spark.writing.spark_merge import FILE_ID
from hudi_sync.spark.writing.spark_merge_plan import broadcast_limit
from hudi_sync.storage import Location, open_location, read_parquet

_SP, _SK = "__stored_partition", "__stored_key"  # the stored side's columns
# The meta columns the stored keys are read from: strings in every base file. Naming
# their types spares Spark's schema inference (a Spark job a lookup); ``_row_bytes``
# has checked each file's footer holds them.
_KEY_COLUMNS = (PARTITION_PATH, RECORD_KEY, FILE_NAME)
_KEY_SCHEMA = ", ".join(f"{name} string" for name in _KEY_COLUMNS)
_MP, _MK, _MD = "__matched_partition", "__matched_key", "__matched_delete"
# What a narrow key row costs in a broadcast beyond its key and partition bytes.
_ROW_OVERHEAD = 48


@dataclass(frozen=True)
class KeyLookup:
    """The incoming keys that stored file groups hold, and what follows for the rest."""

    # (partition, key, file id, delete flag) of each incoming key a stored file group
    # holds, cached; None when the touched partitions have no stored file
    matched: DataFrame | None
    stored_partitions: frozenset[str]  # touched partitions with stored files
    matched_rows: int  # rows of ``matched``
    row_bytes: int  # the most a stored row takes, uncompressed (from the files' footers)
    new_keys: Mapping[str, int]  # partition -> non-delete keys no stored group holds
    broadcast: bool  # whether ``matched`` is joined as a broadcast

    def updates(self, rows: DataFrame) -> DataFrame | None:
        """The incoming ``rows`` (keyed) whose key a stored file group holds, with its
        file id (``FILE_ID``): updates and deletes; None when there are none."""
        if self.matched is None or not self.matched_rows:
            return None
        nearby = rows.where(F.col(PARTITION_PATH).isin(sorted(self.stored_partitions)))
        matched = F.broadcast(self.matched) if self.broadcast else self.matched
        joined = nearby.join(matched, self._same_key(nearby, matched), "inner")
        return joined.drop(_MP, _MK, _MD)

    def inserts(self, rows: DataFrame) -> DataFrame:
        """The incoming non-delete ``rows`` whose key no stored file group holds, with a
        null ``FILE_ID`` (routing chooses it)."""
        upserts = rows.where(~F.col(DELETE_FLAG))
        if self.matched is not None and self.matched_rows:
            stored = F.col(PARTITION_PATH).isin(sorted(self.stored_partitions))
            nearby = upserts.where(stored)
            matched = F.broadcast(self.matched) if self.broadcast else self.matched
            new = nearby.join(matched, self._same_key(nearby, matched), "left_anti")
            upserts = upserts.where(~stored).unionByName(new)
        return upserts.withColumn(FILE_ID, F.lit(None).cast("string"))

    def release(self) -> None:
        """Drop the cached matches."""
        if self.matched is not None:
            self.matched.unpersist()

    @staticmethod
    def _same_key(rows: DataFrame, matched: DataFrame) -> Any:
        return (rows[PARTITION_PATH] == matched[_MP]) & (rows[RECORD_KEY] == matched[_MK])


def no_lookup(upserts: Mapping[str, int]) -> KeyLookup:
    """Every incoming key new (an insert looks nothing up): ``upserts`` per partition."""
    return KeyLookup(None, frozenset(), 0, 0, _positive(upserts), broadcast=False)


def lookup(
    spark: SparkSession,
    target: WriteTarget,
    rows: DataFrame,
    upserts: Mapping[str, int],
    row_counts: Mapping[str, int],
) -> KeyLookup:
    """Look the keyed, deduplicated incoming ``rows`` up in the stored base files of
    the partitions they go to; ``upserts`` and ``row_counts``: the rows' non-delete and
    all rows per partition (counted by the incoming job). One Spark job, when some
    touched partition has stored files; none otherwise."""
    location = target.location
    stored_files = {
        (partition, location.join(partition, name))
        for (partition, _), name in target.snapshot.items()
        if partition in target.partitions
    }
    if not stored_files:
        return no_lookup(upserts)
    partitions = frozenset(p for p, _ in stored_files)
    files = sorted(path for _, path in stored_files)
    limit = broadcast_limit(spark)
    key_bytes, row_bytes = _row_bytes(location, files)
    nearby_rows = sum(n for p, n in row_counts.items() if p in partitions)
    nearby = rows.where(F.col(PARTITION_PATH).isin(sorted(partitions))).select(
        F.col(PARTITION_PATH).alias(_MP),
        F.col(RECORD_KEY).alias(_MK),
        F.col(DELETE_FLAG).alias(_MD),
    )
    stored = _stored_keys(spark, location, files)
    condition = (stored[_SP] == nearby[_MP]) & (stored[_SK] == nearby[_MK])
    if nearby_rows * key_bytes <= limit:  # the stored keys stream, never shuffled
        joined = stored.join(F.broadcast(nearby), condition, "inner")
    else:
        joined = nearby.join(stored, condition, "inner")
    matched = joined.select(_MP, _MK, _MD, FILE_ID).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        # Each key once (a key stored twice matches twice), so new keys count right.
        per_key = matched.groupBy(_MP, _MK).agg(
            F.count(F.lit(1)).alias("__rows"), F.max((~F.col(_MD)).cast("int")).alias("__up")
        )
        found = per_key.groupBy(_MP).agg(
            F.sum("__rows").alias("rows"), F.sum("__up").alias("upserts")
        )
        counts = {r[_MP]: (int(r["rows"]), int(r["upserts"] or 0)) for r in found.collect()}
    except BaseException:
        matched.unpersist()
        raise
    matched_rows = sum(n for n, _ in counts.values())
    new_keys = {p: n - counts.get(p, (0, 0))[1] for p, n in upserts.items()}
    broadcast = matched_rows * key_bytes <= limit
    return KeyLookup(matched, partitions, matched_rows, row_bytes, _positive(new_keys), broadcast)


def _positive(counts: Mapping[str, int]) -> dict[str, int]:
    return {p: n for p, n in counts.items() if n > 0}


def _row_bytes(location: Location, files: Sequence[str]) -> tuple[int, int]:
    """What one narrow key row and one whole row take at most, from the stored files'
    footers: the largest uncompressed bytes per row of their key columns (key,
    partition, file name) and of all their columns. A file without those columns is
    refused, naming it."""
    keys, rows = 0, 0
    for path in files:
        meta = footer(location, path)
        missing = [c for c in _KEY_COLUMNS if c not in meta.schema.names]
        if missing:
            raise CorruptTableError(f"{path}: a base file without column {missing[0]}")
        count = max(1, meta.num_rows)
        key_total, total = 0, 0
        for group in range(meta.num_row_groups):
            row_group = meta.row_group(group)
            total += row_group.total_byte_size
            for column in range(row_group.num_columns):
                chunk = row_group.column(column)
                if chunk.path_in_schema in (RECORD_KEY, PARTITION_PATH, FILE_NAME):
                    key_total += chunk.total_uncompressed_size
        keys = max(keys, -(-key_total // count))
        rows = max(rows, -(-total // count))
    return keys + _ROW_OVERHEAD, rows + _ROW_OVERHEAD


def _stored_keys(spark: SparkSession, location: Location, files: Sequence[str]) -> DataFrame:
    """``(partition, key, file id)`` of the stored rows of ``files``."""
    if location.is_local:
        return (
            spark.read.schema(_KEY_SCHEMA)
            .parquet(*files)
            .select(
                F.col(PARTITION_PATH).alias(_SP),
                F.col(RECORD_KEY).alias(_SK),
                F.split(F.col(FILE_NAME), "_").getItem(0).alias(FILE_ID),
            )
        )
    # Spark cannot open object-store paths without Hadoop connectors: the Python
    # workers read the stored keys through fsspec.
    paths = spark.createDataFrame([(f,) for f in files], "path string")
    slices = max(1, min(len(files), default_parallelism(spark)))
    return paths.repartition(slices).mapInArrow(
        _key_reader(location.uri, dict(location.storage_options)),
        f"{_SP} string, {_SK} string, {FILE_ID} string",
    )


def _key_reader(
    base_uri: str, storage_options: Mapping[str, Any]
) -> Callable[[Iterable[pa.RecordBatch]], Iterable[pa.RecordBatch]]:
    """The function Python workers run to read stored files' keys."""

    def read(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        location = open_location(base_uri, storage_options)
        columns = [PARTITION_PATH, RECORD_KEY, FILE_NAME]
        for batch in batches:
            for path in batch.column(0).to_pylist():
                with location.fs.open(path, "rb") as handle:
                    stored = read_parquet(handle, columns)
                file_ids = pc.list_element(pc.split_pattern(stored.column(FILE_NAME), "_"), 0)
                keys = pa.table(
                    {
                        _SP: stored.column(PARTITION_PATH).cast(pa.string()),
                        _SK: stored.column(RECORD_KEY).cast(pa.string()),
                        FILE_ID: file_ids.cast(pa.string()),
                    }
                )
                yield from keys.to_batches()

    return read
