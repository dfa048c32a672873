"""File-group assignment and sizing: which file groups a write touches, how big new ones are.

New keys go first into small files, then into new file groups of
``hoodie.parquet.max.file.size``, sized by Hudi's record-size rule, so inserts split into
as many file groups as Hudi's would; replacing operations replace the snapshot's file
groups of their partitions.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import pyarrow as pa

from hudi_sync.spark.writing.options import WriteOptions
from hudi_sync.spark.writing.spark_merge import Bucket
from hudi_sync.storage import Location
from hudi_sync.table import HudiTable
from hudi_sync.table.timeline.instant import Action


@dataclass(frozen=True)
class WriteTarget:
    """What a merge engine writes the touched file groups against: the table as the
    write read it, the write's instant and schema."""

    location: Location
    table: HudiTable
    # (partition, file id) -> its base file's name, in the snapshot the write read
    snapshot: Mapping[tuple[str, str], str]
    partitions: AbstractSet[str]  # the partitions the write changes
    instant: str
    schema: pa.Schema  # the writer schema: meta fields, then the data columns
    ordering: str | None  # the field the merge compares; None when every row deletes
    options: WriteOptions


def replaced_file_groups(
    operation: str, snapshot: Mapping[tuple[str, str], str], partitions: AbstractSet[str]
) -> dict[str, list[str]]:
    """``partition -> file ids`` a replacing operation replaces: the snapshot's groups
    in the written partitions (``insert_overwrite``, ``delete_partition``) or all of them
    (``insert_overwrite_table``); none for other operations."""
    if operation in ("insert_overwrite", "delete_partition"):
        return _group_ids(snapshot, lambda p: p in partitions)
    if operation == "insert_overwrite_table":
        return _group_ids(snapshot, lambda p: True)
    return {}


def uses_small_files(operation: str) -> bool:
    """Whether new keys may go into the snapshot's small files (Hudi's upserts and
    inserts) rather than only into new file groups."""
    return operation in ("insert", "upsert")


def new_key_buckets(
    target: WriteTarget, counts: Mapping[str, int], use_small_files: bool
) -> list[Bucket]:
    """New keys (``counts``: per partition) to file groups: small files first, then
    new groups of ``max.file.size / record size`` records each (Hudi's upsert
    partitioner)."""
    if not counts:
        return []
    options, location = target.options, target.location
    size_of_record = record_size(target.table, options)
    per_file = max(1, options.max_file_size // size_of_record)
    groups_by_partition: dict[str, list[tuple[str, str]]] = {}
    if use_small_files:
        for (partition, file_id), name in target.snapshot.items():
            if partition in counts:
                groups_by_partition.setdefault(partition, []).append((file_id, name))
    # Hudi's upsert partitioner: each bucket takes a share of the partition's inserts
    # by weight, and a record goes to the bucket its key's hash falls in, so no
    # ordering of the inserts is needed (bucket sizes are near, not exactly, equal).
    buckets: list[Bucket] = []
    for partition, count in sorted(counts.items()):
        shares: list[tuple[int, str]] = []
        assigned = 0
        for file_id, name in sorted(groups_by_partition.get(partition, ())):
            if assigned >= count:
                break
            size = location.size(location.join(partition, name))
            if size < options.small_file_limit:
                room = min(count - assigned, (options.max_file_size - size) // size_of_record)
                if room > 0:
                    shares.append((room, file_id))
                    assigned += room
        while assigned < count:
            room = min(per_file, count - assigned)
            shares.append((room, f"{uuid.uuid4()}-0"))
            assigned += room
        low = 0
        for room, file_id in shares:
            high = low + room
            upper = 1.0 if high >= count else high / count
            buckets.append(Bucket(partition, low / count, upper, file_id))
            low = high
    return buckets


def record_size(table: HudiTable, options: WriteOptions) -> int:
    """Bytes per record of the newest commit big enough to tell (more bytes than
    ``record.size.estimation.threshold * small.file.limit``), else the configured
    estimate: Hudi's rule, so inserts split into as many file groups as Hudi's would.
    Version 6 writers (Hudi 0.x) search every commit and replacecommit; version 8 and
    later (Hudi 1.x) the newest five commits, skipping replacecommits."""
    if table.config.version < 8:
        actions, searched = {Action.COMMIT, Action.REPLACE_COMMIT}, None
    else:
        actions, searched = {Action.COMMIT, Action.DELTA_COMMIT, Action.COMPACTION}, 5
    enough = int(options.record_size_threshold * options.small_file_limit)
    candidates = [i for i in table.timeline.completed_writes if i.action in actions]
    for instant in list(reversed(candidates))[:searched]:
        stats = table.timeline.commit_metadata(instant).write_stats
        records = sum(s.num_writes for s in stats)
        written = sum(s.total_write_bytes for s in stats)
        if written > enough and records > 0:
            return -(-written // records)  # rounded up, as Hudi does
    return options.record_size_estimate


def _group_ids(
    snapshot: Mapping[tuple[str, str], str], wanted: Callable[[str], bool]
) -> dict[str, list[str]]:
    replaced: dict[str, list[str]] = {}
    for partition, file_id in sorted(snapshot):
        if wanted(partition):
            replaced.setdefault(partition, []).append(file_id)
    return replaced
