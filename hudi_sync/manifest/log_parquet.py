"""Merge-on-Read log files as Parquet a warehouse can read, once per file slice version.

Warehouses read Parquet, not Hudi log files. So that a warehouse view shows a MOR
table's snapshot (``<t>_rt``) and not only its base files, each sync turns the log
files of every file slice into one Parquet file: the slice's log records folded to
one version per key by Hudi's merge rules (``fold_log_records``), each row marked
deleted or not and whether it replaces the base file's record regardless of ordering
values. The view then merges base rows and these rows with one comparison per key.

Layout under ``<table>/.hoodie/manifest/logs/``:

- ``parquet/<file id>_<base instant>_<digest>.parquet`` — a slice's folded log, named
  by what it was made from (the partition, the slice's log file names and sizes, the
  writes pending then, the time-travel instant): immutable, written once, reused by
  every later sync while the slice's logs stay the same, so a sync converts only the
  slices that changed. A block changes a log file's size when it is appended, and its
  write is pending from before it is written until it completes or is rolled back,
  so a slice whose log records changed always gets a new name. A compaction's new
  base file starts a slice without logs, which has no Parquet file;
- ``snapshots/<instant>/files.csv`` and ``uris.csv`` — the names (and absolute URIs) of
  the Parquet files of the snapshot at ``<instant>``, written once, like the base file
  manifests beside them (none for a snapshot without log records);
- ``snapshots/<instant>/groups.csv`` and ``snapshot.json`` — each file group's folded
  log (``partition,file id,name``) and the writes pending then. The next sync lists only
  the partitions its new commits wrote to and keeps the other groups' entries, as the
  base file manifest is derived from the previous one, with the same fall back to a
  full listing (``why_not_incremental``).

Published after the base file manifest and before any warehouse object is touched.
Old snapshots are pruned like the base manifests, and Parquet files no kept snapshot
names are removed with them (the cleaner's removal of a slice shows here at the next
sync). Every row carries its file group (``FILE_ID_COLUMN``, which the view joins base
rows on) and its own file's name (``SOURCE_COLUMN``, which the view filters on: the
warehouses' external tables match every file in the folder).
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import hashlib
import io
import json
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_sync.errors import UnsupportedTableError
from hudi_sync.manifest.file_set import lines_bytes, string_array
from hudi_sync.manifest.snapshot import (
    MANIFEST_FOLDER,
    PublishedLogs,
    snapshot_folder,
    timeline_tail,
    why_not_incremental,
)
from hudi_sync.table import HudiTable
from hudi_sync.table.fs_view import FileSlice, FileSystemView
from hudi_sync.table.instant import comparable_instant
from hudi_sync.table.log_records import RECORD_KEY_FIELD
from hudi_sync.table.record_merge import BASE_ROW_COLUMN, DELETED_COLUMN, LOG_WINS_COLUMN
from hudi_sync.table.slice_reader import read_folded_log
from hudi_sync.table.snapshot_read import slice_merge_rules, snapshot_schema, table_merge_rules

LOG_FOLDER = f"{MANIFEST_FOLDER}/logs"
FILE_ID_COLUMN = "_hudi_sync_file_id"
SOURCE_COLUMN = "_hudi_sync_log_file"
# Per log snapshot: every file group's folded log, and the writes pending then.
GROUPS = "groups.csv"
GROUPS_META = "snapshot.json"
# A folded log file no snapshot names yet may be a concurrent sync's, not yet listed.
_UNNAMED_GRACE_SECONDS = 600.0
# The meta field the view meets base rows by partition on.
PARTITION_FIELD = "_hoodie_partition_path"
# What a folded log file holds changed: files (and log snapshots) of another format
# are never reused. 2: delete rows carry their partition, the view joins on it; no
# column statistics. 3: rows name the base row they meet when their key has several.
FORMAT = 3
# Added to the table's columns in every folded log file, in this order.
EXTRA_COLUMNS = (FILE_ID_COLUMN, DELETED_COLUMN, LOG_WINS_COLUMN, BASE_ROW_COLUMN, SOURCE_COLUMN)


class LogParquetStore:
    """Converts and publishes a MOR table's folded logs under ``.hoodie/manifest/logs``."""

    def __init__(self, table: HudiTable, keep: int) -> None:
        self.table = table
        self.keep = keep
        self.folder = table.location.join(LOG_FOLDER)

    def path(self, *parts: str) -> str:
        return "/".join([self.folder, *parts])

    def uri(self, *parts: str) -> str:
        return self.table.location.uri_of("/".join([LOG_FOLDER, *parts]))

    def rules_refusal(self) -> str | None:
        """Why no ``_rt`` view can show this table (one line), or None when it can."""
        try:
            table_merge_rules(self.table)
        except UnsupportedTableError as exc:
            return str(exc)
        return None

    def publish(
        self, instant: str | None, as_of: str | None = None, dry_run: bool = False
    ) -> PublishedLogs:
        """Convert the snapshot's slices that have no folded log file yet, then write
        the snapshot's lists (unless ``dry_run``: nothing is written). ``as_of``: a
        time-travel sync (blocks of later writes are left out; nothing is pruned)."""
        table = self.table
        slices, kept = self._changed_slices(instant) if as_of is None else (None, [])
        if slices is None:  # a full listing
            slices = table.view.slices_as_of(instant) if instant is not None else []
        with_logs = [s for s in slices if s.log_files]
        # The view compares by the table's rules whenever any slice has logs, kept or new.
        rules = table_merge_rules(table) if kept else slice_merge_rules(table, with_logs)
        schema = snapshot_schema(table, slices)
        pending = sorted(i.requested_time for i in table.timeline.pending)
        named = {self._name(s, pending, as_of): s for s in with_logs}
        groups = [(s.partition_path, s.file_id, name) for name, s in named.items()] + kept
        existing = set() if dry_run else self._existing()
        missing = [(name, s) for name, s in named.items() if name not in existing]
        if not dry_run:
            committed = table.view.committed_instants

            def convert(item: tuple[str, FileSlice]) -> None:
                name, file_slice = item
                folded = read_folded_log(
                    table.location, file_slice, rules, committed, schema, instant if as_of else None
                )
                self._write(name, file_slice, folded)

            with ThreadPoolExecutor(max_workers=4) as pool:
                list(pool.map(convert, missing))
        names = tuple(sorted(name for _, _, name in groups))
        folder = snapshot_folder(instant)
        if not dry_run:
            if names:  # a snapshot without log records has no log objects to list them
                self._write_lists(folder, names)
            if as_of is None and instant is not None:
                self._write_groups(folder, groups, pending)
            if as_of is None:
                self._prune(folder, set(names))
        return PublishedLogs(
            instant,
            names,
            self.uri("snapshots", folder, "files.csv"),
            self.uri("snapshots", folder, "uris.csv"),
            self.uri("parquet"),
            folded_schema(schema),
            rules.ordering_field,
            converted=len(missing),
        )

    def _changed_slices(
        self, instant: str | None
    ) -> tuple[list[FileSlice] | None, list[tuple[str, str, str]]]:
        """The latest snapshot's slices in the partitions written since the previous
        log snapshot, and the previous snapshot's ``(partition, file id, folded log)``
        entries of the other partitions, which stay as they were: a sync lists the
        partitions the new commits wrote to, not the table. ``(None, [])`` when that is
        not safe (see ``why_not_incremental``) or there is no previous snapshot: a full
        listing."""
        previous = self._previous(instant)
        if instant is None or previous is None:
            return None, []
        before, pending, groups = previous
        if before == instant:  # a rerun: the same slices
            return [], groups
        tail = timeline_tail(self.table, before, pending)
        if why_not_incremental(tail, before, pending) is not None:
            return None, []
        lo, hi = comparable_instant(before), comparable_instant(instant)
        touched: set[str] = set()
        for write in tail.completed_writes:
            if lo < comparable_instant(write.requested_time) <= hi:
                metadata = tail.commit_metadata(write)
                touched.update(stat.partition_path for stat in metadata.write_stats)
                touched.update(metadata.partition_to_replace_file_ids)
        table = self.table
        view = FileSystemView(
            table.location, table.config, table.timeline, touched, table.view.listing
        )
        kept = [g for g in groups if g[0] not in touched]
        return view.slices_as_of(instant), kept

    def _previous(
        self, instant: str | None
    ) -> tuple[str, tuple[str, ...], list[tuple[str, str, str]]] | None:
        """The newest complete log snapshot at or before ``instant``: its instant, the
        writes pending then, and its entries."""
        if instant is None:
            return None
        limit = comparable_instant(instant)
        fs = self.table.location.fs
        for folder in reversed(self.snapshot_folders()):
            if comparable_instant(folder) > limit:
                continue
            try:
                meta = json.loads(bytes(fs.cat_file(self.path("snapshots", folder, GROUPS_META))))
                data = bytes(fs.cat_file(self.path("snapshots", folder, GROUPS)))
            except FileNotFoundError:
                continue  # written by an older version, or incomplete
            if meta.get("format", 1) != FORMAT:  # its files are of another format
                return None
            rows = [tuple(r) for r in csv.reader(io.StringIO(data.decode())) if r]
            groups = [(r[0], r[1], r[2]) for r in rows if len(r) == 3]
            return folder, tuple(meta.get("pending", ())), groups
        return None

    def _write_groups(
        self, folder: str, groups: list[tuple[str, str, str]], pending: Sequence[str]
    ) -> None:
        """Every file group's folded log, and the pending writes (written last: the
        snapshot is complete), for the next sync's incremental listing."""
        meta = self.path("snapshots", folder, GROUPS_META)
        if self.table.location.fs.exists(meta):
            return
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows(sorted(groups))
        self.table.location.write_file(
            self.path("snapshots", folder, GROUPS), out.getvalue().encode()
        )
        written = {"pending": list(pending), "format": FORMAT}
        self.table.location.write_file(meta, json.dumps(written).encode())

    def _name(self, file_slice: FileSlice, pending: Sequence[str], as_of: str | None) -> str:
        """Named by everything the folded log is made of: a slice whose logs change
        (a new log file, or blocks appended to one) gets a new file."""
        made_of = [
            FORMAT,
            file_slice.partition_path,
            file_slice.file_id,
            file_slice.base_instant,
            [
                (log.name, file_slice.log_size(self.table.location, log))
                for log in file_slice.log_files
            ],
            list(pending),
            as_of,
        ]
        digest = hashlib.sha256(json.dumps(made_of).encode()).hexdigest()[:20]
        return f"{file_slice.file_id}_{file_slice.base_instant}_{digest}.parquet"

    def _existing(self) -> set[str]:
        try:
            entries = self.table.location.fs.ls(self.path("parquet"), detail=False)
        except FileNotFoundError:
            return set()
        return {str(e).rstrip("/").rsplit("/", 1)[-1] for e in entries}

    def _write(self, name: str, file_slice: FileSlice, folded: pa.Table) -> None:
        rows = folded_file_rows(folded, file_slice.partition_path, file_slice.file_id, name)
        buffer = io.BytesIO()
        # No column statistics: they leave NaN out, and DuckDB folds isnan() and
        # comparisons by them (a NaN ordering value would compare as no NaN).
        pq.write_table(rows, buffer, write_statistics=False)
        self.table.location.write_file(self.path("parquet", name), buffer.getvalue())

    def _write_lists(self, folder: str, names: tuple[str, ...]) -> None:
        fs = self.table.location.fs
        files = self.path("snapshots", folder, "files.csv")
        if fs.exists(files):  # immutable: a rerun of the same snapshot
            return
        uris = lines_bytes(string_array(list(names)), self.uri("parquet") + "/")
        self.table.location.write_file(self.path("snapshots", folder, "uris.csv"), uris)
        self.table.location.write_file(files, lines_bytes(string_array(list(names)), ""))

    def snapshot_folders(self) -> list[str]:
        try:
            entries = self.table.location.fs.ls(self.path("snapshots"), detail=False)
        except FileNotFoundError:
            return []
        names = [str(e).rstrip("/").rsplit("/", 1)[-1] for e in entries]
        return sorted((n for n in names if n.isdigit()), key=comparable_instant)

    def _prune(self, current: str, current_names: set[str]) -> None:
        """Keep the newest ``keep`` log snapshots up to ``current``; remove the Parquet
        files none of them names (slices compacted or cleaned since). A file a removed
        snapshot named goes at once; one no snapshot ever named may be a concurrent
        sync's, not yet listed, and goes only when it is old."""
        fs = self.table.location.fs
        folders = self.snapshot_folders()
        # The current snapshot counts even when it lists nothing (and has no folder).
        older = [f for f in folders if comparable_instant(f) < comparable_instant(current)]
        released: set[str] = set()
        for folder in [*older, current][: -self.keep]:
            released |= self._listed(folder)
            self.table.location.remove_tree(self.path("snapshots", folder))
        named = set(current_names)
        for folder in self.snapshot_folders():
            if folder != current:
                named |= self._listed(folder)
        deadline = time.time() - _UNNAMED_GRACE_SECONDS
        for name in self._existing() - named:
            path = self.path("parquet", name)
            with contextlib.suppress(FileNotFoundError):
                if name in released or _modified(fs.info(path)) < deadline:
                    self.table.location.remove(path)

    def _listed(self, folder: str) -> set[str]:
        """The folded log files a log snapshot names."""
        try:
            data = bytes(
                self.table.location.fs.cat_file(self.path("snapshots", folder, "files.csv"))
            )
        except FileNotFoundError:
            return set()
        return {line for line in data.decode().splitlines() if line}


