"""Hudi data file names: base files and log files."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from hudi_sync.errors import CorruptTableError

# Hudi writes this file (with a format's extension in newer versions) into every
# partition folder: it is what makes a folder a partition.
PARTITION_METAFILE_PREFIX = ".hoodie_partition_metadata"

# <fileId>_<writeToken>_<instantTime>.<ext>; file ids never contain "_".
_BASE_FILE = re.compile(
    r"^(?P<file_id>[^_]+)_(?P<token>[^_]+)_(?P<instant>\d+)\.(?P<ext>[A-Za-z]+)$"
)
# .<fileId>_<instant>.log.<version>[_<writeToken>][.cdc|-cdc]
_LOG_FILE = re.compile(
    r"^\.(?P<file_id>.+)_(?P<instant>[^_.]*)\.(?P<kind>log|archive)\.(?P<version>\d+)"
    r"(?:_(?P<token>\d+-\d+-\d+))?(?P<cdc>[.-]cdc)?$"
)


class BaseFile(NamedTuple):
    """A parsed base file name (a tuple: tables list millions of them)."""

    name: str
    file_id: str
    write_token: str
    instant: str
    size: int = 0


@dataclass(frozen=True)
class LogFile:
    name: str
    file_id: str
    instant: str
    version: int
    write_token: str
    is_cdc: bool
    size: int = 0


def parse_base_file(name: str, size: int = 0) -> BaseFile:
    file_id, token, instant = base_file_parts(name)
    return BaseFile(name, file_id, token, instant, size)


def base_file_key(name: str) -> tuple[str, str]:
    """``(file id, instant)`` of a base file name, for listings too large for tuples."""
    file_id, _, instant = base_file_parts(name)
    return file_id, instant


def base_file_parts(name: str) -> tuple[str, str, str]:
    """``(file id, write token, instant)`` of a base file name."""
    # str.split is several times faster than the regex; the regex judges odd names.
    stem, dot, extension = name.rpartition(".")
    parts = stem.split("_")
    if dot and len(parts) == 3 and all(parts) and parts[2].isdigit() and extension.isalpha():
        return parts[0], parts[1], parts[2]
    match = _BASE_FILE.match(name)
    if match is None:
        raise CorruptTableError(
            f"base file name {name!r} is not <fileId>_<writeToken>_<instant>.<ext>"
        )
    return match["file_id"], match["token"], match["instant"]


def parse_log_file(name: str, size: int = 0) -> LogFile | None:
    match = _LOG_FILE.match(name)
    if match is None or match["kind"] != "log":
        return None
    return LogFile(
        name=name,
        file_id=match["file_id"],
        instant=match["instant"],
        version=int(match["version"]),
        write_token=match["token"] or "",
        is_cdc=match["cdc"] is not None,
        size=size,
    )


def is_log_file_name(name: str) -> bool:
    return name.startswith(".") and ".log." in name
