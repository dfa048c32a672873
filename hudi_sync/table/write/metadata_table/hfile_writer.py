"""Writing an HFile the way Hudi's own writer (hudi-io ``HFileWriterImpl``) does, so that a
file we write has the bytes Hudi would write for the same entries and file info.

Layout: data blocks (a block is flushed before an entry would take its uncompressed size,
counted as key + value + 9 per entry, past the block size; 1 MiB by default as in Hudi's
``HFileContext``), one META block per meta entry (the bloom filter of base files), then the
load-on-open section: root data index, meta index, file info; then the trailer. File info
and meta blocks come out in the iteration order of the Java HashMaps Hudi keeps them in.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Mapping, Sequence

from hudi_sync.errors import BadInputError
from hudi_sync.table.metadata_table.hfile_format import (
    AVG_KEY_LEN,
    AVG_VALUE_LEN,
    CODEC_GZ,
    CODEC_NONE,
    COMPARATOR,
    CREATE_TIME_TS,
    DATA_MAGIC,
    FILE_INFO_MAGIC,
    KEY_SUFFIX,
    KEY_VALUE_VERSION,
    LAST_KEY,
    MAX_MEMSTORE_TS_KEY,
    META_MAGIC,
    PBUF_MAGIC,
    ROOT_INDEX_MAGIC,
    TRAILER_MAGIC,
    TRAILER_SIZE,
    AscendingKeys,
    bytes_field,
    encode_block,
    encode_varint,
    java_hash_order,
    varint_field,
)

DEFAULT_BLOCK_SIZE = 1024 * 1024
# An entry's bytes in a data block beyond its row key and value: int32 key length, int32 value
# length, int16 row length, the 10-byte key suffix, the MVCC byte. Hudi 1.1's trailer counts
# uncompressed data bytes so (the fixtures' "uncompressed data index size" equals their data
# block sizes); its block-flush rule is taken to count the same way.
ENTRY_OVERHEAD = 21


def _check_entries(entries: Sequence[tuple[bytes, bytes]]) -> None:
    """Keys unique and sorted, in byte order (what our writers use: HFile readers seek by
    it) or Java String order (as Hudi's log blocks sort them)."""
    previous: bytes | None = None
    ascending = AscendingKeys()
    for key, _ in entries:
        if not ascending.add(key):
            raise BadInputError(
                f"write_hfile: keys must be sorted and unique ({key!r} comes after {previous!r})"
            )
        if len(key) > 0x7FFF:
            raise BadInputError(f"write_hfile: key of {len(key)} bytes is over 32,767 bytes")
        previous = key


def _data_block(entries: Sequence[tuple[bytes, bytes]]) -> bytes:
    parts: list[bytes] = []
    for key, value in entries:
        parts.append(struct.pack(">iih", len(key) + 2 + len(KEY_SUFFIX), len(value), len(key)))
        parts += [key, KEY_SUFFIX, value, b"\x00"]
    return b"".join(parts)


def _index_payload(index: Sequence[tuple[bytes, int, int]], row_keys: bool) -> bytes:
    parts: list[bytes] = []
    for key, offset, size in index:
        stored = struct.pack(">h", len(key)) + key if row_keys else key
        parts += [struct.pack(">qi", offset, size), encode_varint(len(stored)), stored]
    return b"".join(parts)


def _file_info(
    given: Mapping[bytes, bytes],
    entries: Sequence[tuple[bytes, bytes]],
    create_time_ms: int | None,
) -> bytes:
    """The FILE_INFO payload: ``PBUF``, varint length, InfoProto of BytesBytesPairs."""
    count = len(entries)
    last = entries[-1][0] if entries else b""
    computed = {
        MAX_MEMSTORE_TS_KEY: struct.pack(">q", 0),
        LAST_KEY: struct.pack(">h", len(last)) + last if last else b"",
        AVG_KEY_LEN: struct.pack(">i", sum(len(k) for k, _ in entries) // count if count else 0),
        AVG_VALUE_LEN: struct.pack(">i", sum(len(v) for _, v in entries) // count if count else 0),
        KEY_VALUE_VERSION: struct.pack(">i", 1),
    }
    # Keys describing the file's own layout are recomputed for the file being written
    # (a file info read from another HFile, e.g. one HBase wrote, has its own values).
    given = {name: value for name, value in given.items() if name not in computed}
    created = given.get(CREATE_TIME_TS)
    if created is None:
        millis = int(time.time() * 1000) if create_time_ms is None else create_time_ms
        created = struct.pack(">q", millis)
    values = {**computed, **given, CREATE_TIME_TS: created}
    # Hudi's insertion order: the MVCC key first, the caller's file info, then the rest.
    inserted = [MAX_MEMSTORE_TS_KEY] + [name for name in given if name != MAX_MEMSTORE_TS_KEY]
    for name in (LAST_KEY, AVG_KEY_LEN, CREATE_TIME_TS, AVG_VALUE_LEN, KEY_VALUE_VERSION):
        if name not in inserted:
            inserted.append(name)
    pairs = b"".join(
        bytes_field(1, bytes_field(1, name) + bytes_field(2, values[name]))
        for name in java_hash_order(inserted)
    )
    return PBUF_MAGIC + encode_varint(len(pairs)) + pairs


def write_hfile(
    entries: Sequence[tuple[bytes, bytes]],
    file_info: Mapping[bytes, bytes],
    *,
    meta_blocks: Mapping[bytes, bytes] | None = None,
    block_size: int = DEFAULT_BLOCK_SIZE,
    compression: str = "GZ",
    create_time_ms: int | None = None,
) -> bytes:
    """An HFile holding ``entries`` (row key, value; sorted, unique), ``file_info`` (the
    caller's keys such as ``schema``; the layout keys ``hfile.LASTKEY``, ``hfile.AVG_*_LEN``,
    ``KEY_VALUE_VERSION`` and ``MAX_MEMSTORE_TS_KEY`` are computed, ``hfile.CREATE_TIME_TS``
    is kept if given, else ``create_time_ms`` or now) and ``meta_blocks`` (name -> content,
    e.g. Hudi's ``bloomFilter``)."""
    codecs = {"GZ": CODEC_GZ, "NONE": CODEC_NONE}
    if compression not in codecs:
        raise BadInputError(
            f"write_hfile: compression {compression!r} is not supported (GZ or NONE)"
        )
    codec = codecs[compression]
    if block_size <= 0:
        raise BadInputError(f"write_hfile: block size {block_size} must be positive")
    _check_entries(entries)
    out: list[bytes] = []
    offset = 0
    index: list[tuple[bytes, int, int]] = []
    first_block, last_block = -1, 0
    block: list[tuple[bytes, bytes]] = []
    filled = 0
    uncompressed_total = 0

    def flush() -> None:
        nonlocal offset, first_block, last_block, block
        if not block:
            return
        # Hudi gives each data block after the first its own start offset as "previous".
        encoded = encode_block(DATA_MAGIC, _data_block(block), codec, -1 if not index else offset)
        first_block = offset if first_block < 0 else first_block
        last_block = offset
        index.append((block[0][0], offset, len(encoded)))
        out.append(encoded)
        offset += len(encoded)
        block = []

    for key, value in entries:
        size = len(key) + len(value) + ENTRY_OVERHEAD
        if filled + size > block_size:
            flush()
            filled = 0
        block.append((key, value))
        filled += size
        uncompressed_total += size
    flush()

    meta_index: list[tuple[bytes, int, int]] = []
    meta = dict(meta_blocks or {})
    for name in java_hash_order(list(meta)):
        encoded = encode_block(META_MAGIC, meta[name], codec)
        meta_index.append((name, offset, len(encoded)))
        out.append(encoded)
        offset += len(encoded)

    load_on_open = offset
    for payload in (_index_payload(index, True), _index_payload(meta_index, False)):
        encoded = encode_block(ROOT_INDEX_MAGIC, payload, codec)
        out.append(encoded)
        offset += len(encoded)
    file_info_offset = offset
    out.append(encode_block(FILE_INFO_MAGIC, _file_info(file_info, entries, create_time_ms), codec))

    proto = b"".join(
        [
            varint_field(1, file_info_offset),
            varint_field(2, load_on_open),
            varint_field(3, uncompressed_total),
            varint_field(5, len(index)),
            varint_field(6, len(meta_index)),
            varint_field(7, len(entries)),
            varint_field(8, 1),
            varint_field(9, first_block),
            varint_field(10, last_block),
            bytes_field(11, COMPARATOR.encode()),
            varint_field(12, codec),
        ]
    )
    head = TRAILER_MAGIC + encode_varint(len(proto)) + proto
    out.append(head + bytes(TRAILER_SIZE - 1 - len(head)) + b"\x03")
    return b"".join(out)
