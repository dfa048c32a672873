"""Reading Hudi's metadata table (MDT): one partition's merged records.

The MDT is a Merge-on-Read table at ``<base>/.hoodie/metadata`` whose partitions
(``files``, ``column_stats``...) hold file groups of HFile base files and log files of
HFILE_DATA (and delete) blocks. Its file slices come from our own file-system view
over the MDT (opened with the single partition field ``partition``, as hudi-rs does).

Hudi writes an MDT deltacommit with the data instant's time *before* the data instant
completes, so a reader applies only the log blocks of valid instants
(``HoodieTableMetadataUtil.getValidInstantTimestamps``, Hudi 1.x):
- requested times of the data table's completed active instants;
- completed MDT deltacommits whose time is not pending on the data timeline (this also
  covers data instants already archived, and async-indexer deltacommits);
- instants undone by completed data rollbacks/restores newer than the earliest valid
  instant (their MDT blocks are cancelled by the MDT's own rollback);
- the MDT's own completed rollbacks and restores;
- completed MDT deltacommits whose time starts with ``00000000000000`` (the
  initialisation of each MDT partition: ``00000000000000000``, ``...001``...).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from functools import cached_property
from typing import Any, Protocol

from hudi_sync import config as cfg
from hudi_sync.errors import CorruptTableError, UnsupportedTableError
from hudi_sync.storage import Location, reporting_storage_failures
from hudi_sync.table.config.properties import TableConfig, decode_properties
from hudi_sync.table.files.fs_view import FileSlice, FileSystemView
from hudi_sync.table.metadata_table.records import (
    SCHEMA_FILE_INFO_KEY,
    MetadataRecord,
    decode_records,
    live_records,
    merge_into,
    parse_writer_schema,
)
from hudi_sync.table.records.log_records import applied_blocks, delete_keys
from hudi_sync.table.records.logfile import BlockType, HeaderKey, LogBlock
from hudi_sync.table.timeline.active import Timeline
from hudi_sync.table.timeline.commit_metadata import decode_instant_record
from hudi_sync.table.timeline.instant import Action, Instant, comparable_instant


class OpenedTable(Protocol):
    """What the reader needs of an opened data table (a ``HudiTable``, which lists
    through this reader: naming the class here would tie the two modules in a circle)."""

    @property
    def location(self) -> Location: ...

    @property
    def timeline(self) -> Timeline: ...


METADATA_FOLDER = ".hoodie/metadata"
SOLO_COMMIT_TIMESTAMP = "00000000000000"  # MDT initialisation instants start with it
PARTITION_FIELD = "partition"  # hudi-rs opens the MDT with this partition field


def metadata_table_location(location: Location) -> Location:
    """The MDT's location below a data table's."""
    return dataclasses.replace(
        location,
        path=location.join(METADATA_FOLDER),
        uri=location.uri_of(METADATA_FOLDER),
    )


def has_metadata_table(location: Location) -> bool:
    """Whether the data table keeps an MDT folder (with its ``hoodie.properties``)."""
    with reporting_storage_failures(location):
        return bool(
            location.fs.exists(location.join(METADATA_FOLDER, ".hoodie", cfg.PROPERTIES_FILE))
        )


def valid_instants(data_timeline: Timeline, mdt_timeline: Timeline) -> frozenset[str]:
    """The instants whose MDT log blocks count (Hudi 1.x's rule, module docstring)."""
    data = data_timeline.instants
    pending = {i.requested_time for i in data if not i.is_completed}
    valid = {i.requested_time for i in data if i.is_completed}
    mdt_completed = [i for i in mdt_timeline.instants if i.is_completed]
    valid.update(
        i.requested_time
        for i in mdt_completed
        if i.action == Action.DELTA_COMMIT and i.requested_time not in pending
    )
    earliest = comparable_instant(
        min(valid, key=comparable_instant) if valid else SOLO_COMMIT_TIMESTAMP
    )
    for instant in data:
        if not instant.is_completed or comparable_instant(instant.requested_time) <= earliest:
            continue
        if instant.action == Action.ROLLBACK:
            valid.update(data_timeline.rollback_metadata(instant).rolled_back_instants)
        elif instant.action == Action.RESTORE:
            valid.update(_restored_instants(data_timeline, instant))
    valid.update(
        i.requested_time for i in mdt_completed if i.action in (Action.ROLLBACK, Action.RESTORE)
    )
    valid.update(
        i.requested_time
        for i in mdt_completed
        if i.action == Action.DELTA_COMMIT and i.requested_time.startswith(SOLO_COMMIT_TIMESTAMP)
    )
    return frozenset(valid)


def _restored_instants(timeline: Timeline, instant: Instant) -> list[str]:
    data = timeline.read_bytes(instant)
    if not data:
        return []
    where = f"{timeline.location.uri}: restore instant {instant.requested_time}"
    record = decode_instant_record(data, where)
    undone: list[str] = []
    for rollbacks in (record.get("hoodieRestoreMetadata") or {}).values():
        for rollback in rollbacks or ():
            undone.extend(rollback.get("commitsRollback") or ())
    return undone


def _mdt_config(location: Location) -> TableConfig:
    where = f"{location.uri}/.hoodie/hoodie.properties"
    try:
        with reporting_storage_failures(location):
            data = location.fs.cat_file(location.join(".hoodie", cfg.PROPERTIES_FILE))
    except FileNotFoundError:
        raise CorruptTableError(
            f"{location.uri}: metadata table has no hoodie.properties"
        ) from None
    config = TableConfig.parse(decode_properties(bytes(data), where), where)
    if config.base_file_format.upper() != "HFILE":
        raise UnsupportedTableError(
            f"{where}: metadata table base file format {config.base_file_format} (HFILE expected)"
        )
    return dataclasses.replace(config, partition_fields=(PARTITION_FIELD,))


class MetadataTableReader:
    """Reads the MDT of a data table: each partition's records merged as Hudi merges
    them (HoodieMetadataPayload), counting only the log blocks of valid instants."""

    def __init__(self, data_location: Location, data_timeline: Timeline) -> None:
        """``data_location``, ``data_timeline``: the data table's (whose completed
        instants decide which MDT log blocks count)."""
        self.data_timeline = data_timeline
        self.location = metadata_table_location(data_location)
        self.config = _mdt_config(self.location)
        self.timeline = Timeline(self.location, self.config)

    @classmethod
    def of(cls, table: OpenedTable) -> MetadataTableReader:
        return cls(table.location, table.timeline)

    @cached_property
    def valid_instants(self) -> frozenset[str]:
        return valid_instants(self.data_timeline, self.timeline)

    def partition_slices(self, partition: str) -> list[FileSlice]:
        """The latest file slices of one MDT partition (its file groups)."""
        view = FileSystemView(self.location, self.config, self.timeline, partitions=[partition])
        return [s for s in view.slices_as_of(None) if s.partition_path == partition]

    def read_partition(self, partition: str, as_of: str | None = None) -> dict[str, MetadataRecord]:
        """``key -> record`` of one MDT partition, merged; deleted records left out.
        ``as_of``: only log blocks of instants at or before it."""
        merged: dict[str, MetadataRecord] = {}
        for file_slice in self.partition_slices(partition):
            merged.update(self._read_slice(file_slice, as_of))
        return live_records(merged)

    def read_slice(self, file_slice: FileSlice) -> dict[str, MetadataRecord]:
        """One file slice's records merged, deleted ones included (compaction drops them)."""
        return self._read_slice(file_slice, None)

    def _read_slice(self, file_slice: FileSlice, as_of: str | None) -> dict[str, MetadataRecord]:
        merged: dict[str, MetadataRecord] = {}
        if file_slice.base_file is not None:
            where = self.location.uri_of(file_slice.relative_path(file_slice.base_file.name))
            content = _read_hfile(self._read(file_slice.base_file.name, file_slice), where)
            merge_into(merged, decode_records(content, where))
        logs = [
            (
                self._read(log.name, file_slice),
                self.location.uri_of(file_slice.relative_path(log.name)),
            )
            for log in file_slice.log_files
        ]
        for block, where in applied_blocks(logs, self._counts(as_of)).blocks:
            if block.block_type == BlockType.HFILE_DATA:
                merge_into(merged, _block_records(block, where))
            elif block.block_type == BlockType.DELETE:
                for key, _, _ in delete_keys(block.content, where):
                    merged.pop(key, None)
            else:
                raise UnsupportedTableError(
                    f"{where}: metadata table log block of type {block.block_type} "
                    "(HFILE_DATA or DELETE expected)"
                )
        return merged

    def _counts(self, as_of: str | None) -> Callable[[str], bool]:
        valid = self.valid_instants
        if as_of is None:
            return valid.__contains__
        bound = comparable_instant(as_of)
        return lambda instant: instant in valid and comparable_instant(instant) <= bound

    def _read(self, name: str, file_slice: FileSlice) -> bytes:
        path = self.location.join(file_slice.relative_path(name))
        with reporting_storage_failures(self.location):
            return bytes(self.location.fs.cat_file(path))


def _read_hfile(data: bytes, where: str) -> Any:
    from hudi_sync.table.metadata_table.hfile_reader import read_hfile

    return read_hfile(data, where)


def _block_records(block: LogBlock, where: str) -> Iterable[MetadataRecord]:
    """An HFILE_DATA block's content is a whole HFile; its writer schema is in the
    block's SCHEMA header (and, when Hudi put it there, the HFile's file info)."""
    content = _read_hfile(block.content, where)
    schema_text = block.header.get(HeaderKey.SCHEMA)
    if SCHEMA_FILE_INFO_KEY not in content.file_info and schema_text is not None:
        parse_writer_schema(schema_text, where)  # fail early on a bad header schema
        content = dataclasses.replace(
            content,
            file_info={**content.file_info, SCHEMA_FILE_INFO_KEY: schema_text.encode("utf-8")},
        )
    return decode_records(content, where)
