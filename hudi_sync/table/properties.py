"""``hoodie.properties``: Java properties text parsed into a typed table configuration."""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from hudi_sync.errors import CorruptTableError, UnsupportedTableError

SUPPORTED_TABLE_VERSIONS = (6, 8, 9)
# The timeline layout each table version writes; Hudi refuses a mismatch.
LAYOUT_FOR_VERSION = {6: 1, 8: 2, 9: 2}


class TableType(StrEnum):
    COPY_ON_WRITE = "COPY_ON_WRITE"
    MERGE_ON_READ = "MERGE_ON_READ"


def parse_java_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text: ``=``/``:`` separators, ``#``/``!`` comments,
    backslash escapes (``\\:``, ``\\uXXXX``) and line continuations."""
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        logical.append(pending + line)
        pending = ""
    if pending:
        logical.append(pending)

    result: dict[str, str] = {}
    for line in logical:
        key_chars: list[str] = []
        i = 0
        while i < len(line):
            ch = line[i]
            if ch == "\\" and i + 1 < len(line):
                key_chars.append(line[i : i + 2])
                i += 2
                continue
            if ch in "=: \t":
                break
            key_chars.append(ch)
            i += 1
        rest = line[i:].lstrip(" \t")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t")
        result[_unescape("".join(key_chars))] = _unescape(rest)
    return result


_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)")
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(value: str) -> str:
    def replace(match: re.Match[str]) -> str:
        token = match.group(1)
        if token.startswith("u") and len(token) == 5:
            return chr(int(token[1:], 16))
        return _SIMPLE_ESCAPES.get(token, token)

    return _ESCAPE.sub(replace, value)


def decode_properties(data: bytes, where: str) -> str:
    """The text of a ``hoodie.properties`` file. Java's ``Properties.store`` writes
    printable ASCII only (everything else as ``\\uXXXX``), so a byte that is not UTF-8,
    or a NUL (a file of zeros left by a crash), means the file is not one."""
    if not data.strip():
        raise CorruptTableError(f"{where}: the file is empty")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptTableError(
            f"{where}: not a text file (byte 0x{data[exc.start]:02x} at offset {exc.start} "
            "is not UTF-8)"
        ) from None
    nul = data.find(b"\x00")
    if nul >= 0:
        raise CorruptTableError(f"{where}: not a text file (NUL byte at offset {nul})")
    return text


def table_checksum(database_name: str, table_name: str) -> int:
    """Hudi's ``hoodie.table.checksum``: unsigned CRC32 of ``"<db>.<table>"``."""
    return zlib.crc32(f"{database_name}.{table_name}".encode()) & 0xFFFFFFFF


def _split_fields(value: str | None) -> tuple[str, ...]:
    if not value:
        return ()
    return tuple(f.strip() for f in value.split(",") if f.strip())


def _flag(props: Mapping[str, str], key: str, default: bool) -> bool:
    value = props.get(key)
    if value is None or value.strip() == "":
        return default
    return value.strip().lower() == "true"


