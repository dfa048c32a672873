"""The copy-on-write merge run by Spark itself: its join, its parquet writer.

Used by ``writer.write`` (``hudi_sync.write.merge.engine=spark``, the default) when
Spark can open the table path (local tables, or a scheme its Hadoop has a file system
for, see ``hadoop.spark_opens``); otherwise (or with
``hudi_sync.write.merge.engine=python``) Spark's Python workers merge each file group
with pyarrow (``merge.merge_file_group``), which is also the reference for the rules
here:

1. ``partition_summary`` (before the timeline is touched): per partition, the incoming
   rows and keys, and whether any key comes twice. ``profile``: the incoming keys of
   partitions with stored files joined with those files' keys (and ordering values):
   which file groups hold incoming keys, how many updates and deletes each takes, how
   many new keys each partition gets (the workload profile Hudi's upsert partitioner
   routes inserts by). When a key comes twice, the keys are deduplicated first.
2. The merge, one of two plans:

   - ``merged_in_place`` (when no key comes twice, the incoming rows of the stored
     partitions fit a broadcast, ``spark_merge_plan.MERGE_BROADCAST_BYTES`` or Spark's
     threshold, and no new key goes to a small file):
     Hudi's merge handle in Spark terms. Each stored base file is read by exactly one
     task and streamed through a broadcast hash join with those incoming rows, so its
     rows never leave the task that writes its new version; only inserts are shuffled,
     to their new file groups (not even they when they are most of the incoming rows
     and go to one new file group: one task then reads them all).
   - ``merged_rows`` (otherwise): the touched file groups' stored rows, full outer
     joined with the deduplicated incoming rows of their partitions; inserts go to
     file groups by key hash (``route``); everything is then shuffled by file group.

   Winning incoming rows get the instant as ``_hoodie_commit_time``, kept rows keep
   their meta fields.
3. ``spark_files.write_file_groups``: each file group is written by one Spark task under a staging
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
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType
from pyspark.sql.window import Window

from hudi_sync.spark.compat import arrow_dataframe, from_arrow_schema
from hudi_sync.spark.writing.merge import (
    COMMIT_TIME,
    DELETE_FLAG,
    FILE_NAME,
    PARTITION_PATH,
    RECORD_KEY,
    SEQNO,
)
from hudi_sync.storage import Location
from hudi_sync.table.config.schema import META_FIELDS

FILE_ID = "__hudi_sync_file_id"
# Write token of every file this path writes (Hudi's ``task-stage-attempt``): the
# renamed files come from one committed Spark job, so no attempt needs telling apart.
WRITE_TOKEN = "0-0-0"
NEW_ROW = "__hudi_sync_new"
SEQUENCE = "__hudi_sync_seq"  # an incoming row's position: later rows win ties

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


@dataclass(frozen=True)
class Profile:
    """What the incoming rows do to the table: per stored file group; per partition,
    its new keys (winning non-delete rows whose key no file group holds) and all its
    incoming keys; and whether some key comes more than once."""

    groups: dict[tuple[str, str], GroupProfile]
    new_keys: dict[str, int]
    keys: dict[str, int]
    duplicates: bool


def with_sequence(rows: DataFrame) -> DataFrame:
    """``rows`` numbered in their order (ties between equal ordering values go to the
    later row). Each job numbers them again, so ``rows`` must be deterministic."""
    return rows.withColumn(SEQUENCE, F.monotonically_increasing_id())


def deduplicated(rows: DataFrame, ordering: str | None) -> DataFrame:
    """One row per key: the highest ordering value (nulls lose), ties to the later
    row (``SEQUENCE``)."""
    order = [F.col(SEQUENCE).desc()]
    if ordering:
        order.insert(0, F.col(ordering).desc_nulls_last())
    window = Window.partitionBy(PARTITION_PATH, RECORD_KEY).orderBy(*order)
    rank = "__hudi_sync_rank"
    return rows.withColumn(rank, F.row_number().over(window)).where(F.col(rank) == 1).drop(rank)


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


def stored_frame(
    spark: SparkSession,
    location: Location,
    files: Sequence[str],
    file_schema: StructType | None,
    merge_schemas: bool,
) -> DataFrame:
    """The stored ``files`` (paths on ``location``) as one frame: read as
    ``file_schema`` when the caller knows it from their footers (``read_schema``),
    else with the schema Spark infers (a Spark job per read; ``merge_schemas``: from
    every file, else from one)."""
    reader = spark.read if file_schema is None else spark.read.schema(file_schema)
    if merge_schemas:
        reader = reader.option("mergeSchema", "true")
    return reader.parquet(*[file_uri(location, f) for f in files])


def read_schema(wanted: pa.Schema, stored: Sequence[pa.Schema]) -> StructType | None:
    """The Spark schema that reads ``wanted``'s columns of files whose footers hold the
    ``stored`` schemas, when each file holds each column as ``wanted`` types it (or not
    at all: Spark reads it as nulls, as the merge fills a column added later): what
    Spark would infer, without the job inference takes. None when some file holds one
    otherwise (another type, another case) or a type is one the merge leaves to Spark's
    inference and a cast (a timestamp without a zone)."""
    if any(_zoneless(f.type) for f in wanted):
        return None
    for schema in stored:
        for field in wanted:
            same = [f for f in schema if f.name.lower() == field.name.lower()]
            if same and (len(same) > 1 or same[0].name != field.name):
                return None
            if same and same[0].type != field.type:
                return None
    try:
        return from_arrow_schema(wanted)
    except Exception:  # a type Spark does not take from Arrow: inference decides
        return None


def _zoneless(data_type: pa.DataType) -> bool:
    """Whether ``data_type`` is, or holds, a timestamp without a zone."""
    if pa.types.is_timestamp(data_type):
        return data_type.tz is None
    return any(_zoneless(data_type.field(i).type) for i in range(data_type.num_fields))


def stored_keys(
    spark: SparkSession,
    location: Location,
    stored_files: Sequence[str],
    ordering: str | None,
    file_schema: StructType | None = None,
) -> DataFrame:
    """``(__sp partition, __sk key, file id[, __so ordering])`` of the stored rows;
    ``file_schema``: the stored files' (``read_schema``), None to infer it."""
    columns = [
        F.col(PARTITION_PATH).alias("__sp"),
        F.col(RECORD_KEY).alias("__sk"),
        F.split(F.col(FILE_NAME), "_").getItem(0).alias(FILE_ID),
    ]
    if ordering:
        columns.append(F.col(ordering).alias("__so"))
    if file_schema is not None:
        read = [PARTITION_PATH, RECORD_KEY, FILE_NAME, *([ordering] if ordering else [])]
        file_schema = StructType([file_schema[name] for name in read])
    frame = stored_frame(spark, location, stored_files, file_schema, merge_schemas=False)
    return frame.select(*columns)


