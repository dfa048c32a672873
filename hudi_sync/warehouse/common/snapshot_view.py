"""The snapshot view's query of a Merge-on-Read table (``<t>_rt``): the base rows no
folded log version replaces, then the log versions, as Hudi's reader merges them; each
warehouse gives its spelling (``SnapshotQuery``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hudi_sync.manifest.log_parquet import FILE_ID_COLUMN, SOURCE_COLUMN
from hudi_sync.table.records.merge import (
    BASE_ROW_COLUMN,
    DELETED_COLUMN,
    LOG_WINS_COLUMN,
    SEQNO_FIELD,
    arrow_kind,
    null_ordering_refusal,
)

if TYPE_CHECKING:
    from hudi_sync.manifest.snapshot import PublishedLogs


@dataclass(frozen=True)
class SnapshotQuery:
    """How one warehouse spells the parts of the snapshot view's query (``<t>_rt`` of a
    Merge-on-Read table, see ``snapshot_query``)."""

    quote: Callable[[str], str]  # an identifier, quoted
    literal: Callable[[str], str]  # a string literal, quoted
    file_id_of: Callable[[str], str]  # the file id in a (quoted) base file name column
    base_columns: str  # the view's select list over the base rows ``b``
    log_columns: str  # the same columns over the folded log rows ``l``
    is_nan: Callable[[str], str]  # a float expression is NaN
    fail: Callable[[str], str]  # fails the query with a (string expression) message
    union: str = "UNION ALL"


def ordering_kind(logs: PublishedLogs) -> str | None:
    """The class of the ordering column's values (``record_merge.arrow_kind``), which
    decides how the view compares them; None without an ordering field."""
    field = logs.ordering_field
    if field is None or field not in logs.schema.names:
        return None
    return arrow_kind(logs.schema.field(field).type)


def snapshot_query(
    spelling: SnapshotQuery,
    ro: str,
    log_history: str,
    log_manifest: str,
    ordering: str | None,
    kind: str | None = None,
    base_rows: str | None = None,
) -> str:
    """The snapshot view's query: each base row of the read-optimized view ``ro`` that
    no folded log version (``log_history`` rows listed in ``log_manifest``) replaces,
    then each log version that is no delete and replaces its base row or has none.
    Rows meet by partition, file group and record key: a bucket index gives file
    groups the same id in every partition. A key with several base rows meets only the
    first (as Hudi's reader merges), which its log row names by commit seqno
    (``record_merge.mark_first_base_rows``). A log version replaces the base row when
    it always wins, else when its ``ordering`` value (of class ``kind``) is at least
    the base row's as Hudi compares them (``ordering_at_least``). ``base_rows``: the
    query of the base rows with their record key, partition path and file group
    (``FILE_ID_COLUMN``) when ``ro``'s meta fields do not hold them (a table without
    meta fields: the target builds them from the key fields and the file name)."""
    q = spelling.quote
    key, file_id = q("_hoodie_record_key"), q(FILE_ID_COLUMN)
    partition = q("_hoodie_partition_path")
    on = f"l.{partition} = b.{partition} AND l.{file_id} = b.{file_id} AND l.{key} = b.{key}"
    first = f"l.{q(BASE_ROW_COLUMN)}"
    on += f" AND ({first} IS NULL OR {first} = b.{q(SEQNO_FIELD)})"
    wins = f"l.{q(LOG_WINS_COLUMN)}"
    if ordering is not None:
        at_least = ordering_at_least(spelling, ordering, kind, f"l.{key}")
        wins = f"(CASE WHEN {wins} THEN TRUE ELSE {at_least} END)"
    base = base_rows or (
        f"SELECT *, {spelling.file_id_of(q('_hoodie_file_name'))} AS {file_id} FROM {ro}"
    )
    logs = (
        f"SELECT * FROM {log_history} WHERE {q(SOURCE_COLUMN)} IN "
        f"(SELECT {q('filename')} FROM {log_manifest})"
    )
    return (
        f"WITH b AS ({base}), l AS ({logs}) "
        f"SELECT {spelling.base_columns} FROM b LEFT JOIN l ON {on} "
        f"WHERE CASE WHEN l.{key} IS NULL THEN TRUE ELSE NOT {wins} END "
        f"{spelling.union} SELECT {spelling.log_columns} FROM l LEFT JOIN b ON {on} "
        f"WHERE NOT l.{q(DELETED_COLUMN)} AND CASE WHEN b.{key} IS NULL THEN TRUE ELSE {wins} END"
    )


def ordering_at_least(spelling: SnapshotQuery, ordering: str, kind: str | None, key: str) -> str:
    """Whether the log row ``l``'s ordering value is at least the base row ``b``'s, as
    Hudi's ``compareTo`` answers: a null value is int 0, so in an int column it is 0,
    and a null against a non-null value of another class fails the query (one line
    naming the column and ``key``), as Hudi's merge fails; floats and doubles compare as
    ``Double.compareTo`` (NaN above all and equal to itself, -0.0 below 0.0)."""
    column = spelling.quote(ordering)
    log, base = f"l.{column}", f"b.{column}"
    if kind == "int":
        return f"COALESCE({log}, 0) >= COALESCE({base}, 0)"
    if kind in ("float", "double"):
        nan = spelling.is_nan
        # ATAN2(x, -1) is negative for -0.0 and positive for 0.0: the sign of a zero.
        compared = (
            f"CASE WHEN {nan(log)} THEN TRUE WHEN {nan(base)} THEN FALSE "
            f"WHEN {log} = {base} THEN NOT (ATAN2({log}, -1.0) < 0 AND ATAN2({base}, -1.0) > 0) "
            f"ELSE {log} > {base} END"
        )
    else:
        compared = f"{log} >= {base}"
    message = spelling.literal(null_ordering_refusal(ordering, kind) + "; record key ")
    return (
        f"CASE WHEN {log} IS NULL AND {base} IS NULL THEN TRUE "
        f"WHEN {log} IS NULL OR {base} IS NULL THEN {spelling.fail(f'{message} || {key}')} "
        f"ELSE {compared} END"
    )
