"""The HFile v3 layout Hudi's metadata table uses, shared by the HFile reader and writer.

A file is a run of blocks then a fixed 4,096-byte trailer. Every block has a 33-byte header:
8-byte magic, int32 on-disk size without header (payload + checksum bytes), int32
uncompressed size without header, int64 previous block offset, checksum type byte, int32
bytes per checksum, int32 on-disk data size with header (header + payload). Hudi writes
checksum type NULL with 16 KiB per checksum, i.e. 4 zero bytes per started 16 KiB after the
payload. The payload is GZ-compressed (codec id 1, Hudi's default) or stored (NONE, id 2).
The trailer is ``TRABLK"$``, a varint-delimited protobuf ``TrailerProto``, zero padding and
the version int (minor byte, 3-byte major = 3).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

DATA_MAGIC = b"DATABLK*"
META_MAGIC = b"METABLKc"
ROOT_INDEX_MAGIC = b"IDXROOT2"
FILE_INFO_MAGIC = b"FILEINF2"
TRAILER_MAGIC = b'TRABLK"$'
BLOCK_MAGICS = {
    DATA_MAGIC,
    META_MAGIC,
    ROOT_INDEX_MAGIC,
    FILE_INFO_MAGIC,
    b"DATABLKE",
    b"IDXLEAF2",
    b"IDXINTE2",
}
HEADER_SIZE = 33
TRAILER_SIZE = 4096
# The most bytes one block may inflate to. Hudi's metadata table writes 1 MiB blocks; one
# entry can overflow a block (a large file listing or bloom filter), never to this size.
MAX_BLOCK_SIZE = 256 * 1024 * 1024
MAJOR_VERSION = 3
BYTES_PER_CHECKSUM = 16 * 1024
CHECKSUM_TYPE_NULL = 0
PBUF_MAGIC = b"PBUF"
CODEC_GZ = 1
CODEC_NONE = 2
CODEC_NAMES = {0: "LZO", 1: "GZ", 2: "NONE", 3: "SNAPPY", 4: "LZ4", 5: "BZIP2", 6: "ZSTD"}
COMPARATOR = "org.apache.hudi.io.storage.HoodieHBaseKVComparator"
# The key suffix after the row: family length 0, timestamp LATEST (Long.MAX_VALUE), type Put.
KEY_SUFFIX = b"\x00" + struct.pack(">q", 2**63 - 1) + b"\x04"
# File-info keys the HFile itself maintains (Hudi's HFileInfo names).
LAST_KEY = b"hfile.LASTKEY"
AVG_KEY_LEN = b"hfile.AVG_KEY_LEN"
AVG_VALUE_LEN = b"hfile.AVG_VALUE_LEN"
CREATE_TIME_TS = b"hfile.CREATE_TIME_TS"
KEY_VALUE_VERSION = b"KEY_VALUE_VERSION"
MAX_MEMSTORE_TS_KEY = b"MAX_MEMSTORE_TS_KEY"
# Java GZIPOutputStream's 10-byte header: no name, mtime 0, XFL 0, OS 0 (as Hudi writes).
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x00"

# TrailerProto field numbers (hbase HFile.proto).
TRAILER_FIELDS = {
    1: "file_info_offset",
    2: "load_on_open_data_offset",
    3: "uncompressed_data_index_size",
    4: "total_uncompressed_bytes",
    5: "data_index_count",
    6: "meta_index_count",
    7: "entry_count",
    8: "num_data_index_levels",
    9: "first_data_block_offset",
    10: "last_data_block_offset",
    11: "comparator_class_name",
    12: "compression_codec",
    13: "encryption_key",
}


class HFileFormatError(ValueError):
    """Raised inside the codec; the reader and writer add the file's name."""


@dataclass(frozen=True)
class BlockHeader:
    magic: bytes
    on_disk_size_without_header: int
    uncompressed_size: int
    prev_block_offset: int
    checksum_type: int
    bytes_per_checksum: int
    on_disk_data_size_with_header: int


