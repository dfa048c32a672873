"""Creating a metadata table (MDT) with its ``files`` partition, as Hudi 1.x initialises
one (``HoodieBackedTableMetadataWriter.initializeFromFilesystem``).

On a new table or an existing one without an MDT, when ``hoodie.metadata.enable=true``
is given (Hudi's default is true; hudi_sync creates one only when asked, see the
writer's docs):

1. a leftover ``.hoodie/metadata`` without ``files`` in the data table's
   ``hoodie.table.metadata.partitions`` (a crashed initialisation) is deleted;
2. the MDT's ``hoodie.properties`` (a Merge-on-Read table named ``<table>_metadata``,
   HFILE base files, key field ``key``, meta fields off, the data table's version);
3. the ``files`` partition's one file group ``files-0000-0``: its partition metafile
   (created at ``00000000000000000``), an empty log file holding an empty delete block
   (so the group exists before any record), then the base HFile of a bulk insert at the
   initialisation instant ``00000000000000000`` (plus milliseconds until unused):
   ``__all_partitions__`` and one record per data partition listing its files, from
   a storage listing that leaves out files of pending or later instants;
4. that instant as a deltacommit (requested and inflight empty, completed with the base
   file's write stat, ``BULK_INSERT_PREPPED``);
5. last, ``hoodie.table.metadata.partitions=files`` on the data table: from then on
   readers (hudi-rs too) list through the MDT and writers keep it current.

Writes in flight do not stop it (Hudi 1.x initialises a version 8+ table's MDT then
too; only its version 6 writer waits for them): their files are left out of the
listing, and each records them in its own deltacommit when it completes, since a
writer reads the metadata partitions again at completion (``sync.CurrentMetadataSync``).
"""

from __future__ import annotations

import json
import re

from hudi_sync import config as cfg
from hudi_sync.errors import CorruptTableError
from hudi_sync.storage import Location
from hudi_sync.table.config.properties import TableConfig, table_checksum
from hudi_sync.table.files.filenames import base_file_parts
from hudi_sync.table.files.listing import StorageListing
from hudi_sync.table.metadata_table.reader import METADATA_FOLDER
from hudi_sync.table.metadata_table.records import metadata_schema
from hudi_sync.table.records.logfile import BlockType, HeaderKey, encode_block
from hudi_sync.table.timeline.active import Timeline
from hudi_sync.table.timeline.commit_metadata import WriteStat
from hudi_sync.table.timeline.instant import Action, comparable_instant
from hudi_sync.table.write.create import java_properties_text, partition_metadata_text
from hudi_sync.table.write.metadata_table.codec import files_metadata_record
from hudi_sync.table.write.metadata_table.compaction import base_hfile
from hudi_sync.table.write.metadata_table.files_records import added_files_records
from hudi_sync.table.write.metadata_table.partitions import read_properties, write_properties
from hudi_sync.table.write.metadata_table.writer import FILES_FILE_GROUP, FILES_PARTITION
from hudi_sync.table.write.timeline import CommitRecord, TimelineWriter

INIT_INSTANT = "00000000000000000"
INIT_OPERATION = "BULK_INSERT_PREPPED"
# An empty delete block's content: format version 3, then the Avro array of no keys.
EMPTY_DELETE_CONTENT = b"\x00\x00\x00\x03\x00\x00\x00\x01\x00"
PAYLOAD_CLASS = "org.apache.hudi.metadata.HoodieMetadataPayload"
_LOG_NAME = re.compile(r"^\.(?P<file_id>.+)_(?P<instant>\d{14,17})\.log\.\d+")


def metadata_table_properties(config: TableConfig) -> dict[str, str]:
    """The MDT's ``hoodie.properties`` (the fixtures' keys and values)."""
    name = f"{config.name}_metadata"
    return {
        cfg.PAYLOAD_CLASS.key: PAYLOAD_CLASS,
        cfg.INITIAL_VERSION.key: str(config.version),
        cfg.KEY_GENERATOR_TYPE.key: "HOODIE_TABLE_METADATA",
        cfg.TABLE_TYPE.key: "MERGE_ON_READ",
        cfg.ARCHIVE_FOLDER.key: "history",
        cfg.TIMELINE_LAYOUT.key: "2",
        cfg.TIMELINE_HISTORY_PATH.key: "history",
        cfg.CHECKSUM.key: str(table_checksum("", name)),
        cfg.DROP_PARTITION_COLUMNS.key: "false",
        cfg.MERGE_STRATEGY_ID.key: "00000000-0000-0000-0000-000000000000",
        cfg.RECORD_KEY_FIELDS.key: "key",
        cfg.TABLE_NAME.key: name,
        cfg.TIMELINE_PATH.key: "timeline",
        cfg.POPULATE_META_FIELDS.key: "false",
        cfg.BASE_FILE_FORMAT.key: "HFILE",
        cfg.RECORD_MERGE_MODE.key: "CUSTOM",
        cfg.TABLE_VERSION_PROPERTY.key: str(config.version),
    }


