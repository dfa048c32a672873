"""Write options, by Hudi's names, parsed once and checked against the table."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hudi_sync.errors import BadInputError
from hudi_sync.table.cdc_log import ENABLED_KEY as CDC_ENABLED
from hudi_sync.table.cdc_log import MODE_KEY as CDC_MODE
from hudi_sync.table.cdc_log import CdcMode, parse_cdc_mode
from hudi_sync.table.properties import TableConfig
from hudi_sync.table.write.archiver import ArchivalPolicy

TABLE_NAME = "hoodie.table.name"
RECORD_KEY = "hoodie.datasource.write.recordkey.field"
ORDERING = "hoodie.datasource.write.precombine.field"
PARTITION_PATH = "hoodie.datasource.write.partitionpath.field"
HIVE_STYLE = "hoodie.datasource.write.hive_style_partitioning"
OPERATION = "hoodie.datasource.write.operation"
TABLE_VERSION = "hoodie.write.table.version"
MAX_FILE_SIZE = "hoodie.parquet.max.file.size"
SMALL_FILE_LIMIT = "hoodie.parquet.small.file.limit"
RECORD_SIZE_ESTIMATE = "hoodie.copyonwrite.record.size.estimate"
RECORD_SIZE_THRESHOLD = "hoodie.record.size.estimation.threshold"
COMMITS_RETAINED = "hoodie.cleaner.commits.retained"
AUTO_CLEAN = "hoodie.clean.automatic"
KEEP_MIN_COMMITS = "hoodie.keep.min.commits"
KEEP_MAX_COMMITS = "hoodie.keep.max.commits"
AUTO_ARCHIVE = "hoodie.archive.automatic"
PARTITIONS_TO_DELETE = "hoodie.datasource.write.partitions.to.delete"
META_SYNC = "hoodie.datasource.meta.sync.enable"
LOCK_WAIT_MS = "hoodie.write.lock.wait_time_ms"
LOCK_EXPIRE_MINUTES = "hoodie.write.lock.filesystem.expire"
HEARTBEAT_INTERVAL_MS = "hoodie.client.heartbeat.interval_in_ms"
HEARTBEAT_MISSES = "hoodie.client.heartbeat.tolerable.misses"
COMBINE_BEFORE_INSERT = "hoodie.combine.before.insert"
DELETE_FIELD = "hoodie.payload.delete.field"
DELETE_MARKER = "hoodie.payload.delete.marker"
# hudi_sync's own: who merges file groups. "spark" (default): Spark's joins and parquet
# writer, where Spark can open the table and CDC is off, else the Python merge; "python":
# Spark's Python workers with pyarrow, which also write Hudi's key-range footer metadata
# (read only by Hudi's BLOOM index; Spark's default SIMPLE index joins on the keys).
MERGE_ENGINE = "hudi_sync.write.merge.engine"
MERGE_ENGINES = ("spark", "python")

OPERATIONS = (
    "insert",
    "upsert",
    "delete",
    "bulk_insert",
    "insert_overwrite",
    "insert_overwrite_table",
    "delete_partition",
)


def _split(value: str | None) -> tuple[str, ...]:
    return tuple(f.strip() for f in (value or "").split(",") if f.strip())


def _flag(options: Mapping[str, str], key: str, default: bool) -> bool:
    value = str(options.get(key, str(default))).strip().lower()
    if value not in ("true", "false"):
        raise BadInputError(f"{key}={options.get(key)!r} must be true or false")
    return value == "true"


def _integer(options: Mapping[str, str], key: str, default: int, minimum: int = 0) -> int:
    return int(_number(options, key, default, minimum, whole=True))


def _fraction(options: Mapping[str, str], key: str, default: float) -> float:
    return _number(options, key, default, 0, whole=False)


def _number(
    options: Mapping[str, str], key: str, default: float, minimum: int, whole: bool
) -> float:
    raw = options.get(key)
    if raw is None:
        return default
    try:
        value = int(str(raw).strip()) if whole else float(str(raw).strip())
    except ValueError:
        kind = "a whole number" if whole else "a number"
        raise BadInputError(f"{key}={raw!r} is not {kind}") from None
    if not value >= minimum:  # also refuses NaN
        raise BadInputError(f"{key}={value} must be at least {minimum}")
    return value


@dataclass(frozen=True)
class WriteOptions:
    """The options of one write (defaults are Hudi's)."""

    table_name: str
    record_key_fields: tuple[str, ...]
    ordering_field: str | None
    partition_fields: tuple[str, ...]
    hive_style_partitioning: bool
    operation: str
    table_version: int
    max_file_size: int
    small_file_limit: int
    record_size_estimate: int
    # a commit informs the record size only if it wrote more than this * small_file_limit
    record_size_threshold: float
    commits_retained: int
    auto_clean: bool
    archival: ArchivalPolicy
    auto_archive: bool
    partitions_to_delete: tuple[str, ...]
    meta_sync: bool
    lock_wait_ms: int
    lock_expire_minutes: int  # 0: a lock never expires (Hudi's default)
    heartbeat_interval_ms: int
    heartbeat_misses: int
    combine_before_insert: bool
    cdc_mode: CdcMode | None  # None: CDC off
    delete_field: str | None  # rows whose delete_field equals delete_marker are deletes
    delete_marker: str | None
    merge_engine: str  # one of MERGE_ENGINES
    raw: Mapping[str, str]

    @classmethod
    def parse(cls, options: Mapping[str, object]) -> WriteOptions:
        raw = {str(k): str(v) for k, v in options.items()}
        operation = raw.get(OPERATION, "upsert").strip().lower()
        if operation not in OPERATIONS:
            raise BadInputError(f"{OPERATION}={operation!r} is not one of {', '.join(OPERATIONS)}")
        name = raw.get(TABLE_NAME, "").strip()
        if not name:
            raise BadInputError(f"{TABLE_NAME} is required")
        keys = _split(raw.get(RECORD_KEY))
        if not keys:
            raise BadInputError(f"{RECORD_KEY} is required")
        commits_retained = _integer(raw, COMMITS_RETAINED, 10, minimum=1)
        archival = ArchivalPolicy(
            _integer(raw, KEEP_MIN_COMMITS, 20, minimum=1),
            _integer(raw, KEEP_MAX_COMMITS, 30, minimum=1),
        )
        auto_archive = _flag(raw, AUTO_ARCHIVE, True)
        mode = parse_cdc_mode(raw.get(CDC_MODE, "DATA_BEFORE_AFTER"))  # refused even when off
        if auto_archive:
            archival.check(commits_retained)
        delete_field = (raw.get(DELETE_FIELD) or "").strip() or None
        delete_marker = raw.get(DELETE_MARKER)
        if (delete_field is None) != (delete_marker is None):
            raise BadInputError(f"{DELETE_FIELD} and {DELETE_MARKER} go together")
        engine = raw.get(MERGE_ENGINE, "spark").strip().lower()
        if engine not in MERGE_ENGINES:
            raise BadInputError(
                f"{MERGE_ENGINE}={engine!r} is not one of {', '.join(MERGE_ENGINES)}"
            )
        return cls(
            table_name=name,
            record_key_fields=keys,
            ordering_field=(raw.get(ORDERING) or "").strip() or None,
            partition_fields=_split(raw.get(PARTITION_PATH)),
            hive_style_partitioning=_flag(raw, HIVE_STYLE, False),
            operation=operation,
            table_version=_integer(raw, TABLE_VERSION, 6),
            max_file_size=_integer(raw, MAX_FILE_SIZE, 120 * 1024 * 1024, minimum=1),
            small_file_limit=_integer(raw, SMALL_FILE_LIMIT, 100 * 1024 * 1024),
            record_size_estimate=_integer(raw, RECORD_SIZE_ESTIMATE, 1024, minimum=1),
            record_size_threshold=_fraction(raw, RECORD_SIZE_THRESHOLD, 1.0),
            commits_retained=commits_retained,
            auto_clean=_flag(raw, AUTO_CLEAN, True),
            archival=archival,
            auto_archive=auto_archive,
            partitions_to_delete=_split(raw.get(PARTITIONS_TO_DELETE)),
            meta_sync=_flag(raw, META_SYNC, False),
            lock_wait_ms=_integer(raw, LOCK_WAIT_MS, 60_000),
            lock_expire_minutes=_integer(raw, LOCK_EXPIRE_MINUTES, 0),
            heartbeat_interval_ms=_integer(raw, HEARTBEAT_INTERVAL_MS, 60_000, minimum=1),
            heartbeat_misses=_integer(raw, HEARTBEAT_MISSES, 2),
            combine_before_insert=_flag(raw, COMBINE_BEFORE_INSERT, False),
            cdc_mode=mode if _flag(raw, CDC_ENABLED, False) else None,
            delete_field=delete_field,
            delete_marker=delete_marker,
            merge_engine=engine,
            raw=raw,
        )

    def check_table(self, config: TableConfig, where: str) -> None:
        """An existing table's key, partition and ordering settings must match."""
        mismatches = []
        if config.name != self.table_name:
            mismatches.append(f"{TABLE_NAME}={self.table_name} (table: {config.name})")
        if tuple(config.record_key_fields) != self.record_key_fields:
            mismatches.append(
                f"{RECORD_KEY}={','.join(self.record_key_fields)} "
                f"(table: {','.join(config.record_key_fields)})"
            )
        if tuple(config.partition_fields) != self.partition_fields:
            mismatches.append(
                f"{PARTITION_PATH}={','.join(self.partition_fields)} "
                f"(table: {','.join(config.partition_fields)})"
            )
        table_ordering = config.ordering_fields[0] if config.ordering_fields else None
        if self.ordering_field and self.ordering_field != table_ordering:
            mismatches.append(f"{ORDERING}={self.ordering_field} (table: {table_ordering})")
        if config.hive_style_partitioning != self.hive_style_partitioning:
            mismatches.append(
                f"{HIVE_STYLE}={str(self.hive_style_partitioning).lower()} "
                f"(table: {str(config.hive_style_partitioning).lower()})"
            )
        mismatches += self._cdc_mismatches(config)
        if config.is_mor:
            mismatches.append("the table is MERGE_ON_READ (hudi_sync writes COPY_ON_WRITE)")
        if mismatches:
            raise BadInputError(f"{where}: options do not match the table: {'; '.join(mismatches)}")

    def _cdc_mismatches(self, config: TableConfig) -> list[str]:
        """CDC settings are fixed when the table is created; a write may repeat them."""
        if CDC_ENABLED in self.raw and (self.cdc_mode is not None) != config.cdc_enabled:
            return [
                f"{CDC_ENABLED}={str(self.cdc_mode is not None).lower()} "
                f"(table: {str(config.cdc_enabled).lower()}; fixed at table creation)"
            ]
        if CDC_MODE in self.raw and config.cdc_enabled:
            asked = parse_cdc_mode(self.raw[CDC_MODE])
            stored = parse_cdc_mode(config.cdc_logging_mode, f"the table's {CDC_MODE}")
            if asked is not stored:
                return [
                    f"{CDC_MODE}={asked.value.lower()} (table: {stored.value.lower()}; "
                    "fixed at table creation)"
                ]
        return []
