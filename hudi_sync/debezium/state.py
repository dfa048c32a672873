"""What an ingest remembers between batches, kept with the commits it belongs to.

Every ingest commit carries in its extra metadata:

- ``deltastreamer.checkpoint.key``: the Kafka offsets to read next, in Hudi's format
  ``topic,partition:offset,partition:offset`` (several topics joined by ``;``). A run
  starts from the newest completed commit that has one, so offsets and table change
  together: a batch is either committed with its offsets or not at all.
- ``hudi_sync.debezium.tombstone.files``: the tombstone files in force. A tombstone is
  a deleted key and the log position of its delete; an event for that key at or before
  that position is dropped, so a late insert or update never brings a deleted row
  back. Tombstones live in small parquet files under ``.hoodie/.aux/debezium/``, out
  of every snapshot, manifest and warehouse view (a side index, not hidden rows: real
  Hudi readers such as hudi-rs would show hidden rows). Each commit adds one file;
  every ``COMPACT_EVERY`` files are merged into one.
- ``hudi_sync.debezium.truncated.before``: the position of the last applied truncate;
  every older event is dropped.

A file written for a batch that never commits is referenced by no commit: it is never
read, and the next commit deletes it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from hudi_sync.errors import BadInputError, TableNotFoundError
from hudi_sync.storage import Location, contained_file, open_location
from hudi_sync.table import HudiTable

CHECKPOINT_KEY = "deltastreamer.checkpoint.key"
TOMBSTONES_KEY = "hudi_sync.debezium.tombstone.files"
TRUNCATED_KEY = "hudi_sync.debezium.truncated.before"
FOLDER = ".hoodie/.aux/debezium"
COMPACT_EVERY = 10

Offsets = dict[str, dict[int, int]]  # topic -> partition -> next offset to read


@dataclass
class IngestState:
    """The ingest's position and memory as of ``instant`` (None: nothing ingested yet)."""

    offsets: Offsets = field(default_factory=dict)
    tombstone_files: list[str] = field(default_factory=list)
    truncated_before: str | None = None
    instant: str | None = None

    def metadata(self) -> dict[str, str]:
        """The commit extra metadata that records this state."""
        meta = {
            CHECKPOINT_KEY: format_checkpoint(self.offsets),
            TOMBSTONES_KEY: ",".join(self.tombstone_files),
        }
        if self.truncated_before:
            meta[TRUNCATED_KEY] = self.truncated_before
        return meta


def format_checkpoint(offsets: Offsets) -> str:
    return ";".join(
        ",".join([topic, *(f"{p}:{o}" for p, o in sorted(parts.items()))])
        for topic, parts in sorted(offsets.items())
    )


def parse_checkpoint(text: str) -> Offsets:
    """Hudi's ``topic,partition:offset,...`` (``;`` between topics)."""
    offsets: Offsets = {}
    for chunk in filter(None, (c.strip() for c in text.split(";"))):
        topic, *pairs = chunk.split(",")
        try:
            offsets[topic] = {int(p): int(o) for p, o in (pair.split(":") for pair in pairs)}
        except ValueError:
            raise BadInputError(
                f"{CHECKPOINT_KEY}={text!r} is not topic,partition:offset,..."
            ) from None
    return offsets


def load_state(uri: str, storage_options: Mapping[str, Any] | None = None) -> IngestState:
    """The state recorded by the newest completed commit that has a checkpoint."""
    try:
        table = HudiTable.open(uri, storage_options)
    except TableNotFoundError:
        return IngestState()
    timeline = table.timeline
    for instant in reversed(table.completed_commits()):
        extra = timeline.commit_metadata(instant).extra_metadata
        if CHECKPOINT_KEY in extra:
            # Names of files in FOLDER, one segment each (refused naming the commit).
            source = f"{table.uri}: {instant.file_name}: {TOMBSTONES_KEY}"
            listed = [f for f in extra.get(TOMBSTONES_KEY, "").split(",") if f]
            return IngestState(
                offsets=parse_checkpoint(extra[CHECKPOINT_KEY]),
                tombstone_files=[contained_file("", f, source) for f in listed],
                truncated_before=extra.get(TRUNCATED_KEY) or None,
                instant=instant.requested_time,
            )
    return IngestState()


class TombstoneStore:
    """The tombstone files of one table."""

    def __init__(self, uri: str, storage_options: Mapping[str, Any] | None = None) -> None:
        table = open_location(uri, storage_options)
        self.location: Location = table
        self.folder = table.join(FOLDER)

    def load(self, files: list[str]) -> dict[str, str]:
        """Deleted key -> position of its delete, over ``files`` (newest wins)."""
        tombstones: dict[str, str] = {}
        for name in files:
            path = self.location.file_inside(FOLDER, name, f"{self.location.uri}: {TOMBSTONES_KEY}")
            try:
                data = pq.read_table(pa.BufferReader(self.location.read_file(path)))
            except FileNotFoundError:
                raise BadInputError(
                    f"{self.folder}/{name}: tombstone file named by the last ingest commit "
                    "is missing"
                ) from None
            for key, order in zip(
                data.column("key").to_pylist(), data.column("order").to_pylist(), strict=True
            ):
                if order > tombstones.get(key, ""):
                    tombstones[key] = order
        return tombstones

    def add(
        self,
        state: IngestState,
        known: Mapping[str, str],
        new: Mapping[str, str],
        revived: set[str],
    ) -> list[str]:
        """Write this batch's tombstones; the file list the next commit records. Every
        ``COMPACT_EVERY`` files, all live tombstones (less the keys written again since)
        go into one file."""
        files = list(state.tombstone_files)
        if len(files) + 1 >= COMPACT_EVERY:
            merged = {k: v for k, v in known.items() if k not in revived}
            merged.update(new)
            return [self._write(merged)]
        if not new:
            return files
        return [*files, self._write(new)]

    def _write(self, tombstones: Mapping[str, str]) -> str:
        name = f"tombstones-{uuid.uuid4().hex}.parquet"
        table = pa.table(
            {
                "key": pa.array(list(tombstones), pa.string()),
                "order": pa.array(list(tombstones.values()), pa.string()),
            }
        )
        buffer = pa.BufferOutputStream()
        pq.write_table(table, buffer)
        self.location.ensure_folder(self.folder)
        # Whole or absent (a crash mid-write leaves no torn file for the next load).
        self.location.write_file(f"{self.folder}/{name}", buffer.getvalue().to_pybytes())
        return name

    def remove_unreferenced(self, files: list[str]) -> None:
        """Delete tombstone files no commit will read (compacted, or left by a batch
        that did not commit)."""
        keep = set(files)
        for name in self.location.names(self.folder):
            if name.startswith("tombstones-") and name not in keep:
                # Literally: fsspec's rm expands glob characters, and a listed name
                # such as tombstones-[ab].parquet must never delete a sibling in use.
                self.location.remove(f"{self.folder}/{name}")
