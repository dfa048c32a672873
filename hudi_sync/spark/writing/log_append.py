"""Merge-on-Read: one file group's updates and deletes appended as a new log file.

Run by Spark's Python workers, one call per existing file group a deltacommit touches
(new keys go to new base files, as with Hudi's SIMPLE and BLOOM indexes, which look
keys up in base files only: a key that lived only in a log would be inserted again).
Nothing is merged here: readers and compaction merge base and log records by the
table's merge rules. The file is announced by a marker first, like every data file,
so a failed write is rolled back by deleting it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudi_sync.spark.arrow_columns import align
from hudi_sync.spark.writing.merge import (
    COMMIT_TIME,
    DELETE_FLAG,
    FILE_NAME,
    PARTITION_PATH,
    RECORD_KEY,
    SEQNO,
)
from hudi_sync.storage import Location
from hudi_sync.table.timeline.commit_metadata import WriteStat
from hudi_sync.table.write.log_writer import (
    NATURAL_ORDER,
    encode_data_block,
    encode_delete_block,
    log_file_name,
    next_log_version,
    ordering_wrapper,
    slice_logs,
)
from hudi_sync.table.write.rollback import write_marker


@dataclass(frozen=True)
class LogAppend:
    """What one file group's append wrote (a ``HoodieDeltaWriteStat``'s facts)."""

    name: str
    size: int
    version: int
    upserts: int
    deletes: int
    prev_commit: str  # v6: the slice's base instant; v8+: the deltacommit's instant
    base_file: str  # v6: the slice's base file; v8+: "" (as Hudi 1.x writes it)
    log_files: tuple[str, ...]  # v6: the slice's logs and the new one; v8+: the new one

    def stat(self, partition: str, file_id: str, new_group: bool = False) -> WriteStat:
        """The append's ``HoodieDeltaWriteStat``; a ``new_group``'s records count as inserts."""
        return WriteStat(
            file_id=file_id,
            path=f"{partition}/{self.name}" if partition else self.name,
            partition_path=partition,
            prev_commit=self.prev_commit,
            num_writes=self.upserts,
            num_deletes=self.deletes,
            num_updates=0 if new_group else self.upserts,
            num_inserts=self.upserts if new_group else 0,
            total_write_bytes=self.size,
            file_size=self.size,
            base_file=self.base_file,
            log_files=self.log_files,
            log_version=self.version,
        )


@dataclass(frozen=True)
class AppendSpec:
    """The write-wide facts every append needs (plain data: it travels to workers)."""

    instant: str
    schema: pa.Schema  # the writer schema: meta fields, then the data columns
    avro_schema: Mapping[str, Any]  # the same, as the log blocks' header schema
    ordering: str | None  # None: deletes win by commit order (a DELETE operation)
    table_version: int
    block_format: str  # hoodie.logfile.data.block.format
    max_log_size: int  # hoodie.logfile.max.size: a larger file rolls over to the next version


def append_log(
    location: Location,
    spec: AppendSpec,
    rows: pa.Table,
    partition: str,
    file_id: str,
    base_file: str,
    write_token: str,
    slice_instant: str | None = None,
) -> list[LogAppend]:
    """Append ``rows`` (keyed and deduplicated; ``DELETE_FLAG`` marks deletes) to the
    file group ``file_id`` whose latest slice has ``base_file``: one log file, or several
    when the blocks outgrow ``hoodie.logfile.max.size`` (Hudi's rollover: the next
    version, a write stat each)."""
    deletes = pc.fill_null(rows.column(DELETE_FLAG).combine_chunks(), False)
    upserts = rows.filter(pc.invert(deletes))
    removed = rows.filter(deletes)
    folder = location.join(partition) if partition else location.path
    v6 = spec.table_version < 8
    if v6:
        # A slice of logs only (the bucket index) names its base instant itself.
        slice_instant = slice_instant or base_file.rsplit("_", 1)[1].split(".")[0]
        names = location.names(folder)
        version = next_log_version(names, file_id, slice_instant)
        earlier = slice_logs(names, file_id, slice_instant)
    else:
        slice_instant, version, earlier = spec.instant, 1, []
    files: list[tuple[bytes, int, int]] = []  # (blocks, upserts, deletes) per log file
    if upserts.num_rows:
        records = _with_meta_fields(upserts, spec, file_id, write_token)
        files += [(block, count, 0) for block, count in _data_blocks(records, spec)]
    if removed.num_rows:
        block = encode_delete_block(
            _delete_entries(removed, spec.ordering), spec.avro_schema, spec.instant
        )
        if files and len(files[-1][0]) + len(block) <= spec.max_log_size:
            data, count, _ = files.pop()
            files.append((data + block, count, removed.num_rows))
        else:
            files.append((block, 0, removed.num_rows))
    appends: list[LogAppend] = []
    for number, (blocks, upserted, deleted) in enumerate(files):
        name = log_file_name(file_id, slice_instant, version + number, write_token)
        write_marker(location, spec.instant, partition, name)
        location.write_file(f"{folder}/{name}", blocks)
        earlier = [*earlier, name] if v6 else [name]
        appends.append(
            LogAppend(
                name=name,
                size=len(blocks),
                version=version + number,
                upserts=upserted,
                deletes=deleted,
                prev_commit=slice_instant if v6 else spec.instant,
                base_file=base_file if v6 else "",
                log_files=tuple(earlier),
            )
        )
    return appends


def _data_blocks(records: pa.Table, spec: AppendSpec) -> list[tuple[bytes, int]]:
    """``records`` as data blocks of at most ``spec.max_log_size`` bytes each where the
    records allow (one record is never split), with their record counts."""
    block = encode_data_block(records, spec.avro_schema, spec.instant, spec.block_format)
    if len(block) <= spec.max_log_size or records.num_rows == 1:
        return [(block, records.num_rows)]
    # Rows per block from this block's bytes per row; a chunk that still comes out
    # too big (rows of uneven size) is split again.
    per_block = max(1, records.num_rows * spec.max_log_size // len(block))
    if per_block >= records.num_rows:
        per_block = records.num_rows // 2
    return [
        part
        for start in range(0, records.num_rows, per_block)
        for part in _data_blocks(records.slice(start, per_block), spec)
    ]


def _with_meta_fields(
    upserts: pa.Table, spec: AppendSpec, file_id: str, write_token: str
) -> pa.Table:
    """The upserted rows in the writer schema with their meta fields: this commit's
    time and sequence numbers, and the file id as the file name (Hudi's append handle)."""
    records = align(upserts, spec.schema)
    count = records.num_rows
    task = write_token.split("-", 1)[0]
    values = {
        COMMIT_TIME: pa.array([spec.instant] * count, pa.string()),
        SEQNO: pa.array([f"{spec.instant}_{task}_{i}" for i in range(count)], pa.string()),
        FILE_NAME: pa.array([file_id] * count, pa.string()),
    }
    for column, array in values.items():
        records = records.set_column(records.schema.get_field_index(column), column, array)
    return records


def _delete_entries(removed: pa.Table, ordering: str | None) -> list[tuple[str, str, Any]]:
    """``(key, partition, ordering value)`` of each delete: the row's ordering value
    under event-time ordering, else Hudi's natural order (the delete wins)."""
    keys = removed.column(RECORD_KEY).to_pylist()
    partitions = removed.column(PARTITION_PATH).to_pylist()
    if ordering is None or ordering not in removed.column_names:
        return [(k, p, NATURAL_ORDER) for k, p in zip(keys, partitions, strict=True)]
    column = removed.column(ordering)
    return [
        (k, p, ordering_wrapper(column.type, v) or NATURAL_ORDER)
        for k, p, v in zip(keys, partitions, column.to_pylist(), strict=True)
    ]
