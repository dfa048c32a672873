"""A write's incoming rows: keyed, checked and counted by one Spark job, timeline untouched.

Each row gets its record key, partition path and delete flag; a null key is refused; a
failing computation (a UDF, an ANSI cast) is reported as nothing written; each
partition's rows are counted, which routing new keys into file groups starts from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql.types import MapType

from hudi_sync.errors import BadInputError, WriteError, first_line
from hudi_sync.spark.compat import collect_arrow
from hudi_sync.spark.writing import options as opt
from hudi_sync.spark.writing import spark_merge
from hudi_sync.spark.writing.keys import (
    WORKER_REFUSAL,
    partition_path_column,
    record_key_column,
)
from hudi_sync.spark.writing.merge import DELETE_FLAG, IS_DELETED, PARTITION_PATH, RECORD_KEY
from hudi_sync.spark.writing.options import WriteOptions
from hudi_sync.table.keys.partition_encoding import partition_refusal

T = TypeVar("T")


@dataclass(frozen=True)
class IncomingRows:
    """The rows a write goes on with and what the first job counted of them."""

    # Keyed (deduplicated, cached, as the merge engine needs them); None for
    # delete_partition, which writes no rows.
    rows: DataFrame | None
    partitions: frozenset[str]  # the partitions the write changes
    upserts: Mapping[str, int]  # partition -> incoming non-delete rows
    row_counts: Mapping[str, int]  # partition -> incoming rows
    # partition -> (keys, non-delete keys), when Spark merges and no key comes twice
    counted: Mapping[str, tuple[int, int]] | None

    def release(self) -> None:
        """Drop the cached rows."""
        if self.rows is not None:
            self.rows.unpersist()


def incoming_rows(
    df: DataFrame,
    data_columns: Sequence[str],
    options: WriteOptions,
    ordering: str | None,
    snapshot: Mapping[tuple[str, str], str],
    spark_merges: bool,
    base: str,
    cached: bool | None = None,
) -> IncomingRows:
    """The partitions the rows go to, and (in the same Spark job) the check that every
    row has a record key and (without url-encoding) no partition path holds a control
    character: both are needed before the timeline is touched. The job also
    counts each partition's non-delete rows; with ``cached`` (default: for the Python
    merge, ``spark_merges`` false) it caches the keyed, deduplicated rows the write goes
    on with, which pays when the write reads them more than once (a key lookup, then
    the merge); for Spark's merge of upserts it counts each partition's keys.
    ``ordering``: the field that decides between rows of one key (None for deletes).
    For ``delete_partition``: the snapshot's partitions named by the option or the
    rows."""
    operation = options.operation
    if operation == "delete_partition":
        partitions = _partitions_to_delete(df, options, snapshot, base)
        return IncomingRows(None, frozenset(partitions), {}, {}, None)
    keyed = _keyed(df, data_columns, options, base)
    if cached is None:
        cached = not spark_merges
    profiled = spark_merges and operation in ("upsert", "delete")
    if profiled:
        # Spark's merge profiles the keys itself on narrow columns and reads the
        # rows again for the merge: nothing to cache. Counting each partition's
        # keys here tells whether any comes twice.
        rows = spark_merge.with_sequence(keyed)
        computed = _every_column_hash(rows, data_columns, df)
        summary = spark_merge.partition_summary(rows, computed)
    else:
        deduplicate = operation in ("upsert", "delete") or options.combine_before_insert
        if deduplicate:
            keyed = _deduplicated(keyed, ordering)
        # Rows read once more (Spark's merge of inserts, Spark's writer of a
        # Merge-on-Read write's new file groups): cheaper than a cache, a job of its own.
        rows = keyed.persist(StorageLevel.MEMORY_AND_DISK) if cached else keyed
        # Uncached rows are computed again by the merge: every column is computed
        # here too, so a failing one (a UDF, an ANSI cast) fails before the timeline
        # is touched.
        every_column = [] if cached else [F.max(_every_column_hash(keyed, data_columns, df))]
        summary = rows.groupBy(PARTITION_PATH).agg(
            F.max(F.col(RECORD_KEY).isNull().cast("int")).alias("null_key"),
            F.sum((~F.col(DELETE_FLAG)).cast("long")).alias("upserts"),
            F.count(F.lit(1)).alias("rows"),
            *every_column,
        )
    try:
        found = _collected(summary, base)
        if any(r["null_key"] for r in found):
            raise BadInputError(
                f"{base}: a row's record key is null or empty: "
                f"{_blank_key_words(options.record_key_fields)}"
            )
        for partition in sorted(r[PARTITION_PATH] for r in found):
            refusal = partition_refusal(
                partition, base, options.url_encode_partitions, opt.URL_ENCODE
            )
            if refusal is not None:
                raise BadInputError(refusal)
    except BaseException:
        rows.unpersist()  # a refused write keeps nothing cached
        raise
    upserts = {r[PARTITION_PATH]: int(r["upserts"] or 0) for r in found}
    counted = None
    if profiled and all(int(r["most"]) == 1 for r in found):
        counted = {r[PARTITION_PATH]: (int(r["keys"]), int(r["upserts"])) for r in found}
    return IncomingRows(
        rows,
        frozenset(upserts),
        upserts,
        {r[PARTITION_PATH]: int(r["rows"]) for r in found},
        counted,
    )


def _blank_key_words(fields: Sequence[str]) -> str:
    """Which key Hudi's key generators refuse: one field null or empty, or every field
    of a complex key (a complex key may hold some null or empty values)."""
    if len(fields) == 1:
        return f"field {fields[0]} ({opt.RECORD_KEY})"
    return f"every one of fields {', '.join(fields)} ({opt.RECORD_KEY})"


def _collected(summary: DataFrame, base: str) -> list[Row]:
    """The summary's rows; a failure of the rows' own computation (e.g. a UDF) is a
    ``WriteError`` saying nothing was written."""
    return _computed(summary.collect, base)


def collected_rows(df: DataFrame, base: str) -> pa.Table:
    """``df``'s rows in the driver, as Arrow (the driver's engine writes them); a failure
    of their computation is a ``WriteError`` saying nothing was written."""
    return _computed(lambda: collect_arrow(df), base)


def _computed(compute: Callable[[], T], base: str) -> T:
    """``compute()``: a refusal raised in a Python worker as that one line, another
    failure as a ``WriteError`` saying nothing was written."""
    try:
        return compute()
    except Exception as exc:
        refusal = WORKER_REFUSAL.search(str(exc))
        if refusal:  # a partition value the key generator cannot take
            raise BadInputError(refusal.group(1).strip()) from None
        raise WriteError(
            f"{base}: computing the rows to write failed, nothing was written: {first_line(exc)}"
        ) from exc


def _keyed(
    df: DataFrame, data_columns: Sequence[str], options: WriteOptions, where: str
) -> DataFrame:
    """The data columns with each row's record key, partition path and delete flag."""
    o = options
    columns = [F.col(c) for c in data_columns]
    if o.operation == "delete":
        delete_flag = F.lit(True)
    elif o.delete_field is not None:
        marker = F.col(o.delete_field).cast("string") == F.lit(o.delete_marker)
        delete_flag = F.coalesce(marker, F.lit(False))
    elif IS_DELETED in data_columns:
        delete_flag = F.coalesce(F.col(IS_DELETED).cast("boolean"), F.lit(False))
    else:
        delete_flag = F.lit(False)
    return df.select(
        *columns,
        record_key_column(o.record_key_fields, o.single_key_named).alias(RECORD_KEY),
        partition_path_column(o.partition_scheme, df.schema, where).alias(PARTITION_PATH),
        delete_flag.alias(DELETE_FLAG),
    )


