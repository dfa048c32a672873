"""Keeping ``record_index`` and ``secondary_index_*`` current on every data commit.

The rules are Hudi 1.x's (``HoodieTableMetadataUtil.convertMetadataToRecordIndexRecords``,
``BaseFileRecordParsingUtils.generateRLIMetadataHoodieRecordsForBaseFile``,
``HoodieBackedTableMetadataWriter.getRecordIndexAdditionalUpserts``,
``SecondaryIndexRecordGenerationUtils.convertWriteStatsToSecondaryIndexRecords``):

- per file group a commit writes, the keys of its new file slice are diffed against the
  keys of its previous slice: a key new to the group gets a location record (the group
  and the commit's instant), a key gone from it is deleted from ``record_index``; a key
  updated in place changes nothing;
- the keys of file groups an ``insert_overwrite`` (or ``delete_partition``) replaces
  leave the index, unless the commit placed them elsewhere;
- a key both deleted from one group and placed in another keeps the new location (Hudi's
  ``reduceByKeys``); a compaction places no key anew and writes no index records;
- ``record_index`` deletes are ``EmptyHoodieRecordPayload`` records, which Hudi's append
  handle writes as a delete block; secondary index entries that go are records with
  ``isDeleted`` (tombstones), the new (secondary key, record key) pairs plain records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import pyarrow as pa

from hudi_sync.errors import BadInputError
from hudi_sync.storage import Location
from hudi_sync.table.files.filenames import base_file_parts, parse_base_file, parse_log_file
from hudi_sync.table.files.fs_view import FileSlice
from hudi_sync.table.metadata_table import index_keys
from hudi_sync.table.metadata_table.records import MetadataRecord, MetadataType
from hudi_sync.table.read.slice_reader import read_file_slice
from hudi_sync.table.read.snapshot import slice_merge_rules, snapshot_schema
from hudi_sync.table.table import HudiTable
from hudi_sync.table.write.metadata_table import indexes
from hudi_sync.table.write.metadata_table.codec import HudiRecordCodec
from hudi_sync.table.write.metadata_table.partitions import SECONDARY_PREFIX
from hudi_sync.table.write.metadata_table.writer import METADATA_FOLDER, FileGroupRecords
from hudi_sync.table.write.timeline import CommitRecord

RECORD_INDEX = "record_index"

# A file group's rows: record key -> its secondary index keys (one per index, in order).
KeyedRows = dict[str, tuple[str | None, ...]]  # None: a row an index leaves out


def record_index_partitions(listed: Sequence[str]) -> frozenset[str]:
    """The partitions of ``listed`` this module keeps current."""
    return frozenset(p for p in listed if p == RECORD_INDEX or p.startswith(SECONDARY_PREFIX))


def record_indexes(
    location: Location, version: int, props: Mapping[str, str], metadata_partitions: Sequence[str]
) -> list[RecordIndexRecords]:
    """The provider for a table whose metadata table has these partitions (none without)."""
    partitions = record_index_partitions(metadata_partitions)
    if version < 8 or not partitions:
        return []
    return [RecordIndexRecords(location, version, props, partitions)]


class RecordIndexRecords:
    """``IndexRecords`` of ``record_index`` and the secondary indexes of one table."""

    def __init__(
        self,
        location: Location,
        version: int,
        props: Mapping[str, str],
        partitions: frozenset[str],
    ) -> None:
        self.location = location
        self.codec = HudiRecordCodec(version)
        # The zone the epoch millis of a location read its instant in: the table's
        # timeline zone, the one our writer's instants are written in (as Hudi's).
        self.zone = indexes.timeline_zone(props)
        self._partitions = partitions
        if RECORD_INDEX in partitions:
            indexes.refuse_partitioned_record_index(location, props)
        self.secondary = self._secondary_indexes(props, partitions)

    @property
    def partitions(self) -> frozenset[str]:
        return self._partitions

    def _secondary_indexes(
        self, props: Mapping[str, str], partitions: frozenset[str]
    ) -> tuple[indexes.SecondaryIndex, ...]:
        wanted = sorted(p for p in partitions if p.startswith(SECONDARY_PREFIX))
        if not wanted:
            return ()
        where = self.location.uri_of(indexes.index_definitions_path(props))
        definitions = indexes.read_index_definitions(self.location, props)
        if definitions is None:
            raise BadInputError(f"{where}: missing; it defines {', '.join(wanted)}")
        defined = {i.name: i for i in definitions.secondary_indexes}
        missing = [p for p in wanted if p not in defined]
        if missing:
            raise BadInputError(f"{where}: no definition of {', '.join(missing)}")
        return tuple(defined[p] for p in wanted)

    # -- IndexRecords ------------------------------------------------------------------
    def for_clean(
        self, instant: str, deleted: Mapping[str, Sequence[str]]
    ) -> list[FileGroupRecords]:
        """A clean deletes only files of older slices: no key moves."""
        return []

    def for_commit(self, instant: str, action: str, commit: CommitRecord) -> list[FileGroupRecords]:
        if commit.compacted:  # Hudi: a compaction writes no record index records
            return []
        table = HudiTable.open(self.location.uri, self.location.storage_options)
        old_slices = {(s.partition_path, s.file_id): s for s in table.view.slices_as_of(None)}
        new_slices = self._new_slices(commit, old_slices)
        replaced = [
            (partition, file_id)
            for partition, ids in commit.replaced_file_ids.items()
            for file_id in ids
            if (partition, file_id) not in new_slices
        ]
        read = [old_slices[g] for g in [*new_slices, *replaced] if g in old_slices]
        every = [*read, *new_slices.values()]
        schema = snapshot_schema(table, every)
        rules = slice_merge_rules(table, every)

        def committed(written: str) -> bool:
            return written == instant or table.view.is_committed(written)

        def rows_of(file_slice: FileSlice) -> KeyedRows:
            rows = read_file_slice(self.location, file_slice, rules, committed, None, schema)
            return self._keyed(rows, file_slice)

        placed: dict[str, MetadataRecord] = {}
        removed: set[str] = set()
        # Per secondary index: its records by key (a tombstone, or a new pair, which wins:
        # a pair a commit moves between file groups stays, as Hudi's reduceByKeys keeps it).
        secondary: list[dict[str, MetadataRecord]] = [{} for _ in self.secondary]
        groups = [(g, new_slices.get(g)) for g in [*new_slices, *replaced]]
        for (partition, file_id), new_slice in groups:
            old_slice = old_slices.get((partition, file_id))
            old = rows_of(old_slice) if old_slice is not None else {}
            new = rows_of(new_slice) if new_slice is not None else {}
            fresh = [k for k in new if k not in old]
            placed.update(
                (r.key, r)
                for r in indexes.record_index_records(fresh, partition, file_id, instant, self.zone)
            )
            removed.update(k for k in old if k not in new)
            for position, records in enumerate(secondary):
                gone = {v[position] or "" for k, v in old.items() if new.get(k) != v} - {""}
                came = {v[position] or "" for k, v in new.items() if old.get(k) != v} - {""}
                for index_key in gone - came:
                    records.setdefault(index_key, _secondary(index_key, deleted=True))
                for index_key in came - gone:
                    records[index_key] = _secondary(index_key, deleted=False)
        deletes = sorted(removed - placed.keys())
        return self._groups(list(placed.values()), deletes, secondary)

    # -- reading the slices ------------------------------------------------------------
    def _new_slices(
        self, commit: CommitRecord, old_slices: Mapping[tuple[str, str], FileSlice]
    ) -> dict[tuple[str, str], FileSlice]:
        """Per file group the commit wrote, its slice once the commit completes."""
        found: dict[tuple[str, str], FileSlice] = {}
        for stat in commit.stats:
            if not stat.path:
                continue
            group = (stat.partition_path, stat.file_id)
            name = stat.path.rsplit("/", 1)[-1]
            log = parse_log_file(name, stat.file_size)
            if log is None:
                _, _, base_instant = base_file_parts(name)
                found[group] = FileSlice(
                    stat.partition_path, stat.file_id, base_instant, parse_base_file(name)
                )
                continue
            current = found.get(group) or old_slices.get(group)
            if current is None:
                current = FileSlice(stat.partition_path, stat.file_id, log.instant, None)
            if all(existing.name != name for existing in current.log_files):
                current = replace(current, log_files=(*current.log_files, log))
            found[group] = current
        return found

    def _keyed(self, rows: pa.Table, file_slice: FileSlice) -> KeyedRows:
        keys = rows.column(indexes.RECORD_KEY_FIELD).to_pylist()
        per_index = [indexes.secondary_index_keys(rows, index) for index in self.secondary]
        if any(k is None for k in keys):
            raise BadInputError(
                f"{self.location.uri}: file group {file_slice.file_id} has rows without "
                f"{indexes.RECORD_KEY_FIELD}"
            )
        return {key: tuple(column[n] for column in per_index) for n, key in enumerate(keys)}

    # -- the metadata table's file groups -----------------------------------------------
    def _groups(
        self,
        locations: list[MetadataRecord],
        deletes: list[str],
        secondary: Sequence[Mapping[str, MetadataRecord]],
    ) -> list[FileGroupRecords]:
        out: list[FileGroupRecords] = []
        if RECORD_INDEX in self._partitions:
            file_ids = self._file_groups(RECORD_INDEX)
            records: dict[str, list[MetadataRecord]] = {f: [] for f in file_ids}
            deleted: dict[str, list[str]] = {f: [] for f in file_ids}
            for record in locations:
                records[file_ids[index_keys.file_group_index(record.key, len(file_ids))]].append(
                    record
                )
            for key in deletes:
                deleted[file_ids[index_keys.file_group_index(key, len(file_ids))]].append(key)
            out += [
                FileGroupRecords(RECORD_INDEX, f, self.codec.encode(records[f]), deleted[f])
                for f in file_ids
                if records[f] or deleted[f]
            ]
        for index, records_of_index in zip(self.secondary, secondary, strict=True):
            file_ids = self._file_groups(index.name)
            by_group: dict[str, list[MetadataRecord]] = {f: [] for f in file_ids}
            for index_key, record in records_of_index.items():
                position = index_keys.secondary_file_group_index(
                    index_key, len(file_ids), index.version
                )
                by_group[file_ids[position]].append(record)
            out += [
                FileGroupRecords(index.name, f, self.codec.encode(by_group[f]))
                for f in file_ids
                if by_group[f]
            ]
        return out

    def _file_groups(self, partition: str) -> list[str]:
        """The partition's file group ids, sorted (a key's group is its hash modulo their
        count)."""
        folder = self.location.join(METADATA_FOLDER, partition)
        ids: set[str] = set()
        for name in self.location.names(folder):
            log = parse_log_file(name)
            if log is not None:
                ids.add(log.file_id)
            elif name.endswith(".hfile"):
                ids.add(base_file_parts(name)[0])
        if not ids:
            raise BadInputError(
                f"{self.location.uri_of(f'{METADATA_FOLDER}/{partition}')}: the metadata "
                "table partition has no file groups"
            )
        return sorted(ids)


def _secondary(index_key: str, deleted: bool) -> MetadataRecord:
    return MetadataRecord(index_key, MetadataType.SECONDARY_INDEX, secondary_index_deleted=deleted)
