"""Change-data-capture files (RFC-51): logging modes, the CDC log file and its records.

A CDC-enabled Copy-on-Write table writes, next to each rewritten base file, a Hudi log
file named ``.<fileId>_<instant>.log.1_<writeToken>.cdc`` holding one CDC data block
(block type 6, an Avro data block) whose header carries the commit instant and the CDC
schema. What a record holds depends on ``hoodie.table.cdc.supplemental.logging.mode``:

- ``OP_KEY_ONLY``: ``op``, ``record_key`` (readers look both images up in the files);
- ``DATA_BEFORE``: ``op``, ``record_key``, ``before`` (the after image is looked up);
- ``DATA_BEFORE_AFTER``: ``op``, ``ts_ms``, ``before``, ``after`` (nothing to look up).

Images are the table's records without the ``_hoodie_*`` meta fields; ``op`` is
``i``, ``u`` or ``d``. The write stat's ``cdcStats`` maps the file's table-relative path
to its size, which is how readers find it.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import struct
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from hudi_sync import config
from hudi_sync.errors import BadInputError, CorruptTableError
from hudi_sync.table.avro.arrow import encode_rows, length_prefixed
from hudi_sync.table.records.logfile import (
    AVRO_BLOCK_VERSION,
    BlockType,
    HeaderKey,
    LogBlock,
    encode_avro_block,
    encode_block,
    read_blocks,
)

CDC_SUFFIX = ".cdc"


class CdcMode(Enum):
    """Hudi's supplemental logging modes (``HoodieCDCSupplementalLoggingMode``)."""

    OP_KEY_ONLY = "OP_KEY_ONLY"
    DATA_BEFORE = "DATA_BEFORE"
    DATA_BEFORE_AFTER = "DATA_BEFORE_AFTER"

    def stored_value(self, table_version: int) -> str:
        """How ``hoodie.properties`` spells the mode: Hudi 0.x wrote the enum names in
        lower case, Hudi 1.x in upper case (both read either)."""
        return self.value.lower() if table_version < 8 else self.value


# Hudi's names, the names of Hudi before 0.13, and RFC-51's spellings.
_MODE_ALIASES = {
    "OP_KEY_ONLY": CdcMode.OP_KEY_ONLY,
    "KEY_OP": CdcMode.OP_KEY_ONLY,
    "CDC_OP_KEY": CdcMode.OP_KEY_ONLY,
    "DATA_BEFORE": CdcMode.DATA_BEFORE,
    "CDC_DATA_BEFORE": CdcMode.DATA_BEFORE,
    "DATA_BEFORE_AFTER": CdcMode.DATA_BEFORE_AFTER,
    "DATA_AFTER": CdcMode.DATA_BEFORE_AFTER,
    "CDC_DATA_BEFORE_AFTER": CdcMode.DATA_BEFORE_AFTER,
}


def parse_cdc_mode(value: str, where: str = config.CDC_MODE.key) -> CdcMode:
    """A logging mode by any of its names, case-insensitively."""
    mode = _MODE_ALIASES.get(value.strip().upper())
    if mode is None:
        raise BadInputError(
            f"{where}={value!r} is not a CDC logging mode "
            "(op_key_only, data_before, data_before_after)"
        )
    return mode


def cdc_log_name(file_id: str, instant: str, write_token: str, version: int = 1) -> str:
    """The CDC log file a commit writes for one file group (Hudi's log-file name + ``.cdc``)."""
    return f".{file_id}_{instant}.log.{version}_{write_token}{CDC_SUFFIX}"


def _nullable(name: str, avro_type: Any) -> dict[str, Any]:
    return {"name": name, "type": ["null", avro_type], "doc": "", "default": None}


