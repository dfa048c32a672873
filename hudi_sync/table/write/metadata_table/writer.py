"""The metadata table's side of a data write (Hudi 1.x, table versions 8 and 9).

For every data instant that completes (commit, deltacommit, replacecommit, a
compaction's commit, clean) the metadata table (a Merge-on-Read table at
``.hoodie/metadata``) takes a deltacommit with the SAME instant time, completed before
the data instant completes:

1. ``<t>.deltacommit.requested`` (empty), ``<t>.deltacommit.inflight`` (commit metadata
   without stats) on the metadata table's timeline;
2. per file group it updates (``files-0000-0`` for the ``files`` partition), one new log
   file named after the deltacommit, ``.<fileId>_<t>.log.1_<write token>``, holding one
   HFILE_DATA block (the records as an HFile, keys sorted) and, when keys leave the
   partition (``record_index`` deletes), then a delete block of them, as Hudi's append
   handle writes records of an ``EmptyHoodieRecordPayload``;
3. ``<t>_<completion>.deltacommit`` with one delta write stat per log file.

Readers take metadata records only of instants completed on the DATA timeline, so a
crash after step 3 but before the data instant completes hides both. Rolling the failed
data instant back rolls back the metadata table's deltacommit of the same time too, with
a rollback instant of the data rollback's time: the log files go, then the instant.
Re-applying an instant the metadata table already has rolls the old attempt back first.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hudi_sync.storage import Location, contained_file
from hudi_sync.table.records.logfile import BlockType, HeaderKey, encode_block
from hudi_sync.table.timeline.commit_metadata import WriteStat
from hudi_sync.table.timeline.instant import Action, parse_instant_file_name
from hudi_sync.table.write.log_writer import NATURAL_ORDER, encode_delete_block, log_file_name
from hudi_sync.table.write.timeline import CommitRecord, TimelineWriter

METADATA_FOLDER = ".hoodie/metadata"
FILES_PARTITION = "files"
FILES_FILE_GROUP = "files-0000-0"
MDT_OPERATION = "UPSERT_PREPPED"  # the operation Hudi records on metadata deltacommits

# (record key bytes, value bytes) sorted by key -> the HFile bytes of one HFILE_DATA
# block; the HFile writer (``hfile.write_hfile``) with the file info Hudi writes there.
HFileEncoder = Callable[[Sequence[tuple[bytes, bytes]]], bytes]


@dataclass(frozen=True)
class FileGroupRecords:
    """The records one deltacommit appends to one file group of one MDT partition,
    already encoded (key, value), in any order; ``deleted_keys``: keys it deletes."""

    partition: str  # MDT partition, e.g. ``files``
    file_id: str  # e.g. ``files-0000-0``
    entries: Sequence[tuple[bytes, bytes]]
    deleted_keys: Sequence[str] = ()


class MetadataTableWriter:
    """Writes deltacommits and rollbacks on the metadata table of the data table at
    ``location`` (a version 8+ table)."""

    def __init__(
        self, location: Location, version: int, schema: str, encode_hfile: HFileEncoder
    ) -> None:
        self.location = location
        self.base = location.join(METADATA_FOLDER)
        self.schema = schema  # the HoodieMetadataRecord schema (JSON) blocks carry
        self.encode_hfile = encode_hfile
        self.timeline = TimelineWriter(
            location, location.join(METADATA_FOLDER, ".hoodie", "timeline"), version
        )

    # -- deltacommits ------------------------------------------------------------------
    def deltacommit(self, instant: str, groups: Sequence[FileGroupRecords]) -> None:
        """The metadata table's deltacommit ``instant``: requested, inflight, one log
        file per file group, completed."""
        if self._instant_files(instant):
            self.roll_back(instant, self.timeline.new_instant_time())
        self.timeline.request(instant, Action.DELTA_COMMIT, MDT_OPERATION)
        self.timeline.mark_inflight(instant, Action.DELTA_COMMIT, MDT_OPERATION)
        stats = [self._append(instant, number, group) for number, group in enumerate(groups)]
        commit = CommitRecord(MDT_OPERATION, self.schema, stats)
        self.timeline.complete(instant, Action.DELTA_COMMIT, commit)

    def _append(self, instant: str, number: int, group: FileGroupRecords) -> WriteStat:
        entries = sorted(group.entries)
        header: dict[int, str] = {HeaderKey.SCHEMA: self.schema, HeaderKey.INSTANT_TIME: instant}
        block = b""
        if entries or not group.deleted_keys:
            block = encode_block(BlockType.HFILE_DATA, header, self.encode_hfile(entries))
        if group.deleted_keys:
            # Hudi's DeleteRecord of an EmptyHoodieRecordPayload: the MDT partition as
            # partition path, the payload's default ordering value 0.
            deletes = [(key, group.partition, NATURAL_ORDER) for key in sorted(group.deleted_keys)]
            block += encode_delete_block(deletes, json.loads(self.schema), instant)
        name = log_file_name(group.file_id, instant, 1, f"{number}-0-0")
        self.location.write_file(self._path(group.partition, name), block)
        size = len(block)
        return WriteStat(
            file_id=group.file_id,
            path=f"{group.partition}/{name}",
            partition_path=group.partition,
            prev_commit=instant,
            num_writes=len(entries) + len(group.deleted_keys),
            num_updates=len(entries),
            num_deletes=len(group.deleted_keys),
            total_write_bytes=size,
            file_size=size,
            base_file="",
            log_files=(name,),
            log_version=1,
        )

    # -- rollback ----------------------------------------------------------------------
    def roll_back(self, instant: str, rollback_instant: str) -> bool:
        """Roll back the metadata table's deltacommit ``instant`` (completed or not), as
        the rollback ``rollback_instant``; ``False`` when it has none."""
        if not self._instant_files(instant):
            return False
        started = time.time()
        deleted: dict[str, list[str]] = {}
        marker = f"_{instant}.log."
        for partition in self.partitions():
            for name in self.location.names(f"{self.base}/{partition}"):
                if name.startswith(".") and marker in name:
                    self.location.remove(self._path(partition, name))
                    deleted.setdefault(partition, []).append(f"{partition}/{name}")
        self.timeline.rollback(
            instant, Action.DELTA_COMMIT, deleted, started, instant=rollback_instant
        )
        self._remove_instant(instant)
        return True

    def _path(self, partition: str, name: str) -> str:
        """The file ``name`` in the metadata table's ``partition``: partition names come
        from storage (hoodie.properties, the index definitions), so each must be one
        folder of the metadata table and the name one file in it, else a
        ``CorruptTableError`` naming the metadata table."""
        source = self.location.uri_of(METADATA_FOLDER)
        folder = contained_file("", partition, source)
        return self.location.file_inside(f"{METADATA_FOLDER}/{folder}", name, source)

    def _instant_files(self, instant: str) -> list[str]:
        found = []
        for name in self.location.names(self.timeline.folder):
            parsed = parse_instant_file_name(name)
            if (
                parsed is not None
                and parsed.requested_time == instant
                and parsed.action == Action.DELTA_COMMIT
            ):
                found.append(name)
        return found

    def _remove_instant(self, instant: str) -> None:
        """The instant's files, completed first: a crash midway leaves a pending one."""
        names = self._instant_files(instant)
        completed = [n for n in names if (p := parse_instant_file_name(n)) and p.is_completed]
        for name in completed + [n for n in names if n not in completed]:
            self.location.remove(f"{self.timeline.folder}/{name}")

    def partitions(self) -> list[str]:
        """The metadata table's partition folders."""
        return sorted(
            name
            for name in self.location.names(self.base)
            if not name.startswith(".") and self.location.fs.isdir(f"{self.base}/{name}")
        )


def latest_compaction(location: Location) -> str | None:
    """The metadata table's latest completed compaction (its ``commit``), if any."""
    folder = location.join(METADATA_FOLDER, ".hoodie", "timeline")
    done = [
        parsed.requested_time
        for name in location.names(folder)
        if (parsed := parse_instant_file_name(name)) is not None
        and parsed.is_completed
        and parsed.action == Action.COMMIT
    ]
    return max(done, default=None)
