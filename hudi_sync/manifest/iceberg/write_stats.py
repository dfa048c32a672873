"""Where a base file's Iceberg metrics come from: its Parquet footer, or the commit
metadata of the write that made it.

Reading every footer is what a first publication of a large table costs (100,000 files:
100,000 opens and footer parses, against a manifest sync that only lists names). Hudi's
commit metadata already holds, for every base file a commit wrote, ``numWrites`` (the
records written into that file version: every handle that writes a base file, create,
merge, the bulk-insert row writer, compaction and clustering, sets it to the records it
wrote) and ``fileSizeInBytes``. Those are the two metrics Iceberg requires; column
metrics (value and null counts, bounds) are optional and only prune. ``COMMIT`` takes
record counts and sizes from there and opens no file; a file whose write stat is
missing (an archived commit, a stat naming another path), ambiguous, without records
while the file has bytes, or whose size disagrees with the file's is read from its
footer as ``FOOTERS`` reads every file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import orjson

from hudi_sync.errors import CorruptTableError
from hudi_sync.manifest.iceberg.data_files import (
    DATA,
    DataFile,
    SchemaFields,
    counted_file,
    parquet_data_files,
)
from hudi_sync.storage import Location
from hudi_sync.table import HudiTable
from hudi_sync.table.timeline.commit_metadata import AVRO_MAGIC, decode_instant_record

FOOTERS, COMMIT = "footers", "commit"
METRICS_SOURCES = (FOOTERS, COMMIT)


class BaseFileItem(NamedTuple):
    """A base file to enter: its path under the table, partition values, the instant
    its name carries (the write that made it) and its size where the listing gave one
    (0: unknown). A tuple: a first publication makes one a base file."""

    relative_path: str
    partition: tuple[Any, ...]
    instant: str
    listed_size: int = 0


def base_data_files(
    table: HudiTable,
    items: Sequence[BaseFileItem],
    schema: SchemaFields,
    source: str = FOOTERS,
) -> list[DataFile]:
    """The entries of ``items``, in order, with metrics from ``source`` (``FOOTERS`` or
    ``COMMIT``, module docstring)."""
    if source not in METRICS_SOURCES:
        raise ValueError(f"unknown metrics source {source!r}")
    if source == FOOTERS or not items:
        footer_items = [(item.relative_path, item.partition) for item in items]
        return parquet_data_files(table.location, footer_items, schema)
    written = written_files(table, {item.instant for item in items})
    location = table.location
    uri_of = location.uri_of
    size_of = _sizes(location)
    found: list[DataFile | None] = []
    unread: list[int] = []
    for index, (relative, partition, _, listed_size) in enumerate(items):
        stat = written.get(relative)
        made = None
        if stat is not None:
            records, size = stat
            actual = listed_size or size_of(relative)
            if size == actual and (records > 0 or size == 0):
                made = counted_file(DATA, uri_of(relative), records, size, partition)
        if made is None:
            unread.append(index)
        found.append(made)
    if unread:
        footer_items = [(items[i].relative_path, items[i].partition) for i in unread]
        read = parquet_data_files(location, footer_items, schema)
        for index, made in zip(unread, read, strict=True):
            found[index] = made
    return [made for made in found if made is not None]


def _sizes(location: Location) -> Callable[[str], int]:
    """A file's size by its path under the table (a listed name: the listing gave no
    size). Each folder is checked to stay inside the table once, not once a file (a
    first publication looks up 100,000 sizes in 1,000 folders); locally a plain stat."""
    folders: dict[str, str] = {}  # partition -> its folder on the file system, then "/"
    where, local = location.uri, location.is_local

    def size_of(relative: str) -> int:
        partition, _, name = relative.rpartition("/")
        folder = folders.get(partition)
        if folder is None:
            inside = location.inside(partition, where) if partition else location.path
            folder = folders[partition] = inside.rstrip("/") + "/"
        if name in ("", ".", "..") or "\x00" in name:
            location.inside(relative, where)  # refused in one line
        path = folder + name
        return os.stat(path).st_size if local else location.size(path)

    return size_of


def written_files(table: HudiTable, instants: set[str]) -> dict[str, tuple[int, int]]:
    """``relative path -> (records, bytes)`` of the base files the completed writes at
    ``instants`` (requested times) wrote, as their commit metadata states; a path two
    stats name with different values is left out (its footer decides). Only these
    fields of each stat are looked at (no ``WriteStat`` built: a first publication reads
    every commit that wrote a live base file), and the paths are only compared with the
    listing's, never joined to the table."""
    timeline = table.timeline
    chosen = [i for i in timeline.completed_writes if i.requested_time in instants]
    location = timeline.location
    if location.is_local:
        folder = timeline.folder
        contents = [location.read_file(f"{folder}/{i.file_name}") for i in chosen]
    else:  # an object store: the GETs wait together
        with ThreadPoolExecutor(max_workers=min(_STORE_THREADS, max(1, len(chosen)))) as pool:
            contents = list(pool.map(timeline.read_bytes, chosen))
    found: dict[str, tuple[int, int]] = {}
    ambiguous: set[str] = set()
    for instant, data in zip(chosen, contents, strict=True):
        where = f"{location.uri}: {instant.action} instant {instant.requested_time}"
        for path, value in _base_file_stats(data, where):
            if found.setdefault(path, value) != value:
                ambiguous.add(path)
    for path in ambiguous:
        del found[path]
    return found


_STORE_THREADS = 16


def _base_file_stats(data: bytes, where: str) -> list[tuple[str, tuple[int, int]]]:
    """``(path, (numWrites, fileSizeInBytes))`` of each write stat of one commit file
    that is not a log append's (a log append names its log file)."""
    if not data.strip():
        return []
    record: Any = None
    if not data.startswith(AVRO_MAGIC):
        try:  # orjson: 1,024 levels deep at most, 64-bit integers; else the usual decoder
            record = orjson.loads(data)
        except orjson.JSONDecodeError:
            record = None
    if not isinstance(record, dict):
        record = decode_instant_record(data, where)
    partitions = record.get("partitionToWriteStats") or {}
    if not isinstance(partitions, dict):
        raise CorruptTableError(f"{where}: partitionToWriteStats is not a map")
    found: list[tuple[str, tuple[int, int]]] = []
    append = found.append
    for stats in partitions.values():
        if not isinstance(stats, list):
            raise CorruptTableError(f"{where}: a partition's write stats are not a list")
        for stat in stats:
            if not isinstance(stat, dict):
                raise CorruptTableError(f"{where}: a write stat is not a record")
            # Subscripts, not ``get``: a method call a field cost a third of the walk.
            if "logVersion" in stat and stat["logVersion"] is not None:
                continue
            try:
                path, records, size = stat["path"], stat["numWrites"], stat["fileSizeInBytes"]
            except KeyError:
                continue
            if type(path) is str and type(records) is int and type(size) is int:
                append((path, (records, size)))
    return found
