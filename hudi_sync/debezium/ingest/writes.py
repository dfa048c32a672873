"""The write paths of one batch: its reduced rows as Arrow written in this process
(``write_arrow``: no Spark session is started for them), or as a Spark DataFrame
upserted by the writer when the table does not take Arrow rows or the batch needs the
stored rows (TOAST columns filled from them, a truncate's deletes); each commit carries
the batch's checkpoint and tombstones (``state``). The Spark session is started on the
first batch that needs it."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_sync import config as cfg
from hudi_sync.debezium.batch import Reduced, align_to_types, to_table
from hudi_sync.debezium.columns import ColumnReduced
from hudi_sync.debezium.events import OP, ORDER, ChangeEvent, EventError
from hudi_sync.debezium.ingest.options import IngestConfig
from hudi_sync.debezium.kafka_source import KafkaSettings
from hudi_sync.debezium.state import IngestState, TombstoneStore
from hudi_sync.errors import BadInputError, TableNotFoundError
from hudi_sync.gc_pause import cycle_collection_paused
from hudi_sync.spark.compat import arrow_dataframe
from hudi_sync.spark.reading.reader import read
from hudi_sync.spark.writing import options as opt
from hudi_sync.spark.writing.compaction import spark_executor
from hudi_sync.spark.writing.options import WriteOptions
from hudi_sync.spark.writing.writer import driver_takes, write, write_arrow
from hudi_sync.sync.hook import run_post_commit_hook
from hudi_sync.table import HudiTable
from hudi_sync.table.config.schema import META_FIELDS
from hudi_sync.table.keys.partition_paths import field_names
from hudi_sync.table.read.snapshot import table_data_fields
from hudi_sync.table.write.compaction import compact, pending_compactions
from hudi_sync.table.write.lock import TableLock

UNAVAILABLE_COLUMNS = "__hudi_sync_unavailable"
# A Spark session, or what starts one when first needed (the CLI starts none up front).
SparkSource = SparkSession | Callable[[], SparkSession]


class BatchWriter:
    """Commits a reduced batch to one table; ``key_fields``: the record key fields as
    the events reader has learned them."""

    def __init__(
        self,
        spark: SparkSource,
        config: IngestConfig,
        key_fields: Callable[[], tuple[str, ...]],
    ) -> None:
        self._spark = spark
        self.config = config
        self.path = config.table_path
        self.key_fields = key_fields
        self.store = TombstoneStore(self.path, config.storage_options)
        self.options: dict[str, str] = dict(config.write_options)
        self._table_buckets: bool | None = None  # the table is written with the bucket index
        self._mor = False
        self._async: bool | None = None  # compactions run beside the ingest

    @property
    def spark(self) -> SparkSession:
        """The Spark session, started on first use: batches written as Arrow rows need
        none."""
        if not isinstance(self._spark, SparkSession):
            self._spark = self._spark()
        return self._spark

    def commit(
        self,
        reduced: Reduced | ColumnReduced,
        state: IngestState,
        tombstones: dict[str, str],
        after: dict[str, dict[int, int]],
    ) -> IngestState:
        rows: list[ChangeEvent] = []
        if isinstance(reduced, ColumnReduced):  # decoded in columns: the table takes Arrow
            if reduced.size:
                arrow = self._aligned(_zoned_timestamps(reduced.rows))
                return self._commit_rows(arrow, reduced, state, tombstones, after)
        else:
            rows = list(reduced.final.values())
            if rows and self._arrow_batch(reduced):
                with cycle_collection_paused():
                    arrow = self._arrow_rows(rows)
                return self._commit_rows(arrow, reduced, state, tombstones, after)
        if not rows:
            types = self.stored_types()
            if types is None:  # no table yet: nothing to commit the checkpoint to
                return IngestState(after, state.tombstone_files, state.truncated_before)
            if self._arrow_batch(reduced):  # only the checkpoint moves
                empty = pa.schema(list(types.items())).empty_table()
                return self._commit_rows(empty, reduced, state, tombstones, after)
        stored = self._stored()
        if not rows and not (reduced.truncated_at and stored is not None):
            if stored is None:
                return IngestState(after, state.tombstone_files, state.truncated_before)
            frame = stored.limit(0).drop(*META_FIELDS)
        else:
            assert isinstance(reduced, Reduced)  # a columnar batch has rows or none
            frame = self._frame(rows, reduced, stored)
        return self._commit_rows(frame, reduced, state, tombstones, after)

    def _commit_rows(
        self,
        rows: DataFrame | pa.Table,
        reduced: Reduced | ColumnReduced,
        state: IngestState,
        tombstones: dict[str, str],
        after: dict[str, dict[int, int]],
    ) -> IngestState:
        """Commit the batch's rows (a DataFrame, or Arrow rows for ``write_arrow``) with
        its checkpoint and tombstones."""
        files = self.store.add(state, tombstones, reduced.deletes, reduced.upserted_keys)
        new_state = IngestState(
            offsets=after,
            tombstone_files=files,
            truncated_before=reduced.truncated_at or state.truncated_before,
        )
        options = self.write_options()
        storage = self.config.storage_options
        if isinstance(rows, pa.Table) and not driver_takes(
            rows.schema, self.path, options, storage
        ):
            rows = arrow_dataframe(self.spark, rows)  # keyed by Spark (e.g. a numeric key)
        writes = write_arrow if isinstance(rows, pa.Table) else write
        result = writes(rows, self.path, options, storage, extra_metadata=new_state.metadata())
        new_state.instant = result.instant
        for key in reduced.upserted_keys:
            tombstones.pop(key, None)
        tombstones.update(reduced.deletes)
        return new_state

    def prepare_table(self) -> None:
        """Sets the write options for this table's type: an existing table's own type (asking
        for the other one is refused here, before anything is read); Merge-on-Read gets
        inline compaction unless told otherwise, and a compaction a killed run left
        pending is finished now, so a run with nothing to read still converges."""
        options = dict(self.config.write_options)
        spec = cfg.WRITE_TABLE_TYPE
        try:
            table = HudiTable.open(self.path, self.config.storage_options)
        except TableNotFoundError:
            table = None
        if table is None:
            table_type = spec.read(options)
        else:
            table_type = table.config.table_type.value
            if spec.given(options) and spec.read(options) != table_type:
                raise BadInputError(
                    f"{table.uri}: {spec.key}={spec.read(options)} but the table is "
                    f"{table_type} (a table's type is fixed when it is created)"
                )
        self._mor = table_type == "MERGE_ON_READ"
        if table_type == "MERGE_ON_READ":
            if not cfg.COMPACT_INLINE.given(options):
                options[cfg.COMPACT_INLINE.key] = "true"
            if table is None and not cfg.INDEX_TYPE.given(options):
                # No key lookup on the hot path: a new MOR table hashes keys to buckets.
                options[cfg.INDEX_TYPE.key] = "BUCKET"
            if table is not None:
                self._finish_compactions(table, options)
        self.options = options

    def _finish_compactions(self, table: HudiTable, options: Mapping[str, str]) -> None:
        if not pending_compactions(table):
            return
        self.options = dict(options)
        compact(table, self.lock(table), schedule=False, executor=spark_executor(self.spark))

    def compacts_async(self) -> bool:
        """``--continuous`` into a Merge-on-Read table written through the bucket index
        compacts asynchronously (``compactor``), unless
        ``hoodie.datasource.compaction.async.enable=false`` or ``hoodie.compact.inline=false``
        (no compaction) say otherwise; the other tables compact inline."""
        if self._async is None:
            options = self.options
            wanted = cfg.COMPACT_INLINE.read(options)
            allowed = cfg.COMPACT_ASYNC.read(options) if cfg.COMPACT_ASYNC.given(options) else True
            self._async = self.config.continuous and self._mor and wanted and allowed
            self._async = self._async and self._buckets()
        return self._async

    def lock(self, table: HudiTable) -> TableLock:
        return TableLock(
            table.location,
            table.location.join(".hoodie"),
            wait_ms=cfg.LOCK_WAIT_MS.read(self.options),
            expire_minutes=cfg.LOCK_EXPIRE_MINUTES.read(self.options),
        )

    def write_options(self) -> dict[str, str]:
        options = dict(self.options)
        if self._async:  # decided (compacts_async) before the first commit
            options[cfg.COMPACT_INLINE.key] = "false"
            options[cfg.COMPACT_ASYNC.key] = "true"
        key_fields = self.key_fields()
        options.setdefault(opt.TABLE_NAME, _default_table_name(self.config.kafka))
        options.update(
            {
                opt.RECORD_KEY: ",".join(key_fields),
                opt.ORDERING: ORDER,
                opt.OPERATION: "upsert",
                opt.DELETE_FIELD: OP,
                opt.DELETE_MARKER: "d",
                opt.META_SYNC: "false",  # the ingest runs the hook after its bookkeeping
            }
        )
        return options

    def _buckets(self) -> bool:
        """The table is written through the bucket index (a Merge-on-Read table the
        ingest creates is, unless ``hoodie.index.type`` says otherwise)."""
        if self._table_buckets is not None:  # a table's index is fixed once it exists
            return self._table_buckets
        options = WriteOptions.parse({**self.write_options(), opt.TABLE_NAME: "t"})
        try:
            table = HudiTable.open(self.path, self.config.storage_options)
        except TableNotFoundError:
            return options.index_type == "BUCKET"
        self._table_buckets = options.for_table(table.config).index_type == "BUCKET"
        return self._table_buckets

    def _arrow_rows(self, rows: list[ChangeEvent]) -> pa.Table:
        """The batch's rows as Arrow, with the table's columns it lacks as nulls and
        shared columns in the table's types (``_align_to_table`` without Spark)."""
        self._check_partition_values(rows)
        return self._aligned(_zoned_timestamps(to_table(rows, self.config.binary_handling_mode)))

    def _arrow_batch(self, reduced: Reduced | ColumnReduced) -> bool:
        """The batch goes as Arrow rows, without Spark (``write_arrow``, which writes
        every table): it needs no stored rows (TOAST columns to fill, a truncate's
        deletes; those are read through Spark)."""
        if isinstance(reduced, ColumnReduced):
            return True
        return not reduced.unresolved and not reduced.truncated_at

    def partition_fields(self) -> list[str]:
        return field_names(cfg.PARTITION_PATH.read(self.config.write_options))

    def stored_types(self) -> dict[str, pa.DataType] | None:
        """The table's data columns and types; None before its first write."""
        try:
            table = HudiTable.open(self.path, self.config.storage_options)
        except TableNotFoundError:
            return None
        if not table.timeline.completed_writes:
            return None
        return {f.name: f.type for f in table_data_fields(table)}

    def _aligned(self, arrow: pa.Table) -> pa.Table:
        return align_to_types(arrow, self.stored_types())

    def _stored(self) -> DataFrame | None:
        try:
            return read(self.spark, self.path, storage_options=self.config.storage_options)
        except TableNotFoundError:
            return None

    def _frame(
        self, rows: list[ChangeEvent], reduced: Reduced, stored: DataFrame | None
    ) -> DataFrame:
        self._check_partition_values(rows)
        missing = [sorted(reduced.unresolved.get(e.key or "", ())) or None for e in rows]
        arrow = to_table(rows, self.config.binary_handling_mode)
        arrow = arrow.append_column(UNAVAILABLE_COLUMNS, pa.array(missing, pa.list_(pa.string())))
        frame = arrow_dataframe(self.spark, arrow)
        key_fields = list(self.key_fields())
        if stored is not None:
            frame = _fill_from_stored(frame, stored, key_fields, reduced)
            frame = _align_to_table(frame, stored)
            if reduced.truncated_at:
                frame = _with_truncate_deletes(frame, stored, key_fields, reduced.truncated_at)
        return frame.drop(UNAVAILABLE_COLUMNS)

    def _check_partition_values(self, rows: list[ChangeEvent]) -> None:
        fields = self.partition_fields()  # a CUSTOM key generator's specs name them field:kind
        for event in rows:
            if event.op == "d" and any(event.row.get(f) is None for f in fields):
                raise EventError(
                    f"{event.position}: the delete has no value for partition field "
                    f"{','.join(fields)} (set REPLICA IDENTITY FULL on the source table, or "
                    "partition by key columns)"
                )

    def sync(self) -> str | None:
        """The post-commit hook (``hoodie.datasource.meta.sync.enable``): its errors, if
        it failed."""
        options = self.options
        if not cfg.META_SYNC.read(options):
            return None
        report = run_post_commit_hook(self.path, options, self.config.storage_options)
        if report is not None and not report.ok:
            return report.error_summary()
        return None