def partition_summary(rows: DataFrame, computed: Column) -> DataFrame:
    """Per partition of keyed ``rows``: ``null_key`` (1 when some key is null),
    ``upserts`` (non-delete rows), ``rows``, ``keys``, ``most`` (most rows of one key)
    and ``__computed`` (the largest ``computed``: Spark computes what an aggregate
    reads, and with it any failure). One job, two hash aggregates over narrow columns;
    when no key comes twice, ``profile`` takes each partition's counts from here."""
    per_key = rows.groupBy(PARTITION_PATH, RECORD_KEY).agg(
        F.count(F.lit(1)).alias("__n"),
        F.sum((~F.col(DELETE_FLAG)).cast("long")).alias("__u"),
        F.max(computed).alias("__c"),
    )
    return per_key.groupBy(PARTITION_PATH).agg(
        F.max(F.col(RECORD_KEY).isNull().cast("int")).alias("null_key"),
        F.sum("__u").alias("upserts"),
        F.sum("__n").alias("rows"),
        F.count(F.lit(1)).alias("keys"),
        F.max("__n").alias("most"),
        F.max("__c").alias("__computed"),
    )


def profile(
    spark: SparkSession,
    location: Location,
    rows: DataFrame,
    stored: Mapping[str, Sequence[str]],
    ordering: str | None,
    broadcast: bool,
    counted: Mapping[str, tuple[int, int]] | None,
    file_schema: StructType | None = None,
) -> Profile:
    """Which stored file groups the incoming keys (``rows`` keyed, with ``SEQUENCE``)
    hit, with how many updates and deletes, and each partition's new keys: one Spark
    job over narrow columns with fixed-width aggregates (hash aggregates, no sort).
    ``stored``: partition -> paths of its stored base files, for the partitions the
    rows go to.

    ``counted``: each partition's (keys, non-delete keys) when no key comes twice
    (``partition_summary``); then only the keys of ``stored``'s partitions are joined
    with the stored keys, and every other key is new. ``None`` when some key comes
    twice: the keys are deduplicated first, as the stats count each key's winner.

    With ``broadcast`` (the caller found those keys small enough) the stored keys
    stream through a broadcast of the incoming ones instead of being shuffled to meet
    them: a few updates into large files cost a scan of the files' key column.
    ``file_schema``: the stored files' (``read_schema``), None to infer it."""
    files = [path for paths in stored.values() for path in paths]
    if counted is None:
        unique = deduplicated(rows, ordering)
        keys = _keys(unique, ordering)
        stored_side = stored_keys(spark, location, files, ordering, file_schema)
        matched = _matched(keys, stored_side, ordering, broadcast)
        per_partition = keys.groupBy(
            F.col(PARTITION_PATH).alias("__p"), F.lit(None).cast("string").alias("__f")
        ).agg(*_counts(F.col("__d") == 1, F.lit(False)))
        found = _collected(per_partition.unionByName(matched) if files else per_partition)
        return _profile(_less_matched(found), duplicates=True)
    found = [
        {"__p": p, "__f": None, "keys": keys, "upserts": upserts, **dict.fromkeys(_TALLIES, 0)}
        for p, (keys, upserts) in counted.items()
    ]
    if files:
        nearby = _keys(rows.where(F.col(PARTITION_PATH).isin(sorted(stored))), ordering)
        stored_side = stored_keys(spark, location, files, ordering, file_schema)
        found += _collected(_matched(nearby, stored_side, ordering, broadcast))
    return _profile(_less_matched(found), duplicates=False)