@dataclass(frozen=True)
class TableConfig:
    """The keys of ``hoodie.properties`` that hudi_sync uses, typed; ``raw`` keeps them all."""

    name: str
    database_name: str
    table_type: TableType
    version: int
    timeline_layout_version: int
    record_key_fields: tuple[str, ...]
    ordering_fields: tuple[str, ...]
    partition_fields: tuple[str, ...]
    key_generator: str | None
    hive_style_partitioning: bool
    url_encode_partitions: bool
    drop_partition_columns: bool
    base_file_format: str
    populate_meta_fields: bool
    timeline_timezone: str
    archive_folder: str
    timeline_path: str
    timeline_history_path: str
    initial_version: int | None
    record_merge_mode: str | None
    table_format: str | None
    cdc_enabled: bool
    cdc_logging_mode: str
    metadata_partitions: tuple[str, ...]
    checksum: int | None
    create_schema: str | None
    raw: Mapping[str, str]

    @property
    def is_partitioned(self) -> bool:
        return bool(self.partition_fields)

    @property
    def is_mor(self) -> bool:
        return self.table_type is TableType.MERGE_ON_READ

    @classmethod
    def parse(cls, text: str, where: str) -> TableConfig:
        """Build from properties text; ``where`` names the file in error messages."""
        try:
            props = parse_java_properties(text)
        except (ValueError, IndexError) as exc:  # pragma: no cover - defensive
            raise CorruptTableError(f"{where}: cannot parse properties ({exc})") from exc
        return cls.from_mapping(props, where)

    @classmethod
    def from_mapping(cls, props: Mapping[str, str], where: str) -> TableConfig:
        def required(key: str) -> str:
            value = props.get(key, "").strip()
            if not value:
                raise CorruptTableError(f"{where}: missing required key {key}")
            return value

        def integer(key: str, value: str) -> int:
            try:
                return int(value)
            except ValueError:
                raise CorruptTableError(f"{where}: {key}={value!r} is not a number") from None

        name = required("hoodie.table.name")
        version = integer("hoodie.table.version", required("hoodie.table.version"))
        if version not in SUPPORTED_TABLE_VERSIONS:
            raise UnsupportedTableError(
                f"{where}: table version {version} is not supported "
                f"(supported: {', '.join(map(str, SUPPORTED_TABLE_VERSIONS))})"
            )
        layout_text = props.get("hoodie.timeline.layout.version", "").strip()
        layout = (
            integer("hoodie.timeline.layout.version", layout_text)
            if layout_text
            else LAYOUT_FOR_VERSION[version]
        )
        if layout != LAYOUT_FOR_VERSION[version]:
            raise UnsupportedTableError(
                f"{where}: timeline layout {layout} does not match table version {version} "
                f"(expected layout {LAYOUT_FOR_VERSION[version]})"
            )
        type_text = props.get("hoodie.table.type", "COPY_ON_WRITE").strip().upper()
        try:
            table_type = TableType(type_text)
        except ValueError:
            raise CorruptTableError(f"{where}: unknown hoodie.table.type {type_text!r}") from None

        base_format = props.get("hoodie.table.base.file.format", "PARQUET").strip().upper()
        database = props.get("hoodie.database.name", "").strip()
        checksum_text = props.get("hoodie.table.checksum", "").strip()
        checksum = integer("hoodie.table.checksum", checksum_text) if checksum_text else None
        if checksum is not None and checksum != table_checksum(database, name):
            raise CorruptTableError(
                f"{where}: hoodie.table.checksum {checksum} does not match table name "
                f"{database}.{name} (expected {table_checksum(database, name)})"
            )
        ordering = props.get("hoodie.table.ordering.fields") or props.get(
            "hoodie.table.precombine.field"
        )
        key_generator = props.get("hoodie.table.keygenerator.type") or props.get(
            "hoodie.table.keygenerator.class"
        )
        initial = props.get("hoodie.table.initial.version", "").strip()
        return cls(
            name=name,
            database_name=database,
            table_type=table_type,
            version=version,
            timeline_layout_version=layout,
            record_key_fields=_split_fields(props.get("hoodie.table.recordkey.fields")),
            ordering_fields=_split_fields(ordering),
            partition_fields=_split_fields(props.get("hoodie.table.partition.fields")),
            key_generator=key_generator.strip() if key_generator else None,
            hive_style_partitioning=_flag(
                props, "hoodie.datasource.write.hive_style_partitioning", False
            ),
            url_encode_partitions=_flag(
                props, "hoodie.datasource.write.partitionpath.urlencode", False
            ),
            drop_partition_columns=_flag(
                props, "hoodie.datasource.write.drop.partition.columns", False
            ),
            base_file_format=base_format,
            populate_meta_fields=_flag(props, "hoodie.populate.meta.fields", True),
            timeline_timezone=props.get("hoodie.table.timeline.timezone", "LOCAL").strip().upper()
            or "LOCAL",
            archive_folder=props.get("hoodie.archivelog.folder", "archived").strip() or "archived",
            timeline_path=props.get("hoodie.timeline.path", "timeline").strip() or "timeline",
            timeline_history_path=props.get("hoodie.timeline.history.path", "history").strip()
            or "history",
            initial_version=integer("hoodie.table.initial.version", initial) if initial else None,
            record_merge_mode=props.get("hoodie.record.merge.mode"),
            table_format=props.get("hoodie.table.format"),
            cdc_enabled=_flag(props, "hoodie.table.cdc.enabled", False),
            cdc_logging_mode=props.get(
                "hoodie.table.cdc.supplemental.logging.mode", "DATA_BEFORE_AFTER"
            )
            .strip()
            .upper(),
            metadata_partitions=_split_fields(props.get("hoodie.table.metadata.partitions")),
            checksum=checksum,
            create_schema=props.get("hoodie.table.create.schema") or None,
            raw=dict(props),
        )
