"""The keys Hudi 1.x gives index records in its metadata table, and the file group a key goes to.

Facts (apache/hudi ``HashID``, ``ColumnIndexID``/``PartitionIndexID``/``FileIndexID``,
``HoodieMetadataPayload``, ``SecondaryIndexKeyUtils``, ``HoodieTableMetadataUtil``):
- a column or partition id is XXH64 of the name's UTF-8 bytes with seed ``0xdabadaba`` (a Java
  int, so sign-extended to a 64-bit seed), 8 bytes big-endian; a file id is the MD5 digest of the
  file name; each id is written in standard base64 with padding;
- column_stats key = column id + partition id + file id; partition_stats key = column id +
  partition id; the partition of a non-partitioned table is named ``.``;
- secondary index key = escaped secondary key + ``$`` + escaped record key, where ``\\``, ``$`` and
  NUL are preceded by ``\\`` and a null value is the single character NUL;
- a key's file group is Java's ``String.hashCode`` of the key, made non-negative, modulo the
  partition's file group count; secondary indexes of version 2 and later hash only the key's
  prefix up to and including the separator (escaped secondary key + ``$``), so every record key
  of one secondary value shares a file group (checked on all 18 keys of the v9 fixtures).
"""

from __future__ import annotations

import base64
import hashlib
import struct

from hudi_sync.errors import BadInputError

NON_PARTITIONED_NAME = "."
SECONDARY_KEY_SEPARATOR = "$"
_ESCAPE = "\\"
_NULL_CHAR = "\0"

_MASK = (1 << 64) - 1
_P1 = 0x9E3779B185EBCA87
_P2 = 0xC2B2AE3D27D4EB4F
_P3 = 0x165667B19E3779F9
_P4 = 0x85EBCA77C2B2AE63
_P5 = 0x27D4EB2F165667C5
# Hudi's HASH_SEED is the Java int 0xdabadaba; XXHash64 takes it as a long (sign-extended).
HASH_SEED = (0xDABADABA - (1 << 32)) & _MASK


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (64 - bits))) & _MASK


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _MASK, 31) * _P1) & _MASK


def xxh64(data: bytes, seed: int = HASH_SEED) -> int:
    """XXH64 of ``data`` (the published algorithm; no extra dependency for a few short keys)."""
    length, pos = len(data), 0
    if length >= 32:
        v1, v2 = (seed + _P1 + _P2) & _MASK, (seed + _P2) & _MASK
        v3, v4 = seed, (seed - _P1) & _MASK
        while pos + 32 <= length:
            a, b, c, d = struct.unpack_from("<4Q", data, pos)
            v1, v2, v3, v4 = _round(v1, a), _round(v2, b), _round(v3, c), _round(v4, d)
            pos += 32
        acc = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _MASK
        for lane in (v1, v2, v3, v4):
            acc = ((acc ^ _round(0, lane)) * _P1 + _P4) & _MASK
    else:
        acc = (seed + _P5) & _MASK
    acc = (acc + length) & _MASK
    while pos + 8 <= length:
        (lane,) = struct.unpack_from("<Q", data, pos)
        acc = (_rotl(acc ^ _round(0, lane), 27) * _P1 + _P4) & _MASK
        pos += 8
    if pos + 4 <= length:
        (word,) = struct.unpack_from("<I", data, pos)
        acc = (_rotl(acc ^ ((word * _P1) & _MASK), 23) * _P2 + _P3) & _MASK
        pos += 4
    while pos < length:
        acc = (_rotl(acc ^ ((data[pos] * _P5) & _MASK), 11) * _P1) & _MASK
        pos += 1
    acc = ((acc ^ (acc >> 33)) * _P2) & _MASK
    acc = ((acc ^ (acc >> 29)) * _P3) & _MASK
    return acc ^ (acc >> 32)


def _id64(name: str) -> str:
    return base64.b64encode(struct.pack(">Q", xxh64(name.encode("utf-8")))).decode("ascii")


def column_id(column: str) -> str:
    return _id64(column)


def partition_identifier(partition_path: str) -> str:
    """The name the index keys use for a data partition (``.`` for a non-partitioned table)."""
    return partition_path or NON_PARTITIONED_NAME


def partition_id(partition_path: str) -> str:
    return _id64(partition_identifier(partition_path))


def file_id(file_name: str) -> str:
    return base64.b64encode(hashlib.md5(file_name.encode("utf-8")).digest()).decode("ascii")


def column_stats_key(partition_path: str, file_name: str, column: str) -> str:
    return column_id(column) + partition_id(partition_path) + file_id(file_name)


def partition_stats_key(partition_path: str, column: str) -> str:
    return column_id(column) + partition_id(partition_path)


def escape_secondary(value: str | None) -> str:
    if value is None:
        return _NULL_CHAR
    out = []
    for char in value:
        if char in (_ESCAPE, SECONDARY_KEY_SEPARATOR, _NULL_CHAR):
            out.append(_ESCAPE)
        out.append(char)
    return "".join(out)


def secondary_index_key(secondary_key: str | None, record_key: str) -> str:
    return escape_secondary(secondary_key) + SECONDARY_KEY_SEPARATOR + escape_secondary(record_key)


def secondary_key_prefix(index_key: str) -> str:
    """A secondary index key up to and including its separator: the first ``$`` that no
    backslash escapes."""
    escaped = False
    for position, char in enumerate(index_key):
        if escaped:
            escaped = False
        elif char == _ESCAPE:
            escaped = True
        elif char == SECONDARY_KEY_SEPARATOR:
            return index_key[: position + 1]
    raise BadInputError(f"secondary index key {index_key!r} has no unescaped '$'")


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: over UTF-16 code units, in 32-bit two's complement."""
    units = text.encode("utf-16-be")
    value = 0
    for (unit,) in struct.iter_unpack(">H", units):
        value = (31 * value + unit) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def file_group_index(key: str, file_group_count: int) -> int:
    """Which of a partition's file groups (sorted by file id) holds ``key``."""
    if file_group_count <= 0:
        raise BadInputError(f"a metadata partition needs file groups, got {file_group_count}")
    # Java: Math.abs(Math.abs(h) % n), which equals |h| mod n even for h = Integer.MIN_VALUE.
    return abs(java_string_hash(key)) % file_group_count


def secondary_file_group_index(index_key: str, file_group_count: int, version: int = 2) -> int:
    """A secondary index key's file group: version 1 hashes the whole key, later versions only
    its secondary key part with the separator."""
    hashed = index_key if version < 2 else secondary_key_prefix(index_key)
    return file_group_index(hashed, file_group_count)
