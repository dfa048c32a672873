"""Instant metadata (commit, replace, clean, rollback) decoded into typed objects.

Table version 6 stores commit-like metadata as JSON and everything else as an Avro
object-container file; versions 8 and 9 store every instant as Avro. Both decode to
the same Python dicts (Avro records and JSON share field names), so one set of
constructors serves both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hudi_sync.errors import CorruptTableError
from hudi_sync.storage import contained_name, contained_partition, contained_relative
from hudi_sync.table.avro.bounded import load_json, read_container

NULL_COMMIT = "null"  # Hudi's prevCommit for a new file group
AVRO_MAGIC = b"Obj\x01"  # an Avro object-container file's first bytes


@dataclass(frozen=True)
class WriteStat:
    """What one write did to one file group."""

    file_id: str
    path: str
    partition_path: str
    prev_commit: str | None
    num_writes: int = 0
    num_inserts: int = 0
    num_updates: int = 0
    num_deletes: int = 0
    total_write_bytes: int = 0
    file_size: int = 0
    base_file: str | None = None
    log_files: tuple[str, ...] = ()
    cdc_stats: Mapping[str, int] = field(default_factory=dict)
    prev_base_file: str | None = None
    log_version: int | None = None  # a Merge-on-Read log append: the log file's version
    # A compaction's: what its log scan read (Hudi's compactor fills these).
    total_log_records: int = 0  # records of data blocks (delete blocks' keys not counted)
    total_log_blocks: int = 0
    total_rollback_blocks: int = 0
    total_log_files_compacted: int = 0
    total_log_size_compacted: int = 0
    total_updated_records_compacted: int = 0  # distinct keys among the log records

    @classmethod
    def from_record(cls, record: Mapping[str, Any], partition: str) -> WriteStat:
        prev = record.get("prevCommit")
        return cls(
            file_id=str(record.get("fileId") or ""),
            path=str(record.get("path") or ""),
            partition_path=str(
                record["partitionPath"] if record.get("partitionPath") is not None else partition
            ),
            prev_commit=None if prev in (None, NULL_COMMIT) else str(prev),
            num_writes=int(record.get("numWrites") or 0),
            num_inserts=int(record.get("numInserts") or 0),
            num_updates=int(record.get("numUpdateWrites") or 0),
            num_deletes=int(record.get("numDeletes") or 0),
            total_write_bytes=int(record.get("totalWriteBytes") or 0),
            file_size=int(record.get("fileSizeInBytes") or 0),
            base_file=record.get("baseFile") or None,
            log_files=tuple(record.get("logFiles") or ()),
            cdc_stats=dict(record.get("cdcStats") or {}),
            prev_base_file=record.get("prevBaseFile") or None,
            log_version=record.get("logVersion"),
            total_log_records=int(record.get("totalLogRecords") or 0),
            total_log_blocks=int(record.get("totalLogBlocks") or 0),
            total_rollback_blocks=int(record.get("totalRollbackBlocks") or 0),
            total_log_files_compacted=int(record.get("totalLogFilesCompacted") or 0),
            total_log_size_compacted=int(record.get("totalLogSizeCompacted") or 0),
            total_updated_records_compacted=int(record.get("totalUpdatedRecordsCompacted") or 0),
        )

    def to_record(self) -> dict[str, Any]:
        """Hudi's HoodieWriteStat fields: a base file's, plus a log append's
        (``HoodieDeltaWriteStat``: log version and offset, base file, log files)."""
        record: dict[str, Any] = {
            "fileId": self.file_id,
            "path": self.path,
            "prevCommit": self.prev_commit or NULL_COMMIT,
            "numWrites": self.num_writes,
            "numDeletes": self.num_deletes,
            "numUpdateWrites": self.num_updates,
            "numInserts": self.num_inserts,
            "totalWriteBytes": self.total_write_bytes,
            "totalWriteErrors": 0,
            "partitionPath": self.partition_path,
            "fileSizeInBytes": self.file_size,
            "cdcStats": dict(self.cdc_stats) or None,
            "prevBaseFile": self.prev_base_file,
            "numUpdates": self.num_updates,
            "totalLogRecords": self.total_log_records,
            "totalLogBlocks": self.total_log_blocks,
            "totalCorruptLogBlock": 0,
            "totalRollbackBlocks": self.total_rollback_blocks,
            "totalLogFilesCompacted": self.total_log_files_compacted,
            "totalLogSizeCompacted": self.total_log_size_compacted,
            "totalUpdatedRecordsCompacted": self.total_updated_records_compacted,
        }
        if self.log_version is not None:
            record.update(
                {
                    "logVersion": self.log_version,
                    "logOffset": 0,
                    "baseFile": self.base_file or "",
                    "logFiles": list(self.log_files),
                }
            )
        return record

    @property
    def file_name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class CommitMetadata:
    """Metadata of a commit, deltacommit or replacecommit (replace file ids empty otherwise)."""

    operation_type: str | None
    partition_to_write_stats: Mapping[str, tuple[WriteStat, ...]]
    extra_metadata: Mapping[str, str]
    compacted: bool = False
    partition_to_replace_file_ids: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def write_stats(self) -> list[WriteStat]:
        return [s for stats in self.partition_to_write_stats.values() for s in stats]

    @property
    def schema(self) -> str | None:
        schema = self.extra_metadata.get("schema")
        return schema or None

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> CommitMetadata:
        stats = {
            partition: tuple(WriteStat.from_record(s, partition) for s in (items or ()))
            for partition, items in (record.get("partitionToWriteStats") or {}).items()
        }
        replaced = {
            partition: tuple(ids or ())
            for partition, ids in (record.get("partitionToReplaceFileIds") or {}).items()
        }
        return cls(
            operation_type=record.get("operationType") or None,
            partition_to_write_stats=stats,
            extra_metadata=dict(record.get("extraMetadata") or {}),
            compacted=bool(record.get("compacted") or False),
            partition_to_replace_file_ids=replaced,
        )


EMPTY_COMMIT = CommitMetadata(None, {}, {})


def _deleted_files(record: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """``partition -> deleted file paths`` of clean and rollback metadata."""
    return {
        partition: tuple((meta or {}).get("successDeleteFiles") or ())
        for partition, meta in (record.get("partitionMetadata") or {}).items()
    }


@dataclass(frozen=True)
class CleanMetadata:
    """A completed clean: files before ``earliest_commit_to_retain`` may be gone."""

    earliest_commit_to_retain: str | None
    deleted_files: Mapping[str, tuple[str, ...]]

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> CleanMetadata:
        return cls(record.get("earliestCommitToRetain") or None, _deleted_files(record))


@dataclass(frozen=True)
class RollbackMetadata:
    """A completed rollback: which instants it undid and which files it deleted."""

    rolled_back_instants: tuple[str, ...]
    deleted_files: Mapping[str, tuple[str, ...]]

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> RollbackMetadata:
        return cls(tuple(record.get("commitsRollback") or ()), _deleted_files(record))


def _reason(exc: BaseException) -> str:
    """An exception's message on one line (the CLI prints errors as one line)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def decode_avro_record(data: bytes, where: str) -> dict[str, Any]:
    """The single record of an Avro object-container file (Hudi's Avro instant files)."""
    records = read_container(data, where, 2, "Avro instant file")
    if len(records) != 1 or not isinstance(records[0], dict):
        raise CorruptTableError(f"{where}: expected one Avro record, found {len(records)}")
    return records[0]


