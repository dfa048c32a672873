"""Listing a data table through its metadata table's ``files`` partition.

``__all_partitions__`` names the partitions (a non-partitioned table's is ``.``, our
``""``); each partition's record maps its files to their sizes. Hudi 1.x and hudi-rs
list a v8+ table this way when ``hoodie.table.metadata.partitions`` includes ``files``;
a table without a ``.hoodie/metadata`` folder is listed directly.
"""

from __future__ import annotations

from collections.abc import Sequence

from hudi_sync.storage import Location
from hudi_sync.table.config.properties import TableConfig
from hudi_sync.table.files.listing import ListedFiles
from hudi_sync.table.metadata_table.reader import MetadataTableReader, has_metadata_table
from hudi_sync.table.metadata_table.records import (
    ALL_PARTITIONS_KEY,
    NON_PARTITIONED_KEY,
    MetadataRecord,
)
from hudi_sync.table.timeline.active import Timeline

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
    """A ``FileListing`` over the ``files`` partition of the metadata table. Each call
    reads the metadata table afresh (a listing may serve several views over time)."""

    def __init__(self, data_location: Location, data_timeline: Timeline) -> None:
        self.data_location = data_location
        self.data_timeline = data_timeline

    def records(self) -> dict[str, MetadataRecord]:
        """The merged ``files`` records."""
        reader = MetadataTableReader(self.data_location, self.data_timeline)
        return reader.read_partition(FILES_PARTITION)

    def list_files(self, partitions: Sequence[str] | None = None) -> ListedFiles:
        records = self.records()
        listed = records.get(ALL_PARTITIONS_KEY)
        wanted = [] if listed is None else sorted(map(partition_path, listed.live_files()))
        if partitions is not None:
            chosen = set(partitions)
            wanted = [p for p in wanted if p in chosen]
        names: dict[str, list[str]] = {}
        sizes: dict[str, dict[str, int]] = {}
        for partition in wanted:
            record = records.get(partition_key(partition))
            files = record.live_files() if record is not None else {}
            names[partition] = sorted(files)
            sizes[partition] = files
        return ListedFiles(names, sizes)
