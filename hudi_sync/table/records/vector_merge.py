"""``merge_records`` in Arrow and numpy kernels, for the common shape of a slice's logs.

A Merge-on-Read snapshot merges each file slice's log records over its base rows
(``record_merge``). Folding records one by one in Python costs more than reading the
base file, so the common case is computed column-wise here, with the same result:

- the log holds data records only (no delete blocks, no record marked deleted);
- commit-time ordering: each key's last log record wins, over the base row too;
- event-time ordering on a column whose values compare in Arrow as Hudi compares them
  in Java: each key's log version is its greatest ordering value, the latest record of
  a tie (what folding ``new >= old`` in log order leaves), and it replaces the key's
  first base row when its value is at least the base row's. Floats compare as
  ``Double.compareTo`` (an order-preserving integer image: NaN above all, -0.0 below
  0.0); a null value is Hudi's ``Integer 0``, so it is 0 in an int column, and
  anywhere else (where Java may fail) the exact merge decides.

Anything else (delete blocks, deletes in the data, other ordering types, nulls outside
int columns) goes to ``merge_records``, which applies every rule record by record.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_sync.arrow_numpy import arrow_to_numpy, numpy_to_arrow, string_array
from hudi_sync.table.records.log_records import RECORD_KEY_FIELD
from hudi_sync.table.records.merge import (
    DELETE_OPERATIONS,
    DELETED_COLUMN,
    IS_DELETED_FIELD,
    LOG_WINS_COLUMN,
    OPERATION_FIELD,
    LogEntry,
    MergeMode,
    MergeRules,
    arrow_kind,
    merge_records,
)

_ORDER = "order"
_FLIP = np.int64(0x7FFFFFFFFFFFFFFF)


def merge_slice(
    base: pa.Table | None,
    log_rows: pa.Table,
    entries: Sequence[LogEntry],
    rules: MergeRules,
    in_file_order: bool = True,
) -> pa.Table:
    """``merge_records(base, log_rows, entries, rules)``: column-wise when
    ``columnar_merge`` can, else record by record. ``in_file_order=False`` lets the
    rows come in any order (a query's rows have none), which spares a copy."""
    merged = columnar_merge(base, log_rows, entries, rules, in_file_order)
    return merged if merged is not None else merge_records(base, log_rows, entries, rules)


def columnar_merge(
    base: pa.Table | None,
    log_rows: pa.Table,
    entries: Sequence[LogEntry],
    rules: MergeRules,
    in_file_order: bool = True,
) -> pa.Table | None:
    """The rows ``merge_records`` gives, computed column-wise; None when the records
    are not of the common shape (module docstring) and the exact merge must decide.
    ``in_file_order``: in the order ``merge_records`` gives them (a log version in
    place of the base row it replaces), else the same rows as the base rows kept, then
    the log's (filtering the base costs far less than gathering every row)."""
    if base is not None and base.schema != log_rows.schema:
        return None
    folded = _log_survivors(log_rows, entries, rules)
    if folded is None:
        return None
    unique, survivors, log_order = folded
    if base is None or not base.num_rows:
        return log_rows.take(numpy_to_arrow(np.sort(survivors), pa.int64()))
    if RECORD_KEY_FIELD not in base.column_names:
        return None
    found = pc.index_in(_text(base.column(RECORD_KEY_FIELD)), value_set=unique)
    met = np.flatnonzero(arrow_to_numpy(found.is_valid()))
    met_ids = arrow_to_numpy(found.take(numpy_to_arrow(met, pa.int64())))
    # A key's log version meets the key's first base row only.
    first_ids, first_at = np.unique(met_ids.astype(np.int64), return_index=True)
    met_rows = met[first_at]
    met_logs = survivors[first_ids]
    wins = np.ones(len(met_rows), dtype=bool)
    if log_order is not None and len(met_rows):
        stored = _order_values(base.column(rules.ordering_field).take(numpy_to_arrow(met_rows)))
        if stored is None or stored.type != log_order.type:
            return None
        newer = log_order.take(numpy_to_arrow(met_logs, pa.int64()))
        wins = arrow_to_numpy(pc.greater_equal(newer, stored))
    inserted = np.ones(len(survivors), dtype=bool)
    inserted[first_ids] = False
    added = np.sort(survivors[inserted])
    if not in_file_order:
        kept = np.ones(base.num_rows, dtype=bool)
        kept[met_rows[wins]] = False
        taken = np.concatenate([np.sort(met_logs[wins]), added])
        logged = log_rows.take(numpy_to_arrow(taken, pa.int64()))
        return pa.concat_tables([base.filter(numpy_to_arrow(kept)), logged])
    order = np.arange(base.num_rows, dtype=np.int64)
    order[met_rows[wins]] = base.num_rows + met_logs[wins]
    order = np.concatenate([order, base.num_rows + added])
    return pa.concat_tables([base, log_rows]).take(numpy_to_arrow(order, pa.int64()))


def columnar_fold(
    log_rows: pa.Table, entries: Sequence[LogEntry], rules: MergeRules
) -> pa.Table | None:
    """The rows ``fold_log_records`` gives, computed column-wise; None when the records
    are not of the common shape (module docstring). Each key's surviving version, keys
    in the order of their first record, none deleted, and each replacing the base row
    whatever the ordering values only under commit-time ordering."""
    folded = _log_survivors(log_rows, entries, rules)
    if folded is None:
        return None
    return _fold_rows(log_rows, folded[1], rules)


def columnar_folds(
    logs: Sequence[tuple[pa.Table, Sequence[LogEntry]]], rules: MergeRules
) -> list[pa.Table | None]:
    """``columnar_fold`` of each ``(log rows, entries)``, the logs of the common shape
    and of one schema folded in one pass (a record's key is then its log's number and
    its record key): a fold's Arrow calls cost per call more than per row, and a file
    slice's log holds few rows. The rows of each log are those ``columnar_fold`` gives
    it alone (slices of one table); None where it answers None."""
    folded: list[pa.Table | None] = [None] * len(logs)
    plain = [i for i, (rows, entries) in enumerate(logs) if _in_log_order(rows, entries)]
    first = logs[plain[0]][0].schema if plain else None
    joint = [i for i in plain if logs[i][0].schema.equals(first, check_metadata=True)]
    if len(joint) > 1:
        counts = np.array([logs[i][0].num_rows for i in joint], dtype=np.int64)
        joined = pa.concat_tables([logs[i][0] for i in joint])
        found = _joint_survivors(joined, counts, rules)
        if found is not None:
            survivors, kept = found
            rows = _fold_rows(joined, survivors, rules)
            starts = np.cumsum(kept) - kept
            for index, start, count in zip(joint, starts, kept, strict=True):
                folded[index] = rows.slice(int(start), int(count))
            done = set(joint)
            plain = [i for i in plain if i not in done]
    for index in plain:  # alone: another schema, or the joint fold declined
        folded[index] = columnar_fold(*logs[index], rules)
    return folded


def _fold_rows(log_rows: pa.Table, survivors: np.ndarray[Any, Any], rules: MergeRules) -> pa.Table:
    """The rows ``survivors`` of ``log_rows`` as ``fold_log_records`` gives them:
    nullable columns, none deleted, the log winning regardless of ordering values
    only under commit-time ordering."""
    rows = log_rows.take(numpy_to_arrow(survivors, pa.int64()))
    # Every column nullable, no schema metadata; a cast costs per column, even to itself.
    if rows.schema.metadata or not all(f.nullable for f in rows.schema):
        rows = rows.cast(pa.schema([f.with_nullable(True) for f in rows.schema]))
    always = rules.mode is MergeMode.COMMIT_TIME_ORDERING
    rows = rows.append_column(DELETED_COLUMN, numpy_to_arrow(np.zeros(len(survivors), dtype=bool)))
    return rows.append_column(LOG_WINS_COLUMN, numpy_to_arrow(np.full(len(survivors), always)))


def _in_log_order(log_rows: pa.Table, entries: Sequence[LogEntry]) -> bool:
    """Whether the log's records are its data rows, in order (no delete-block record)."""
    count = log_rows.num_rows
    if not count or len(entries) != count or RECORD_KEY_FIELD not in log_rows.column_names:
        return False
    try:
        in_order = np.array(entries, dtype=np.int64)
    except (TypeError, ValueError):  # a delete-block record among them
        return False
    return bool(np.array_equal(in_order, np.arange(count, dtype=np.int64)))


def _keys_and_order(
    log_rows: pa.Table, rules: MergeRules
) -> tuple[pa.Array, pa.Array | None] | None:
    """The log rows' keys and the ordering values compared (None under commit-time
    ordering), or None when a row may delete, a key is null or the ordering values
    need the exact merge."""
    if _may_delete(log_rows, rules):
        return None
    keys = log_rows.column(RECORD_KEY_FIELD)
    if keys.null_count:
        return None
    log_order: pa.Array | None = None
    if rules.mode is MergeMode.EVENT_TIME_ORDERING and rules.ordering_field is not None:
        if rules.ordering_field not in log_rows.column_names:
            return None
        log_order = _order_values(log_rows.column(rules.ordering_field))
        if log_order is None:
            return None
    return _text(keys), log_order


def _log_survivors(
    log_rows: pa.Table, entries: Sequence[LogEntry], rules: MergeRules
) -> tuple[pa.Array, np.ndarray[Any, Any], pa.Array | None] | None:
    """Whether the log is of the common shape (module docstring), and if so its keys
    (each once, in the order of its first record), the log row each key's records fold
    to (row of key id i) and the ordering values compared (None under commit-time
    ordering); None when the exact merge must decide."""
    if not _in_log_order(log_rows, entries):
        return None
    found = _keys_and_order(log_rows, rules)
    if found is None:
        return None
    keys, log_order = found
    unique = pc.unique(keys)  # in the order of each key's first record
    ids = arrow_to_numpy(pc.index_in(keys, value_set=unique)).astype(np.int64)
    return unique, _survivors(ids, log_order), log_order


def _joint_survivors(
    joined: pa.Table, counts: np.ndarray[Any, Any], rules: MergeRules
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]] | None:
    """``_log_survivors`` of logs laid end to end in ``joined`` (``counts`` rows each):
    the surviving rows (each log's keys in the order of their first record, log after
    log) and how many each log keeps; None when any row needs the exact merge."""
    found = _keys_and_order(joined, rules)
    if found is None:
        return None
    keys, log_order = found
    unique = pc.unique(keys)
    codes = arrow_to_numpy(pc.index_in(keys, value_set=unique)).astype(np.int64)
    owner = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    # A key of the fold is a log and a record key, numbered by its first record: a
    # log's keys follow the previous log's, in the order of their first record.
    _, first_at, inverse = np.unique(
        owner * len(unique) + codes, return_index=True, return_inverse=True
    )
    rank = np.empty(len(first_at), dtype=np.int64)
    rank[np.argsort(first_at, kind="stable")] = np.arange(len(first_at), dtype=np.int64)
    ids = rank[np.asarray(inverse, dtype=np.int64).reshape(-1)]
    kept = np.bincount(owner[np.sort(first_at)], minlength=len(counts))
    return _survivors(ids, log_order), kept