def folded_file_rows(folded: pa.Table, partition: str, file_id: str, name: str) -> pa.Table:
    """A slice's folded log (``fold_log_records``) as its Parquet file holds it: every
    row with its partition (a delete block's rows have only their key), its file group
    and its file's name, which the view meets base rows and filters by."""
    rows = folded.num_rows
    if PARTITION_FIELD in folded.column_names:
        column = folded.column(PARTITION_FIELD)
        filled = pc.fill_null(column, pa.scalar(partition, column.type))
        folded = folded.set_column(
            folded.column_names.index(PARTITION_FIELD), PARTITION_FIELD, filled
        )
    else:  # a table without meta fields: the view meets base rows by the slice's partition
        folded = folded.append_column(PARTITION_FIELD, pa.array([partition] * rows, pa.string()))
    folded = folded.append_column(FILE_ID_COLUMN, pa.array([file_id] * rows, pa.string()))
    return folded.append_column(SOURCE_COLUMN, pa.array([name] * rows, pa.string()))


def folded_schema(schema: pa.Schema) -> pa.Schema:
    """The columns of a folded log file: the snapshot's (with the record key and
    partition path the fold adds to a table without meta fields), then
    ``EXTRA_COLUMNS``."""
    extra = {
        FILE_ID_COLUMN: pa.string(),
        DELETED_COLUMN: pa.bool_(),
        LOG_WINS_COLUMN: pa.bool_(),
        BASE_ROW_COLUMN: pa.string(),
        SOURCE_COLUMN: pa.string(),
    }
    keys = [pa.field(n, pa.string()) for n in (RECORD_KEY_FIELD, PARTITION_FIELD)]
    added = [f for f in keys if f.name not in schema.names]
    return pa.schema([*schema, *added, *(pa.field(n, extra[n]) for n in EXTRA_COLUMNS)])


def _modified(info: dict[str, Any]) -> float:
    """A file's modification time in seconds from an fsspec ``info`` (0 when unknown:
    old enough to remove)."""
    value = info.get("mtime", info.get("updated", info.get("LastModified", 0)))
    if isinstance(value, str):  # object stores: ISO 8601
        with contextlib.suppress(ValueError):
            return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    if hasattr(value, "timestamp"):
        return float(value.timestamp())
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0
