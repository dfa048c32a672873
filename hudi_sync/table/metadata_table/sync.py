"""Keeping the metadata table current: the data timeline's listener.

``TimelineWriter`` tells its listener of every instant just before it completes; this
listener turns the instant into the metadata table's deltacommit of the same time
(``files`` records, plus the records of index partitions other modules compute) or
into the metadata table's rollback. Every writer that completes instants through a
``TimelineWriter`` built by ``timeline_writer`` gets it: the Spark writer (all its
operations, CDC, the bucket index), compaction, clean and rollback.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError
from hudi_sync.storage import Location
from hudi_sync.table.metadata_table.codec import HudiRecordCodec
from hudi_sync.table.metadata_table.files_records import (
    FilesRecord,
    clean_records,
    commit_records,
)
from hudi_sync.table.metadata_table.partitions import FILES
from hudi_sync.table.metadata_table.services import (
    MetadataServicesSettings,
    ServicesRun,
    run_table_services,
)
from hudi_sync.table.metadata_table.writer import (
    FILES_FILE_GROUP,
    FileGroupRecords,
    MetadataTableWriter,
)
from hudi_sync.table.properties import TableConfig, decode_properties
from hudi_sync.table.timeline import Timeline
from hudi_sync.table.write.timeline import CommitRecord, InstantListener, TimelineWriter


class RecordCodec(Protocol):
    """How metadata records become bytes: the HoodieMetadataRecord schema (JSON, as
    log block headers carry it), the ``files`` records' (key, value) pairs, and the
    HFile of one block."""

    @property
    def schema(self) -> str: ...

    def encode_files(self, records: Sequence[FilesRecord]) -> list[tuple[bytes, bytes]]: ...

    def hfile(self, entries: Sequence[tuple[bytes, bytes]]) -> bytes: ...


class IndexRecords(Protocol):
    """Records of index partitions (record_index, column_stats, ...) for an instant,
    computed elsewhere; ``partitions`` are those it keeps current."""

    @property
    def partitions(self) -> frozenset[str]: ...

    def for_commit(
        self, instant: str, action: str, commit: CommitRecord
    ) -> list[FileGroupRecords]: ...

    def for_clean(
        self, instant: str, deleted: Mapping[str, Sequence[str]]
    ) -> list[FileGroupRecords]: ...


class MetadataSync(InstantListener):
    """The metadata table's deltacommit (or rollback) before each data instant
    completes, after the metadata table's own services (``services``)."""

    def __init__(
        self,
        location: Location,
        version: int,
        codec: RecordCodec,
        indexes: Sequence[IndexRecords] = (),
        services: MetadataServicesSettings | None = None,
    ) -> None:
        self.location = location
        self.version = version
        self.codec = codec
        self.indexes = list(indexes)
        self.services = services or MetadataServicesSettings()
        self.writer = MetadataTableWriter(location, version, codec.schema, codec.hfile)
        self.last_services = ServicesRun()

    def _run_services(self) -> None:
        """Hudi runs the metadata table's services as a data write starts, before its
        deltacommit: here, just before it."""
        self.last_services = run_table_services(
            self.location,
            data_timeline(self.location),
            self.writer.timeline,
            self.version,
            self.services,
        )

    def _files_group(self, records: Sequence[FilesRecord]) -> FileGroupRecords:
        return FileGroupRecords(FILES, FILES_FILE_GROUP, self.codec.encode_files(records))

    def before_commit(self, instant: str, action: str, commit: CommitRecord) -> str | None:
        self._run_services()
        groups = [self._files_group(commit_records(commit.stats))]
        for index in self.indexes:
            groups += index.for_commit(instant, action, commit)
        self.writer.deltacommit(instant, groups)
        return self.writer.timeline.last_completion

    def before_clean(
        self, instant: str, deleted: Mapping[str, Sequence[str]], dropped: Sequence[str] = ()
    ) -> str | None:
        self._run_services()
        groups = [self._files_group(clean_records(deleted, dropped))]
        for index in self.indexes:
            groups += index.for_clean(instant, deleted)
        self.writer.deltacommit(instant, groups)
        return self.writer.timeline.last_completion

    def before_rollback(self, rolled_back: str, instant: str) -> str | None:
        if not self.writer.roll_back(rolled_back, instant):
            return None
        return self.writer.timeline.last_completion


def data_timeline(location: Location) -> Timeline:
    """The data table's timeline as it is now."""
    path = location.join(".hoodie", cfg.PROPERTIES_FILE)
    where = f"{location.uri}/.hoodie/hoodie.properties"
    config = TableConfig.parse(decode_properties(location.read_file(path), where), where)
    return Timeline(location, config)


def maintained_partitions(indexes: Sequence[IndexRecords] = ()) -> frozenset[str]:
    """The metadata table partitions a write keeps current."""
    return frozenset({FILES}).union(*(index.partitions for index in indexes))


def timeline_writer(
    location: Location,
    folder: str,
    version: int,
    metadata_partitions: Sequence[str],
    indexes: Sequence[IndexRecords] = (),
    services: MetadataServicesSettings | None = None,
) -> TimelineWriter:
    """The data timeline's writer, keeping the metadata table current when the table
    has one (``metadata_partitions``: its ``hoodie.table.metadata.partitions``). A
    metadata table it cannot keep current refuses the write (``prepare_metadata_table``
    drops or deletes what the write options disable, before this)."""
    if not metadata_partitions:
        return TimelineWriter(location, folder, version)
    stale = sorted(set(metadata_partitions) - maintained_partitions(indexes))
    if version < 8 or FILES not in metadata_partitions or stale:
        what = ", ".join(stale) if stale and version >= 8 else ",".join(metadata_partitions)
        raise BadInputError(
            f"{location.uri}: hudi_sync cannot keep the metadata table current "
            f"(partitions: {what}); disable them with Hudi's options, e.g. "
            f"{cfg.METADATA_ENABLE.key}=false"
        )
    listener = MetadataSync(location, version, HudiRecordCodec(version), indexes, services)
    return TimelineWriter(location, folder, version, listener)
