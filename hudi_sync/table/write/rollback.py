"""Rolling back failed writes: delete what they wrote, then record the rollback.

A write that did not complete leaves a pending instant and possibly data files named
with its instant. Readers already ignore those files (their instant never completed);
the rollback removes them so the next writes, cleaners and other engines see a tidy
table. Each data file was announced by a marker (``.hoodie/.temp/<instant>/<partition>/
<file>.marker.CREATE``) before it was written, as Hudi does (whose writers may instead
list them in ``MARKERS<n>`` files there, the timeline server's markers); without markers
the partitions are scanned for the instant's file names.
"""

from __future__ import annotations

import re
import time

from hudi_sync.storage import Location, contained_file
from hudi_sync.table.write.timeline import TimelineWriter

MARKER_SUFFIXES = (".marker.CREATE", ".marker.MERGE", ".marker.APPEND")
# Hudi's timeline-server-based markers: ``MARKERS0``, ``MARKERS1``... in the marker
# folder, each listing markers one a line (``MARKERS.type`` says which kind).
TIMELINE_SERVER_MARKERS = re.compile(r"MARKERS\d+\Z")


def marker_folder(location: Location, instant: str) -> str:
    """``.hoodie/.temp/<instant>`` of the table at ``location`` (a path on its fs)."""
    return location.join(".hoodie", ".temp", instant)


def write_marker(location: Location, instant: str, partition: str, file_name: str) -> None:
    """Announce a data file before writing it (what a rollback will delete)."""
    folder = marker_folder(location, instant)
    name = f"{partition}/{file_name}" if partition else file_name
    location.write_file(f"{folder}/{name}.marker.CREATE", b"")


def files_written_by(location: Location, instant: str) -> dict[str, list[str]]:
    """``partition -> data file names`` that the write at ``instant`` may have created."""
    found: dict[str, list[str]] = {}
    markers = marker_folder(location, instant)
    marked = location.files_under(markers)
    if marked or (location.is_local and location.fs.isdir(markers)):
        for relative in marked:
            source = location.uri_of(f".hoodie/.temp/{instant}/{relative}")
            if TIMELINE_SERVER_MARKERS.match(relative):
                text = location.read_file(f"{markers}/{relative}").decode("utf-8", "replace")
                for line in filter(None, map(str.strip, text.splitlines())):
                    _add_marker(found, line, source)
            else:
                _add_marker(found, relative, source)
        return found
    suffix = f"_{instant}.parquet"
    cdc_part = f"_{instant}.log."  # this write's CDC logs: .<fileId>_<instant>.log.1_<token>.cdc
    for relative in location.files_under(location.path):
        partition, _, name = relative.rpartition("/")
        if any(part.startswith(".") for part in partition.split("/") if part):
            continue
        if (name.endswith(suffix) and not name.startswith(".")) or (
            name.startswith(".") and cdc_part in name and name.endswith(".cdc")
        ):
            found.setdefault(partition, []).append(name)
    return found


def _add_marker(found: dict[str, list[str]], marker: str, source: str) -> None:
    """The data file ``marker`` (``<partition>/<file>.marker.<IO type>``) announces, added
    to ``found``. Markers are read from storage (an object store's keys may hold
    ``..`` segments; a marker file's lines are text): each names a file of this table,
    or is refused naming ``source``."""
    partition, _, name = marker.rpartition("/")
    for suffix in MARKER_SUFFIXES:
        if name.endswith(suffix):
            contained_file(partition, name[: -len(suffix)], source)
            found.setdefault(partition, []).append(name[: -len(suffix)])


def remove_written_files(location: Location, instant: str) -> dict[str, list[str]]:
    """Delete the data files the write at ``instant`` may have created; returns
    ``partition -> table-relative paths`` of those that existed."""
    deleted: dict[str, list[str]] = {}
    for partition, names in files_written_by(location, instant).items():
        for name in names:
            relative = f"{partition}/{name}" if partition else name
            if location.remove(location.join(relative)):
                deleted.setdefault(partition, []).append(relative)
    return deleted


def roll_back(location: Location, timeline: TimelineWriter, instant: str, action: str) -> str:
    """Delete a failed write's files, record the rollback, drop the pending instant.

    Each step can be repeated: a rollback interrupted midway is redone by the next
    writer, since the pending instant is removed last."""
    started = time.time()
    deleted = remove_written_files(location, instant)
    rollback_instant = timeline.rollback(instant, action, deleted, started)
    timeline.remove_pending(instant)
    location.remove_tree(marker_folder(location, instant))
    return rollback_instant
