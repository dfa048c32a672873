"""Write options, by Hudi's names, parsed once and checked against the table.

Into an existing table, what the options leave unsaid is the table's, as in Hudi's Spark
writer: it fills the record key, partition path, key generator, ordering (precombine)
field and table type from ``hoodie.properties`` and lays the table's other properties
(``hoodie.table.name``, hive-style partitioning, partition url-encoding) under the
options (``HoodieSparkSqlWriter.mergeParamsAndGetHoodieConfig``); a stated value that
disagrees with the table is refused (``HoodieWriterUtils.validateTableConfig``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError
from hudi_sync.table.cdc.log import CdcMode, parse_cdc_mode
from hudi_sync.table.config.properties import TableConfig
from hudi_sync.table.keys.partition_paths import (
    KIND_SEPARATOR,
    TIMESTAMP,
    PartitionScheme,
    field_names,
    partition_specs,
)
from hudi_sync.table.keys.timestamp_keygen import KEYGEN_OPTIONS, TimestampPartition
from hudi_sync.table.records.merge import MergeMode, merge_rules, requested_merge_mode
from hudi_sync.table.write.archiver import ArchivalPolicy
from hudi_sync.table.write.create import WRITABLE_KEY_GENERATORS

# The key generators the writer builds keys for (``keys``), by their types and classes
# (Spark's and Avro's); SIMPLE, COMPLEX and NON_PARTITION follow from the numbers of key
# and partition fields, TIMESTAMP and CUSTOM are named.
_KEY_GENERATOR_TYPES = {
    "SimpleKeyGenerator": "SIMPLE",
    "SimpleAvroKeyGenerator": "SIMPLE",
    "ComplexKeyGenerator": "COMPLEX",
    "ComplexAvroKeyGenerator": "COMPLEX",
    "NonpartitionedKeyGenerator": "NON_PARTITION",
    "NonpartitionedAvroKeyGenerator": "NON_PARTITION",
    "TimestampBasedKeyGenerator": "TIMESTAMP",
    "TimestampBasedAvroKeyGenerator": "TIMESTAMP",
    "CustomKeyGenerator": "CUSTOM",
    "CustomAvroKeyGenerator": "CUSTOM",
}
# Named key generators whose partition paths the writer formats (``partition_paths``).
NAMED_KEY_GENERATORS = ("TIMESTAMP", "CUSTOM")

# The keys by the names the writer uses; each is declared (default, type, doc) in
# hudi_sync.config.
TABLE_NAME = cfg.TABLE_NAME.key
RECORD_KEY = cfg.RECORD_KEY.key
ORDERING = cfg.ORDERING.key
PARTITION_PATH = cfg.PARTITION_PATH.key
HIVE_STYLE = cfg.HIVE_STYLE.key
URL_ENCODE = cfg.URL_ENCODE_PARTITIONS.key
OPERATION = cfg.OPERATION.key
TABLE_VERSION = cfg.TABLE_VERSION.key
MAX_FILE_SIZE = cfg.MAX_FILE_SIZE.key
SMALL_FILE_LIMIT = cfg.SMALL_FILE_LIMIT.key
RECORD_SIZE_ESTIMATE = cfg.RECORD_SIZE_ESTIMATE.key
RECORD_SIZE_THRESHOLD = cfg.RECORD_SIZE_THRESHOLD.key
COMMITS_RETAINED = cfg.COMMITS_RETAINED.key
AUTO_CLEAN = cfg.AUTO_CLEAN.key
KEEP_MIN_COMMITS = cfg.KEEP_MIN_COMMITS.key
KEEP_MAX_COMMITS = cfg.KEEP_MAX_COMMITS.key
AUTO_ARCHIVE = cfg.AUTO_ARCHIVE.key
PARTITIONS_TO_DELETE = cfg.PARTITIONS_TO_DELETE.key
META_SYNC = cfg.META_SYNC.key
LOCK_WAIT_MS = cfg.LOCK_WAIT_MS.key
LOCK_EXPIRE_MINUTES = cfg.LOCK_EXPIRE_MINUTES.key
HEARTBEAT_INTERVAL_MS = cfg.HEARTBEAT_INTERVAL_MS.key
HEARTBEAT_MISSES = cfg.HEARTBEAT_MISSES.key
COMBINE_BEFORE_INSERT = cfg.COMBINE_BEFORE_INSERT.key
DELETE_FIELD = cfg.DELETE_FIELD.key
DELETE_MARKER = cfg.DELETE_MARKER.key
CDC_ENABLED = cfg.CDC_ENABLED.key
CDC_MODE = cfg.CDC_MODE.key
TABLE_TYPE = cfg.WRITE_TABLE_TYPE.key
# hudi_sync's own: who merges file groups. "spark" (default): Spark's joins and parquet
# writer, where Spark can open the table and CDC is off, else the Python merge; "python":
# Spark's Python workers with pyarrow, which also write Hudi's key-range footer metadata
# (read only by Hudi's BLOOM index; Spark's default SIMPLE index joins on the keys).
MERGE_ENGINE = cfg.MERGE_ENGINE.key
MERGE_ENGINES = cfg.MERGE_ENGINE.choices
OPERATIONS = cfg.OPERATION.choices


@dataclass(frozen=True)
class WriteOptions:
    """The options of one write (defaults are Hudi's)."""

    table_name: str
    record_key_fields: tuple[str, ...]
    ordering_field: str | None
    partition_fields: tuple[str, ...]
    hive_style_partitioning: bool
    # Partition values escaped as Hudi's urlencode does (``table.partition_encoding``);
    # stored in hoodie.properties, an existing table's unless the options say otherwise.
    url_encode_partitions: bool
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
    table_type: str  # COPY_ON_WRITE or MERGE_ON_READ (a new table's; an existing one's must match)
    log_block_format: str  # MERGE_ON_READ: avro or parquet data blocks
    log_max_size: int  # MERGE_ON_READ: a log file rolls over past this many bytes
    compact_inline: bool  # MERGE_ON_READ: compact after the write when enough deltas piled up
    compact_max_delta_commits: int
    index_type: str  # SIMPLE or BLOOM (keys looked up in base files), or BUCKET
    num_buckets: int  # BUCKET: file groups per partition
    # hoodie.record.merge.mode or a payload class, when given: a new table's rules
    merge_mode: MergeMode | None
    # BUCKET: the record key fields a key's bucket is hashed from, in the key's order
    bucket_hash_fields: tuple[str, ...]
    raw: Mapping[str, str]
    # A complex key generator's keys over one field are field:value (set by the writer
    # once it knows the table: record_keys.names_single_key_field).
    single_key_named: bool = False
    # Each partition field's kind (SIMPLE, or TIMESTAMP: formatted as a date) and the
    # timestamp settings; the key generator named (TIMESTAMP, CUSTOM) or None (inferred).
    partition_kinds: tuple[str, ...] = ()
    timestamp: TimestampPartition | None = None
    key_generator: str | None = None

    @property
    def partition_scheme(self) -> PartitionScheme:
        """How the rows' partition paths are built."""
        return PartitionScheme(
            self.partition_fields,
            self.partition_kinds or ("SIMPLE",) * len(self.partition_fields),
            self.hive_style_partitioning,
            self.url_encode_partitions,
            self.timestamp,
        )

    @classmethod
    def parse(cls, options: Mapping[str, object], table: TableConfig | None = None) -> WriteOptions:
        """The options of a write into the table ``table`` describes (what they leave
        unsaid is the table's, ``inherited``), or, without ``table``, of a write that
        creates its table (a table name and record key are then required, and a stated
        key generator must be the one the writer builds)."""
        return cls._parse(inherited(options, table), creates=table is None)

    @classmethod
    def precheck(cls, options: Mapping[str, object]) -> None:
        """Refuse bad values before a table is opened: what an existing table may
        supply (name, record key, ordering field) is not required yet."""
        stated = {str(k): str(v) for k, v in options.items()}
        hashed = cfg.BUCKET_INDEX_HASH_FIELD.read(stated)  # a subset of the record key
        placeholders = {TABLE_NAME: "-", RECORD_KEY: ",".join(hashed) or "-", ORDERING: "-"}
        unsaid = {k: v for k, v in placeholders.items() if not cfg.option(k).given(stated)}
        cls._parse({**unsaid, **stated}, creates=False, partial=True)

    @classmethod
    def _parse(cls, raw: dict[str, str], creates: bool, partial: bool = False) -> WriteOptions:
        """``partial``: the options alone, before the table that may supply the partition
        fields and timestamp settings is read (those are checked by ``parse``)."""
        operation = cfg.OPERATION.read(raw)
        name = cfg.TABLE_NAME.read(raw)
        if not name:
            raise BadInputError(f"{TABLE_NAME} is required to create a table")
        keys = cfg.RECORD_KEY.read(raw)
        if not keys:
            raise BadInputError(f"{RECORD_KEY} is required to create a table")
        stated = _stated_key_generator(raw)
        named = key_generator_type(stated[1]) if stated else None
        named = named if named in NAMED_KEY_GENERATORS and not partial else None
        specs = cfg.PARTITION_PATH.read(raw)
        if partial:  # a CUSTOM key generator's kinds are checked by parse
            specs = tuple(field_names(specs))
        partitions, kinds = partition_specs(specs, named == "CUSTOM", PARTITION_PATH)
        if named == "TIMESTAMP":
            if len(partitions) != 1 or len(keys) != 1:
                raise BadInputError(
                    f"the TIMESTAMP key generator takes one record key field and one partition "
                    f"field ({RECORD_KEY}={','.join(keys)}, {PARTITION_PATH}={','.join(partitions)}"
                    "); use CUSTOM for more"
                )
            kinds = (TIMESTAMP,)
        timestamp = TimestampPartition.from_options(raw) if TIMESTAMP in kinds else None
        if creates:
            _check_new_key_generator(raw, keys, partitions)
        commits_retained = cfg.COMMITS_RETAINED.read(raw)
        archival = ArchivalPolicy(cfg.KEEP_MIN_COMMITS.read(raw), cfg.KEEP_MAX_COMMITS.read(raw))
        auto_archive = cfg.AUTO_ARCHIVE.read(raw)
        mode = parse_cdc_mode(str(cfg.CDC_MODE.text(raw)))  # refused even when CDC is off
        if auto_archive:
            archival.check(commits_retained)
        delete_field = cfg.DELETE_FIELD.read(raw)
        delete_marker = cfg.DELETE_MARKER.text(raw)  # compared with data: as given
        if (delete_field is None) != (delete_marker is None):
            raise BadInputError(f"{DELETE_FIELD} and {DELETE_MARKER} go together")
        _refuse_base_format_metafiles(raw, "", "leave the option unset or false")
        engine = cfg.MERGE_ENGINE.read(raw)
        merge_mode = requested_merge_mode(raw)
        if merge_mode is MergeMode.EVENT_TIME_ORDERING and not cfg.ORDERING.read(raw):
            raise BadInputError(
                f"{MergeMode.EVENT_TIME_ORDERING} merges by an ordering field: set {ORDERING}"
            )
        return cls(
            table_name=name,
            record_key_fields=keys,
            ordering_field=cfg.ORDERING.read(raw),
            partition_fields=partitions,
            hive_style_partitioning=cfg.HIVE_STYLE.read(raw),
            url_encode_partitions=cfg.URL_ENCODE_PARTITIONS.read(raw),
            operation=operation,
            table_version=cfg.TABLE_VERSION.read(raw),
            max_file_size=cfg.MAX_FILE_SIZE.read(raw),
            small_file_limit=cfg.SMALL_FILE_LIMIT.read(raw),
            record_size_estimate=cfg.RECORD_SIZE_ESTIMATE.read(raw),
            record_size_threshold=cfg.RECORD_SIZE_THRESHOLD.read(raw),
            commits_retained=commits_retained,
            auto_clean=cfg.AUTO_CLEAN.read(raw),
            archival=archival,
            auto_archive=auto_archive,
            partitions_to_delete=cfg.PARTITIONS_TO_DELETE.read(raw),
            meta_sync=cfg.META_SYNC.read(raw),
            lock_wait_ms=cfg.LOCK_WAIT_MS.read(raw),
            lock_expire_minutes=cfg.LOCK_EXPIRE_MINUTES.read(raw),
            heartbeat_interval_ms=cfg.HEARTBEAT_INTERVAL_MS.read(raw),
            heartbeat_misses=cfg.HEARTBEAT_MISSES.read(raw),
            combine_before_insert=cfg.COMBINE_BEFORE_INSERT.read(raw),
            cdc_mode=mode if cfg.CDC_ENABLED.read(raw) else None,
            delete_field=delete_field,
            delete_marker=delete_marker,
            merge_engine=engine,
            table_type=cfg.WRITE_TABLE_TYPE.read(raw),
            log_block_format=cfg.LOG_BLOCK_FORMAT.read(raw),
            log_max_size=cfg.LOG_MAX_SIZE.read(raw),
            compact_inline=cfg.COMPACT_INLINE.read(raw),
            compact_max_delta_commits=cfg.COMPACT_MAX_DELTA_COMMITS.read(raw),
            index_type=cfg.INDEX_TYPE.read(raw),
            num_buckets=cfg.BUCKET_INDEX_NUM_BUCKETS.read(raw),
            merge_mode=merge_mode,
            bucket_hash_fields=bucket_hash_fields(raw, keys),
            raw=raw,
            partition_kinds=kinds,
            timestamp=timestamp,
            key_generator=named,
        )

    def _index_mismatches(self, config: TableConfig) -> list[str]:
        """A table written with the bucket index keeps it, and its bucket count; one
        written without it cannot take it (its file groups are not buckets)."""
        stored = cfg.INDEX_TYPE.read(config.raw) if cfg.INDEX_TYPE.given(config.raw) else None
        if stored != "BUCKET":
            if self.index_type == "BUCKET":
                return [f"{cfg.INDEX_TYPE.key}=BUCKET (table: written without the bucket index)"]
            return []
        buckets = cfg.BUCKET_INDEX_NUM_BUCKETS.read(config.raw)
        mismatches = []
        hashed = bucket_hash_fields(config.raw, tuple(config.record_key_fields))
        if cfg.BUCKET_INDEX_HASH_FIELD.given(self.raw) and self.bucket_hash_fields != hashed:
            mismatches.append(
                f"{cfg.BUCKET_INDEX_HASH_FIELD.key}={','.join(self.bucket_hash_fields)} "
                f"(table: {','.join(hashed)})"
            )
        if cfg.INDEX_TYPE.given(self.raw) and self.index_type != "BUCKET":
            mismatches.append(f"{cfg.INDEX_TYPE.key}={self.index_type} (table: BUCKET)")
        if cfg.BUCKET_INDEX_NUM_BUCKETS.given(self.raw) and self.num_buckets != buckets:
            mismatches.append(
                f"{cfg.BUCKET_INDEX_NUM_BUCKETS.key}={self.num_buckets} (table: {buckets})"
            )
        return mismatches

    def for_table(self, config: TableConfig) -> WriteOptions:
        """These options with the table's own index settings (a table written with the
        bucket index is written with it, whatever the options leave unsaid; the table's
        other settings come with ``parse``)."""
        if not cfg.INDEX_TYPE.given(config.raw) or cfg.INDEX_TYPE.read(config.raw) != "BUCKET":
            return self
        # What the options say must match the table (``check_table``); the rest is the table's.
        index_type = self.index_type if cfg.INDEX_TYPE.given(self.raw) else "BUCKET"
        buckets = self.num_buckets
        if not cfg.BUCKET_INDEX_NUM_BUCKETS.given(self.raw):
            buckets = cfg.BUCKET_INDEX_NUM_BUCKETS.read(config.raw)
        hashed = self.bucket_hash_fields
        if not cfg.BUCKET_INDEX_HASH_FIELD.given(self.raw):
            hashed = bucket_hash_fields(config.raw, tuple(config.record_key_fields))
        return dataclasses.replace(
            self, index_type=index_type, num_buckets=buckets, bucket_hash_fields=hashed
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
        if config.url_encode_partitions != self.url_encode_partitions:
            mismatches.append(
                f"{URL_ENCODE}={str(self.url_encode_partitions).lower()} "
                f"(table: {str(config.url_encode_partitions).lower()})"
            )
        if self.merge_mode is not None:
            table_mode = merge_rules(config, where).mode
            if self.merge_mode != table_mode:
                mismatches.append(f"merge mode {self.merge_mode} (table: {table_mode})")
        mismatches += self._cdc_mismatches(config)
        mismatches += self._key_generator_mismatches(config)
        mismatches += self._index_mismatches(config)
        if cfg.WRITE_TABLE_TYPE.given(self.raw) and self.table_type != config.table_type.value:
            mismatches.append(f"{TABLE_TYPE}={self.table_type} (table: {config.table_type.value})")
        generator = config.key_generator
        if generator and generator.strip() not in WRITABLE_KEY_GENERATORS:
            spec = cfg.KEY_GENERATOR_TYPE if cfg.KEY_GENERATOR_TYPE.given(config.raw) else None
            raise BadInputError(
                f"{where}: {(spec or cfg.KEY_GENERATOR_CLASS).key}={generator}: the writer "
                "builds the keys and partition paths of the SIMPLE, COMPLEX, NON_PARTITION, "
                "TIMESTAMP and CUSTOM key generators only"
            )
        _refuse_base_format_metafiles(
            config.raw, f"{where}: hoodie.properties: ", "write this table with Hudi"
        )
        mismatches += self._timestamp_mismatches(config)
        if mismatches:
            raise BadInputError(f"{where}: options do not match the table: {'; '.join(mismatches)}")

    def _key_generator_mismatches(self, config: TableConfig) -> list[str]:
        """A stated key generator must be the table's (the one its fields imply when
        ``hoodie.properties`` names none)."""
        stated = _stated_key_generator(self.raw)
        if stated is None:
            return []
        spec, value = stated
        table = config.key_generator or built_key_generator(
            tuple(config.record_key_fields), tuple(config.partition_fields)
        )
        if key_generator_type(value) == key_generator_type(table):
            return []
        return [f"{spec.key}={value} (table: {table})"]

    def _timestamp_mismatches(self, config: TableConfig) -> list[str]:
        """The timestamp settings a table keeps (``hoodie.keygen.timebased.*``, a CUSTOM
        table's field kinds) decide its paths: a write may repeat them, not change them."""
        mismatches = []
        specs = cfg.PARTITION_FIELDS.read(config.raw)
        if any(KIND_SEPARATOR in spec for spec in specs):  # a CUSTOM table of version 8+
            kinds = partition_specs(specs, True, cfg.PARTITION_FIELDS.key)[1]
            if self.partition_kinds and self.partition_kinds != kinds:
                named = zip(self.partition_fields, self.partition_kinds, strict=True)
                stated = ",".join(f"{f}:{k}" for f, k in named)
                mismatches.append(f"{PARTITION_PATH}={stated} (table: {','.join(specs)})")
        for spec in KEYGEN_OPTIONS:
            if spec.given(config.raw) and spec.given(self.raw):
                given, stored = str(spec.text(self.raw)), str(spec.text(config.raw))
                if given.strip() != stored.strip():
                    mismatches.append(f"{spec.key}={given} (table: {stored})")
        return mismatches

    def _cdc_mismatches(self, config: TableConfig) -> list[str]:
        """CDC settings are fixed when the table is created; a write may repeat them."""
        if cfg.CDC_ENABLED.given(self.raw) and (self.cdc_mode is not None) != config.cdc_enabled:
            return [
                f"{CDC_ENABLED}={str(self.cdc_mode is not None).lower()} "
                f"(table: {str(config.cdc_enabled).lower()}; fixed at table creation)"
            ]
        if cfg.CDC_MODE.given(self.raw) and config.cdc_enabled:
            asked = parse_cdc_mode(str(cfg.CDC_MODE.text(self.raw)))
            stored = parse_cdc_mode(config.cdc_logging_mode, f"the table's {CDC_MODE}")
            if asked is not stored:
                return [
                    f"{CDC_MODE}={asked.value.lower()} (table: {stored.value.lower()}; "
                    "fixed at table creation)"
                ]
        return []


def bucket_hash_fields(options: Mapping[str, str], record_key: tuple[str, ...]) -> tuple[str, ...]:
    """``hoodie.bucket.index.hash.field`` in the record key's order (Hudi hashes the
    values of the key's pairs whose field it names, in the key's order), all the key's
    fields when unsaid; a field outside the record key is refused, as Hudi does."""
    named = cfg.BUCKET_INDEX_HASH_FIELD.read(options)
    if not named:
        return record_key
    outside = [f for f in named if f not in record_key]
    if outside:
        raise BadInputError(
            f"{cfg.BUCKET_INDEX_HASH_FIELD.key}={','.join(named)}: {', '.join(outside)} is not "
            f"a record key field ({RECORD_KEY}={','.join(record_key)}); the bucket index hashes "
            "a subset of the record key"
        )
    return tuple(f for f in record_key if f in named)


def inherited(options: Mapping[str, object], table: TableConfig | None) -> dict[str, str]:
    """``options`` as text, with what they leave unsaid taken from an existing table's
    ``hoodie.properties`` as Hudi's writer takes it: the table name, record key,
    partition fields, ordering field, hive-style partitioning, partition url-encoding
    table type, key generator and its ``hoodie.keygen.timebased.*`` settings (a stated key
    generator is checked against the table's, ``check_table``; its bucket index settings
    come with ``for_table``)."""
    raw = {str(k): str(v) for k, v in options.items()}
    if table is None:
        return raw
    ordering = table.ordering_fields[0] if table.ordering_fields else None
    generator = key_generator_type(table.key_generator or "")
    if generator in NAMED_KEY_GENERATORS and _stated_key_generator(raw) is None:
        raw[cfg.KEY_GENERATOR_TYPE_OPTION.key] = generator
    for spec in KEYGEN_OPTIONS:
        if spec.given(table.raw) and not spec.given(raw):
            raw[spec.key] = str(spec.text(table.raw))
    # A CUSTOM table of version 8 on keeps its fields' kinds (region:simple,ts:timestamp).
    stored_partitions = ",".join(cfg.PARTITION_FIELDS.read(table.raw))
    from_table = (
        (cfg.TABLE_NAME, table.name),
        (cfg.RECORD_KEY, ",".join(table.record_key_fields) or None),
        (cfg.PARTITION_PATH, stored_partitions or None),
        (cfg.ORDERING, ordering),
        (cfg.HIVE_STYLE, str(table.hive_style_partitioning).lower()),
        (cfg.URL_ENCODE_PARTITIONS, str(table.url_encode_partitions).lower()),
        (cfg.WRITE_TABLE_TYPE, table.table_type.value),
    )
    for spec, value in from_table:
        if value is not None and not spec.given(raw):
            raw[spec.key] = value
    return raw


def key_generator_type(name: str) -> str:
    """A key generator's type (``SIMPLE``...) from its type or class name; another class
    as its short name."""
    short = name.strip().rsplit(".", 1)[-1]
    return _KEY_GENERATOR_TYPES.get(short, short.upper().removesuffix("_AVRO"))


def built_key_generator(record_key: tuple[str, ...], partitions: tuple[str, ...]) -> str:
    """The key generator whose keys and partition paths the writer builds for these
    fields (what a table it creates stores, ``TableSettings.key_generator_type``)."""
    if not partitions:
        return "NON_PARTITION"
    return "COMPLEX" if len(record_key) > 1 or len(partitions) > 1 else "SIMPLE"


def _stated_key_generator(raw: Mapping[str, str]) -> tuple[cfg.OptionSpec[str | None], str] | None:
    """The key generator option the write states (the type before the class), if any."""
    for spec in (cfg.KEY_GENERATOR_TYPE_OPTION, cfg.KEY_GENERATOR_OPTION):
        value = spec.read(raw)
        if value and value.strip():
            return spec, value.strip()
    return None


def _check_new_key_generator(
    raw: Mapping[str, str], record_key: tuple[str, ...], partitions: tuple[str, ...]
) -> None:
    """A table the write creates stores the key generator the writer builds keys with;
    TIMESTAMP and CUSTOM are built as named; another stated one (a user class...) cannot
    be honoured."""
    stated = _stated_key_generator(raw)
    if stated is None:
        return
    spec, value = stated
    built = built_key_generator(record_key, partitions)
    named = key_generator_type(value)
    if named not in NAMED_KEY_GENERATORS and named != built:
        raise BadInputError(
            f"{spec.key}={value}: the writer builds the keys and partition paths of the "
            f"SIMPLE, COMPLEX and NON_PARTITION key generators by the numbers of fields "
            f"({RECORD_KEY}={','.join(record_key)}, {PARTITION_PATH}={','.join(partitions)}: "
            f"{built}), and of TIMESTAMP and CUSTOM as named"
        )


def _refuse_base_format_metafiles(raw: Mapping[str, str], where: str, instead: str) -> None:
    """The writer writes each new partition's metafile as properties text only; Parquet
    metafiles (``hoodie.partition.metafile.use.base.format=true``, stated or kept by the
    table) are refused rather than written in the other format. Writing them would cost a
    table property at creation and a second metafile writer for one setting that only
    Hudi's BigQuery page asks for; tables written so by Hudi are still read and synced."""
    spec = cfg.PARTITION_METAFILE_BASE_FORMAT
    if spec.given(raw) and spec.read(raw):
        raise BadInputError(
            f"{where}{spec.key}=true: the writer writes partition metafiles as properties "
            f"text only (.hoodie_partition_metadata), never Parquet; {instead}"
        )
