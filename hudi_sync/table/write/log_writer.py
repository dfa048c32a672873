"""Merge-on-Read log files as Hudi writes them: names, data blocks, delete blocks.

A deltacommit appends, for each file group it updates or deletes from, one new log
file (Hudi 0.14 and later never append to an existing file):

- table version 6 names it after the file slice's base instant, at the next version
  of that slice's logs: ``.<fileId>_<base instant>.log.<n>_<write token>``;
- versions 8 and 9 name it after the deltacommit's own instant, at version 1.

The file holds a data block with the upserted records (all columns, meta fields
included; ``_hoodie_file_name`` is the file id, as Hudi's append handle writes it),
then a delete block with the deleted keys. Both headers carry the instant and the
writer schema with its meta fields; footers are empty.
"""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import re
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

from hudi_sync.table.avro.arrow import encode_rows, length_prefixed
from hudi_sync.table.config.schema import META_FIELDS
from hudi_sync.table.records.log_records import (
    DECIMAL_WRAPPER_SCALE,
    DELETE_BLOCK_VERSION,
    WRAPPER_OF_KIND,
)
from hudi_sync.table.records.log_records import DELETE_LIST_SCHEMA as _DELETE_LIST
from hudi_sync.table.records.logfile import (
    AVRO_BLOCK_VERSION,
    BlockType,
    HeaderKey,
    encode_avro_block,
    encode_block,
)
from hudi_sync.table.records.merge import arrow_kind

# Hudi's default ordering value: a delete that carries it is ordered by commit time
# (it wins over every earlier write), as a DELETE operation's deletes are.
NATURAL_ORDER: tuple[str, dict[str, Any]] = (WRAPPER_OF_KIND["int"], {"value": 0})


def log_file_name(file_id: str, slice_instant: str, version: int, write_token: str) -> str:
    return f".{file_id}_{slice_instant}.log.{version}_{write_token}"


def next_log_version(names: Iterable[str], file_id: str, slice_instant: str) -> int:
    """The version after the newest log of the slice among ``names`` (1 if none)."""
    pattern = re.compile(rf"^\.{re.escape(file_id)}_{re.escape(slice_instant)}\.log\.(\d+)_")
    versions = [int(m.group(1)) for name in names if (m := pattern.match(name))]
    return max(versions, default=0) + 1


def slice_logs(names: Iterable[str], file_id: str, slice_instant: str) -> list[str]:
    """The data log files (not CDC) of one slice among ``names``."""
    prefix = f".{file_id}_{slice_instant}.log."
    return sorted(n for n in names if n.startswith(prefix) and not n.endswith(".cdc"))


def meta_avro_schema(data_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The record schema a log block's header carries: the five meta fields (nullable
    strings) first, then the table's fields."""
    meta = [
        {"name": name, "type": ["null", "string"], "doc": "", "default": None}
        for name in META_FIELDS
    ]
    return {**data_schema, "fields": meta + list(data_schema["fields"])}


def encode_data_block(
    rows: pa.Table, schema: Mapping[str, Any], instant: str, block_format: str
) -> bytes:
    """One data block of ``rows`` (columns in ``schema``'s order, meta fields first):
    Avro records (column-wise where the encoder handles the types) or a whole parquet
    file (``block_format`` ``parquet``)."""
    header: dict[int, str] = {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: json.dumps(schema)}
    if block_format == "parquet":
        sink = pa.BufferOutputStream()
        pq.write_table(rows, sink, compression="gzip")
        return encode_block(BlockType.PARQUET_DATA, header, sink.getvalue().to_pybytes())
    columns = [f["name"] for f in schema["fields"]]
    struct_rows = pa.StructArray.from_arrays(
        [rows.column(c).combine_chunks() for c in columns], columns
    )
    datums = encode_rows(schema, struct_rows)
    if datums is None:  # a type the column encoder lacks: record by record
        # Avro maps are dicts (Arrow lists a map's entries as pairs); a repeated key
        # keeps its last value, as Hudi's conversion of a Spark map into a Java map does.
        records = rows.select(columns).to_pylist(maps_as_pydicts="lossy")
        return encode_avro_block(
            [_avro_ready(r) for r in records],
            schema,
            {HeaderKey.INSTANT_TIME: instant},
        )
    content = struct.pack(">ii", AVRO_BLOCK_VERSION, rows.num_rows) + length_prefixed(datums)
    return encode_block(BlockType.AVRO_DATA, header, content)


def encode_delete_block(
    deletes: Sequence[tuple[str, str, Any]], schema: Mapping[str, Any], instant: str
) -> bytes:
    """A delete block of ``(record key, partition path, ordering value)``; the ordering
    value is a wrapper from ``ordering_wrapper`` (``NATURAL_ORDER``: delete wins)."""
    records = {
        "deleteRecordList": [
            {"recordKey": key, "partitionPath": partition, "orderingVal": ordering}
            for key, partition, ordering in deletes
        ]
    }
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, _DELETE_LIST, records)
    datum = buffer.getvalue()
    content = struct.pack(">ii", DELETE_BLOCK_VERSION, len(datum)) + datum
    header: dict[int, str] = {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: json.dumps(schema)}
    return encode_block(BlockType.DELETE, header, content)


def ordering_wrapper(kind: pa.DataType, value: Any) -> tuple[str, dict[str, Any]] | None:
    """Hudi's ordering-value wrapper for a value of an ordering field of Arrow type
    ``kind``, in the raw form the wrapper stores (``None`` for a null value or a type
    no wrapper holds)."""
    name = arrow_kind(kind)
    if value is None or name is None:
        return None
    if name == "date":
        value = (value - dt.date(1970, 1, 1)).days
    elif name == "timestamp":
        value = pa.scalar(value, kind).cast(pa.timestamp("us", kind.tz)).value
    elif name == "time":
        value = pa.scalar(value, kind).cast(pa.time64("us")).value
    elif name == "decimal":
        unscaled = int(decimal.Decimal(value).scaleb(DECIMAL_WRAPPER_SCALE))
        value = unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True)
    return WRAPPER_OF_KIND[name], {"value": value}


def _avro_ready(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row as fastavro writes it (timestamps without zone read as UTC)."""
    return {
        key: value.replace(tzinfo=dt.UTC)
        if isinstance(value, dt.datetime) and value.tzinfo is None
        else value
        for key, value in row.items()
    }