def _survivors(ids: np.ndarray[Any, Any], order: pa.Array | None) -> np.ndarray[Any, Any]:
    """For each key id, the log row that folding its records leaves: the last of the
    key's greatest ordering values (the last record without ordering)."""
    positions = np.arange(len(ids), dtype=np.int64)
    if order is None:
        ranked = np.lexsort((positions, ids))
    else:
        table = pa.table(
            {"id": numpy_to_arrow(ids), _ORDER: order, "row": numpy_to_arrow(positions)}
        )
        sort_keys = [("id", "ascending"), (_ORDER, "ascending"), ("row", "ascending")]
        ranked = arrow_to_numpy(pc.sort_indices(table, sort_keys=sort_keys))
    grouped = ids[ranked]
    last = np.ones(len(ranked), dtype=bool)
    last[:-1] = grouped[1:] != grouped[:-1]
    return np.asarray(ranked[last], dtype=np.int64)  # key ids run 0..k-1, all present


def _order_values(column: pa.ChunkedArray | pa.Array) -> pa.Array | None:
    """Ordering values that Arrow compares as Hudi's Java does, or None when the
    column's type or nulls need the exact merge."""
    values = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    kind = arrow_kind(values.type)
    if kind is None:
        return None
    if values.null_count:
        if kind != "int":  # Integer 0 against another class: the exact merge decides
            return None
        values = pc.fill_null(values, numpy_to_arrow(np.zeros(1, dtype=np.int64), values.type)[0])
    if kind in ("float", "double"):
        return _double_order(values)
    return values