def _default_table_name(kafka: KafkaSettings) -> str:
    """The first topic's table name (``table_name_of``)."""
    return table_name_of((kafka.topics or ("debezium",))[0])


def table_name_of(topic: str) -> str:
    """A topic's table: its last dot-separated part (``dbserver1.inventory.customers``
    -> ``customers``), as Debezium names topics ``<prefix>.<schema>.<table>``."""
    return topic.rsplit(".", 1)[-1]


def _zoned_timestamps(rows: pa.Table) -> pa.Table:
    """Timestamps without a zone as UTC, as the Spark path stores them (its sessions
    run in UTC): the same table either way, and one hudi-rs reads (it does not read
    Avro's ``local-timestamp-*``)."""
    for index, column in enumerate(rows.schema):
        if pa.types.is_timestamp(column.type) and column.type.tz is None:
            zoned = pa.timestamp(column.type.unit, "UTC")
            rows = rows.set_column(index, column.name, rows.column(index).cast(zoned))
    return rows


def _fill_from_stored(
    frame: DataFrame, stored: DataFrame, key_fields: list[str], reduced: Reduced
) -> DataFrame:
    """TOAST columns no event of the batch had: the stored row's value."""
    columns = sorted({c for missing in reduced.unresolved.values() for c in missing})
    columns = [c for c in columns if c in stored.columns]
    if not columns:
        return frame
    prior = stored.select(
        *[F.col(k).alias(f"__key_{k}") for k in key_fields],
        *[F.col(c).alias(f"__stored_{c}") for c in columns],
    )
    condition = [frame[k] == prior[f"__key_{k}"] for k in key_fields]
    joined = frame.join(prior, condition, "left")
    for c in columns:
        unavailable = F.coalesce(F.array_contains(F.col(UNAVAILABLE_COLUMNS), c), F.lit(False))
        joined = joined.withColumn(
            c, F.when(unavailable, F.col(f"__stored_{c}")).otherwise(F.col(c))
        )
    return joined.select(*frame.columns)


