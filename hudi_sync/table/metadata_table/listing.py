"""Listing a data table through its metadata table's ``files`` partition.

``__all_partitions__`` names the partitions (a non-partitioned table's is ``.``, our
``""``); each partition's record maps its files to their sizes. Hudi 1.x and hudi-rs
list a v8+ table this way when ``hoodie.table.metadata.partitions`` includes ``files``;
a table without a ``.hoodie/metadata`` folder is listed directly.
"""

from __future__ import annotations

from collections.abc import Collection
from functools import cached_property

from hudi_sync.storage import Location
from hudi_sync.table.metadata_table.reader import MetadataTableReader, has_metadata_table
from hudi_sync.table.metadata_table.records import (
    ALL_PARTITIONS_KEY,
    NON_PARTITIONED_KEY,
    MetadataRecord,
)
from hudi_sync.table.properties import TableConfig
from hudi_sync.table.timeline import Timeline

FILES_PARTITION = "files"
FIRST_VERSION = 8  # hudi-rs reads the metadata table of table versions 8 and later


def lists_through_metadata_table(location: Location, config: TableConfig) -> bool:
    """Whether the table core lists this data table through its metadata table."""
    return (
        config.version >= FIRST_VERSION
        and FILES_PARTITION in config.metadata_partitions
        and has_metadata_table(location)
    )


def partition_key(partition: str) -> str:
    """The ``files`` record key of a partition path."""
    return partition or NON_PARTITIONED_KEY


def partition_path(key: str) -> str:
    return "" if key == NON_PARTITIONED_KEY else key


class MetadataTableListing:
    """A ``FileListing`` (fs_view) over the ``files`` partition of the metadata table."""

    def __init__(self, data_location: Location, data_timeline: Timeline) -> None:
        self.reader = MetadataTableReader(data_location, data_timeline)

    @cached_property
    def records(self) -> dict[str, MetadataRecord]:
        """The merged ``files`` records, read once."""
        return self.reader.read_partition(FILES_PARTITION)

    def partitions(self) -> list[str]:
        """The data table's partition paths, sorted."""
        listed = self.records.get(ALL_PARTITIONS_KEY)
        if listed is None:
            return []
        return sorted(partition_path(key) for key in listed.live_files())

    def list_files(self, partitions: Collection[str] | None) -> dict[str, list[tuple[str, int]]]:
        wanted = self.partitions()
        if partitions is not None:
            chosen = set(partitions)
            wanted = [p for p in wanted if p in chosen]
        result: dict[str, list[tuple[str, int]]] = {}
        for partition in wanted:
            record = self.records.get(partition_key(partition))
            files = record.live_files() if record is not None else {}
            result[partition] = sorted(files.items())
        return result