def _deduplicated(keyed: DataFrame, ordering: str | None) -> DataFrame:
    """One row per key: the highest ordering value, ties to the later row."""
    rows = spark_merge.deduplicated(spark_merge.with_sequence(keyed), ordering)
    return rows.drop(spark_merge.SEQUENCE)


def _every_column_hash(rows: DataFrame, columns: Sequence[str], source: DataFrame) -> Column:
    """A value that needs every one of ``columns`` computed (Spark prunes columns an
    aggregate does not read, and with them their failures): a hash of them all, maps by
    their size (Spark does not hash maps). A constant when ``source`` only reads its
    columns as they are (``reads_plainly``): nothing can fail in them but the read."""
    if reads_plainly(source):
        return F.lit(0)
    types = {f.name: f.dataType for f in rows.schema.fields}
    values = [F.size(c) if isinstance(types[c], MapType) else F.col(c) for c in columns]
    return F.xxhash64(*values)


# Logical plan nodes that compute no column: a read, a filter (the summary evaluates
# it for every row anyway), a projection of columns as they are.
_PLAIN_LEAVES = frozenset({"LogicalRelation", "LocalRelation", "DataSourceV2Relation"})


def reads_plainly(df: DataFrame) -> bool:
    """Whether every column of ``df`` is read as stored: its optimized plan is a file
    or local relation under filters and projections that only select or rename
    columns. Such a frame's columns cannot fail to compute (no UDF, no cast), so the
    pre-commit job need not read them all. Unknown plans count as computed."""
    try:
        node = df._jdf.queryExecution().optimizedPlan()
        while True:
            kind = node.getClass().getSimpleName()
            if kind in _PLAIN_LEAVES:
                return True
            if kind == "Filter":
                node = node.child()
            elif kind == "Project":
                projections = node.projectList()
                for i in range(projections.size()):
                    expression = projections.apply(i)
                    if expression.getClass().getSimpleName() == "Alias":
                        expression = expression.child()
                    if expression.getClass().getSimpleName() != "AttributeReference":
                        return False
                node = node.child()
            else:
                return False
    except Exception:  # a plan this cannot read is treated as computed
        return False


