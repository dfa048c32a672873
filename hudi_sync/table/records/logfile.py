"""Hudi log files: the block format shared by MOR logs, CDC logs and the v6 archive.

A block is ``#HUDI#`` | int64 block length | int32 format version | int32 block type |
header | int64 content length | content | footer | int64 total length, where header
and footer are ``int32 n`` then ``n`` times (int32 key, int32 length, UTF-8 bytes). An Avro
data block's content is int32 version | int32 record count | per record (int32 length,
Avro binary datum) in the writer schema carried by the ``SCHEMA`` header.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import fastavro
import pyarrow as pa

from hudi_sync.errors import CorruptTableError
from hudi_sync.table.avro.arrow import AvroDecodeError, avro_long, datum_bounds, decode_rows
from hudi_sync.table.avro.bounded import AvroSchema, check_datum, schema_from_text

MAGIC = b"#HUDI#"
LOG_FORMAT_VERSION = 1
AVRO_BLOCK_VERSION = 3


class BlockType(IntEnum):
    COMMAND = 0
    DELETE = 1
    CORRUPT = 2
    AVRO_DATA = 3
    HFILE_DATA = 4
    PARQUET_DATA = 5
    CDC_DATA = 6


class HeaderKey(IntEnum):
    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    IS_PARTIAL = 7
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8


@dataclass(frozen=True)
class LogBlock:
    block_type: int
    header: Mapping[int, str]
    content: bytes
    footer: Mapping[int, str]

    @property
    def instant_time(self) -> str | None:
        return self.header.get(HeaderKey.INSTANT_TIME)

    def avro_records(self) -> list[dict[str, Any]]:
        """Decode an Avro (or CDC) data block's records with its header schema.

        The records' datums are laid end to end as one Avro array and decoded in a single
        fastavro call (per-record calls cost more than the decoding itself)."""
        writer = self.schema()
        schema = fastavro.parse_schema({"type": "array", "items": writer.schema})
        content = self.content
        stream = io.BytesIO(content)
        version, count = struct.unpack(">ii", _read_exact(stream, 8, "Avro block"))
        if version < 1:
            raise CorruptTableError(f"Avro log block has unsupported version {version}")
        if count < 0:
            raise CorruptTableError(f"Avro log block claims {count} records")
        datums: list[bytes] = []
        position = 8
        for _ in range(count):
            (length,) = (
                struct.unpack_from(">i", content, position)
                if (position + 4 <= len(content))
                else (-1,)
            )
            if length < 0 or position + 4 + length > len(content):
                raise CorruptTableError("log block truncated while reading Avro record")
            datum = content[position + 4 : position + 4 + length]
            if writer.walk_datums and check_datum(datum, writer, "Avro log block") != length:
                raise CorruptTableError("Avro log block record does not fill its length")
            datums.append(datum)
            position += 4 + length
        if not count:
            return []
        array = avro_long(count) + b"".join(datums) + b"\x00"
        try:
            records = fastavro.schemaless_reader(io.BytesIO(array), schema, None)
        except Exception as exc:  # fastavro raises many types on corrupt input
            raise CorruptTableError(f"Avro log block record cannot be decoded ({exc})") from None
        return records  # type: ignore[return-value]

    def schema(self) -> AvroSchema:
        """The block's writer schema (its SCHEMA header), bounded (``bounded_avro``)."""
        schema_text = self.header.get(HeaderKey.SCHEMA)
        if schema_text is None:
            raise CorruptTableError("Avro log block has no SCHEMA header")
        return schema_from_text(schema_text, "Avro log block", "SCHEMA header")

    @property
    def record_count(self) -> int:
        """How many records an Avro (or CDC) data block holds, from its content header."""
        if len(self.content) < 8:
            raise CorruptTableError("log block truncated while reading Avro block")
        (count,) = struct.unpack_from(">i", self.content, 4)
        return int(count)

    def avro_columns(self, first: int = 0, stop: int | None = None) -> pa.StructArray | None:
        """Records ``first`` to ``stop`` (default: all) of an Avro (or CDC) data block,
        decoded column-wise into one struct array (``avro_arrow.decode_rows``); ``None``
        when the header schema has a type that decoder lacks (``avro_records`` decodes
        those)."""
        schema = self.schema()
        content, count = self.content, self.record_count
        (version,) = struct.unpack_from(">i", content, 0)
        if version < 1:
            raise CorruptTableError(f"Avro log block has unsupported version {version}")
        try:
            starts, ends = datum_bounds(content, 8, count)
            return decode_rows(schema.schema, content, starts[first:stop], ends[first:stop])
        except AvroDecodeError as exc:
            raise CorruptTableError(f"Avro log block record cannot be decoded ({exc})") from None


