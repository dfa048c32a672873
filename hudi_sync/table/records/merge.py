"""How a Merge-on-Read snapshot merges the versions of a record: Hudi's merge modes.

A MOR file slice holds a record's versions in its base file and in its log files; a
snapshot shows one version per record key, or none when the record was deleted.
Which one is the table's merge mode, read here from ``hoodie.properties`` as Hudi
1.x reads it (``HoodieTableConfig.inferMergingConfigsForPreV9Table``):

- table version 9 (and 8) declare ``hoodie.record.merge.mode``; a version 8 table
  without it infers the mode from its merge strategy id, then its payload class;
- version 6 has payload classes: ``DefaultHoodieRecordPayload`` and
  ``EventTimeAvroPayload`` order by event time, ``OverwriteWithLatestAvroPayload`` by
  commit time, and a table that names none gets Hudi's default payload
  (``DefaultHoodieRecordPayload``);
- event-time ordering without an ordering field orders by commit time (every record
  has Hudi's default ordering value, so the later write wins every tie);
- ``CUSTOM`` merge modes, other payload classes and partial updates run code or rules
  hudi_sync does not have: the table is refused.

The merge follows Hudi 1.x's file-group reader (``BufferedRecordMergerFactory``):
log records are folded per key in log order (``_replaces``), then the result meets
the base file's record (``_log_wins``). Under event-time ordering a newer record wins
when its ordering value is at least the older one's (ties: the later write); a delete
from a delete block loses only to a record with a strictly greater ordering value of
the same class, and a delete carrying Hudi's default ordering value (int 0, what
Spark deletes write) is ordered by commit time: it always wins over what came before.
Records marked deleted in the data (``_hoodie_is_deleted``, ``_hoodie_operation``
``D``/``-U``, the table's delete field and marker) are deletes with their own
ordering value. Base file records are never deletes.

Ordering values compare as Hudi's Java does (``RecordContext.getOrderingValue``): a
null value is the default, ``Integer 0``, so in an int column it orders as 0, and
against a value of another class Java's ``compareTo`` throws, where the merge refuses
(``NullOrderingError``) rather than answer; floats and doubles compare as
``Double.compareTo`` (NaN above everything and equal to itself, -0.0 below 0.0).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_sync import config as cfg
from hudi_sync.arrow_numpy import string_array
from hudi_sync.config import OptionSpec
from hudi_sync.errors import CorruptTableError, UnsupportedTableError
from hudi_sync.table.config.properties import TableConfig
from hudi_sync.table.records.log_records import (
    DECIMAL_WRAPPER_SCALE,
    RECORD_KEY_FIELD,
    OrderingValue,
)

IS_DELETED_FIELD = "_hoodie_is_deleted"
OPERATION_FIELD = "_hoodie_operation"
DELETE_OPERATIONS = frozenset({"D", "-U"})  # HoodieOperation DELETE and UPDATE_BEFORE

_MODEL = "org.apache.hudi.common.model."
DEFAULT_PAYLOAD = _MODEL + "DefaultHoodieRecordPayload"
_EVENT_TIME_PAYLOADS = frozenset({DEFAULT_PAYLOAD, _MODEL + "EventTimeAvroPayload"})
_COMMIT_TIME_PAYLOADS = frozenset({_MODEL + "OverwriteWithLatestAvroPayload"})
# HoodieRecordMerger's strategy ids of the two built-in orderings.
_EVENT_TIME_STRATEGY = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
_COMMIT_TIME_STRATEGY = "ce9acb64-bde0-424c-9b91-f6ebba25356d"


class MergeMode(StrEnum):
    EVENT_TIME_ORDERING = "EVENT_TIME_ORDERING"
    COMMIT_TIME_ORDERING = "COMMIT_TIME_ORDERING"


# What a table created with a mode stores, so that every Hudi version applies the same
# rules: the payload class (all Hudi 0.x has; it defaults to OverwriteWithLatestAvroPayload,
# commit time, when none is stored) and the merger strategy id (1.x).
PAYLOAD_OF_MODE = {
    MergeMode.EVENT_TIME_ORDERING: DEFAULT_PAYLOAD,
    MergeMode.COMMIT_TIME_ORDERING: _MODEL + "OverwriteWithLatestAvroPayload",
}
STRATEGY_OF_MODE = {
    MergeMode.EVENT_TIME_ORDERING: _EVENT_TIME_STRATEGY,
    MergeMode.COMMIT_TIME_ORDERING: _COMMIT_TIME_STRATEGY,
}
# Hudi 0.x's one Avro record merger, which applies the payload class's rules.
PAYLOAD_MERGER_STRATEGY = _EVENT_TIME_STRATEGY


def requested_merge_mode(options: Any) -> MergeMode | None:
    """The merge mode a writer's options ask for (``hoodie.record.merge.mode``, else a
    payload class), None when they name neither; refused in one line when it is one
    hudi_sync does not apply."""
    text = (cfg.RECORD_MERGE_MODE.read(options) or "").strip()
    if text:
        try:
            return MergeMode(text.upper())
        except ValueError:
            raise UnsupportedTableError(
                f"{cfg.RECORD_MERGE_MODE.key}={text}: only EVENT_TIME_ORDERING and "
                "COMMIT_TIME_ORDERING are supported"
            ) from None
    return _payload_mode(options, "the write options")


@dataclass(frozen=True)
class MergeRules:
    """A table's merge rules: the mode, its ordering field (event time only) and the
    optional delete field and the value of it that marks a delete. ``key_fields``: a
    table without meta fields keys its records by these (``record_keys``), not by
    ``_hoodie_record_key``."""

    mode: MergeMode
    ordering_field: str | None = None
    delete_field: str | None = None
    delete_marker: str | None = None
    key_fields: tuple[str, ...] = ()


def merge_rules(config: TableConfig, where: str | None = None) -> MergeRules:
    """The merge rules of a table; ``where`` names it in errors (its name by default).

    Raises UnsupportedTableError (one line: the table, the key and the value) for a
    CUSTOM merge mode, a payload class or strategy hudi_sync does not implement,
    partial updates and several ordering fields."""
    table = where or f"table {config.name}"
    raw = config.raw
    if len(config.ordering_fields) > 1:
        spec = cfg.ORDERING_FIELDS if cfg.ORDERING_FIELDS.given(raw) else cfg.PRECOMBINE_FIELD
        raise UnsupportedTableError(
            f"{table}: {spec.key}={','.join(config.ordering_fields)}: merging on several "
            "ordering fields is not supported"
        )
    ordering = config.ordering_fields[0] if config.ordering_fields else None
    if config.version >= 8:
        mode = _declared_mode(config, table, ordering)
    else:
        mode = _payload_mode(raw, table) or MergeMode.EVENT_TIME_ORDERING
    if config.version >= 9:
        partial = str(cfg.PARTIAL_UPDATE_MODE.read(raw)).upper()
        if partial != "NONE":
            raise UnsupportedTableError(
                f"{table}: {cfg.PARTIAL_UPDATE_MODE.key}={partial}: partial updates are not "
                "supported"
            )
    field, marker = _delete_marker(raw, table)
    if mode is MergeMode.COMMIT_TIME_ORDERING or ordering is None:
        return MergeRules(MergeMode.COMMIT_TIME_ORDERING, None, field, marker)
    return MergeRules(MergeMode.EVENT_TIME_ORDERING, ordering, field, marker)


def _declared_mode(config: TableConfig, table: str, ordering: str | None) -> MergeMode:
    """Version 8+: the declared merge mode; else (version 8 tables written without one)
    the strategy id's, the payload class's, or event time when there is an ordering
    field (Hudi's default)."""
    text = (config.record_merge_mode or "").strip()
    if text:
        try:
            return MergeMode(text.upper())
        except ValueError:
            raise UnsupportedTableError(
                f"{table}: {cfg.RECORD_MERGE_MODE.key}={text}: only EVENT_TIME_ORDERING and "
                "COMMIT_TIME_ORDERING are supported"
            ) from None
    strategy = cfg.MERGE_STRATEGY_ID.read(config.raw)
    if strategy:
        known = {_EVENT_TIME_STRATEGY: MergeMode.EVENT_TIME_ORDERING}
        known[_COMMIT_TIME_STRATEGY] = MergeMode.COMMIT_TIME_ORDERING
        if strategy not in known:
            raise UnsupportedTableError(
                f"{table}: {_given_key(cfg.MERGE_STRATEGY_ID, config.raw)}={strategy}: "
                "custom record mergers are not supported"
            )
        return known[strategy]
    payload_mode = _payload_mode(config.raw, table)
    if payload_mode is not None:
        return payload_mode
    return MergeMode.EVENT_TIME_ORDERING if ordering else MergeMode.COMMIT_TIME_ORDERING


def _payload_mode(raw: Any, table: str) -> MergeMode | None:
    """The merge mode Hudi infers from the payload class, None when none is named."""
    payload = cfg.PAYLOAD_CLASS.read(raw)
    if not payload:
        return None
    payload = payload.replace("com.uber.hoodie", "org.apache.hudi")
    if payload in _EVENT_TIME_PAYLOADS:
        return MergeMode.EVENT_TIME_ORDERING
    if payload in _COMMIT_TIME_PAYLOADS:
        return MergeMode.COMMIT_TIME_ORDERING
    raise UnsupportedTableError(
        f"{table}: {_given_key(cfg.PAYLOAD_CLASS, raw)}={payload}: custom payload classes "
        "are not supported"
    )


def _delete_marker(raw: Any, table: str) -> tuple[str | None, str | None]:
    """The delete field and marker: Hudi 1.1's merge properties, else the plain
    payload options stored in the table's properties. Hudi wants both or neither."""
    field = cfg.MERGE_DELETE_FIELD.read(raw) or cfg.DELETE_FIELD.read(raw)
    marker_spec = cfg.MERGE_DELETE_MARKER if cfg.MERGE_DELETE_MARKER.given(raw) else None
    marker = (marker_spec or cfg.DELETE_MARKER).text(raw)
    if marker is not None and not marker.strip():
        marker = None
    if (field is None) != (marker is None):
        raise CorruptTableError(
            f"{table}: {cfg.DELETE_FIELD.key} and {cfg.DELETE_MARKER.key} go together "
            f"(found only {'the field' if field else 'the marker'})"
        )
    return field, marker


def _given_key(spec: OptionSpec[Any], raw: Any) -> str:
    return next((name for name in spec.names if raw.get(name)), spec.key)


# -- merging ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DeleteKey:
    """A record of a delete block: the key and the ordering value Hudi wrote with it."""

    key: str
    ordering: OrderingValue | None = None


# A slice's log records in merge order: a row index into the log rows, or a delete.
LogEntry = int | DeleteKey


@dataclass(frozen=True)
class _Version:
    """One version of a record, as the merge compares it."""

    row: int | None  # its log row; None for a delete-block record (or the base record)
    ordering: Any  # its ordering value, None when absent
    kind: str | None  # the class of the ordering value (see ``arrow_kind``)
    delete: bool
    natural: bool  # a delete with Hudi's default ordering value: commit-time ordered
    from_delete_block: bool = False


def merge_records(
    base: pa.Table | None,
    log_rows: pa.Table,
    entries: Sequence[LogEntry],
    rules: MergeRules,
) -> pa.Table:
    """A file slice's records merged: ``base`` (the base file's rows, or None) and the
    log records ``entries`` (in log order; data records index ``log_rows``), both with
    the output schema. Keys are ``_hoodie_record_key``. Rows come out as Hudi's reader
    (and its compactor) emits them: base rows in file order, a log version in place of
    the base row it replaces, then the log's new keys. A key's log version meets the
    first base row of the key only; a second one passes through (``records.remove``).
    Base rows the log does not touch pass through as Arrow columns; Python only sees
    log records and the base rows whose key a log record names."""
    if base is not None and base.schema != log_rows.schema:
        raise ValueError("base and log rows must have the same schema")
    if not entries:
        return base if base is not None else log_rows.slice(0, 0)
    folded = _fold_log(log_rows, entries, rules)
    if base is None or not base.num_rows:
        emitted = sorted(v.row for v in folded.values() if not v.delete and v.row is not None)
        return log_rows.take(pa.array(emitted, pa.int64()))
    # Positions into base rows, then log rows (offset by the base's row count).
    order = _merge_base(base, folded, rules)
    inserted = sorted(v.row for v in folded.values() if not v.delete and v.row is not None)
    order = np.concatenate([order, np.array(inserted, dtype=np.int64) + base.num_rows])
    return pa.concat_tables([base, log_rows]).take(pa.array(order, pa.int64()))


def _fold_log(
    log_rows: pa.Table, entries: Sequence[LogEntry], rules: MergeRules
) -> dict[str, _Version]:
    """Each key's log version that survives the log's own records, in log order."""
    versions = _log_versions(log_rows, rules)
    keys = _column(log_rows, RECORD_KEY_FIELD, "log records").to_pylist()
    delete_type = _ordering_type(log_rows.schema, rules)
    folded: dict[str, _Version] = {}
    for entry in entries:
        if isinstance(entry, DeleteKey):
            key, new = entry.key, _delete_version(entry.ordering, delete_type)
        else:
            key, new = keys[entry], versions[entry]
            if key is None:
                raise CorruptTableError(f"log record {entry} has no {RECORD_KEY_FIELD}")
        old = folded.get(key)
        if old is None or _replaces(old, new, rules):
            folded[key] = new
    return folded


# Columns of a folded log (``fold_log_records``) beside the record's own.
DELETED_COLUMN = "_hudi_sync_deleted"
LOG_WINS_COLUMN = "_hudi_sync_log_wins"


def fold_log_records(
    log_rows: pa.Table, entries: Sequence[LogEntry], rules: MergeRules
) -> pa.Table:
    """A slice's log records folded to one version per key, as rows a warehouse can
    merge over the base file with one comparison (``merge_records`` does the same
    merge in one step).

    Each row is the surviving log version of its key with ``log_rows``' columns (a
    delete-block record: the key and its ordering value, the rest null) and two more:
    ``DELETED_COLUMN``, the version deletes the key; ``LOG_WINS_COLUMN``, it replaces
    the base file's record whatever the ordering values (commit-time ordering, a delete
    ordered by commit time, a delete block's value of a class Java cannot compare).
    Otherwise it replaces the base record when its ordering value is at least the base
    record's as Hudi compares them (a null one is int 0, see the module docstring):
    the view spells that comparison (``warehouse.common.snapshot_view.snapshot_query``)."""
    folded = _fold_log(log_rows, entries, rules) if entries else {}
    ordering_type = _ordering_type(log_rows.schema, rules)
    column_kind = arrow_kind(ordering_type) if ordering_type is not None else None
    data = [(key, v) for key, v in folded.items() if v.row is not None]
    deletes = [(key, v) for key, v in folded.items() if v.row is None]
    # A delete-block record has only its key (and ordering value): every column nullable.
    schema = pa.schema([f.with_nullable(True) for f in log_rows.schema])
    taken = log_rows.take(pa.array([v.row for _, v in data], pa.int64())).cast(schema)
    wins, deleted = [], []
    for _, version in data + deletes:
        always = (
            rules.mode is MergeMode.COMMIT_TIME_ORDERING
            or version.natural
            or (
                version.from_delete_block
                and version.kind is not None
                and column_kind not in (None, version.kind)
            )
        )
        wins.append(always)
        deleted.append(version.delete)
    delete_rows = _delete_rows(schema, deletes, rules, ordering_type, wins, len(data))
    rows = pa.concat_tables([taken, delete_rows])
    rows = rows.append_column(DELETED_COLUMN, pa.array(deleted, pa.bool_()))
    return rows.append_column(LOG_WINS_COLUMN, pa.array(wins, pa.bool_()))


# The commit seqno of the base row a folded log version meets when its key has several
# base rows in the slice's base file (``mark_first_base_rows``); null otherwise.
BASE_ROW_COLUMN = "_hudi_sync_base_seqno"
SEQNO_FIELD = "_hoodie_commit_seqno"


class AmbiguousBaseRowError(UnsupportedTableError):
    """Two base rows of a key cannot be told apart by a view (no distinct commit seqno)."""


def mark_first_base_rows(folded: pa.Table, base_rows: pa.Table | None, where: str) -> pa.Table:
    """``folded`` (``fold_log_records``) with ``BASE_ROW_COLUMN``: for a key with several
    rows in ``base_rows`` (the base file's keys and commit seqnos, in file order), the
    seqno of the first, the only one Hudi's reader merges the log version into
    (``merge_records``); a view then joins the log row to that base row alone. Raises
    AmbiguousBaseRowError (one line, naming ``where``) when the first row's seqno is
    missing or shared by another row of its key: no view could pick the first."""
    marks: list[str | None] = [None] * folded.num_rows
    if base_rows is not None and base_rows.num_rows and folded.num_rows:
        logged = pc.unique(folded.column(RECORD_KEY_FIELD).cast(pa.string()))
        keys = base_rows.column(RECORD_KEY_FIELD).cast(pa.string())
        met = base_rows.filter(pc.is_in(keys, value_set=logged))
        met_keys = met.column(RECORD_KEY_FIELD).cast(pa.string()).to_pylist()
        if SEQNO_FIELD in met.column_names:
            seqnos = met.column(SEQNO_FIELD).cast(pa.string()).to_pylist()
        else:
            seqnos = [None] * met.num_rows
        rows_of: dict[str, list[str | None]] = {}
        for key, seqno in zip(met_keys, seqnos, strict=True):
            rows_of.setdefault(key, []).append(seqno)
        first: dict[str, str] = {}
        for key, found in rows_of.items():
            if len(found) < 2:
                continue
            if found[0] is None or found[0] in found[1:]:
                raise AmbiguousBaseRowError(
                    f"{where}: record key {key} has {len(found)} base rows and the first has "
                    f"no {SEQNO_FIELD} of its own, so no view can tell which one its log "
                    "records update"
                )
            first[key] = found[0]
        if first:
            logged_keys = folded.column(RECORD_KEY_FIELD).cast(pa.string()).to_pylist()
            marks = [first.get(key) for key in logged_keys]
    return folded.append_column(BASE_ROW_COLUMN, string_array(marks))


def _delete_rows(
    schema: pa.Schema,
    deletes: list[tuple[str, _Version]],
    rules: MergeRules,
    ordering_type: pa.DataType | None,
    wins: list[bool],
    offset: int,
) -> pa.Table:
    """Delete-block records as rows of ``schema``: the key, and the ordering value
    typed as the ordering column (one that does not fit it always wins, as a value of
    another class does in Hudi)."""
    columns = {RECORD_KEY_FIELD: pa.array([key for key, _ in deletes], pa.string())}
    if rules.ordering_field is not None and ordering_type is not None:
        values = []
        for position, (_, version) in enumerate(deletes):
            try:
                values.append(pa.scalar(version.ordering).cast(ordering_type).as_py())
            except (pa.ArrowException, TypeError, ValueError):
                values.append(None)
                wins[offset + position] = True
        columns[rules.ordering_field] = pa.array(values, ordering_type)
    arrays = [
        columns[f.name].cast(f.type) if f.name in columns else pa.nulls(len(deletes), f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


def _merge_base(
    base: pa.Table, folded: dict[str, _Version], rules: MergeRules
) -> np.ndarray[Any, np.dtype[np.int64]]:
    """The merged rows in base file order: each base row's position, or (offset by the
    base's row count) the log row that replaces it; a base row a delete wins over is
    left out. A log version that meets its key's (first) base row leaves ``folded``,
    whether it wins or loses."""
    base_keys = _column(base, RECORD_KEY_FIELD, "base file")
    if not pa.types.is_string(base_keys.type):
        base_keys = base_keys.cast(pa.string())
    order = np.arange(base.num_rows, dtype=np.int64)
    touched = pc.is_in(base_keys, value_set=pa.array(list(folded), pa.string()))
    indices = np.flatnonzero(touched.to_numpy(zero_copy_only=False))
    if not len(indices):
        return order
    taken = pa.array(indices, pa.int64())
    touched_keys = base_keys.take(taken).to_pylist()
    orderings: list[Any] = [None] * len(indices)
    kind = None
    if rules.ordering_field is not None:
        column = _column(base, rules.ordering_field, "base file")
        orderings = column.take(taken).to_pylist()
        kind = arrow_kind(column.type)
    for position, key, ordering in zip(indices, touched_keys, orderings, strict=True):
        log = folded.pop(key, None)
        if log is None:  # a second base row of one key: Hudi merges the first only
            continue
        value, value_kind = _hudi_ordering(ordering, kind)
        stored = _Version(None, value, value_kind, delete=False, natural=False)
        if _log_wins(stored, log, rules):
            replaced = log.delete or log.row is None
            order[position] = -1 if replaced else base.num_rows + log.row
    return order[order >= 0]


def _replaces(old: _Version, new: _Version, rules: MergeRules) -> bool:
    """Whether a log record replaces the version folded so far for its key."""
    if rules.mode is MergeMode.COMMIT_TIME_ORDERING:
        return True
    if new.from_delete_block:
        if old.natural:  # already deleted by commit time
            return False
        stays = (
            not new.natural
            and old.kind == new.kind
            and _java_compare(old.ordering, new.ordering, 1) > 0
        )
        return not stays
    return _newer_wins(old, new, rules)


def _log_wins(stored: _Version, log: _Version, rules: MergeRules) -> bool:
    """Whether the folded log version wins over the base file's record."""
    if rules.mode is MergeMode.COMMIT_TIME_ORDERING:
        return True
    return _newer_wins(stored, log, rules)


class NullOrderingError(UnsupportedTableError):
    """A null ordering value met a value of another class: Hudi's merge fails there."""


def null_ordering_refusal(field: str | None, kind: str | None) -> str:
    """The one-line refusal when a null ordering value (Hudi's ``Integer 0``) must be
    compared with a non-null value of a column that holds no ints."""
    return (
        f"ordering field {field}: a null value (Hudi's default, int 0) meets a "
        f"{kind or 'non-int'} value of the same record key, which Hudi's merge cannot "
        "compare (it fails)"
    )


def _newer_wins(old: _Version, new: _Version, rules: MergeRules) -> bool:
    """Hudi's event-time rule: a commit-time-ordered delete on either side lets the
    newer one win, else the newer wins when its ordering value is at least the older's
    (``Comparable.compareTo``). A delete block's value of another class (an int against
    a long column) does not compare in Java, which fails there; the newer wins, as it
    does when Hudi folds such a delete. A null value (int 0) against a record's value
    of another class: Hudi fails, and so does this merge (``NullOrderingError``)."""
    if new.natural or old.natural:
        return True
    if old.kind is not None and new.kind is not None and old.kind != new.kind:
        if old.from_delete_block or new.from_delete_block:
            return True
        other = old.kind if new.kind == "int" else new.kind
        raise NullOrderingError(null_ordering_refusal(rules.ordering_field, other))
    if old.ordering is None:
        return True
    if new.ordering is None:
        return False
    return _java_compare(new.ordering, old.ordering, 1) >= 0


def _java_compare(left: Any, right: Any, incomparable: int) -> int:
    """``left.compareTo(right)`` as Java answers for ordering values: floats as
    ``Double.compareTo`` (NaN greatest and equal to itself, -0.0 below 0.0).
    ``incomparable``: the answer for values Python cannot order (another class)."""
    if isinstance(left, float) and isinstance(right, float):
        left_key, right_key = _double_key(left), _double_key(right)
        return (left_key > right_key) - (left_key < right_key)
    try:
        return int(left > right) - int(left < right)
    except TypeError:
        return incomparable


def _double_key(value: float) -> tuple[bool, float, float]:
    """The order of ``Double.compareTo``: NaN last, then by value, -0.0 before 0.0."""
    if math.isnan(value):
        return (True, 0.0, 0.0)
    return (False, value, math.copysign(1.0, value))


def _hudi_ordering(value: Any, kind: str | None) -> tuple[Any, str | None]:
    """A record's ordering value as Hudi holds it: a null one is ``Integer 0`` (the
    default; no ordering field: every record's)."""
    if value is None:
        return 0, "int"
    return value, kind


def _log_versions(log_rows: pa.Table, rules: MergeRules) -> list[_Version]:
    """Each log row's version: its ordering value and whether it marks a delete."""
    count = log_rows.num_rows
    deletes = [False] * count
    names = set(log_rows.column_names)
    if IS_DELETED_FIELD in names:
        flags = log_rows.column(IS_DELETED_FIELD).to_pylist()
        deletes = [d or bool(f) for d, f in zip(deletes, flags, strict=True)]
    if OPERATION_FIELD in names:
        operations = log_rows.column(OPERATION_FIELD).to_pylist()
        deletes = [d or o in DELETE_OPERATIONS for d, o in zip(deletes, operations, strict=True)]
    if rules.delete_field is not None and rules.delete_field in names:
        marks = log_rows.column(rules.delete_field).to_pylist()
        deletes = [
            d or (m is not None and _java_text(m) == rules.delete_marker)
            for d, m in zip(deletes, marks, strict=True)
        ]
    orderings: list[Any] = [None] * count
    kind = None
    if rules.ordering_field is not None:
        column = _column(log_rows, rules.ordering_field, "log records")
        orderings = column.to_pylist()
        kind = arrow_kind(column.type)
    versions = []
    for row, (raw, delete) in enumerate(zip(orderings, deletes, strict=True)):
        value, value_kind = _hudi_ordering(raw, kind)
        natural = delete and _is_default(value_kind, value)
        versions.append(_Version(row, value, value_kind, delete, natural))
    return versions


def _delete_version(ordering: OrderingValue | None, column_type: pa.DataType | None) -> _Version:
    if ordering is None:  # no ordering value: Hudi's default
        return _Version(None, None, None, True, True, from_delete_block=True)
    value = _python_value(ordering, column_type)
    natural = _is_default(ordering.kind, ordering.value)
    return _Version(None, value, ordering.kind, True, natural, from_delete_block=True)


def _is_default(kind: str | None, value: Any) -> bool:
    """Hudi's default ordering value, ``Integer 0``: equal only to an int 0 (a long 0
    is another class in Java)."""
    return kind == "int" and value == 0 and not isinstance(value, bool)


def _python_value(ordering: OrderingValue, column_type: pa.DataType | None) -> Any:
    """A delete's raw ordering value as the Python value Arrow gives for a column of
    its kind, so that it compares with the records' values."""
    raw = ordering.value
    kind = ordering.kind
    if raw is None:
        return None
    if kind == "date":
        return dt.date(1970, 1, 1) + dt.timedelta(days=int(raw))
    if kind == "time":
        return pa.scalar(int(raw), pa.time64("us")).as_py()
    if kind == "timestamp":
        zone = (
            column_type.tz
            if column_type is not None and pa.types.is_timestamp(column_type)
            else None
        )
        return pa.scalar(int(raw), pa.timestamp("us", zone)).as_py()
    if kind == "decimal":
        unscaled = int.from_bytes(bytes(raw), "big", signed=True)
        return Decimal(unscaled).scaleb(-DECIMAL_WRAPPER_SCALE)
    if kind == "array":
        return tuple(None if v is None else _python_value(v, None) for v in raw)
    return raw


def arrow_kind(kind: pa.DataType) -> str | None:
    """The class of an ordering column's values, named as ``OrderingValue.kind``:
    Avro stores bytes, shorts and ints as int, so all compare with an int wrapper."""
    if pa.types.is_boolean(kind):
        return "boolean"
    if pa.types.is_int8(kind) or pa.types.is_int16(kind) or pa.types.is_int32(kind):
        return "int"
    if pa.types.is_uint8(kind) or pa.types.is_uint16(kind):
        return "int"
    if pa.types.is_integer(kind):
        return "long"
    if pa.types.is_float16(kind) or pa.types.is_float32(kind):
        return "float"
    if pa.types.is_floating(kind):
        return "double"
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return "string"
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return "bytes"
    if pa.types.is_fixed_size_binary(kind):
        return "bytes"
    if pa.types.is_date(kind):
        return "date"
    if pa.types.is_decimal(kind):
        return "decimal"
    if pa.types.is_time(kind):
        return "time"
    if pa.types.is_timestamp(kind):
        return "timestamp"
    return None


def _ordering_type(schema: pa.Schema, rules: MergeRules) -> pa.DataType | None:
    if rules.ordering_field is None or rules.ordering_field not in schema.names:
        return None
    return schema.field(rules.ordering_field).type


def _java_text(value: Any) -> str:
    """A value as Java's ``toString`` spells it (the delete marker compares so)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _column(table: pa.Table, name: str, what: str) -> pa.ChunkedArray:
    if name not in table.column_names:
        raise CorruptTableError(f"{what} have no column {name}, which the merge needs")
    return table.column(name)
