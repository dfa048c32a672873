"""Who keeps which metadata table partition current, in one place for every writer path.

The commit protocol, compaction and the Spark writer's preparation all ask here: the
``files`` partition is kept by ``sync.MetadataSync`` itself, ``column_stats`` and
``partition_stats`` by ``stats_sync``, ``record_index`` and ``secondary_index_*`` by
``record_index_sync``. A partition no keeper names makes ``sync.metadata_sync`` refuse
the write, so a new keeper is added here and nowhere else. The data timeline's writer
asks again at each completion, for the partitions the table lists then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hudi_sync.storage import Location
from hudi_sync.table.write.metadata_table.record_index_sync import (
    record_index_partitions,
    record_indexes,
)
from hudi_sync.table.write.metadata_table.services import MetadataServicesSettings
from hudi_sync.table.write.metadata_table.stats_sync import STATS_PARTITIONS, stats_indexes
from hudi_sync.table.write.metadata_table.sync import (
    IndexRecords,
    maintained_partitions,
    metadata_sync,
    timeline_writer,
)
from hudi_sync.table.write.timeline import InstantListener, TimelineWriter


def kept_partitions(metadata_partitions: Sequence[str]) -> frozenset[str]:
    """The partitions of a table's metadata table that a write can keep current."""
    return maintained_partitions() | STATS_PARTITIONS | record_index_partitions(metadata_partitions)


def index_keepers(
    location: Location, version: int, props: Mapping[str, str], metadata_partitions: Sequence[str]
) -> list[IndexRecords]:
    """The keepers of the index partitions the table's metadata table has."""
    keepers: list[IndexRecords] = []
    keepers += stats_indexes(location, metadata_partitions)
    keepers += record_indexes(location, version, props, metadata_partitions)
    return keepers


def data_timeline_writer(
    location: Location,
    folder: str,
    version: int,
    props: Mapping[str, str],
    metadata_partitions: Sequence[str],
    services: MetadataServicesSettings | None = None,
) -> TimelineWriter:
    """The data timeline's writer, keeping every partition of the metadata table current
    (and running its own services as ``services`` say); the partitions are read again
    at each completion, so a metadata table another writer created or deleted meanwhile
    is followed."""

    def build(props: Mapping[str, str], partitions: tuple[str, ...]) -> InstantListener | None:
        keepers = index_keepers(location, version, props, partitions)
        return metadata_sync(location, version, partitions, keepers, services)

    return timeline_writer(location, folder, version, props, metadata_partitions, build)
