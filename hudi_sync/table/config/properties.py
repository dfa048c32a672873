"""``hoodie.properties``: Java properties text parsed into a typed table configuration."""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

from hudi_sync import config as cfg
from hudi_sync.config import OptionSpec
from hudi_sync.errors import BadInputError, CorruptTableError, UnsupportedTableError

T = TypeVar("T")

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
        """Typed by the declarations in ``hudi_sync.config``, strictly: a value that
        does not parse is a CorruptTableError naming the file, the key and the value."""

        def read(spec: OptionSpec[T]) -> T:
            try:
                return spec.read(props)
            except BadInputError as exc:
                raise CorruptTableError(f"{where}: {exc}") from None

        def required(spec: OptionSpec[T | None]) -> T:
            value = read(spec) if (spec.text(props) or "").strip() else None
            if value is None:
                raise CorruptTableError(f"{where}: missing required key {spec.key}")
            return value

        name = required(cfg.TABLE_NAME)
        version = required(cfg.TABLE_VERSION_PROPERTY)
        if version not in SUPPORTED_TABLE_VERSIONS:
            raise UnsupportedTableError(
                f"{where}: table version {version} is not supported "
                f"(supported: {', '.join(map(str, SUPPORTED_TABLE_VERSIONS))})"
            )
        read(cfg.BUCKET_INDEX_NUM_BUCKETS)  # checked here, where a bad count names the file
        layout = read(cfg.TIMELINE_LAYOUT)
        if layout is None:
            layout = LAYOUT_FOR_VERSION[version]
        if layout != LAYOUT_FOR_VERSION[version]:
            raise UnsupportedTableError(
                f"{where}: timeline layout {layout} does not match table version {version} "
                f"(expected layout {LAYOUT_FOR_VERSION[version]})"
            )
        type_text = str(cfg.TABLE_TYPE.text(props)).strip().upper()
        try:
            table_type = TableType(type_text)
        except ValueError:
            raise CorruptTableError(
                f"{where}: unknown {cfg.TABLE_TYPE.key} {type_text!r}"
            ) from None

        database = read(cfg.DATABASE_NAME)
        checksum = read(cfg.CHECKSUM)
        if checksum is not None and checksum != table_checksum(database, name):
            raise CorruptTableError(
                f"{where}: {cfg.CHECKSUM.key} {checksum} does not match table name "
                f"{database}.{name} (expected {table_checksum(database, name)})"
            )
        ordering = read(cfg.ORDERING_FIELDS) or read(cfg.PRECOMBINE_FIELD)
        key_generator = read(cfg.KEY_GENERATOR_TYPE) or read(cfg.KEY_GENERATOR_CLASS)
        return cls(
            name=name,
            database_name=database,
            table_type=table_type,
            version=version,
            timeline_layout_version=layout,
            record_key_fields=read(cfg.RECORD_KEY_FIELDS),
            ordering_fields=ordering,
            # A CUSTOM key generator's fields keep their kind (ts:timestamp) from
            # version 8 on; the fields are the names (Hudi's getPartitionFields).
            partition_fields=tuple(f.split(":")[0] for f in read(cfg.PARTITION_FIELDS)),
            key_generator=key_generator,
            hive_style_partitioning=read(cfg.HIVE_STYLE),
            url_encode_partitions=read(cfg.URL_ENCODE_PARTITIONS),
            drop_partition_columns=read(cfg.DROP_PARTITION_COLUMNS),
            base_file_format=str(cfg.BASE_FILE_FORMAT.text(props)).strip().upper(),
            populate_meta_fields=read(cfg.POPULATE_META_FIELDS),
            timeline_timezone=read(cfg.TIMELINE_TIMEZONE).upper(),
            archive_folder=read(cfg.ARCHIVE_FOLDER),
            timeline_path=read(cfg.TIMELINE_PATH),
            timeline_history_path=read(cfg.TIMELINE_HISTORY_PATH),
            initial_version=read(cfg.INITIAL_VERSION),
            record_merge_mode=cfg.RECORD_MERGE_MODE.text(props),
            table_format=cfg.TABLE_FORMAT.text(props),
            cdc_enabled=read(cfg.CDC_ENABLED),
            cdc_logging_mode=str(cfg.CDC_MODE.text(props)).strip().upper(),
            metadata_partitions=read(cfg.METADATA_PARTITIONS),
            checksum=checksum,
            create_schema=cfg.CREATE_SCHEMA.text(props) or None,
            raw=dict(props),
        )