def _read_exact(stream: io.BytesIO, size: int, what: str) -> bytes:
    data = stream.read(size)
    if len(data) != size or size < 0:
        raise CorruptTableError(f"log block truncated while reading {what}")
    return data


def _read_map(stream: io.BytesIO) -> dict[int, str]:
    (count,) = struct.unpack(">i", _read_exact(stream, 4, "header size"))
    result: dict[int, str] = {}
    for _ in range(count):
        key, length = struct.unpack(">ii", _read_exact(stream, 8, "header entry"))
        try:
            result[key] = _read_exact(stream, length, "header value").decode("utf-8")
        except UnicodeDecodeError:
            raise CorruptTableError("log block header value is not UTF-8") from None
    return result


def read_blocks(data: bytes, where: str) -> Iterator[LogBlock]:
    """Every block of a log file, in order; a truncated last block is reported."""
    stream = io.BytesIO(data)
    while True:
        magic = stream.read(len(MAGIC))
        if not magic:
            return
        if magic != MAGIC:
            raise CorruptTableError(f"{where}: log block does not start with {MAGIC!r}")
        try:
            (block_length,) = struct.unpack(">q", _read_exact(stream, 8, "block length"))
            body = io.BytesIO(_read_exact(stream, block_length, "block"))
            version, block_type = struct.unpack(">ii", _read_exact(body, 8, "block type"))
            header = _read_map(body) if version >= 1 else {}
            (content_length,) = struct.unpack(">q", _read_exact(body, 8, "content length"))
            content = _read_exact(body, content_length, "content")
            footer = _read_map(body) if version >= 1 else {}
        except (CorruptTableError, struct.error) as exc:
            raise CorruptTableError(f"{where}: {exc}") from None
        yield LogBlock(block_type, header, content, footer)


def encode_avro_block(
    records: Sequence[Mapping[str, Any]],
    schema: Mapping[str, Any],
    header: Mapping[int, str],
    block_type: int = BlockType.AVRO_DATA,
) -> bytes:
    """One Avro (or CDC) data block, ready to append to a log file."""
    parsed = fastavro.parse_schema(dict(schema))
    content = io.BytesIO()
    content.write(struct.pack(">ii", AVRO_BLOCK_VERSION, len(records)))
    for record in records:
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, parsed, dict(record))
        datum = buffer.getvalue()
        content.write(struct.pack(">i", len(datum)))
        content.write(datum)
    full_header = {**header, HeaderKey.SCHEMA: json.dumps(schema)}
    return encode_block(block_type, full_header, content.getvalue())


def _encode_map(entries: Mapping[int, str]) -> bytes:
    out = io.BytesIO()
    out.write(struct.pack(">i", len(entries)))
    for key, value in entries.items():
        raw = value.encode("utf-8")
        out.write(struct.pack(">ii", int(key), len(raw)))
        out.write(raw)
    return out.getvalue()


def encode_block(
    block_type: int,
    header: Mapping[int, str],
    content: bytes,
    footer: Mapping[int, str] | None = None,
) -> bytes:
    header_bytes = _encode_map(header)
    footer_bytes = _encode_map(footer or {})
    body = (
        struct.pack(">ii", LOG_FORMAT_VERSION, int(block_type))
        + header_bytes
        + struct.pack(">q", len(content))
        + content
        + footer_bytes
    )
    block_length = len(body) + 8  # the trailing total-length field is part of the block
    # The trailing field is the block's size up to itself: magic, length field and body.
    # (hudi-rs skips a block whose trailing size disagrees; Hudi calls it corrupt.)
    total = len(MAGIC) + 8 + len(body)
    return MAGIC + struct.pack(">q", block_length) + body + struct.pack(">q", total)
