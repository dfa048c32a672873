"""Keeping the metadata table current: the data timeline's listener.

``TimelineWriter`` tells its listener of every instant just before it completes; this
listener turns the instant into the metadata table's deltacommit of the same time
(``files`` records, plus the records of index partitions other modules compute) or
into the metadata table's rollback. Every writer that completes instants through a
``TimelineWriter`` built by ``timeline_writer`` gets it: the Spark writer (all its
operations, CDC, the bucket index), compaction, clean and rollback.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError
from hudi_sync.storage import Location
from hudi_sync.table.config.properties import TableConfig, decode_properties
from hudi_sync.table.timeline.active import Timeline
from hudi_sync.table.write.metadata_table.codec import HudiRecordCodec
from hudi_sync.table.write.metadata_table.files_records import (
    FilesRecord,
    clean_records,
    commit_records,
)
from hudi_sync.table.write.metadata_table.partitions import FILES, refuse_partitions_being_built
from hudi_sync.table.write.metadata_table.services import (
    MetadataServicesSettings,
    ServicesRun,
    run_table_services,
)
from hudi_sync.table.write.metadata_table.writer import (
    FILES_FILE_GROUP,
    FileGroupRecords,
    MetadataTableWriter,
)
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


def current_config(location: Location) -> TableConfig:
    """The data table's ``hoodie.properties`` as they are now."""
    path = location.join(".hoodie", cfg.PROPERTIES_FILE)
    where = f"{location.uri}/.hoodie/hoodie.properties"
    return TableConfig.parse(decode_properties(location.read_file(path), where), where)


def data_timeline(location: Location) -> Timeline:
    """The data table's timeline as it is now."""
    return Timeline(location, current_config(location))


def maintained_partitions(indexes: Sequence[IndexRecords] = ()) -> frozenset[str]:
    """The metadata table partitions a write keeps current."""
    return frozenset({FILES}).union(*(index.partitions for index in indexes))


def metadata_sync(
    location: Location,
    version: int,
    metadata_partitions: Sequence[str],
    indexes: Sequence[IndexRecords] = (),
    services: MetadataServicesSettings | None = None,
) -> MetadataSync | None:
    """What keeps the metadata table current when the table has one
    (``metadata_partitions``: its ``hoodie.table.metadata.partitions``); ``None`` when
    it has none. A metadata table it cannot keep current refuses the write
    (``prepare_metadata_table`` drops or deletes what the write options disable,
    before this)."""
    if not metadata_partitions:
        return None
    stale = sorted(set(metadata_partitions) - maintained_partitions(indexes))
    if version < 8 or FILES not in metadata_partitions or stale:
        what = ", ".join(stale) if stale and version >= 8 else ",".join(metadata_partitions)
        raise BadInputError(
            f"{location.uri}: hudi_sync cannot keep the metadata table current "
            f"(partitions: {what}); disable them with Hudi's options, e.g. "
            f"{cfg.METADATA_ENABLE.key}=false"
        )
    return MetadataSync(location, version, HudiRecordCodec(version), indexes, services)


# The listener for a table with these raw properties and metadata partitions (None: it
# has no metadata table); refuses, as ``metadata_sync`` does, what it cannot keep current.
SyncFactory = Callable[[Mapping[str, str], tuple[str, ...]], InstantListener | None]


class CurrentMetadataSync(InstantListener):
    """The metadata table's listener for the table as it is when each instant completes.

    Another writer may create (or delete) the metadata table while a write is in
    flight: Hudi 1.x initialises it then, leaving the files of pending instants out of
    its listing, and each writer builds its metadata writer at completion from the
    table's properties as they are then, so the pending write still records its
    files. Here every completion (which happens under the table lock, as creation and
    deletion do) reads ``hoodie.table.metadata.partitions`` again and follows it.

    A partition Hudi's asynchronous indexer is building
    (``hoodie.table.metadata.partitions.inflight``) refuses commits and cleans, when
    the write starts and again when it completes: Hudi's writers log their updates to
    it, and the indexer's catch-up skips every instant with a metadata deltacommit, so
    a deltacommit without them would leave the finished index without the write.
    Rollbacks go on: they only take back a deltacommit.
    """

    def __init__(
        self,
        location: Location,
        props: Mapping[str, str],
        partitions: Sequence[str],
        build: SyncFactory,
    ) -> None:
        self.location = location
        self.build = build
        refuse_partitions_being_built(location.uri, cfg.METADATA_PARTITIONS_INFLIGHT.read(props))
        self.partitions = tuple(partitions)
        self.sync = build(props, self.partitions)  # refuses the write up front

    def current(self, updates: bool = True) -> InstantListener | None:
        """The listener for the metadata partitions the table lists now; ``updates``:
        for an instant that adds records (refused while a partition is being built)."""
        config = current_config(self.location)
        if updates:
            inflight = cfg.METADATA_PARTITIONS_INFLIGHT.read(config.raw)
            refuse_partitions_being_built(self.location.uri, inflight)
        if config.metadata_partitions != self.partitions:
            self.sync = self.build(config.raw, config.metadata_partitions)
            self.partitions = config.metadata_partitions
        return self.sync

    def before_commit(self, instant: str, action: str, commit: CommitRecord) -> str | None:
        sync = self.current()
        return None if sync is None else sync.before_commit(instant, action, commit)

    def before_clean(
        self, instant: str, deleted: Mapping[str, Sequence[str]], dropped: Sequence[str] = ()
    ) -> str | None:
        sync = self.current()
        return None if sync is None else sync.before_clean(instant, deleted, dropped)

    def before_rollback(self, rolled_back: str, instant: str) -> str | None:
        sync = self.current(updates=False)
        return None if sync is None else sync.before_rollback(rolled_back, instant)


def timeline_writer(
    location: Location,
    folder: str,
    version: int,
    props: Mapping[str, str],
    metadata_partitions: Sequence[str],
    build: SyncFactory,
) -> TimelineWriter:
    """The data timeline's writer, keeping the metadata table current as the table
    has it at each completion (``CurrentMetadataSync``)."""
    listener = CurrentMetadataSync(location, props, metadata_partitions, build)
    return TimelineWriter(location, folder, version, listener)