def _double_order(values: pa.Array) -> pa.Array:
    """Doubles as int64 in ``Double.compareTo``'s order: NaNs made the one canonical NaN
    (as ``doubleToLongBits``), negative values' bits flipped below the positives."""
    numbers = arrow_to_numpy(values).astype(np.float64)
    numbers = np.where(np.isnan(numbers), np.nan, numbers)
    bits = numbers.view(np.int64)
    return numpy_to_arrow(np.where(bits < 0, bits ^ _FLIP, bits), pa.int64())


def _may_delete(log_rows: pa.Table, rules: MergeRules) -> bool:
    """Whether a log row may mark a delete (``_log_versions``' markers), checked
    column-wise; a marker column of an unexpected type counts as may."""
    names = set(log_rows.column_names)
    if IS_DELETED_FIELD in names:
        flags = log_rows.column(IS_DELETED_FIELD)
        if not pa.types.is_boolean(flags.type) or pc.any(flags).as_py():
            return True
    if OPERATION_FIELD in names:
        operations = log_rows.column(OPERATION_FIELD)
        if not pa.types.is_string(operations.type):
            return True
        marked = pc.is_in(operations, value_set=string_array(sorted(DELETE_OPERATIONS)))
        if pc.any(marked).as_py():
            return True
    if rules.delete_field is not None and rules.delete_field in names:
        marks = log_rows.column(rules.delete_field)
        if not pa.types.is_string(marks.type) or rules.delete_marker is None:
            return True
        if pc.any(pc.equal(marks, rules.delete_marker)).as_py():
            return True
    return False


def _text(keys: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Keys as one string array (the exact merge compares them as strings too)."""
    values = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    return values if pa.types.is_string(values.type) else values.cast(pa.string())
