"""Checks of a write's rows against its options and the table, before the timeline is touched.

The columns the options name, the table (created by the first write, else checked
against the options) and the table's schema, which a write may only extend by new
nullable columns.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError, TableNotFoundError
from hudi_sync.spark.compat import to_arrow_schema
from hudi_sync.spark.writing.options import WriteOptions
from hudi_sync.storage import Location, reporting_storage_failures
from hudi_sync.table import HudiTable
from hudi_sync.table.config.properties import TableConfig
from hudi_sync.table.config.schema import META_FIELDS, arrow_to_avro_schema
from hudi_sync.table.records.merge import MergeMode
from hudi_sync.table.write.create import TableSettings, create_table
from hudi_sync.table.write.lock import TableLock
from hudi_sync.table.write.metadata_table.create import create_metadata_table
from hudi_sync.table.write.metadata_table.keepers import kept_partitions
from hudi_sync.table.write.metadata_table.partitions import prepare_metadata_table


def check_columns(columns: Sequence[str], options: WriteOptions) -> None:
    """The columns the options name (keys, partition fields, ordering and delete
    fields) must be in the data."""
    if options.operation == "delete_partition":
        return  # partitions come from the option, or from whatever rows are given
    needed = [*options.record_key_fields, *options.partition_fields]
    if options.operation != "delete" and options.ordering_field:
        needed.append(options.ordering_field)
    if options.delete_field:
        needed.append(options.delete_field)
    missing = [c for c in needed if c not in columns]
    if missing:
        raise BadInputError(f"the data has no column {', '.join(missing)} (named in the options)")


def open_or_create(
    location: Location, options: WriteOptions, incoming_schema: Callable[[], pa.Schema]
) -> HudiTable:
    """The table at ``location``; the first write creates it (its schema from
    ``incoming_schema``). Refused when the options do not match it, or it cannot be
    written."""
    base = location.uri
    try:
        table = HudiTable.open(base, location.storage_options)
    except TableNotFoundError:
        if options.operation in ("delete", "delete_partition"):
            raise BadInputError(
                f"{base} is not a Hudi table: nothing to {options.operation}"
            ) from None
        settings = TableSettings(
            name=options.table_name,
            version=options.table_version,
            record_key_fields=options.record_key_fields,
            ordering_field=options.ordering_field,
            partition_fields=options.partition_fields,
            hive_style_partitioning=options.hive_style_partitioning,
            url_encode_partitions=options.url_encode_partitions,
            create_schema=json_schema(incoming_schema(), options.table_name),
            cdc_mode=options.cdc_mode,
            table_type=options.table_type,
            num_buckets=options.num_buckets if options.index_type == "BUCKET" else None,
            merge_mode=options.merge_mode
            or (
                MergeMode.EVENT_TIME_ORDERING
                if options.ordering_field
                else MergeMode.COMMIT_TIME_ORDERING
            ),
            bucket_hash_fields=options.bucket_hash_fields,
            named_key_generator=options.key_generator,
            partition_kinds=options.partition_kinds,
            key_generator_settings=options.timestamp.settings if options.timestamp else {},
        )
        check_bucket(location)
        location.ensure_folder(location.path)
        with contextlib.suppress(FileExistsError):  # a concurrent writer created it
            create_table(location, settings)
        table = HudiTable.open(base, location.storage_options)
    options.check_table(table.config, base)
    if creates_metadata_table(options.raw, table.config):
        with TableLock(
            location,
            location.join(".hoodie"),
            wait_ms=options.lock_wait_ms,
            expire_minutes=options.lock_expire_minutes,
        ):
            fresh = HudiTable.open(base, location.storage_options)
            if not fresh.config.metadata_partitions:
                create_metadata_table(location, fresh.config)
        table = HudiTable.open(base, location.storage_options)
    # The metadata table: partitions the options disable dropped (or all of it deleted),
    # the rest kept current by the commit (refused when it cannot be).
    plan = prepare_metadata_table(
        location,
        table.config.version,
        table.config.metadata_partitions,
        options.raw,
        kept_partitions(table.config.metadata_partitions),
    )
    if plan.partitions != table.config.metadata_partitions:
        table = HudiTable.open(base, location.storage_options)
    if cfg.TABLE_VERSION.given(options.raw) and (options.table_version != table.config.version):
        raise BadInputError(
            f"{base}: {cfg.TABLE_VERSION.key}={options.table_version} but the "
            f"table is version {table.config.version} (hudi_sync does not upgrade tables)"
        )
    if not table.config.populate_meta_fields:
        raise BadInputError(f"{base}: hoodie.populate.meta.fields=false tables cannot be written")
    return table


def creates_metadata_table(options: Mapping[str, str], config: TableConfig) -> bool:
    """``hoodie.metadata.enable=true`` given on a version 8+ table without a metadata
    table: Hudi's initialisation (Hudi enables it by default; hudi_sync only when asked)."""
    return (
        cfg.METADATA_ENABLE.given(options)
        and cfg.METADATA_ENABLE.read(options)
        and config.version >= 8
        and not config.metadata_partitions
    )


