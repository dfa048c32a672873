"""CDC log files of a Spark merge (``spark_merge.changed_rows``), written by Python workers.

The Spark merge writes base files with Spark's own parquet writer; the changes of each
rewritten file group (one row per changed key, with the images the logging mode
keeps) are shuffled by file group to Spark's Python workers, each of which encodes
its group's CDC log column-wise (``cdc_log.encode_cdc_file``) and writes it next to
the new base file, under a marker, through the table's storage layer (any executor,
no driver disk). Changes the profile counts as small (``DRIVER_BYTES``) are instead
collected as Arrow and encoded by the driver: no Python workers to start. The same
files the Python merge writes (``python_merge``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame

from hudi_sync.spark.compat import apply_in_arrow, collect_arrow, from_arrow_schema
from hudi_sync.spark.writing.merge import PARTITION_PATH, RECORD_KEY
from hudi_sync.spark.writing.spark_merge import CDC_AFTER, CDC_BEFORE, CDC_OP, FILE_ID, WRITE_TOKEN
from hudi_sync.storage import Location, open_location
from hudi_sync.table.cdc.log import CdcChanges, CdcMode, cdc_log_name, encode_cdc_file
from hudi_sync.table.config.schema import META_FIELDS
from hudi_sync.table.write.rollback import write_marker

# Changes up to this estimated size are encoded by the driver (``collect_on_driver``).
DRIVER_BYTES = 64 << 20
_WRITTEN = pa.schema([("file_id", pa.string()), ("path", pa.string()), ("size", pa.int64())])


def images_of(mode: CdcMode) -> tuple[bool, bool]:
    """Which images (before, after) a logging mode keeps in its records."""
    return mode is not CdcMode.OP_KEY_ONLY, mode is CdcMode.DATA_BEFORE_AFTER


def write_cdc_logs(
    changes: DataFrame,
    location: Location,
    mode: CdcMode,
    schema: pa.Schema,
    data_schema: Mapping[str, Any],
    instant: str,
    collect_on_driver: bool,
) -> dict[str, tuple[str, int]]:
    """One CDC log per file group of ``changes``; file id -> (table-relative path,
    size) of each log written. ``collect_on_driver``: the changes are few (the caller
    estimated them below ``DRIVER_BYTES``): the driver encodes them."""
    encode = _log_writer(
        location.uri, dict(location.storage_options), mode, schema, data_schema, instant
    )
    if collect_on_driver:
        written = _per_group(collect_arrow(changes), encode)
        return {r["file_id"]: (r["path"], int(r["size"])) for r in written.to_pylist()}
    on_workers = apply_in_arrow(changes, (FILE_ID,), encode, from_arrow_schema(_WRITTEN))
    return {r["file_id"]: (r["path"], int(r["size"])) for r in on_workers.collect()}


def _per_group(changes: pa.Table, encode: Callable[[pa.Table], pa.Table]) -> pa.Table:
    """``encode`` applied to each file group's changes (one sort, then slices)."""
    if not changes.num_rows:
        return _WRITTEN.empty_table()
    changes = changes.sort_by(FILE_ID)
    ids = changes.column(FILE_ID).to_pylist()
    starts = [i for i in range(len(ids)) if i == 0 or ids[i] != ids[i - 1]]
    ends = [*starts[1:], len(ids)]
    return pa.concat_tables(
        encode(changes.slice(a, b - a)) for a, b in zip(starts, ends, strict=True)
    )


def _log_writer(
    base: str,
    storage_options: Mapping[str, Any],
    mode: CdcMode,
    schema: pa.Schema,
    data_schema: Mapping[str, Any],
    instant: str,
) -> Callable[[pa.Table], pa.Table]:
    """The function Spark's Python workers run for each file group's changes (plain
    data in its closure: it runs on any executor)."""
    # Nullable fields: a null image's fields are null (the Avro schema says what the
    # encoder writes; Arrow's nullability would refuse the cast).
    fields = [schema.field(n).with_nullable(True) for n in schema.names if n not in META_FIELDS]
    image_type = pa.struct(fields)

    def image(changes: pa.Table, column: str) -> pa.StructArray:
        if column not in changes.column_names:
            nulls = pa.nulls(changes.num_rows, image_type)
            assert isinstance(nulls, pa.StructArray)
            return nulls
        images = changes.column(column).combine_chunks().cast(image_type)
        assert isinstance(images, pa.StructArray)
        return images

    def write(changes: pa.Table) -> pa.Table:
        location = open_location(base, storage_options)
        changes = changes.sort_by(RECORD_KEY)  # one order whatever the shuffle
        partition = changes.column(PARTITION_PATH)[0].as_py()
        file_id = changes.column(FILE_ID)[0].as_py()
        data = encode_cdc_file(
            mode,
            data_schema,
            instant,
            CdcChanges(
                ops=changes.column(CDC_OP).combine_chunks().cast(pa.string()),
                keys=changes.column(RECORD_KEY).combine_chunks().cast(pa.string()),
                before=image(changes, CDC_BEFORE),
                after=image(changes, CDC_AFTER),
            ),
        )
        name = cdc_log_name(file_id, instant, WRITE_TOKEN)
        write_marker(location, instant, partition, name)
        location.write_file(location.join(partition, name), data)
        relative = f"{partition}/{name}" if partition else name
        return pa.table(
            {
                "file_id": pa.array([file_id], pa.string()),
                "path": pa.array([relative], pa.string()),
                "size": pa.array([len(data)], pa.int64()),
            }
        )

    return write
