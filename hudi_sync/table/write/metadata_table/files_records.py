"""The ``files`` partition's records for one data instant, as Hudi computes them.

A commit (commit, deltacommit, replacecommit, a compaction's commit) adds files: one
record ``__all_partitions__`` naming the partitions it wrote, and one record per
partition mapping each written file name (CDC logs included) to its size (the largest
size reported for it). Replaced file groups are not deleted here: the data timeline
replaces them, and the clean that deletes their files records the deletions. A clean
records, per partition, the file names it deleted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from hudi_sync.table.timeline.commit_metadata import WriteStat

ALL_PARTITIONS_KEY = "__all_partitions__"
NON_PARTITIONED_NAME = "."  # the key of a non-partitioned table's one partition
PARTITION_LIST = 1  # HoodieMetadataRecord.type of the partition list
FILE_LIST = 2  # HoodieMetadataRecord.type of one partition's files


@dataclass(frozen=True)
class FileEntry:
    """One entry of a record's ``filesystemMetadata``."""

    size: int
    is_deleted: bool


@dataclass(frozen=True)
class FilesRecord:
    """One record of the ``files`` partition: ``key`` is ``__all_partitions__`` or a
    partition identifier, ``entries`` partition or file name -> entry."""

    key: str
    record_type: int
    entries: Mapping[str, FileEntry] = field(default_factory=dict)


def partition_identifier(partition: str) -> str:
    """The files partition's name for a data partition (``.`` when not partitioned)."""
    return partition or NON_PARTITIONED_NAME


def _file_name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def commit_records(stats: Sequence[WriteStat]) -> list[FilesRecord]:
    """Records of a commit's write stats (a ``delete_partition``, which writes none,
    gets an empty partition list: its partitions go with the clean that deletes them)."""
    by_partition: dict[str, dict[str, int]] = {}
    for stat in stats:
        files = by_partition.setdefault(stat.partition_path, {})
        if stat.path:
            name = _file_name(stat.path)
            files[name] = max(files.get(name, 0), stat.file_size)
        for cdc_path, size in stat.cdc_stats.items():
            files[_file_name(cdc_path)] = size
    return added_files_records(by_partition)


def added_files_records(by_partition: Mapping[str, Mapping[str, int]]) -> list[FilesRecord]:
    """The partition list naming these partitions, and each partition's added files
    (name -> size): what a commit records, and the initial listing of a new MDT."""
    records = [
        FilesRecord(
            ALL_PARTITIONS_KEY,
            PARTITION_LIST,
            {partition_identifier(p): FileEntry(0, False) for p in by_partition},
        )
    ]
    for partition, files in by_partition.items():
        records.append(
            FilesRecord(
                partition_identifier(partition),
                FILE_LIST,
                {name: FileEntry(size, False) for name, size in files.items()},
            )
        )
    return records


def clean_records(
    deleted: Mapping[str, Sequence[str]], dropped: Sequence[str] = ()
) -> list[FilesRecord]:
    """Records of a clean: ``deleted`` is partition -> deleted files (names or
    table-relative paths); ``dropped`` partitions (the clean emptied them of file groups,
    ``isPartitionDeleted``) leave the partition list."""
    records = [
        FilesRecord(
            partition_identifier(partition),
            FILE_LIST,
            {_file_name(path): FileEntry(0, True) for path in paths},
        )
        for partition, paths in deleted.items()
    ]
    if dropped:
        gone = {partition_identifier(p): FileEntry(0, True) for p in dropped}
        records.append(FilesRecord(ALL_PARTITIONS_KEY, PARTITION_LIST, gone))
    return records
