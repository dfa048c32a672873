"""Creating a table: ``hoodie.properties`` and the ``.hoodie`` skeleton Hudi writers lay down."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError
from hudi_sync.storage import Location, open_location
from hudi_sync.table.cdc.log import CdcMode
from hudi_sync.table.config.properties import LAYOUT_FOR_VERSION, table_checksum
from hudi_sync.table.records.merge import (
    PAYLOAD_MERGER_STRATEGY,
    PAYLOAD_OF_MODE,
    STRATEGY_OF_MODE,
    MergeMode,
)

WRITABLE_VERSIONS = (6, 8, 9)
# Hudi 1.1 (version 9) names a table's format; "native" is Hudi's own timeline and files.
NATIVE_TABLE_FORMAT = "native"
# Hudi 0.14-0.15's spelling of the merger strategy key (MERGE_STRATEGY_ID's alternate).
_V6_MERGER_STRATEGY = cfg.MERGE_STRATEGY_ID.names[1]
# Key generators by table version: v6 names a class, v8 a type.
_KEY_GENERATOR_CLASSES = {
    "SIMPLE": "org.apache.hudi.keygen.SimpleKeyGenerator",
    "COMPLEX": "org.apache.hudi.keygen.ComplexKeyGenerator",
    "NON_PARTITION": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
    "TIMESTAMP": "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
    "CUSTOM": "org.apache.hudi.keygen.CustomKeyGenerator",
}
# The key generators whose record keys and partition paths the writer builds
# (``hudi_sync.spark.writing.keys``, ``hudi_sync.table.keys.partition_paths``), by the type
# (v8+; Hudi's ``*_AVRO`` types too) or a class (v6; Spark's or Avro's) a table names.
# Others (user classes) format values by rules the writer does not know.
WRITABLE_KEY_GENERATORS = frozenset(
    [
        *_KEY_GENERATOR_CLASSES,
        *(f"{t}_AVRO" for t in _KEY_GENERATOR_CLASSES),
        *_KEY_GENERATOR_CLASSES.values(),
        *(c.replace("KeyGenerator", "AvroKeyGenerator") for c in _KEY_GENERATOR_CLASSES.values()),
    ]
)


@dataclass(frozen=True)
class TableSettings:
    """What a writer decides when it creates a table."""

    name: str
    version: int
    record_key_fields: tuple[str, ...]
    ordering_field: str | None
    partition_fields: tuple[str, ...]
    hive_style_partitioning: bool
    create_schema: str
    database_name: str = "default"
    cdc_mode: CdcMode | None = None  # hoodie.table.cdc.*: fixed for the table's life
    table_type: str = "COPY_ON_WRITE"  # or MERGE_ON_READ
    # The bucket index's bucket count, kept in the properties so that every later
    # write finds its file groups the same way (None: keys are looked up).
    num_buckets: int | None = None
    # Stored as the payload class (and merge mode, strategy id) Hudi applies it by.
    merge_mode: MergeMode = MergeMode.EVENT_TIME_ORDERING
    # hoodie.datasource.write.partitionpath.urlencode: partition values are escaped.
    url_encode_partitions: bool = False
    # The bucket index's hash fields when a subset of the record key (kept likewise).
    bucket_hash_fields: tuple[str, ...] = ()
    # A named key generator (TIMESTAMP, CUSTOM; else inferred from the fields), its
    # partition fields' kinds (CUSTOM: kept as field:kind from version 8 on, as Hudi
    # keeps them) and its hoodie.keygen.timebased.* settings (kept as given).
    named_key_generator: str | None = None
    partition_kinds: tuple[str, ...] = ()
    key_generator_settings: Mapping[str, str] = field(default_factory=dict)

    @property
    def key_generator_type(self) -> str:
        if self.named_key_generator:
            return self.named_key_generator
        if not self.partition_fields:
            return "NON_PARTITION"
        if len(self.record_key_fields) > 1 or len(self.partition_fields) > 1:
            return "COMPLEX"
        return "SIMPLE"

    def properties(self) -> dict[str, str]:
        """The ``hoodie.properties`` keys Hudi's Spark writer sets for this table."""
        if self.version not in WRITABLE_VERSIONS:
            raise BadInputError(
                f"{cfg.TABLE_VERSION.key}={self.version} is not supported "
                f"(write {', '.join(map(str, WRITABLE_VERSIONS))})"
            )
        props = {
            cfg.TABLE_NAME.key: self.name,
            cfg.DATABASE_NAME.key: self.database_name,
            cfg.TABLE_TYPE.key: self.table_type,
            cfg.TABLE_VERSION_PROPERTY.key: str(self.version),
            cfg.TIMELINE_LAYOUT.key: str(LAYOUT_FOR_VERSION[self.version]),
            cfg.RECORD_KEY_FIELDS.key: ",".join(self.record_key_fields),
            cfg.HIVE_STYLE.key: str(self.hive_style_partitioning).lower(),
            cfg.URL_ENCODE_PARTITIONS.key: str(self.url_encode_partitions).lower(),
            cfg.DROP_PARTITION_COLUMNS.key: "false",
            cfg.BASE_FILE_FORMAT.key: "PARQUET",
            cfg.POPULATE_META_FIELDS.key: "true",
            cfg.TIMELINE_TIMEZONE.key: "UTC",
            cfg.ARCHIVE_FOLDER.key: "archived",
            cfg.CREATE_SCHEMA.key: self.create_schema,
            cfg.CHECKSUM.key: str(table_checksum(self.database_name, self.name)),
        }
        if self.num_buckets is not None:
            props[cfg.INDEX_TYPE.key] = "BUCKET"
            props[cfg.BUCKET_INDEX_NUM_BUCKETS.key] = str(self.num_buckets)
            if self.bucket_hash_fields and self.bucket_hash_fields != self.record_key_fields:
                props[cfg.BUCKET_INDEX_HASH_FIELD.key] = ",".join(self.bucket_hash_fields)
        if self.cdc_mode is not None:
            props[cfg.CDC_ENABLED.key] = "true"
            props[cfg.CDC_MODE.key] = self.cdc_mode.stored_value(self.version)
        if self.partition_fields:
            fields = self.partition_fields
            if self.key_generator_type == "CUSTOM" and self.version >= 8:
                kinds = zip(fields, self.partition_kinds, strict=True)
                fields = tuple(f"{name}:{kind.lower()}" for name, kind in kinds)
            props[cfg.PARTITION_FIELDS.key] = ",".join(fields)
        props.update(self.key_generator_settings)
        if self.version == 6:
            props[cfg.KEY_GENERATOR_CLASS.key] = _KEY_GENERATOR_CLASSES[self.key_generator_type]
            props[_V6_MERGER_STRATEGY] = PAYLOAD_MERGER_STRATEGY
        else:
            props.update(
                {
                    cfg.KEY_GENERATOR_TYPE.key: self.key_generator_type,
                    cfg.INITIAL_VERSION.key: str(self.version),
                    cfg.TIMELINE_PATH.key: "timeline",
                    cfg.TIMELINE_HISTORY_PATH.key: "history",
                    cfg.RECORD_MERGE_MODE.key: self.merge_mode.value,
                }
            )
        props.update(self._merge_properties())
        return props

    def _merge_properties(self) -> dict[str, str]:
        """The ordering field and the keys naming how records merge. Up to version 8 the
        ordering field is the precombine field and a payload class (every version) and a
        merger strategy id (1.0) restate the merge mode. Version 9 (Hudi 1.1) renames the
        field ``hoodie.table.ordering.fields`` and, for the two built-in modes, keeps the
        merge mode alone (no payload class, no strategy id: what Hudi 1.1 writes, see the
        v9 fixtures), plus the table format."""
        props: dict[str, str] = {}
        if self.version >= 9:
            if self.ordering_field:
                props[cfg.ORDERING_FIELDS.key] = self.ordering_field
            props[cfg.TABLE_FORMAT.key] = NATIVE_TABLE_FORMAT
            return props
        if self.ordering_field:
            props[cfg.PRECOMBINE_FIELD.key] = self.ordering_field
        props[cfg.PAYLOAD_CLASS.key] = PAYLOAD_OF_MODE[self.merge_mode]
        if self.version >= 8:
            props[cfg.MERGE_STRATEGY_ID.key] = STRATEGY_OF_MODE[self.merge_mode]
        return props


