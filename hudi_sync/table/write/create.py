"""Creating a table: ``hoodie.properties`` and the ``.hoodie`` skeleton Hudi writers lay down."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from hudi_sync.errors import BadInputError
from hudi_sync.storage import Location, open_location
from hudi_sync.table.cdc_log import ENABLED_KEY as CDC_ENABLED
from hudi_sync.table.cdc_log import MODE_KEY as CDC_MODE
from hudi_sync.table.cdc_log import CdcMode
from hudi_sync.table.properties import LAYOUT_FOR_VERSION, table_checksum

WRITABLE_VERSIONS = (6, 8)
# Key generators by table version: v6 names a class, v8 a type.
_KEY_GENERATOR_CLASSES = {
    "SIMPLE": "org.apache.hudi.keygen.SimpleKeyGenerator",
    "COMPLEX": "org.apache.hudi.keygen.ComplexKeyGenerator",
    "NON_PARTITION": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
}


@dataclass(frozen=True)
class TableSettings:
    """What a writer decides when it creates a Copy-on-Write table."""

    name: str
    version: int
    record_key_fields: tuple[str, ...]
    ordering_field: str | None
    partition_fields: tuple[str, ...]
    hive_style_partitioning: bool
    create_schema: str
    database_name: str = "default"
    cdc_mode: CdcMode | None = None  # hoodie.table.cdc.*: fixed for the table's life

    @property
    def key_generator_type(self) -> str:
        if not self.partition_fields:
            return "NON_PARTITION"
        if len(self.record_key_fields) > 1 or len(self.partition_fields) > 1:
            return "COMPLEX"
        return "SIMPLE"

    def properties(self) -> dict[str, str]:
        """The ``hoodie.properties`` keys Hudi's Spark writer sets for this table."""
        if self.version not in WRITABLE_VERSIONS:
            raise BadInputError(
                f"hoodie.write.table.version={self.version} is not supported "
                f"(write {', '.join(map(str, WRITABLE_VERSIONS))})"
            )
        props = {
            "hoodie.table.name": self.name,
            "hoodie.database.name": self.database_name,
            "hoodie.table.type": "COPY_ON_WRITE",
            "hoodie.table.version": str(self.version),
            "hoodie.timeline.layout.version": str(LAYOUT_FOR_VERSION[self.version]),
            "hoodie.table.recordkey.fields": ",".join(self.record_key_fields),
            "hoodie.datasource.write.hive_style_partitioning": str(
                self.hive_style_partitioning
            ).lower(),
            "hoodie.datasource.write.partitionpath.urlencode": "false",
            "hoodie.datasource.write.drop.partition.columns": "false",
            "hoodie.table.base.file.format": "PARQUET",
            "hoodie.populate.meta.fields": "true",
            "hoodie.table.timeline.timezone": "UTC",
            "hoodie.archivelog.folder": "archived",
            "hoodie.table.create.schema": self.create_schema,
            "hoodie.table.checksum": str(table_checksum(self.database_name, self.name)),
        }
        if self.cdc_mode is not None:
            props[CDC_ENABLED] = "true"
            props[CDC_MODE] = self.cdc_mode.stored_value(self.version)
        if self.ordering_field:
            props["hoodie.table.precombine.field"] = self.ordering_field
        if self.partition_fields:
            props["hoodie.table.partition.fields"] = ",".join(self.partition_fields)
        if self.version == 6:
            props["hoodie.table.keygenerator.class"] = _KEY_GENERATOR_CLASSES[
                self.key_generator_type
            ]
        else:
            props.update(
                {
                    "hoodie.table.keygenerator.type": self.key_generator_type,
                    "hoodie.table.initial.version": str(self.version),
                    "hoodie.timeline.path": "timeline",
                    "hoodie.timeline.history.path": "history",
                    "hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
                }
            )
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