def check_bucket(location: Location) -> None:
    """Object stores: the bucket must exist (a write never creates one)."""
    try:
        with reporting_storage_failures(location):
            bucket = location.missing_bucket()
    except OSError as exc:
        raise BadInputError(f"{location.uri}: cannot reach its bucket: {exc}") from None
    if bucket is not None:
        raise BadInputError(
            f"{location.uri}: bucket {bucket} does not exist (create it first; "
            "hudi_sync does not create buckets)"
        )


def incoming_arrow_schema(df: DataFrame, data_columns: Sequence[str]) -> pa.Schema:
    """The Arrow schema of the rows' data columns (timestamps in UTC)."""
    data = df.select(*data_columns).schema
    return to_arrow_schema(data)


def writer_schema(
    location: Location,
    incoming: pa.Schema,
    snapshot: Mapping[tuple[str, str], str],
    operation: str,
) -> pa.Schema:
    """Meta fields, the table's columns in order, then new nullable columns. Deletes
    write the stored schema."""
    existing = existing_arrow_schema(location, snapshot)
    return evolved_schema(location, incoming, existing, operation)


def evolved_schema(
    location: Location, incoming: pa.Schema, existing: pa.Schema | None, operation: str
) -> pa.Schema:
    """``writer_schema`` from the ``existing`` schema (None: a new table)."""
    if operation in ("delete", "delete_partition") and existing is not None:
        return existing
    meta = [pa.field(name, pa.string()) for name in META_FIELDS]
    if existing is None:
        return pa.schema(meta + [f.with_nullable(True) for f in incoming])
    fields = []
    for stored in existing:
        if stored.name in META_FIELDS:
            continue
        if stored.name not in incoming.names:
            raise BadInputError(
                f"{location.uri}: the data has no column {stored.name} (the table has it; "
                "add it as null to keep it)"
            )
        new_type = incoming.field(stored.name).type
        if not _same_type(new_type, stored.type):
            raise BadInputError(
                f"{location.uri}: column {stored.name} changes type from {stored.type} to "
                f"{new_type} (only new nullable columns can be added)"
            )
        fields.append(stored)
    added = [f.with_nullable(True) for f in incoming if f.name not in existing.names]
    return pa.schema(meta + fields + added)


def existing_arrow_schema(
    location: Location, snapshot: Mapping[tuple[str, str], str]
) -> pa.Schema | None:
    """The stored files' schema (the newest file, the latest columns); ``snapshot`` maps
    ``(partition, file id)`` to its base file's name."""
    if not snapshot:
        return None
    (partition, _), name = max(snapshot.items(), key=lambda item: item[1].rsplit("_", 1)[1])
    path = location.join(partition, name)
    if location.is_local:
        return pq.read_schema(path).remove_metadata()
    return pq.read_schema(path, filesystem=location.fs).remove_metadata()


def _same_type(new: pa.DataType, stored: pa.DataType) -> bool:
    """Whether ``new`` stores as ``stored`` does (Spark's and the files' spellings of
    one type differ: time zones, nullability)."""
    if new == stored:
        return True
    if pa.types.is_timestamp(new) and pa.types.is_timestamp(stored):
        return (new.tz is None) == (stored.tz is None)
    if pa.types.is_integer(new) and pa.types.is_integer(stored):
        return bool(new.bit_width == stored.bit_width)
    # A list's item is named by the writer (Spark's "element", parquet-avro's 2-level
    # "array"): the name is no part of the type, nor is any nested field's nullability.
    if pa.types.is_list(new) and pa.types.is_list(stored):
        return _same_type(new.value_type, stored.value_type)
    if pa.types.is_map(new) and pa.types.is_map(stored):
        return _same_type(new.key_type, stored.key_type) and _same_type(
            new.item_type, stored.item_type
        )
    if pa.types.is_struct(new) and pa.types.is_struct(stored):
        return [f.name for f in new] == [f.name for f in stored] and all(
            _same_type(a.type, b.type) for a, b in zip(new, stored, strict=True)
        )
    return str(new).replace(" not null", "") == str(stored).replace(" not null", "")


def json_schema(schema: pa.Schema, table_name: str) -> str:
    """The Avro schema (without meta fields) Hudi records in commits and properties."""
    fields = [f for f in schema if f.name not in META_FIELDS]
    return json.dumps(
        arrow_to_avro_schema(fields, f"{table_name}_record", f"hoodie.{table_name}"),
        separators=(",", ":"),
    )