def cdc_schema(mode: CdcMode, data_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The Avro schema of a CDC block's records; ``data_schema`` is the table's record
    schema without meta fields (the images)."""
    if mode is CdcMode.OP_KEY_ONLY:
        return {
            "type": "record",
            "name": "Record",
            "fields": [
                {"name": "op", "type": ["string", "null"]},
                {"name": "record_key", "type": ["string", "null"]},
            ],
        }
    image = dict(data_schema)
    if mode is CdcMode.DATA_BEFORE:
        fields = [_nullable("op", "string"), _nullable("record_key", "string")]
        fields.append(_nullable("before", image))
    else:
        # An Avro named type is defined once; the second image refers to it by name.
        full_name = ".".join(p for p in (image.get("namespace"), image["name"]) if p)
        fields = [_nullable("op", "string"), _nullable("ts_ms", "string")]
        fields += [_nullable("before", image), _nullable("after", full_name)]
    return {"type": "record", "name": "CDC", "fields": fields}


@dataclass(frozen=True)
class CdcChanges:
    """One commit's changes to one file group, columnar: ``op`` (i/u/d), the record
    key, and the before and after images as struct rows (null where ``op`` has none)."""

    ops: pa.Array
    keys: pa.Array
    before: pa.StructArray
    after: pa.StructArray

    def __len__(self) -> int:
        return len(self.ops)


def images_at(table: pa.Table, positions: pa.Array) -> pa.StructArray:
    """The rows of ``table`` at ``positions`` as structs (before/after images); a null
    position is a null image."""
    taken = table.take(pc.fill_null(positions, 0) if table.num_rows else positions)
    return pa.StructArray.from_arrays(
        [c.combine_chunks() for c in taken.columns],
        names=taken.column_names,
        mask=pc.is_null(positions),
    )


def encode_cdc_file(
    mode: CdcMode, data_schema: Mapping[str, Any], instant: str, changes: CdcChanges
) -> bytes:
    """The bytes of a CDC log file: one CDC data block with every change of the commit.

    Records are encoded column-wise (``avro_arrow``); a schema with a type that encoder
    lacks is encoded record by record with fastavro."""
    schema = cdc_schema(mode, data_schema)
    count = len(changes)
    columns: dict[str, pa.Array] = {"op": changes.ops}
    if mode is CdcMode.DATA_BEFORE_AFTER:
        columns["ts_ms"] = pa.array([instant] * count, pa.string())
        columns["before"] = changes.before
        columns["after"] = changes.after
    else:
        columns["record_key"] = changes.keys
        if mode is CdcMode.DATA_BEFORE:
            columns["before"] = changes.before
    rows = pa.StructArray.from_arrays(list(columns.values()), list(columns))
    # Encoding needs no type names: the after image's by-name reference is inlined.
    inline = {
        **schema,
        "fields": [
            {**f, "type": ["null", dict(data_schema)]} if f["name"] == "after" else f
            for f in schema["fields"]
        ],
    }
    datums = encode_rows(inline, rows)
    header: dict[int, str] = {
        HeaderKey.INSTANT_TIME: instant,
        HeaderKey.SCHEMA: json.dumps(schema),
    }
    if datums is None:
        return encode_avro_block(
            [_avro_ready(r) for r in rows.to_pylist()],
            schema,
            {HeaderKey.INSTANT_TIME: instant},
            block_type=BlockType.CDC_DATA,
        )
    content = struct.pack(">ii", AVRO_BLOCK_VERSION, count) + length_prefixed(datums)
    return encode_block(BlockType.CDC_DATA, header, content)


def _avro_ready(value: Any) -> Any:
    """Python values for fastavro: Arrow lists maps as (key, value) pairs, Avro wants dicts."""
    if isinstance(value, dict):
        return {k: _avro_ready(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return {k: _avro_ready(v) for k, v in value}
        return [_avro_ready(v) for v in value]
    return value


def read_cdc_file(data: bytes, where: str) -> list[dict[str, Any]]:
    """Every record of a CDC log file's CDC data blocks (a truncated file is refused)."""
    records: list[dict[str, Any]] = []
    for block in read_blocks(data, where):
        if block.block_type != BlockType.CDC_DATA:
            continue
        try:
            records.extend(block.avro_records())
        except (CorruptTableError, EOFError, ValueError, IndexError) as exc:
            raise CorruptTableError(f"{where}: CDC block cannot be decoded ({exc})") from None
    return records


def read_cdc_columns(
    files: Sequence[tuple[bytes, str]], part: int = 0, parts: int = 1
) -> pa.StructArray | None:
    """The records of CDC log files (``(data, where)`` in order), decoded column-wise
    (``avro_arrow``) into one struct array; with ``parts`` > 1 only the ``part``-th of
    ``parts`` equal runs of them (so one log can be read by several tasks). ``None``
    when a block's schema has a type that decoder lacks (``read_cdc_file`` decodes
    those record by record). A truncated or corrupt file is refused, as by
    ``read_cdc_file``."""
    blocks: list[tuple[LogBlock, str, int]] = []
    for data, where in files:
        for block in read_blocks(data, where):
            if block.block_type != BlockType.CDC_DATA:
                continue
            try:
                blocks.append((block, where, block.record_count))
            except CorruptTableError as exc:
                raise CorruptTableError(f"{where}: CDC block cannot be decoded ({exc})") from None
    total = sum(count for _, _, count in blocks)
    first, stop = total * part // parts, total * (part + 1) // parts
    decoded: list[pa.StructArray] = []
    offset = 0
    for index, (block, where, count) in enumerate(blocks):
        low, high = max(first - offset, 0), min(stop - offset, count)
        offset += count
        if low >= high and (decoded or index < len(blocks) - 1):
            continue  # (the last block is decoded, empty, if nothing else was: its type)
        try:
            columns = block.avro_columns(low, max(low, high))
        except CorruptTableError as exc:
            raise CorruptTableError(f"{where}: CDC block cannot be decoded ({exc})") from None
        if columns is None:
            return None
        decoded.append(columns)
    if not decoded or any(d.type != decoded[0].type for d in decoded):
        return None
    combined = pa.concat_arrays(decoded) if len(decoded) > 1 else decoded[0]
    return combined


def json_value(value: Any) -> Any:
    """A record value as JSON holds it: timestamps and dates ISO-8601, decimals as
    numbers, bytes base64, NaN and infinities null, maps (Arrow lists them as pairs)
    as objects, nested records and lists recursively."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return {str(k): json_value(v) for k, v in value}
        return [json_value(v) for v in value]
    return _scalar_json(value)


def _scalar_json(value: Any) -> Any:
    """The values orjson leaves to us (``default``)."""
    if isinstance(value, decimal.Decimal):
        return float(value) if value != value.to_integral_value() else int(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, list | tuple):  # a map listed as pairs, nested in a record
        return json_value(value)
    return str(value)


def image_json(image: Mapping[str, Any] | None, meta_fields: Sequence[str] = ()) -> str | None:
    """A before/after image as the compact JSON string a CDC query returns (without
    the ``_hoodie_*`` meta fields); the same text as ``json_value`` gives, by orjson.
    Rows read from Arrow must have their maps as dicts already (``arrow_rows``)."""
    if image is None:
        return None
    if any(name in image for name in meta_fields):
        image = {k: v for k, v in image.items() if k not in meta_fields}
    text: bytes = orjson.dumps(image, default=_scalar_json, option=orjson.OPT_NON_STR_KEYS)
    return text.decode("utf-8")


def image_json_column(
    images: pa.StructArray | pa.Table, meta_fields: Sequence[str] = ()
) -> pa.StringArray:
    """``image_json`` of every row of ``images`` (null rows stay null), built column by
    column: each field's values are turned into their JSON text at once and the texts
    of a row joined, ``{"name":value,...}``. The text is the same, byte for byte, as
    ``image_json`` gives for the row as ``arrow_rows`` reads it."""
    if isinstance(images, pa.Table):
        valid: pa.Array | None = None
        columns = {name: images.column(name).combine_chunks() for name in images.column_names}
        count = images.num_rows
    else:
        valid = pc.is_valid(images) if images.null_count else None
        columns = {f.name: images.field(i) for i, f in enumerate(images.type)}
        count = len(images)
    names = [name for name in columns if name not in meta_fields]
    if not names:
        texts: pa.Array = pa.array(["{}"] * count, pa.string())
    else:
        parts: list[Any] = []
        for position, name in enumerate(names):
            key = orjson.dumps(name).decode("utf-8")
            parts.append(("{" if position == 0 else ",") + key + ":")
            parts.append(json_texts(columns[name]))
        parts.append("}")
        texts = pc.binary_join_element_wise(*parts, "")
    if valid is not None:
        texts = pc.if_else(valid, texts, pa.scalar(None, pa.string()))
    return texts


# Types whose values' JSON never holds a comma: a JSON array of them splits on commas.
def _comma_free(kind: pa.DataType) -> bool:
    return bool(
        pa.types.is_floating(kind)
        or pa.types.is_date(kind)
        or pa.types.is_time(kind)
        or pa.types.is_timestamp(kind)
        or pa.types.is_decimal(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
        or pa.types.is_fixed_size_binary(kind)
    )


_NEEDS_ESCAPE = r'[\x00-\x1f"\\]'  # what orjson escapes in a string


def json_texts(values: pa.Array) -> pa.StringArray:
    """Each value's JSON text as orjson writes it (``image_json``'s rules; null as
    ``null``), by Arrow kernels where the type allows."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    kind = values.type
    if pa.types.is_dictionary(kind):
        return json_texts(values.dictionary_decode())
    null = pa.scalar("null", pa.string())
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        text = values.cast(pa.string())
        quoted = pc.binary_join_element_wise('"', text, '"', "")
        escape = pc.fill_null(pc.match_substring_regex(text, _NEEDS_ESCAPE), False)
        if pc.any(escape).as_py():
            which = np.flatnonzero(escape.to_numpy(zero_copy_only=False))
            special = [orjson.dumps(v).decode("utf-8") for v in text.take(which).to_pylist()]
            quoted = pc.replace_with_mask(quoted, escape, pa.array(special, pa.string()))
        return pc.fill_null(quoted, null)
    if pa.types.is_integer(kind):
        return pc.fill_null(values.cast(pa.string()), null)
    if pa.types.is_boolean(kind):
        flags = pc.if_else(values, pa.scalar("true"), pa.scalar("false"))
        return pc.fill_null(flags, null)
    if pa.types.is_struct(kind):
        return pc.fill_null(image_json_column(values), null)
    if _comma_free(kind):
        array = orjson.dumps(values.to_pylist(), default=_scalar_json)
        return pa.array(array[1:-1].split(b",") if len(values) else [], pa.binary()).cast(
            pa.string()
        )
    return pa.array(
        [
            orjson.dumps(_avro_ready(v), default=_scalar_json, option=orjson.OPT_NON_STR_KEYS)
            for v in values.to_pylist()
        ],
        pa.binary(),
    ).cast(pa.string())


def arrow_rows(table: pa.Table) -> list[dict[str, Any]]:
    """A table's rows as Python records, maps as dicts (Arrow lists them as pairs)."""
    rows: list[dict[str, Any]] = table.to_pylist()
    if any(_has_map(f.type) for f in table.schema):
        rows = [_avro_ready(row) for row in rows]
    return rows


def _has_map(kind: pa.DataType) -> bool:
    if pa.types.is_map(kind):
        return True
    if pa.types.is_struct(kind):
        return any(_has_map(f.type) for f in kind)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _has_map(kind.value_type)
    return False