def encode_varint(value: int) -> bytes:
    """Protobuf's unsigned varint (negative int64 as its two's complement, 10 bytes)."""
    value &= (1 << 64) - 1
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def decode_varint(data: bytes, position: int) -> tuple[int, int]:
    """(value, next position) of the protobuf varint at ``position``."""
    result = shift = 0
    while True:
        if position >= len(data) or shift > 63:
            raise HFileFormatError("truncated varint")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7


def decode_fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """A protobuf message's (field number, value) pairs: varints and length-delimited."""
    fields: list[tuple[int, int | bytes]] = []
    position = 0
    while position < len(data):
        tag, position = decode_varint(data, position)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, position = decode_varint(data, position)
            fields.append((number, value))
        elif wire == 2:
            size, position = decode_varint(data, position)
            if position + size > len(data):
                raise HFileFormatError("truncated protobuf field")
            fields.append((number, data[position : position + size]))
            position += size
        elif wire in (1, 5):
            position += 8 if wire == 1 else 4
        else:
            raise HFileFormatError(f"protobuf wire type {wire} is not expected")
    return fields


def varint_field(number: int, value: int) -> bytes:
    return encode_varint(number << 3) + encode_varint(value)


def bytes_field(number: int, value: bytes) -> bytes:
    return encode_varint(number << 3 | 2) + encode_varint(len(value)) + value


def checksum_bytes(on_disk_data_size_with_header: int) -> int:
    """Checksum bytes after a block's payload: 4 per started 16 KiB of header + payload."""
    return -(-on_disk_data_size_with_header // BYTES_PER_CHECKSUM) * 4


def parse_header(data: bytes, offset: int) -> BlockHeader:
    if offset < 0 or offset + HEADER_SIZE > len(data):
        raise HFileFormatError(f"block header at offset {offset} is past the end of the file")
    magic = data[offset : offset + 8]
    if magic not in BLOCK_MAGICS:
        raise HFileFormatError(f"no HFile block magic at offset {offset} (found {magic!r})")
    sizes = struct.unpack_from(">iiqbii", data, offset + 8)
    return BlockHeader(magic, *sizes)


def block_payload(data: bytes, offset: int, codec: int, expected: bytes) -> bytes:
    """The uncompressed payload of the block at ``offset``, which must have magic ``expected``."""
    header = parse_header(data, offset)
    if header.magic != expected:
        raise HFileFormatError(
            f"expected a {expected.decode()} block at offset {offset}, found {header.magic!r}"
        )
    end = offset + HEADER_SIZE + header.on_disk_size_without_header
    stored_end = offset + header.on_disk_data_size_with_header
    if end > len(data) or not offset + HEADER_SIZE <= stored_end <= end:
        raise HFileFormatError(f"{expected.decode()} block at offset {offset} is truncated")
    stored = data[offset + HEADER_SIZE : stored_end]
    if codec == CODEC_NONE:
        payload = stored
    else:
        payload = _inflate(stored, header.uncompressed_size, f"{expected.decode()} block", offset)
    if len(payload) != header.uncompressed_size:
        raise HFileFormatError(
            f"{expected.decode()} block at offset {offset} holds {len(payload)} bytes, "
            f"its header says {header.uncompressed_size}"
        )
    return payload


def _inflate(stored: bytes, declared: int, what: str, offset: int) -> bytes:
    """A GZ payload inflated to at most the size its block header declares (itself at
    most ``MAX_BLOCK_SIZE``): a few compressed bytes can claim gigabytes."""
    if not 0 <= declared <= MAX_BLOCK_SIZE:
        raise HFileFormatError(
            f"{what} at offset {offset} declares {declared} uncompressed bytes "
            f"(at most {MAX_BLOCK_SIZE} are read)"
        )
    inflater = zlib.decompressobj(31)
    try:
        payload = inflater.decompress(stored, declared + 1)
    except zlib.error as exc:
        raise HFileFormatError(f"{what} at offset {offset} does not inflate ({exc})") from None
    if len(payload) > declared:
        raise HFileFormatError(
            f"{what} at offset {offset} inflates past the {declared} bytes its header declares"
        )
    if not inflater.eof:
        raise HFileFormatError(f"{what} at offset {offset} does not inflate (truncated)")
    return payload


def gzip_java(payload: bytes) -> bytes:
    """GZ as java.util.zip.GZIPOutputStream writes it (deflate level 6), byte for byte."""
    deflater = zlib.compressobj(6, zlib.DEFLATED, -15, 8)
    body = deflater.compress(payload) + deflater.flush()
    return GZIP_HEADER + body + struct.pack("<II", zlib.crc32(payload), len(payload) & 0xFFFFFFFF)


def encode_block(magic: bytes, payload: bytes, codec: int, prev_block_offset: int = -1) -> bytes:
    """One block: header, (compressed) payload, NULL-checksum padding."""
    stored = gzip_java(payload) if codec == CODEC_GZ else payload
    with_header = HEADER_SIZE + len(stored)
    padding = checksum_bytes(with_header)
    header = magic + struct.pack(
        ">iiqbii",
        len(stored) + padding,
        len(payload),
        prev_block_offset,
        CHECKSUM_TYPE_NULL,
        BYTES_PER_CHECKSUM,
        with_header,
    )
    return header + stored + bytes(padding)


def java_hash_order(keys: Sequence[bytes]) -> list[bytes]:
    """``keys`` (UTF-8 names, in insertion order) in the iteration order of a java.util.HashMap
    of Strings filled in that order: Hudi's writer keeps file info and meta blocks in
    HashMaps, so this is the order its bytes have. (Bucket by the spread String.hashCode at
    the final table size; insertion order within a bucket; tree bins never arise here.)"""
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: bytes) -> int:
        code = 0
        units = key.decode("utf-8").encode("utf-16-be")
        for index in range(0, len(units), 2):
            code = (31 * code + int.from_bytes(units[index : index + 2], "big")) & 0xFFFFFFFF
        return (code ^ (code >> 16)) & (capacity - 1)

    order = sorted(range(len(keys)), key=lambda index: (bucket(keys[index]), index))
    return [keys[index] for index in order]


