"""Reading an HFile as Hudi's metadata table writes it (base ``.hfile`` files and the content
of HFILE_DATA log blocks): trailer, root block index, meta index, file info, data blocks.

A data block entry is int32 key length, int32 value length, key, value, then the MVCC
timestamp as a Hadoop vlong when file info ``KEY_VALUE_VERSION`` is 1 (Hudi writes one zero
byte). A key is int16 row length, the row (the record key's UTF-8 bytes), then family,
qualifier, timestamp and type, which Hudi fills with constants and we drop.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import pairwise

from hudi_sync.errors import CorruptTableError, UnsupportedTableError
from hudi_sync.table.metadata_table.hfile_format import (
    CODEC_GZ,
    CODEC_NAMES,
    CODEC_NONE,
    DATA_MAGIC,
    FILE_INFO_MAGIC,
    KEY_VALUE_VERSION,
    MAJOR_VERSION,
    META_MAGIC,
    PBUF_MAGIC,
    ROOT_INDEX_MAGIC,
    TRAILER_FIELDS,
    TRAILER_MAGIC,
    TRAILER_SIZE,
    AscendingKeys,
    HFileFormatError,
    block_payload,
    decode_fields,
    decode_varint,
    parse_header,
)


@dataclass(frozen=True)
class HFileContent:
    """An HFile's entries (row key, value; sorted, in file order) and its file info."""

    entries: list[tuple[bytes, bytes]]
    file_info: dict[bytes, bytes]
    meta_blocks: dict[bytes, bytes] = field(default_factory=dict)


@dataclass(frozen=True)
class IndexEntry:
    """One root index entry: where a block is and the row key it starts with."""

    first_key: bytes
    offset: int
    size: int


def _trailer(data: bytes) -> dict[str, int | bytes]:
    if len(data) < TRAILER_SIZE:
        raise HFileFormatError(f"{len(data)} bytes is shorter than the {TRAILER_SIZE}-byte trailer")
    trailer = data[-TRAILER_SIZE:]
    if trailer[:8] != TRAILER_MAGIC:
        raise HFileFormatError(f"no HFile trailer magic (found {trailer[:8]!r})")
    minor, major = trailer[-4], int.from_bytes(trailer[-3:], "big")
    if major != MAJOR_VERSION:
        raise UnsupportedTableError(f"HFile version {major}.{minor} (only version 3 is read)")
    size, position = decode_varint(trailer, 8)
    if position + size > TRAILER_SIZE - 4:
        raise HFileFormatError("trailer protobuf runs past the trailer")
    fields: dict[str, int | bytes] = {}
    for number, value in decode_fields(trailer[position : position + size]):
        if number in TRAILER_FIELDS:
            fields[TRAILER_FIELDS[number]] = value
    return fields


def _root_index(payload: bytes, count: int, row_keys: bool) -> list[IndexEntry]:
    """Entries of a root index block: int64 offset, int32 size, varint key length, key (a
    data index key is int16 row length + row; a meta index key is the block's name)."""
    entries: list[IndexEntry] = []
    position = 0
    for _ in range(count):
        if position + 12 > len(payload):
            raise HFileFormatError("root index block is shorter than its entry count")
        offset, size = struct.unpack_from(">qi", payload, position)
        length, position = decode_varint(payload, position + 12)
        key = payload[position : position + length]
        if len(key) != length:
            raise HFileFormatError("root index block is truncated")
        position += length
        if row_keys:
            (row_length,) = struct.unpack_from(">h", key, 0) if len(key) >= 2 else (-1,)
            if not 0 <= row_length <= len(key) - 2:
                raise HFileFormatError("root index key has a bad row length")
            key = key[2 : 2 + row_length]
        entries.append(IndexEntry(key, offset, size))
    return entries


def _mvcc_size(payload: bytes, position: int) -> int:
    """Bytes of the Hadoop vlong at ``position`` (one byte for -112..127)."""
    if position >= len(payload):
        raise HFileFormatError("data block entry is truncated before its MVCC timestamp")
    first = payload[position] - 256 if payload[position] > 127 else payload[position]
    if first >= -112:
        return 1
    return 1 + ((-111 - first) if first >= -120 else (-119 - first))


