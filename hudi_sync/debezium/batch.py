"""Reducing a batch of change events to one row per key, in database log order.

Rules (RFC-39, with its open limitation on deletes closed):

- Events are applied in log order (``_event_order``), whatever order Kafka delivered
  them in; equal positions are the same change delivered twice, so applying either is
  the same.
- A key's last event decides: an upsert row (``c``, ``r``, ``u``) or a delete.
- An event at or before a key's tombstone (the position of the delete that removed
  it, kept in the table's ``hudi_sync.debezium.state``) is dropped, so a late
  insert or update never resurrects a deleted row. Likewise every event before the
  last truncate.
- TOAST: a column Debezium left out (``__debezium_unavailable_value``) takes the value
  the key had before, from an earlier event of this batch when there is one; otherwise
  it stays in ``Reduced.unresolved`` and the writer fills it from the stored row.
- ``t`` (truncate) follows the policy: ``fail``, ``ignore``, or ``delete`` (every row
  before it goes: the batch's earlier events are dropped, stored rows are deleted).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from hudi_sync import config as cfg
from hudi_sync.debezium.events import META_COLUMNS, OP, ChangeEvent, EventError
from hudi_sync.debezium.types import ColumnType, infer, to_arrow
from hudi_sync.errors import BadInputError, first_line

TRUNCATE_POLICIES = cfg.TRUNCATE_POLICY.choices


@dataclass
class Reduced:
    """A batch reduced to the last event per key."""

    final: dict[str, ChangeEvent] = field(default_factory=dict)
    unresolved: dict[str, frozenset[str]] = field(default_factory=dict)
    truncated_at: str | None = None  # position of the last applied truncate
    dropped: int = 0  # events older than a tombstone or a truncate

    @property
    def size(self) -> int:
        """Keys written: rows upserted or deleted."""
        return len(self.final)

    @property
    def deletes(self) -> dict[str, str]:
        """The tombstones this batch adds: deleted key -> position of its delete."""
        return {k: e.order for k, e in self.final.items() if e.op == "d"}

    @property
    def upserted_keys(self) -> set[str]:
        return {k for k, e in self.final.items() if e.op != "d"}


def reduce_events(
    events: Iterable[ChangeEvent],
    tombstones: Mapping[str, str],
    truncated_before: str | None,
    truncate_policy: str = "fail",
) -> Reduced:
    """Apply ``events`` in log order on top of the tombstones and the truncate mark."""
    if truncate_policy not in TRUNCATE_POLICIES:
        raise BadInputError(
            f"truncate policy {truncate_policy!r} is not one of {', '.join(TRUNCATE_POLICIES)}"
        )
    ordered = sorted(events, key=lambda e: e.order)
    result = Reduced()
    floor = truncated_before or ""
    for event in ordered:
        if event.op == "t":
            if truncate_policy == "fail":
                raise EventError(
                    f"{event.position}: the table was truncated in the database; set "
                    f"{cfg.TRUNCATE_POLICY.key} (--on-truncate) to ignore or delete to go on"
                )
            if truncate_policy == "delete" and event.order > floor:
                result.dropped += len(result.final)
                result.final.clear()
                result.unresolved.clear()
                floor = result.truncated_at = event.order
            continue
        key = event.key or ""
        if event.order < floor or event.order <= tombstones.get(key, ""):
            result.dropped += 1
            continue
        previous = result.final.get(key)
        if previous is not None and event.order < previous.order:
            continue  # sorted input: only equal positions reach here (a duplicate)
        missing = event.unavailable
        if missing and event.op != "d":
            event, missing = _fill_unavailable(event, previous, result.unresolved.get(key))
        result.final[key] = event
        if missing and event.op != "d":
            result.unresolved[key] = missing
        else:
            result.unresolved.pop(key, None)
    return result


def _fill_unavailable(
    event: ChangeEvent, previous: ChangeEvent | None, previous_missing: frozenset[str] | None
) -> tuple[ChangeEvent, frozenset[str]]:
    """Columns left out take the previous event's value, unless that one lacked it too."""
    if previous is None or previous.op == "d":
        return event, event.unavailable
    still_missing = set()
    for name in event.unavailable:
        if (previous_missing and name in previous_missing) or name not in previous.row:
            still_missing.add(name)
        else:
            event.row[name] = previous.row[name]
    return event, frozenset(still_missing)


def batch_columns(
    events: Iterable[ChangeEvent],
) -> tuple[dict[str, ColumnType | None], str]:
    """The row columns in first-seen order (their Connect type, None when the events
    carry no schema), and the source database."""
    columns: dict[str, ColumnType | None] = {}
    database = ""
    for event in events:
        database = database or event.database
        if event.columns is not None:
            for name, column in event.columns.items():
                if columns.get(name) is None:
                    columns[name] = column
        for name in event.row:
            columns.setdefault(name, None)
    return columns, database


def to_table(
    events: list[ChangeEvent], binary_mode: str = "bytes", extra: Mapping[str, Any] | None = None
) -> pa.Table:
    """The events as rows: their columns, Hudi's Debezium meta columns, and ``extra``
    constant columns."""
    columns, database = batch_columns(events)
    arrays: dict[str, pa.Array] = {}
    for name, column in columns.items():
        values = [e.row.get(name) for e in events]
        arrays[name] = to_arrow(name, column or infer(values), values, binary_mode)
    for name, kind in META_COLUMNS.get(database, []):
        arrays[name] = pa.array([e.meta.get(name) for e in events], _META_TYPES[kind])
    for name, value in (extra or {}).items():
        arrays[name] = pa.array([value] * len(events))
    return pa.table(arrays)


def align_to_types(arrow: pa.Table, stored: Mapping[str, pa.DataType] | None) -> pa.Table:
    """Arrow rows with the table's columns (``stored``; None: no table yet) they lack as
    nulls and shared columns cast to the table's types, then their own new columns."""
    if stored is None:
        return arrow
    columns, names = [], []
    for name, kind in stored.items():
        if name not in arrow.column_names:
            columns.append(pa.nulls(arrow.num_rows, kind))
        elif arrow.schema.field(name).type != kind:
            columns.append(_stored_as(name, arrow.column(name), kind))
        else:
            columns.append(arrow.column(name))
        names.append(name)
    for name in arrow.column_names:
        if name not in stored:
            columns.append(arrow.column(name))
            names.append(name)
    return pa.table(columns, names=names)


def _stored_as(name: str, column: pa.ChunkedArray, kind: pa.DataType) -> pa.ChunkedArray:
    """``column`` as the table stores it: a schema-less event's date is its days since
    the epoch (Debezium's ``Date``), other values cast as Arrow casts them; values the
    table's type cannot hold are refused in one line naming the column."""
    try:
        if pa.types.is_integer(column.type) and pa.types.is_date32(kind):
            return column.cast(pa.int32()).cast(kind)
        return column.cast(kind)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise BadInputError(
            f"column {name}: the events' {column.type} values cannot be stored as the "
            f"table's {kind} ({first_line(exc)})"
        ) from None


_META_TYPES = {"string": pa.string(), "int64": pa.int64(), "int32": pa.int32()}
__all__ = ["OP", "Reduced", "align_to_types", "batch_columns", "reduce_events", "to_table"]