def _align_to_table(frame: DataFrame, stored: DataFrame) -> DataFrame:
    """The table's columns the batch lacks become nulls of their type; shared columns
    take the table's type (schema-less events carry only JSON types)."""
    types = {f.name: f.dataType for f in stored.schema.fields if f.name not in META_FIELDS}
    columns = []
    for name, data_type in types.items():
        if name not in frame.columns:
            columns.append(F.lit(None).cast(data_type).alias(name))
        elif frame.schema[name].dataType != data_type:
            columns.append(F.col(name).cast(data_type).alias(name))
        else:
            columns.append(F.col(name))
    columns += [F.col(c) for c in frame.columns if c not in types]
    return frame.select(*columns)


def _with_truncate_deletes(
    frame: DataFrame, stored: DataFrame, key_fields: list[str], order: str
) -> DataFrame:
    """A truncate deletes every stored row the batch does not write again."""
    survivors = frame.select(*[F.col(k).alias(f"__key_{k}") for k in key_fields])
    condition = [stored[k] == survivors[f"__key_{k}"] for k in key_fields]
    gone = stored.join(survivors, condition, "left_anti").drop(*META_FIELDS)
    gone = gone.withColumn(OP, F.lit("d")).withColumn(ORDER, F.lit(order))
    return frame.unionByName(
        gone.select(*[c for c in gone.columns if c in frame.columns]), allowMissingColumns=True
    )