class HFileReader:
    """An HFile opened from its bytes: trailer, indexes and file info read up front, data
    blocks decoded when asked (``get``/``with_prefix`` decode only the blocks the root index
    points at)."""

    def __init__(self, data: bytes, where: str) -> None:
        self.data = data
        self.where = where
        try:
            self._open()
        except HFileFormatError as exc:
            raise CorruptTableError(f"{where}: not a readable HFile: {exc}") from None
        except UnsupportedTableError as exc:
            raise UnsupportedTableError(f"{where}: {exc}") from None

    def _open(self) -> None:
        trailer = _trailer(self.data)
        self.trailer = trailer
        codec = int(trailer.get("compression_codec", CODEC_NONE))
        if codec not in (CODEC_GZ, CODEC_NONE):
            raise UnsupportedTableError(
                f"HFile compression {CODEC_NAMES.get(codec, codec)} (only GZ and NONE are read)"
            )
        self.codec = codec
        levels = int(trailer.get("num_data_index_levels", 1))
        if levels != 1:
            raise UnsupportedTableError(
                f"HFile with a {levels}-level block index (only Hudi's one level is read)"
            )
        body_end = len(self.data) - TRAILER_SIZE
        position = int(trailer.get("load_on_open_data_offset", 0))
        if not 0 <= position < body_end:
            raise HFileFormatError(f"load-on-open offset {position} is outside the file")
        index = block_payload(self.data, position, codec, ROOT_INDEX_MAGIC)
        self.index = _root_index(index, int(trailer.get("data_index_count", 0)), True)
        position += 33 + parse_header(self.data, position).on_disk_size_without_header
        meta = block_payload(self.data, position, codec, ROOT_INDEX_MAGIC)
        self.meta_index = _root_index(meta, int(trailer.get("meta_index_count", 0)), False)
        info_offset = int(trailer.get("file_info_offset", 0))
        info = block_payload(self.data, info_offset, codec, FILE_INFO_MAGIC)
        if info[:4] != PBUF_MAGIC:
            raise HFileFormatError("file info block does not start with PBUF")
        size, start = decode_varint(info, 4)
        self.file_info: dict[bytes, bytes] = {}
        for number, pair in decode_fields(info[start : start + size]):
            if number == 1 and isinstance(pair, bytes):
                parts = dict(decode_fields(pair))
                name, value = parts.get(1, b""), parts.get(2, b"")
                if isinstance(name, bytes) and isinstance(value, bytes):
                    self.file_info[name] = value
        version = self.file_info.get(KEY_VALUE_VERSION, b"\x00\x00\x00\x00")
        self.has_mvcc = int.from_bytes(version, "big", signed=True) == 1
        ascending = AscendingKeys(first=self.index[0].first_key if self.index else None)
        for previous, entry in pairwise(self.index):
            if not ascending.add(entry.first_key):
                raise HFileFormatError(
                    f"block index keys are not sorted ({entry.first_key!r} after "
                    f"{previous.first_key!r})"
                )
        self.key_orders = ascending.orders  # Java String order too: Hudi's log blocks

    def _block_entries(self, entry: IndexEntry) -> list[tuple[bytes, bytes]]:
        payload = block_payload(self.data, entry.offset, self.codec, DATA_MAGIC)
        entries: list[tuple[bytes, bytes]] = []
        position = 0
        while position < len(payload):
            if position + 10 > len(payload):
                raise HFileFormatError(f"data block at offset {entry.offset} is truncated")
            key_length, value_length, row_length = struct.unpack_from(">iih", payload, position)
            key_end = position + 8 + key_length
            value_end = key_end + value_length
            if (
                not 0 <= row_length <= key_length - 2
                or value_length < 0
                or value_end > len(payload)
            ):
                raise HFileFormatError(f"data block at offset {entry.offset} has a bad entry")
            row = payload[position + 10 : position + 10 + row_length]
            entries.append((row, payload[key_end:value_end]))
            position = value_end + (_mvcc_size(payload, value_end) if self.has_mvcc else 0)
        if not entries or entries[0][0] != entry.first_key:
            raise HFileFormatError(
                f"data block at offset {entry.offset} does not start with its index key"
            )
        return entries

    def _checked(self, entry: IndexEntry) -> list[tuple[bytes, bytes]]:
        try:
            return self._block_entries(entry)
        except HFileFormatError as exc:
            raise CorruptTableError(f"{self.where}: not a readable HFile: {exc}") from None

    def entries(self) -> Iterator[tuple[bytes, bytes]]:
        """Every (row key, value) in file order; keys must strictly increase (in byte
        order or, as Hudi's log blocks write them, Java String order)."""
        previous: bytes | None = None
        ascending = AscendingKeys(self.key_orders)
        count = 0
        for block in self.index:
            for key, value in self._checked(block):
                if not ascending.add(key):
                    raise CorruptTableError(
                        f"{self.where}: HFile keys are not sorted ({key!r} after {previous!r})"
                    )
                previous = key
                count += 1
                yield key, value
        expected = int(self.trailer.get("entry_count", 0))
        if count != expected:
            raise CorruptTableError(
                f"{self.where}: HFile holds {count} entries, its trailer says {expected}"
            )

    def _blocks_from(self, key: bytes) -> list[int]:
        """Indexes of the blocks that may hold ``key`` or start the keys after it: one per
        order the block index fits (their first keys may fit both while the keys in
        between follow one)."""
        starts = [block.first_key for block in self.index]
        return sorted(
            {max(bisect.bisect_right(starts, o(key), key=o) - 1, 0) for o in self.key_orders}
        )

    def get(self, key: bytes) -> bytes | None:
        """The value stored under ``key``, decoding at most two data blocks."""
        if not self.index:
            return None
        for block in self._blocks_from(key):
            for found, value in self._checked(self.index[block]):
                if found == key:
                    return value
        return None

    def with_prefix(self, prefix: bytes) -> list[tuple[bytes, bytes]]:
        """Every entry whose key starts with ``prefix``, decoding only the blocks that can
        hold one."""
        result: list[tuple[bytes, bytes]] = []
        for block in self.index[self._blocks_from(prefix)[0] :]:
            beyond = all(o(block.first_key) > o(prefix) for o in self.key_orders)
            if beyond and not block.first_key.startswith(prefix):
                break
            result.extend(
                (key, value) for key, value in self._checked(block) if key.startswith(prefix)
            )
        return result

    def meta_block(self, name: bytes) -> bytes | None:
        for entry in self.meta_index:
            if entry.first_key == name:
                try:
                    return block_payload(self.data, entry.offset, self.codec, META_MAGIC)
                except HFileFormatError as exc:
                    raise CorruptTableError(f"{self.where}: not a readable HFile: {exc}") from None
        return None

    def content(self) -> HFileContent:
        meta = {
            entry.first_key: self.meta_block(entry.first_key) or b"" for entry in self.meta_index
        }
        return HFileContent(list(self.entries()), dict(self.file_info), meta)


def read_hfile(data: bytes, where: str) -> HFileContent:
    """Every entry, the file info and the meta blocks of the HFile ``data`` (named ``where``
    in errors)."""
    return HFileReader(data, where).content()