def java_properties_text(props: Mapping[str, str]) -> str:
    """Java ``.properties`` text (``=``, ``:``, ``#``, ``!`` and backslashes escaped)."""

    def escape(text: str) -> str:
        out = []
        for ch in text:
            if ch in "\\=:#!":
                out.append("\\" + ch)
            elif ch == "\n":
                out.append("\\n")
            elif ord(ch) > 126:
                out.append(f"\\u{ord(ch):04x}")
            else:
                out.append(ch)
        return "".join(out)

    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    lines = [f"#Properties saved on {stamp}"]
    lines += [f"{escape(k)}={escape(v)}" for k, v in sorted(props.items())]
    return "\n".join(lines) + "\n"


def create_table(base: Location | str, settings: TableSettings) -> None:
    """Lay down ``.hoodie`` with its properties, the last step of table creation:
    a folder without ``hoodie.properties`` is not a table, so a crash leaves none.
    ``base`` is the table's location (or a local path). Object stores have no folders:
    there only ``hoodie.properties`` is written (a conditional create, so of two
    writers creating the table one gets ``FileExistsError``)."""
    location = open_location(base) if isinstance(base, str) else base
    hoodie = location.join(".hoodie")
    timeline = hoodie if settings.version == 6 else f"{hoodie}/timeline"
    history = f"{hoodie}/archived" if settings.version == 6 else f"{timeline}/history"
    for folder in (timeline, history, f"{hoodie}/.aux", f"{hoodie}/.temp"):
        location.ensure_folder(folder)
    location.write_file(
        f"{hoodie}/hoodie.properties",
        java_properties_text(settings.properties()).encode(),
        exclusive=True,
    )


def partition_metadata_text(instant: str, depth: int) -> str:
    """``.hoodie_partition_metadata``: which commit created the partition, how deep it is."""
    stamp = dt.datetime.now(dt.UTC).strftime("%a %b %d %H:%M:%S UTC %Y")
    return f"#partition metadata\n#{stamp}\ncommitTime={instant}\npartitionDepth={depth}\n"
