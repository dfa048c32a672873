"""The bloom filter Hudi puts in every HFile base file of the metadata table.

Hudi's ``DYNAMIC_V0`` filter (``HoodieDynamicBoundedBloomFilter``) over the record keys,
serialised as Hadoop's ``DynamicBloomFilter`` writes itself (version -1, hash count,
hash type 1 = Murmur, vector size, records per row, records in the last row, rows, then
each row as a Hadoop ``BloomFilter``: the same header and its bit vector, bit ``i`` at
byte ``i // 8``, bit ``i % 8``), Base64 text in the ``bloomFilter`` meta block. Readers
may use it to skip a file; a wrong one would hide records, so ours is Hudi's, bit for bit.

Sizes follow Hudi's defaults for metadata base files: a false positive rate of 1e-9 and
``entries_per_row`` keys a row (30 hashes); a full row starts another until the rows hold
100,000 entries, after which the rows take further keys in turn (Hudi's bounded filter;
no fixture has that many keys in one file).
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Iterable, Sequence

BLOOM_META_BLOCK = b"bloomFilter"
BLOOM_TYPE_KEY = b"bloomFilterTypeCode"
BLOOM_TYPE = b"DYNAMIC_V0"
SCHEMA_KEY = b"schema"
MIN_RECORD_KEY = b"minRecordKey"
MAX_RECORD_KEY = b"maxRecordKey"

ENTRIES = 10_000
MAX_ENTRIES = 100_000
FPP = 0.000000001
MURMUR = 1
_M = 0x5BD1E995


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def _signed_byte(value: int) -> int:
    return value - 256 if value > 127 else value


def murmur_hash(data: bytes, seed: int) -> int:
    """Hadoop's ``MurmurHash.hash(data, length, seed)`` (32-bit, Java int arithmetic)."""
    length = len(data)
    h = (seed ^ length) & 0xFFFFFFFF
    whole = length >> 2
    for i in range(whole):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * _M) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * _M) & 0xFFFFFFFF
        h = ((h * _M) & 0xFFFFFFFF) ^ k
    rest = data[4 * whole :]
    if rest:
        # The tail bytes go in reversed: the last at bit 0, the first highest (Hudi's
        # copy of the hash differs from Hadoop's here; the fixtures' filters show it).
        # Java sign-extends each byte before shifting it in.
        for shift, byte in zip(range(8 * (len(rest) - 1), -1, -8), rest, strict=True):
            h ^= (_signed_byte(byte) << shift) & 0xFFFFFFFF
        h = (h * _M) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * _M) & 0xFFFFFFFF
    h ^= h >> 15
    return _int32(h)


def entries_per_row(table_version: int) -> int:
    """Hudi 1.0 (table version 8) sized metadata base files' filters for 60,000 entries
    a row, Hudi 1.1 (version 9) for 10,000 (the fixtures' filters say so)."""
    return 60_000 if table_version <= 8 else 10_000


def _sizes(entries: int) -> tuple[int, int]:
    bits = math.ceil(-entries * math.log(FPP) / (math.log(2) ** 2))
    hashes = math.ceil(math.log(2) * bits / entries)
    return bits, hashes


def _positions(key: bytes, bits: int, hashes: int) -> list[int]:
    out = []
    seed = 0
    for _ in range(hashes):
        seed = murmur_hash(key, seed)
        out.append(abs(seed) % bits)  # Java: Math.abs(seed % bits)
    return out


def _header(hashes: int, bits: int) -> bytes:
    return struct.pack(">iiBi", -1, hashes, MURMUR, bits)


def bloom_filter(
    keys: Iterable[bytes],
    table_version: int,
    entries: int | None = None,
    max_entries: int = MAX_ENTRIES,
) -> bytes:
    """The ``bloomFilter`` meta block of an HFile base file holding ``keys``: rows of
    ``entries`` keys (the table version's by default) up to ``max_entries``."""
    entries = entries or entries_per_row(table_version)
    bits, hashes = _sizes(entries)
    rows: list[bytearray] = [bytearray((bits + 7) // 8)]
    in_row = 0
    at_max = False
    turn = 0
    for key in keys:
        if at_max:  # every row full: Hudi's bounded filter takes the rows in turn
            row = rows[turn % len(rows)]
            turn += 1
        elif in_row >= entries and len(rows) * entries < max_entries:
            rows.append(bytearray((bits + 7) // 8))
            in_row = 0
            row = rows[-1]
        elif in_row >= entries:
            # The key that finds every row full goes to the first row, and so does the
            # next: Hudi's turn counter starts at the first row only after it.
            at_max = True
            row = rows[0]
        else:
            row = rows[-1]
        for position in _positions(key, bits, hashes):
            row[position // 8] |= 1 << (position % 8)
        in_row += 1
    out = [_header(hashes, bits), struct.pack(">iii", entries, in_row, len(rows))]
    for row in rows:
        out += [_header(hashes, bits), bytes(row)]
    return base64.b64encode(b"".join(out))


def base_file_info(keys: Sequence[bytes], schema: bytes) -> dict[bytes, bytes]:
    """The file info of an HFile base file holding ``keys`` (sorted): the writer
    ``schema``, the bloom filter's type and the smallest and largest key (empty values
    in an empty file)."""
    info = {SCHEMA_KEY: schema, BLOOM_TYPE_KEY: BLOOM_TYPE}
    info[MIN_RECORD_KEY] = keys[0] if keys else b""
    info[MAX_RECORD_KEY] = keys[-1] if keys else b""
    return info
