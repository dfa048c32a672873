"""Rolling back failed writes: delete what they wrote, then record the rollback.

A write that did not complete leaves a pending instant and possibly data files named
with its instant. Readers already ignore those files (their instant never completed);
the rollback removes them so the next writes, cleaners and other engines see a tidy
table. Each data file was announced by a marker (``.hoodie/.temp/<instant>/<partition>/
<file>.marker.CREATE``) before it was written, as Hudi does; without markers the
partitions are scanned for the instant's file names.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time

from hudi_sync.table.timeline_writer import TimelineWriter

MARKER_SUFFIXES = (".marker.CREATE", ".marker.MERGE", ".marker.APPEND")


def marker_folder(base_path: str, instant: str) -> str:
    return os.path.join(base_path, ".hoodie", ".temp", instant)


def write_marker(base_path: str, instant: str, partition: str, file_name: str) -> None:
    """Announce a data file before writing it (what a rollback will delete)."""
    folder = os.path.join(marker_folder(base_path, instant), partition)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, file_name + ".marker.CREATE"), "wb"):
        pass


def files_written_by(base_path: str, instant: str) -> dict[str, list[str]]:
    """``partition -> data file names`` that the write at ``instant`` may have created."""
    found: dict[str, list[str]] = {}
    markers = marker_folder(base_path, instant)
    if os.path.isdir(markers):
        for folder, _, names in os.walk(markers):
            partition = os.path.relpath(folder, markers).replace(os.sep, "/")
            partition = "" if partition == "." else partition
            for name in names:
                for suffix in MARKER_SUFFIXES:
                    if name.endswith(suffix):
                        found.setdefault(partition, []).append(name[: -len(suffix)])
        return found
    suffix = f"_{instant}.parquet"
    cdc_part = f"_{instant}.log."  # this write's CDC logs: .<fileId>_<instant>.log.1_<token>.cdc
    for folder, dirs, names in os.walk(base_path):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        partition = os.path.relpath(folder, base_path).replace(os.sep, "/")
        partition = "" if partition == "." else partition
        hits = [n for n in names if n.endswith(suffix) and not n.startswith(".")]
        hits += [n for n in names if n.startswith(".") and cdc_part in n and n.endswith(".cdc")]
        if hits:
            found[partition] = hits
    return found


def roll_back(base_path: str, timeline: TimelineWriter, instant: str, action: str) -> str:
    """Delete a failed write's files, record the rollback, drop the pending instant.

    Each step can be repeated: a rollback interrupted midway is redone by the next
    writer, since the pending instant is removed last."""
    started = time.time()
    deleted: dict[str, list[str]] = {}
    for partition, names in files_written_by(base_path, instant).items():
        for name in names:
            path = os.path.join(base_path, partition, name)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
                deleted.setdefault(partition, []).append(
                    f"{partition}/{name}" if partition else name
                )
    rollback_instant = timeline.rollback(instant, action, deleted, started)
    timeline.remove_pending(instant)
    shutil.rmtree(marker_folder(base_path, instant), ignore_errors=True)
    return rollback_instant