def listed_data_files(location: Location, config: TableConfig) -> dict[str, dict[str, int]]:
    """``partition -> file name -> size`` of the data files of completed instants up
    to the latest one (Hudi's ``DirectoryInfo``: pending and later instants' files out)."""
    timeline = Timeline(location, config)
    completed = [i.requested_time for i in timeline.instants if i.is_completed]
    if not completed:
        return {}
    latest = comparable_instant(max(completed, key=comparable_instant))
    pending = {i.requested_time for i in timeline.pending}
    listed = StorageListing(location, config).list_files()
    found: dict[str, dict[str, int]] = {}
    for partition, names in listed.names.items():
        sizes = listed.sizes.get(partition, {})
        files: dict[str, int] = {}
        for name in names:
            instant = _instant_of(name)
            if instant is None or instant in pending:
                continue
            if comparable_instant(instant) > latest:
                continue
            size = sizes.get(name)
            if size is None:
                path = location.join(partition, name) if partition else location.join(name)
                size = int(location.fs.size(path))
            files[name] = size
        found[partition] = files
    return found


def _instant_of(name: str) -> str | None:
    """The instant of a data file name (base or log file), ``None`` for other files."""
    if name.startswith(".hoodie_partition_metadata"):
        return None
    if name.startswith("."):
        match = _LOG_NAME.match(name)  # Merge-on-Read and CDC logs
        return match["instant"] if match else None
    try:
        return base_file_parts(name)[2]
    except CorruptTableError:
        return None


def create_metadata_table(location: Location, config: TableConfig) -> None:
    """Initialise the MDT of the (version 8+) table at ``location`` (module docstring).
    The caller holds the table lock."""
    folder = location.join(METADATA_FOLDER)
    if location.names(folder):
        location.remove_tree(folder)
    listing = listed_data_files(location, config)
    hoodie = location.join(METADATA_FOLDER, ".hoodie")
    timeline_folder = f"{hoodie}/timeline"
    for sub in (timeline_folder, f"{timeline_folder}/history", f"{hoodie}/.aux", f"{hoodie}/.temp"):
        location.ensure_folder(sub)
    properties = metadata_table_properties(config)
    location.write_file(
        f"{hoodie}/hoodie.properties", java_properties_text(properties).encode(), exclusive=True
    )
    partition = location.join(METADATA_FOLDER, FILES_PARTITION)
    location.ensure_folder(partition)
    location.write_file(
        f"{partition}/.hoodie_partition_metadata",
        partition_metadata_text(INIT_INSTANT, 1).encode(),
    )
    instant = INIT_INSTANT
    writer = TimelineWriter(location, timeline_folder, config.version)
    writer.request(instant, Action.DELTA_COMMIT, INIT_OPERATION)
    location.write_file(f"{timeline_folder}/{instant}.{Action.DELTA_COMMIT}.inflight", b"")
    empty_log = encode_block(
        BlockType.DELETE, {HeaderKey.INSTANT_TIME: instant}, EMPTY_DELETE_CONTENT
    )
    location.write_file(f"{partition}/.{FILES_FILE_GROUP}_{instant}.log.1_0-0-0", empty_log)
    schema = json.dumps(metadata_schema(config.version), separators=(",", ":"))
    records = sorted(
        (files_metadata_record(r) for r in added_files_records(listing)), key=lambda r: r.key
    )
    data = base_hfile(records, config.version, schema)
    name = f"{FILES_FILE_GROUP}_0-0-0_{instant}.hfile"
    location.write_file(f"{partition}/{name}", data)
    stat = WriteStat(
        file_id=FILES_FILE_GROUP,
        path=f"{FILES_PARTITION}/{name}",
        partition_path=FILES_PARTITION,
        prev_commit=None,
        num_writes=len(records),
        num_inserts=len(records),
        total_write_bytes=len(data),
        file_size=len(data),
    )
    commit_schema = json.dumps(
        metadata_schema(config.version, meta_fields=False), separators=(",", ":")
    )
    writer.complete(
        instant, Action.DELTA_COMMIT, CommitRecord(INIT_OPERATION, commit_schema, [stat])
    )
    props = read_properties(location)
    props[cfg.METADATA_PARTITIONS.key] = FILES_PARTITION
    write_properties(location, props)