_COUNTS = ("keys", "upserts", "updates", "deletes")
_TALLIES = ("updates", "deletes")


def _keys(rows: DataFrame, ordering: str | None) -> DataFrame:
    """One row per incoming key (rows with one key each): whether it deletes (``__d``)
    and its ordering value (``__o``)."""
    return rows.select(
        PARTITION_PATH,
        RECORD_KEY,
        F.col(DELETE_FLAG).cast("int").alias("__d"),
        *([F.col(ordering).alias("__o")] if ordering else []),
    )


def _counts(delete: Column, won: Column) -> list[Column]:
    """The profile's aggregates (``_COUNTS``) over keys."""
    return [
        F.count(F.lit(1)).alias("keys"),
        F.sum((~delete).cast("long")).alias("upserts"),
        F.sum((won & ~delete).cast("long")).alias("updates"),
        F.sum((won & delete).cast("long")).alias("deletes"),
    ]


def _matched(
    keys: DataFrame, stored: DataFrame, ordering: str | None, broadcast: bool
) -> DataFrame:
    """Per ``(__p partition, __f stored file id)``: the incoming ``keys`` (``_keys``)
    the file group holds, its updates (incoming rows that win) and deletes."""
    condition = (keys[PARTITION_PATH] == stored["__sp"]) & (keys[RECORD_KEY] == stored["__sk"])
    if broadcast:
        joined = stored.join(F.broadcast(keys), condition, "inner")
    else:
        joined = keys.join(stored.hint("shuffle_hash"), condition, "inner")
    won = wins(F.col("__o"), F.col("__so")) if ordering else F.lit(True)
    return joined.groupBy(F.col("__sp").alias("__p"), F.col(FILE_ID).alias("__f")).agg(
        *_counts(F.col("__d") == 1, won)
    )