def byte_order(key: bytes) -> bytes:
    """A row key's place in HFile's own order (unsigned bytes: Unicode code points)."""
    return key


def java_string_order(key: bytes) -> bytes:
    """A row key's place in Java ``String`` order (UTF-16 code units), the order of the
    String-keyed sorted map Hudi's HFILE_DATA log blocks take their records from. It differs
    from byte order only between supplementary characters and U+E000..U+FFFF."""
    return key.decode("utf-8", "surrogateescape").encode("utf-16-be", "surrogatepass")


KEY_ORDERS = (byte_order, java_string_order)


def _below_e000(key: bytes) -> bool:
    """No byte of ``key`` leads a UTF-8 character from U+E000 up (0xEE and above)."""
    return max(key, default=0) < 0xEE


class AscendingKeys:
    """Follows a run of row keys that must strictly increase in one order throughout: byte
    order, which HFile readers seek by, or Java String order, which Hudi's log blocks
    write (equal for most keys, so a run usually fits both)."""

    def __init__(
        self, orders: Sequence[Callable[[bytes], bytes]] = KEY_ORDERS, first: bytes | None = None
    ) -> None:
        self.orders = list(orders)
        self.previous = first

    def add(self, key: bytes) -> bool:
        """Take the next key; ``False`` once no order fits the run."""
        previous, self.previous = self.previous, key
        if previous is None:
            return bool(self.orders)
        if key.isascii() or previous.isascii() or _below_e000(key) or _below_e000(previous):
            # A key without characters from U+E000 up sorts the same in both orders.
            if key <= previous:
                self.orders = []
        else:
            self.orders = [o for o in self.orders if o(key) > o(previous)]
        return bool(self.orders)

    @property
    def order(self) -> Callable[[bytes], bytes]:
        """The order the run follows (byte order when both fit)."""
        return self.orders[0] if self.orders else byte_order
