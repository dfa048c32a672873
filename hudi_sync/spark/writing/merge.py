"""Merging one file group: its current base file with the incoming records for it.

Pure pyarrow, run by Spark's Python workers (one call per touched file group). The
rules, Hudi's event-time ordering: an incoming record replaces the stored one when its
ordering value is greater or equal (ties go to the newer write); a delete removes the
key (an ``_hoodie_is_deleted`` row only when it would win by ordering, a DELETE
operation always); keys the file does not hold are inserted. Unchanged rows keep their
``_hoodie_commit_time`` and ``_hoodie_commit_seqno``; every row gets the new file name.

``MergeResult.changes`` holds each touched key's before and after image (row indexes
into the old and new tables): what change-data-capture logging needs.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from hudi_sync.spark.arrow_columns import align
from hudi_sync.table.cdc.log import CdcChanges, images_at
from hudi_sync.table.config.schema import META_FIELDS

COMMIT_TIME, SEQNO, RECORD_KEY, PARTITION_PATH, FILE_NAME = META_FIELDS
IS_DELETED = "_hoodie_is_deleted"
# Helper columns the writer adds to incoming rows; never stored.
DELETE_FLAG = "__hudi_sync_delete"


@dataclass(frozen=True)
class Change:
    """One touched key: ``op`` i/u/d, its row in the old table (before image) and in
    the new table (after image)."""

    key: str
    op: str
    before: int | None
    after: int | None


@dataclass(frozen=True)
class MergeResult:
    table: pa.Table
    old: pa.Table  # the stored rows, aligned to the writer schema (before images)
    num_inserts: int
    num_updates: int
    num_deletes: int
    _keys: pa.Array
    _position: pa.Array
    _inserted: pa.Array
    _updated: pa.Array
    _removed: pa.Array
    _kept_rows: int

    def changes(self) -> list[Change]:
        """Each touched key's before and after image, in incoming order."""
        result: list[Change] = []
        cursor = self._kept_rows
        flags = zip(
            self._keys.to_pylist(),
            self._position.to_pylist(),
            self._inserted.to_pylist(),
            self._updated.to_pylist(),
            self._removed.to_pylist(),
            strict=True,
        )
        for key, position, inserted, updated, removed in flags:
            if inserted or updated:
                result.append(
                    Change(key, "u" if updated else "i", position if updated else None, cursor)
                )
                cursor += 1
            elif removed:
                result.append(Change(key, "d", position, None))
        return result


def cdc_changes(result: MergeResult) -> CdcChanges:
    """The merge's changes for a CDC log: before and after images are rows of the old
    and new tables without meta fields, in the writer schema."""
    changes = result.changes()
    data_columns = [n for n in result.table.column_names if n not in META_FIELDS]
    return CdcChanges(
        ops=pa.array([c.op for c in changes], pa.string()),
        keys=pa.array([c.key for c in changes], pa.string()),
        before=images_at(
            result.old.select(data_columns), pa.array([c.before for c in changes], pa.int64())
        ),
        after=images_at(
            result.table.select(data_columns), pa.array([c.after for c in changes], pa.int64())
        ),
    )


def _winning(incoming: pa.Array, stored: pa.Array) -> pa.Array:
    """Incoming wins when its ordering value is >= the stored one (a null never beats a
    value; a stored null is beaten by anything)."""
    ge = pc.greater_equal(incoming, stored)
    return pc.if_else(pc.is_null(stored), pa.scalar(True), pc.fill_null(ge, pa.scalar(False)))


def merge_file_group(
    old: pa.Table | None,
    incoming: pa.Table,
    schema: pa.Schema,
    *,
    instant: str,
    file_name: str,
    seqno_prefix: str,
    ordering_field: str | None,
) -> MergeResult:
    """Merge ``incoming`` (deduplicated; ``DELETE_FLAG`` marks deletes) into ``old``."""
    old_aligned = align(old, schema) if old is not None else schema.empty_table()
    old_keys = old_aligned.column(RECORD_KEY).combine_chunks()
    new_keys = incoming.column(RECORD_KEY).combine_chunks()
    position = pc.index_in(new_keys, value_set=old_keys)  # where each incoming key is stored
    matched = pc.is_valid(position)
    deletes = pc.fill_null(incoming.column(DELETE_FLAG).combine_chunks(), False)
    if ordering_field is not None and old_aligned.num_rows:
        stored_order = pc.take(old_aligned.column(ordering_field), pc.fill_null(position, 0))
        wins = _winning(incoming.column(ordering_field).combine_chunks(), stored_order)
    else:
        wins = pa.array([True] * incoming.num_rows, pa.bool_())
    inserted = pc.and_(pc.invert(matched), pc.invert(deletes))
    updated = pc.and_(pc.and_(matched, wins), pc.invert(deletes))
    removed = pc.and_(pc.and_(matched, deletes), wins)
    replaced_positions = pc.filter(position, pc.or_(updated, removed))

    keep_old = pc.invert(
        pc.is_in(
            pa.array(range(old_aligned.num_rows), pa.int32()),
            value_set=replaced_positions.cast(pa.int32()),
        )
    )
    kept = old_aligned.filter(keep_old)
    written = align(incoming.filter(pc.or_(updated, inserted)), schema)
    n_written = written.num_rows
    seqnos = pa.array([f"{seqno_prefix}_{i}" for i in range(n_written)], pa.string())
    written = written.set_column(
        written.schema.get_field_index(COMMIT_TIME),
        COMMIT_TIME,
        pa.array([instant] * n_written, pa.string()),
    ).set_column(written.schema.get_field_index(SEQNO), SEQNO, seqnos)
    merged = pa.concat_tables([kept, written])
    merged = merged.set_column(
        merged.schema.get_field_index(FILE_NAME),
        FILE_NAME,
        pa.array([file_name] * merged.num_rows, pa.string()),
    )

    return MergeResult(
        merged,
        old_aligned,
        num_inserts=_count(inserted),
        num_updates=_count(updated),
        num_deletes=_count(removed),
        _keys=new_keys,
        _position=position,
        _inserted=inserted,
        _updated=updated,
        _removed=removed,
        _kept_rows=kept.num_rows,
    )


def _count(flags: pa.Array) -> int:
    return int(pc.sum(flags).as_py() or 0)