def _partitions_to_delete(
    df: DataFrame, options: WriteOptions, snapshot: Mapping[tuple[str, str], str], base: str
) -> set[str]:
    """Hudi takes ``partitions.to.delete`` (else the rows' partition paths) as the
    partition paths to replace; each must name a partition of the snapshot, or the
    write would commit a replacecommit that replaces nothing."""
    o = options
    requested: Sequence[str] = o.partitions_to_delete
    if not requested:
        column = partition_path_column(o.partition_scheme, df.schema, base)
        requested = sorted(r[0] for r in df.select(column).distinct().collect())
    return partitions_to_delete(requested, options, snapshot, base)


def partitions_to_delete(
    requested: Sequence[str],
    options: WriteOptions,
    snapshot: Mapping[tuple[str, str], str],
    base: str,
) -> set[str]:
    """The snapshot's partition paths that ``requested`` (the option's values, else the
    rows' partition paths) name; each must name one."""
    o = options
    if not requested:
        raise BadInputError(
            f"{base}: delete_partition needs {opt.PARTITIONS_TO_DELETE} or rows "
            "naming the partitions to delete; neither was given"
        )
    stored = {partition for partition, _ in snapshot}
    fields, hive_style = o.partition_fields, o.hive_style_partitioning
    return {stored_partition(v, stored, fields, hive_style, base) for v in requested}


def stored_partition(
    value: str, stored: set[str], fields: Sequence[str], hive_style: bool, table: str
) -> str:
    """The partition path of ``stored`` that ``value`` names, as its path (``p=b``,
    ``x=a/y=b``) or as the user writes it (``b``, ``a/b``): hive-style tables prefix
    each level with its field, others do not. Refused when it names none."""
    if value in stored:
        return value
    levels = value.split("/")
    if fields and len(levels) == len(fields):
        pairs = zip(fields, levels, strict=True)
        if hive_style:
            path = "/".join(v if v.startswith(f"{f}=") else f"{f}={v}" for f, v in pairs)
        else:
            path = "/".join(v.removeprefix(f"{f}=") for f, v in pairs)
        if path in stored:
            return path
    example = f"its partitions look like {min(stored)!r}" if stored else "it has no partition"
    raise BadInputError(f"{table}: no partition {value!r} to delete ({example})")