def decode_json_record(data: bytes, where: str) -> dict[str, Any]:
    record = load_json(data, where, "JSON instant file")
    if not isinstance(record, dict):
        raise CorruptTableError(f"{where}: JSON instant file is not an object")
    return record


def decode_instant_record(data: bytes, where: str) -> dict[str, Any]:
    """Decode an instant file whatever its serialization (sniffed by the Avro magic, else
    by the opening bracket of JSON)."""
    if data.startswith(AVRO_MAGIC):
        return decode_avro_record(data, where)
    if data.lstrip()[:1] in (b"{", b"["):
        return decode_json_record(data, where)
    raise CorruptTableError(
        f"{where}: corrupt instant file (neither an Avro container nor JSON: "
        f"starts with {data[:8]!r})"
    )


def parse_commit_metadata(data: bytes, where: str) -> CommitMetadata:
    """Commit-like metadata; an empty file is empty metadata, as in Hudi (an empty
    completed commit file is legal in both timeline layouts)."""
    if not data.strip():
        return EMPTY_COMMIT
    record = decode_instant_record(data, where)
    try:
        metadata = CommitMetadata.from_record(record)
    except (AttributeError, TypeError, ValueError, KeyError) as exc:
        raise CorruptTableError(
            f"{where}: commit metadata has an unexpected shape ({_reason(exc)})"
        ) from exc
    check_commit_paths(metadata, where)
    return metadata


def check_commit_paths(metadata: CommitMetadata, where: str) -> None:
    """Refuse commit metadata naming a file outside the table (``CorruptTableError``
    naming ``where``, the commit file): the change feed, the fold and the writers join
    these names to the table's base. Partitions and ``path``s (relative to the base) and
    the ``cdcStats`` keys stay below it; ``prevBaseFile``, ``baseFile`` and ``logFiles``
    are file names, one segment each."""
    for partition in (*metadata.partition_to_write_stats, *metadata.partition_to_replace_file_ids):
        contained_partition(partition, where)
    for stat in metadata.write_stats:
        contained_partition(stat.partition_path, where)
        if stat.path:
            contained_relative(stat.path, where)
        for relative in stat.cdc_stats:
            contained_relative(relative, where)
        for name in (stat.prev_base_file, stat.base_file, *stat.log_files):
            if name:
                contained_name(name, where)