def _less_matched(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``found`` with each partition's row (``__f`` None, all its keys) reduced to the
    keys no stored file group holds."""
    partitions = {r["__p"]: r for r in found if r["__f"] is None}
    for row in found:
        if row["__f"] is not None:
            partitions[row["__p"]]["keys"] -= row["keys"]
            partitions[row["__p"]]["upserts"] -= row["upserts"]
    return found


def _collected(frame: DataFrame) -> list[dict[str, Any]]:
    return [
        {"__p": r["__p"], "__f": r["__f"], **{c: int(r[c] or 0) for c in _COUNTS}}
        for r in frame.collect()
    ]


def _profile(found: Sequence[Mapping[str, Any]], duplicates: bool) -> Profile:
    groups: dict[tuple[str, str], GroupProfile] = {}
    new_keys: dict[str, int] = {}
    partition_keys: dict[str, int] = {}
    for r in found:
        partition_keys[r["__p"]] = partition_keys.get(r["__p"], 0) + int(r["keys"])
        if r["__f"] is None:
            if r["upserts"]:
                new_keys[r["__p"]] = int(r["upserts"])
        else:
            groups[(r["__p"], r["__f"])] = GroupProfile(
                int(r["upserts"]), int(r["updates"]), int(r["deletes"])
            )
    return Profile(groups, new_keys, partition_keys, duplicates)


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


def _stored_rows(
    spark: SparkSession,
    location: Location,
    schema: pa.Schema,
    rewritten: Mapping[tuple[str, str], str],
    file_schema: StructType | None,
) -> DataFrame:
    """The rewritten file groups' rows, columns ``"__s_" + name`` plus ``FILE_ID``;
    ``file_schema``: their files' (``read_schema``), None to infer it."""
    files = [location.join(p, name) for (p, _), name in sorted(rewritten.items())]
    frame = stored_frame(spark, location, files, file_schema, merge_schemas=True)
    return frame.select(
        *_aligned(frame, schema, "__s_", frame.columns),
        F.split(F.col(FILE_NAME), "_").getItem(0).alias(FILE_ID),
    )


def _incoming_side(rows: DataFrame, schema: pa.Schema) -> DataFrame:
    """Incoming rows as the join's other side: columns ``"__i_" + name`` and the flag."""
    frame = _with_meta(rows, F.lit(None))
    return frame.select(
        *_aligned(frame, schema, "__i_", frame.columns),
        F.col(DELETE_FLAG).alias("__i_delete"),
    )


def _same_key(stored: DataFrame, incoming: DataFrame) -> Column:
    return (stored["__s_" + PARTITION_PATH] == incoming["__i_" + PARTITION_PATH]) & (
        stored["__s_" + RECORD_KEY] == incoming["__i_" + RECORD_KEY]
    )


def _outcome(ordering: str | None) -> tuple[Column, Column]:
    """Over joined stored (``__s_``) and incoming (``__i_``) rows: whether a stored row
    is there, and whether the incoming row takes its key (it wins, or nothing is stored)."""
    has_stored = F.col("__s_" + RECORD_KEY).isNotNull()
    has_incoming = F.col("__i_" + RECORD_KEY).isNotNull()
    won = wins(
        F.col("__i_" + ordering) if ordering else None,
        F.col("__s_" + ordering) if ordering else None,
    )
    return has_stored, has_incoming & (~has_stored | won)


def _merged(joined: DataFrame, schema: pa.Schema, ordering: str | None, instant: str) -> DataFrame:
    """The joined stored (``__s_``) and incoming (``__i_``) rows as new rows: the
    winner of each key, deleted keys dropped, ``NEW_ROW`` where the incoming row won."""
    data_columns = [n for n in schema.names if n not in META_FIELDS]
    _, takes_incoming = _outcome(ordering)
    dropped = takes_incoming & F.col("__i_delete")
    return joined.where(~dropped).select(
        F.when(takes_incoming, F.lit(instant))
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
        takes_incoming.alias(NEW_ROW),
    )


def merged_rows(
    spark: SparkSession,
    location: Location,
    rows: DataFrame,
    schema: pa.Schema,
    rewritten: Mapping[tuple[str, str], str],
    ordering: str | None,
    tagging: bool,
    instant: str,
    file_schema: StructType | None = None,
) -> DataFrame:
    """Every row of the new base files, with ``FILE_ID`` for the stored ones (null for
    inserts) and ``NEW_ROW`` for the rows this write puts in (their seqno comes later).

    ``rows``: one per key. ``rewritten``: the stored file groups to rewrite,
    ``(partition, file id) -> file``. ``tagging``: incoming keys may be stored (upsert,
    delete): stored and incoming rows are joined; else (inserts) the stored rows are
    kept as they are. ``file_schema``: the stored files' (``read_schema``), None to
    infer it."""
    instant_lit = F.lit(instant)
    upserts = rows.where(~F.col(DELETE_FLAG))
    if not rewritten:
        return insert_rows(upserts, schema, instant_lit)
    stored = _stored_rows(spark, location, schema, rewritten, file_schema)
    if not tagging:
        kept = stored.select(
            *[F.col("__s_" + n).alias(n) for n in schema.names],
            FILE_ID,
            F.lit(False).alias(NEW_ROW),
        )
        return kept.unionByName(insert_rows(upserts, schema, instant_lit))
    in_stored = F.col(PARTITION_PATH).isin(sorted({p for p, _ in rewritten}))
    elsewhere = insert_rows(upserts.where(~in_stored), schema, instant_lit)
    nearby = _incoming_side(rows.where(in_stored), schema)
    joined = stored.join(nearby, _same_key(stored, nearby), "full_outer")
    return _merged(joined, schema, ordering, instant).unionByName(elsewhere)


def merged_in_place(
    spark: SparkSession,
    location: Location,
    rows: DataFrame,
    schema: pa.Schema,
    rewritten: Mapping[tuple[str, str], str],
    ordering: str | None,
    instant: str,
    new_key_partitions: Collection[str],
    file_schema: StructType | None = None,
) -> tuple[DataFrame, DataFrame]:
    """Hudi's merge handle as one Spark plan: the rewritten groups' new rows, and the
    inserts (``FILE_ID`` null, to be routed).

    Each stored row streams through a broadcast hash join with the incoming rows of the
    stored partitions, so it stays in the task that read its file (``write_file_groups``
    with ``whole_files`` reads each file in one task): no stored row is shuffled.
    ``rows``: one per key (``Profile.duplicates`` false). ``new_key_partitions``: the
    partitions with new keys (``Profile.new_keys``); only where they are also stored
    partitions are the incoming keys joined with the stored ones to find them.
    ``file_schema``: the stored files' (``read_schema``), None to infer it."""
    instant_lit = F.lit(instant)
    stored = _stored_rows(spark, location, schema, rewritten, file_schema)
    partitions = sorted({p for p, _ in rewritten})
    in_stored = F.col(PARTITION_PATH).isin(partitions)
    nearby = _incoming_side(rows.where(in_stored), schema)
    joined = stored.join(F.broadcast(nearby), _same_key(stored, nearby), "left_outer")
    upserts = rows.where(~F.col(DELETE_FLAG))
    inserts = insert_rows(upserts.where(~in_stored), schema, instant_lit)
    mixed = [p for p in partitions if p in new_key_partitions]
    if mixed:
        files = [location.join(p, name) for (p, _), name in sorted(rewritten.items()) if p in mixed]
        keys = stored_keys(spark, location, files, None, file_schema)
        new = upserts.where(F.col(PARTITION_PATH).isin(mixed)).join(
            keys,
            (upserts[PARTITION_PATH] == keys["__sp"]) & (upserts[RECORD_KEY] == keys["__sk"]),
            "left_anti",
        )
        inserts = inserts.unionByName(insert_rows(new, schema, instant_lit))
    return _merged(joined, schema, ordering, instant), inserts


CDC_OP = "__hudi_sync_cdc_op"
CDC_BEFORE = "__hudi_sync_cdc_before"
CDC_AFTER = "__hudi_sync_cdc_after"


def changed_rows(
    spark: SparkSession,
    location: Location,
    rows: DataFrame,
    schema: pa.Schema,
    rewritten: Mapping[tuple[str, str], str],
    ordering: str | None,
    tagging: bool,
    small_files: Sequence[Bucket],
    images: tuple[bool, bool],
    broadcast: bool,
    file_schema: StructType | None = None,
) -> DataFrame:
    """What the merge changes in the rewritten (stored) file groups, one row per
    changed key: ``FILE_ID``, partition, key, ``CDC_OP`` (i/u/d) and, as ``images``
    asks (before, after), ``CDC_BEFORE`` and ``CDC_AFTER``: structs of the data
    columns, null where the op has none. The outcome of each key is ``_merged``'s
    (``_outcome``), so a CDC log lists exactly what the base files changed; inserts
    routed to a stored file group (``small_files``, the buckets that are stored
    groups) are its ``i`` changes.

    ``rows``: one per key, as the merge got them. ``broadcast``: the incoming rows of
    the stored partitions fit a broadcast (``merged_in_place``'s check). Only the
    columns the images need are read from the stored files. ``file_schema``: theirs
    (``read_schema``), None to infer it."""
    data_columns = [n for n in schema.names if n not in META_FIELDS]
    want_before, want_after = images
    partitions = sorted({p for p, _ in rewritten})
    ids = sorted({f for _, f in rewritten})
    nearby = _incoming_side(
        rows.where(F.col(PARTITION_PATH).isin(partitions) & ~F.col(DELETE_FLAG))
        if not tagging
        else rows.where(F.col(PARTITION_PATH).isin(partitions)),
        schema,
    )
    if not tagging:  # inserts only: nothing stored is joined
        joined = nearby.select(
            "*",
            *[F.lit(None).cast("string").alias("__s_" + n) for n in (RECORD_KEY, PARTITION_PATH)],
            F.lit(None).cast("string").alias(FILE_ID),
        )
        ordering = None
    else:
        stored = _stored_rows(spark, location, schema, rewritten, file_schema)
        same_key = _same_key(stored, nearby)
        if small_files:  # an incoming key that no group holds may go to a stored one
            joined = nearby.join(stored, same_key, "left_outer")
        elif broadcast:
            joined = stored.join(F.broadcast(nearby), same_key, "inner")
        else:
            joined = stored.join(nearby, same_key, "inner")
    has_stored, takes_incoming = _outcome(ordering)
    delete = F.col("__i_delete")
    op = F.when(has_stored & takes_incoming, F.when(delete, "d").otherwise("u")).when(
        ~has_stored & ~delete, "i"
    )
    columns = [
        F.col(FILE_ID),
        F.coalesce(F.col("__i_" + PARTITION_PATH), F.col("__s_" + PARTITION_PATH)).alias(
            PARTITION_PATH
        ),
        F.coalesce(F.col("__i_" + RECORD_KEY), F.col("__s_" + RECORD_KEY)).alias(RECORD_KEY),
        op.alias(CDC_OP),
    ]

    def image(prefix: str, present: Column) -> Column:
        # Every field nullable (a null image's fields are null: Arrow refuses nulls in a
        # field Spark calls non-nullable).
        fields = [F.when(present, F.col(prefix + n)).alias(n) for n in data_columns]
        return F.when(present, F.struct(*fields))

    if want_before:
        columns.append(image("__s_", op.isin("u", "d")).alias(CDC_BEFORE))
    if want_after:
        columns.append(image("__i_", op.isin("i", "u")).alias(CDC_AFTER))
    changes = joined.select(*columns).where(F.col(CDC_OP).isNotNull())
    if not small_files:  # every change is of a stored row (inner join)
        return changes.where(F.col(FILE_ID).isNotNull())
    return route(spark, changes, small_files).where(F.col(FILE_ID).isin(ids))


def by_file_group(rows: DataFrame, groups: int) -> DataFrame:
    """``rows`` shuffled so that each file group's rows are in one task."""
    return rows.repartition(max(1, groups), FILE_ID)


def _with_meta(incoming: DataFrame, commit_time: Column) -> DataFrame:
    """Incoming rows (already keyed) with the other meta fields."""
    return (
        incoming.withColumn(COMMIT_TIME, commit_time.cast("string"))
        .withColumn(SEQNO, F.lit(None).cast("string"))
        .withColumn(FILE_NAME, F.lit(None).cast("string"))
    )


def insert_rows(incoming: DataFrame, schema: pa.Schema, instant: Column) -> DataFrame:
    """Incoming rows as new rows of file groups to be chosen (``route``)."""
    frame = _with_meta(incoming, instant)
    return frame.select(
        *_aligned(frame, schema, "", frame.columns),
        F.lit(None).cast("string").alias(FILE_ID),
        F.lit(True).alias(NEW_ROW),
    )


# Up to this many buckets, inserts find theirs by an expression over the buckets'
# ranges; more take a broadcast join with the ranges (a Spark job of its own, but no
# expression that grows with the buckets).
ROUTE_EXPRESSION_BUCKETS = 64
_POSITION = "__hudi_sync_position"


def route(
    spark: SparkSession,
    merged: DataFrame,
    buckets: Sequence[Bucket],
    join: bool | None = None,
) -> DataFrame:
    """Inserts (null ``FILE_ID``) to the bucket their key's hash falls in. ``join``: by a
    broadcast join with the buckets' ranges, or by an expression over them; None
    chooses the expression for up to ``ROUTE_EXPRESSION_BUCKETS`` buckets."""
    if not buckets:
        return merged
    position = F.pmod(F.xxhash64(RECORD_KEY), F.lit(HASH_SPAN)) / F.lit(float(HASH_SPAN))
    hashed = merged.withColumn(_POSITION, position)
    if join is None:
        join = len(buckets) > ROUTE_EXPRESSION_BUCKETS
    if not join:
        chosen = F.coalesce(F.col(FILE_ID), _bucket_file(buckets))
        return hashed.withColumn(FILE_ID, chosen).drop(_POSITION)
    # From Arrow: a local relation in the JVM (from Python rows it would be a job on
    # Python workers, a second or more to start).
    ranges = arrow_dataframe(
        spark,
        pa.table(
            {
                "__bucket_partition": pa.array([b.partition for b in buckets], pa.string()),
                "__lo": pa.array([b.low for b in buckets], pa.float64()),
                "__hi": pa.array([b.high for b in buckets], pa.float64()),
                "__bucket_file": pa.array([b.file_id for b in buckets], pa.string()),
            }
        ),
    )
    condition = (
        hashed[FILE_ID].isNull()
        & (hashed[PARTITION_PATH] == ranges["__bucket_partition"])
        & (hashed[_POSITION] >= ranges["__lo"])
        & (hashed[_POSITION] < ranges["__hi"])
    )
    joined = hashed.join(F.broadcast(ranges), condition, "left")
    return joined.withColumn(FILE_ID, F.coalesce(F.col(FILE_ID), F.col("__bucket_file"))).drop(
        _POSITION, "__bucket_partition", "__lo", "__hi", "__bucket_file"
    )


def _bucket_file(buckets: Sequence[Bucket]) -> Column:
    """The file id of the bucket whose partition and range hold a row's partition path
    and ``_POSITION`` (null where none does): the join's condition as an expression."""
    by_partition: dict[str, list[Bucket]] = {}
    for bucket in buckets:
        by_partition.setdefault(bucket.partition, []).append(bucket)
    position = F.col(_POSITION)
    chosen: Column | None = None
    for partition, own in by_partition.items():
        found: Column | None = None
        for b in own:
            holds = (position >= F.lit(float(b.low))) & (position < F.lit(float(b.high)))
            found = (
                F.when(holds, F.lit(b.file_id))
                if found is None
                else found.when(holds, F.lit(b.file_id))
            )
        assert found is not None
        here = F.col(PARTITION_PATH) == F.lit(partition)
        chosen = F.when(here, found) if chosen is None else chosen.when(here, found)
    assert chosen is not None
    return chosen
