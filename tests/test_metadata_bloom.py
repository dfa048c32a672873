"""The metadata table's base-file bloom filter once its rows are full.

Hudi's bounded dynamic filter (``InternalDynamicBloomFilter``) opens a row per ``entries``
keys until the rows hold ``max_entries``; the key that then finds every row full goes to
the first row, and so does the next one (the turn counter starts at the first row only
after that key), then the rows take keys in turn.
"""

from __future__ import annotations

import base64
import struct

from hudi_sync.table.write.metadata_table.bloom import _positions, _sizes, bloom_filter


def _rows(block: bytes) -> tuple[int, list[bytes]]:
    """The records-in-last-row count and each row's bit vector of a serialised filter."""
    raw = base64.b64decode(block)
    header = struct.calcsize(">iiBi")
    _, in_last, count = struct.unpack_from(">iii", raw, header)
    size = struct.unpack_from(">iiBi", raw, 0)[3]
    vector = (size + 7) // 8
    start = header + 12
    rows = [raw[start + i * (header + vector) + header :][:vector] for i in range(count)]
    return in_last, rows


def _row_of(keys: list[bytes], entries: int) -> bytes:
    """One row's bit vector holding ``keys``, sized for ``entries`` keys."""
    bits, hashes = _sizes(entries)
    row = bytearray((bits + 7) // 8)
    for key in keys:
        for position in _positions(key, bits, hashes):
            row[position // 8] |= 1 << (position % 8)
    return bytes(row)


def test_keys_past_the_maximum_go_to_the_first_row_twice_then_in_turn() -> None:
    keys = [f"key-{i}".encode() for i in range(8)]
    in_last, rows = _rows(bloom_filter(keys, 9, entries=2, max_entries=4))
    # Rows of 2 keys up to 4: keys 0-1 row 0, 2-3 row 1; full, so 4 and 5 go to row 0,
    # then 6 to row 1 and 7 to row 0.
    assert rows == [
        _row_of([keys[0], keys[1], keys[4], keys[5], keys[7]], 2),
        _row_of([keys[2], keys[3], keys[6]], 2),
    ]
    assert in_last == 6  # Hudi counts on past the row size once every row is full
