"""Metadata records as the bytes of an HFILE_DATA log block, as Hudi 1.x writes them.

Each record is one HFile cell: the row key is the record key, the value the Avro datum
of ``HoodieMetadataRecord`` with the five meta fields (null) in front and an EMPTY
``key`` field (readers take the key from the row key). The HFile's file info keeps the
writer schema under ``schema``; the block header carries the same schema.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

from hudi_sync.table.metadata_table.records import (
    SCHEMA_FILE_INFO_KEY,
    FileInfo,
    MetadataRecord,
    MetadataType,
    encode_value,
    metadata_schema,
)
from hudi_sync.table.write.metadata_table.files_records import FILE_LIST, FilesRecord
from hudi_sync.table.write.metadata_table.hfile_writer import write_hfile


class HudiRecordCodec:
    """The record encoding and HFile writer for a table version (8 or 9)."""

    def __init__(self, table_version: int) -> None:
        self.table_version = table_version
        self.schema = json.dumps(metadata_schema(table_version), separators=(",", ":"))

    def encode(self, records: Sequence[MetadataRecord]) -> list[tuple[bytes, bytes]]:
        """(row key, value) cells, sorted by key."""
        return sorted(
            (r.key.encode("utf-8"), encode_value(replace(r, key=""), self.table_version))
            for r in records
        )

    def encode_files(self, records: Sequence[FilesRecord]) -> list[tuple[bytes, bytes]]:
        return self.encode([files_metadata_record(r) for r in records])

    def hfile(self, entries: Sequence[tuple[bytes, bytes]]) -> bytes:
        info = {SCHEMA_FILE_INFO_KEY: self.schema.encode("utf-8")}
        return write_hfile(sorted(entries), info)


def files_metadata_record(record: FilesRecord) -> MetadataRecord:
    kind = (
        MetadataType.FILE_LIST if record.record_type == FILE_LIST else MetadataType.PARTITION_LIST
    )
    return MetadataRecord(
        record.key,
        kind,
        files={name: FileInfo(e.size, e.is_deleted) for name, e in record.entries.items()},
    )
