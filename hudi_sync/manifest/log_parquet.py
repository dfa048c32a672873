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

import csv
import hashlib
import io
import json
import os
import pickle
import re
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from fsspec.implementations.memory import MemoryFileSystem

from hudi_sync.arrow_numpy import numpy_to_arrow, string_array
from hudi_sync.errors import CorruptTableError, UnsupportedTableError
from hudi_sync.manifest.incremental import touched_partitions
from hudi_sync.manifest.listed_files import FILES_LIST, ListedFileStore
from hudi_sync.manifest.snapshot import (
    MANIFEST_FOLDER,
    PublishedLogs,
    snapshot_folder,
)
from hudi_sync.storage import Location, contained_partition, open_location
from hudi_sync.table import HudiTable
from hudi_sync.table.avro.bounded import load_json
from hudi_sync.table.files.fs_view import FileSlice, FileSystemView
from hudi_sync.table.files.visibility import CommittedInstants
from hudi_sync.table.read.slice_reader import read_folded_logs
from hudi_sync.table.read.snapshot import slice_merge_rules, snapshot_schema, table_merge_rules
from hudi_sync.table.records.log_records import RECORD_KEY_FIELD
from hudi_sync.table.records.merge import (
    BASE_ROW_COLUMN,
    DELETED_COLUMN,
    LOG_WINS_COLUMN,
    MergeRules,
)
from hudi_sync.table.timeline.instant import comparable_instant
from hudi_sync.table.timeline.listing import TimelineListing

LOG_FOLDER = f"{MANIFEST_FOLDER}/logs"
FILE_ID_COLUMN = "_hudi_sync_file_id"
SOURCE_COLUMN = "_hudi_sync_log_file"
# Per log snapshot: every file group's folded log, and the writes pending then.
GROUPS = "groups.csv"
GROUPS_META = "snapshot.json"
# The meta field the view meets base rows by partition on.
PARTITION_FIELD = "_hoodie_partition_path"
# What a folded log file holds changed: files (and log snapshots) of another format
# are never reused. 2: delete rows carry their partition, the view joins on it; no
# column statistics. 3: rows name the base row they meet when their key has several.
FORMAT = 3
# Added to the table's columns in every folded log file, in this order.
EXTRA_COLUMNS = (FILE_ID_COLUMN, DELETED_COLUMN, LOG_WINS_COLUMN, BASE_ROW_COLUMN, SOURCE_COLUMN)
_DIGEST_LENGTH = 20
# ``_name``'s names (``<file id>_<base instant>_<digest>.parquet``): the lines of the
# snapshots' ``files.csv`` and the last field of ``groups.csv``.
FOLDED_LOG_NAME = re.compile(rf"[^/]+_[^/_]*_[0-9a-f]{{{_DIGEST_LENGTH}}}\.parquet")
# Slices folded together (their data blocks decoded in one call), at most.
_BATCH_SLICES = 256
# Worker processes start only when each gets at least this many slices: a worker's
# start (an interpreter importing pyarrow and hudi_sync) costs what folding a few hundred
# slices does.
MIN_SLICES_PER_PROCESS = 500


def fold_processes(setting: int) -> int:
    """The worker processes a fold may use: ``setting`` (the option
    ``hudi_sync.sync.log.fold.processes``), 0 meaning one per CPU this process may
    run on."""
    if setting > 0:
        return setting
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on every platform
        return max(1, os.cpu_count() or 1)


class LogParquetStore(ListedFileStore):
    """Converts and publishes a MOR table's folded logs under ``.hoodie/manifest/logs``
    (the files in ``parquet/``, listed per snapshot: ``ListedFileStore``)."""

    def __init__(
        self,
        table: HudiTable,
        keep: int,
        processes: int = 0,
        min_slices_per_process: int = MIN_SLICES_PER_PROCESS,
        listing: TimelineListing | None = None,
    ) -> None:
        """``listing``: the sync's listing of the timeline folder (``TimelineListing``),
        which the tail since the previous log snapshot is read from; else a new one."""
        super().__init__(table, LOG_FOLDER, "parquet", keep, {FILES_LIST: FOLDED_LOG_NAME})
        self.listing = listing
        # Worker processes folding new slices (``fold_processes``; 1: in this process).
        self.processes = fold_processes(processes)
        self.min_slices_per_process = max(1, min_slices_per_process)
        self.workers_used = 0  # worker processes the last publish started

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
        existing = set() if dry_run else self.existing()
        missing = [(name, s) for name, s in named.items() if name not in existing]
        if not dry_run:
            self._fold(missing, rules, schema, instant if as_of else None)
        names = tuple(sorted(name for _, _, name in groups))
        folder = snapshot_folder(instant)
        if not dry_run:
            if names:  # a snapshot without log records has no log objects to list them
                self.write_lists(folder, names)
            if as_of is None and instant is not None:
                self._write_groups(folder, groups, pending)
            if as_of is None:
                self.prune(folder, set(names))
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
        touched = touched_partitions(self.table, before, pending, instant, self.listing)
        if touched is None:
            return None, []
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
                meta_bytes = bytes(fs.cat_file(self.path("snapshots", folder, GROUPS_META)))
                data = bytes(fs.cat_file(self.path("snapshots", folder, GROUPS)))
            except FileNotFoundError:
                continue  # written by an older version, or incomplete
            meta_source = self.uri("snapshots", folder, GROUPS_META)
            meta = load_json(meta_bytes, meta_source, "fold list metadata")
            if not isinstance(meta, dict) or not isinstance(meta.get("pending", ()), list | tuple):
                raise CorruptTableError(f"{meta_source}: not the fold list's metadata")
            if meta.get("format", 1) != FORMAT:  # its files are of another format
                return None
            source = self.uri("snapshots", folder, GROUPS)
            return folder, tuple(map(str, meta.get("pending", ()))), self._groups(data, source)
        return None

    def _groups(self, data: bytes, source: str) -> list[tuple[str, str, str]]:
        """``groups.csv``'s rows ``(partition, file id, folded log)``: the partition
        inside the table, the name one this store writes (they are published again)."""
        try:
            rows = [r for r in csv.reader(io.StringIO(data.decode("utf-8"))) if r]
        except (UnicodeDecodeError, csv.Error) as exc:
            raise CorruptTableError(f"{source}: not a CSV list ({exc})") from None
        groups = []
        for row in rows:
            if len(row) != 3:
                raise CorruptTableError(f"{source}: a row of {len(row)} fields (3 expected)")
            partition, file_id, name = row
            contained_partition(partition, source)
            groups.append((partition, file_id, self.checked_line(name, FILES_LIST, source)))
        return groups

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
        """The folded log's name (``slice_version_name``)."""
        return slice_version_name(self.table.location, file_slice, pending, as_of)

    def existing(self) -> set[str]:
        try:
            entries = self.table.location.fs.ls(self.path("parquet"), detail=False)
        except FileNotFoundError:
            return set()
        return {str(e).rstrip("/").rsplit("/", 1)[-1] for e in entries}

    def _fold(
        self,
        missing: list[tuple[str, FileSlice]],
        rules: MergeRules,
        schema: pa.Schema,
        as_of: str | None,
    ) -> None:
        """Write the folded log file of each ``(name, slice)``, in batches
        (``fold_batches``): in this process, or, when there are enough slices to repay
        starting them, in ``processes`` worker processes (``run_fold_workers``)."""
        self.workers_used = 0
        if not missing:
            return
        location = self.table.location
        workers = min(self.processes, len(missing) // self.min_slices_per_process)
        if isinstance(location.fs, MemoryFileSystem) or not sys.executable:
            workers = 1  # another process cannot see the store, or there is no interpreter
        size = max(1, min(_BATCH_SLICES, -(-len(missing) // (4 * max(workers, 1)))))
        jobs = [
            FoldJob(
                location.uri,
                dict(location.storage_options),
                self.folder,
                tuple(missing[first : first + size]),
                rules,
                self.table.view.committed_instants,
                schema,
                as_of,
            )
            for first in range(0, len(missing), size)
        ]
        if workers <= 1:
            fold_batches(jobs, location)
            return
        self.workers_used = workers
        run_fold_workers(jobs, workers)


def slice_version_name(
    location: Location, file_slice: FileSlice, pending: Sequence[str], as_of: str | None
) -> str:
    """The name of a file slice version's files made from its logs
    (``<file id>_<base instant>_<digest>.parquet``): named by everything they are made
    of (the slice's log file names and sizes, the writes ``pending`` then, the
    time-travel instant ``as_of``), so a slice whose logs change (a new log file, or
    blocks appended to one) gets a new name. The folded logs and the Iceberg MOR files
    (``manifest.iceberg.mor_files``) share it."""
    made_of = [
        FORMAT,
        file_slice.partition_path,
        file_slice.file_id,
        file_slice.base_instant,
        [(log.name, file_slice.log_size(location, log)) for log in file_slice.log_files],
        list(pending),
        as_of,
    ]
    digest = hashlib.sha256(json.dumps(made_of).encode()).hexdigest()[:_DIGEST_LENGTH]
    return f"{file_slice.file_id}_{file_slice.base_instant}_{digest}.parquet"


@dataclass(frozen=True)
class FoldJob:
    """A batch of slices to fold, as plain data a worker process can take: the table's
    location (URI and storage options, so a worker reaches an object store as the
    driver does), the folded logs' folder, ``(name, slice)`` pairs and how to read
    them."""

    uri: str
    storage_options: dict[str, Any]
    folder: str
    slices: tuple[tuple[str, FileSlice], ...]
    rules: MergeRules
    committed: CommittedInstants
    schema: pa.Schema
    as_of: str | None


def fold_batches(jobs: Sequence[FoldJob], location: Location | None = None) -> int:
    """Fold and write the slices of ``jobs``, batch after batch; how many were written.
    A batch's files are published together (``Location.write_files``: one flush of the
    disk for the batch, not an fsync a file), on a thread while the next batch folds.
    ``location``: the table's, in the driver (a worker opens its own from the jobs)."""
    written = 0
    with ThreadPoolExecutor(max_workers=1) as writer:
        publishing: Future[None] | None = None
        for job in jobs:
            if location is None:
                location = open_location(job.uri, job.storage_options)
            files = folded_files(job, location)
            if publishing is not None:
                publishing.result()
            publishing = writer.submit(location.write_files, files)
            written += len(files)
        if publishing is not None:
            publishing.result()
    return written


def folded_files(job: FoldJob, location: Location) -> list[tuple[str, bytes]]:
    """The path and Parquet bytes of each of the batch's folded log files
    (``read_folded_logs``, ``folded_batch_rows``)."""
    pairs = list(job.slices)
    folded = read_folded_logs(
        location, [s for _, s in pairs], job.rules, job.committed, job.schema, job.as_of
    )
    files = [(s.partition_path, s.file_id, name) for name, s in pairs]
    return [
        (f"{job.folder}/parquet/{name}", parquet_bytes(rows))
        for (name, _), rows in zip(pairs, folded_batch_rows(list(folded), files), strict=True)
    ]


# A worker's start: the parent's import path first (hudi_sync may be importable only
# through it), then its jobs; results go to the original stdout, anything a module
# prints to stderr.
_WORKER_MAIN = (
    "import os, pickle, sys\n"
    "results = os.fdopen(os.dup(1), 'wb')\n"
    "os.dup2(2, 1)\n"
    "sys.path[:] = pickle.load(sys.stdin.buffer)\n"
    "from hudi_sync.manifest.log_parquet import serve_fold_jobs\n"
    "serve_fold_jobs(sys.stdin.buffer, results)\n"
)


def run_fold_workers(jobs: Sequence[FoldJob], workers: int) -> None:
    """Run ``jobs`` in ``workers`` fresh interpreters (``python -c``), each its share.
    Not ``multiprocessing``: its spawn and forkserver start methods import the caller's
    main module again in every worker (a script without a ``__main__`` guard would run
    twice), and a fork copies a process mid-flight (the sync runs inside PySpark
    drivers, with a JVM and threads). A worker's error is raised here as it was
    raised there."""
    shares = [list(jobs[i::workers]) for i in range(workers)]

    def run(share: list[FoldJob]) -> None:
        payload = pickle.dumps(list(sys.path)) + pickle.dumps(share)
        process = subprocess.run(
            [sys.executable, "-c", _WORKER_MAIN], input=payload, capture_output=True
        )
        try:
            outcome = pickle.loads(process.stdout)
        except Exception:  # the worker died before answering
            detail = process.stderr.decode(errors="replace").strip().splitlines()
            raise RuntimeError(
                f"log fold worker exited with code {process.returncode}: "
                f"{detail[-1] if detail else 'no output'}"
            ) from None
        if isinstance(outcome, BaseException):
            raise outcome

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for future in [pool.submit(run, share) for share in shares if share]:
            future.result()


def serve_fold_jobs(jobs: BinaryIO, results: BinaryIO) -> None:
    """A fold worker's body (``run_fold_workers``): fold the pickled jobs read from
    ``jobs``; write how many slices were folded, or the error, pickled to ``results``."""
    outcome: object
    try:
        outcome = fold_batches(pickle.load(jobs))
    except Exception as exc:  # the driver raises it
        try:
            pickle.dumps(exc)
            outcome = exc
        except Exception:
            outcome = RuntimeError(f"{type(exc).__name__}: {exc}")
    results.write(pickle.dumps(outcome))
    results.flush()


def parquet_bytes(rows: pa.Table) -> bytes:
    """A folded log file's rows (``folded_file_rows``) as Parquet bytes."""
    # Into an Arrow buffer, not a Python file object: no call back into Python for
    # every write. No dictionaries: a file holds one slice's few rows, where a
    # dictionary page per column costs a third of the encoding and saves no bytes.
    sink = pa.BufferOutputStream()
    # No column statistics: they leave NaN out, and DuckDB folds isnan() and
    # comparisons by them (a NaN ordering value would compare as no NaN).
    pq.write_table(rows, sink, write_statistics=False, use_dictionary=False)
    return bytes(sink.getvalue())


def folded_file_rows(folded: pa.Table, partition: str, file_id: str, name: str) -> pa.Table:
    """A slice's folded log (``fold_log_records``) as its Parquet file holds it: every
    row with its partition (a delete block's rows have only their key), its file group
    and its file's name, which the view meets base rows and filters by."""
    return _with_file_columns(folded, [folded.num_rows], [(partition, file_id, name)])


def folded_batch_rows(
    folded: Sequence[pa.Table], files: Sequence[tuple[str, str, str]]
) -> list[pa.Table]:
    """``folded_file_rows`` of each slice's folded log and ``(partition, file id, name)``:
    for the batch at once when the slices' columns agree (an Arrow call per batch, not
    per slice, then each slice's rows cut out), else slice by slice."""
    first = folded[0].schema if folded else None
    if first is None or any(not t.schema.equals(first, check_metadata=True) for t in folded):
        return [folded_file_rows(t, *f) for t, f in zip(folded, files, strict=True)]
    counts = [t.num_rows for t in folded]
    rows = _with_file_columns(pa.concat_tables(folded), counts, files)
    starts = np.cumsum([0, *counts[:-1]])
    return [rows.slice(start, count) for start, count in zip(starts, counts, strict=True)]


def _with_file_columns(
    folded: pa.Table, counts: Sequence[int], files: Sequence[tuple[str, str, str]]
) -> pa.Table:
    """``folded``, the rows of consecutive slices (``counts`` rows each), with each
    slice's ``(partition, file id, name)`` filled in (``folded_file_rows``)."""

    # Each row's slice, by which each file's values are repeated in one Arrow call.
    owner = numpy_to_arrow(np.repeat(np.arange(len(files), dtype=np.int64), counts))

    def repeated(field: int) -> pa.Array:
        return string_array([f[field] for f in files]).take(owner)

    partitions = repeated(0)
    if PARTITION_FIELD in folded.column_names:
        column = folded.column(PARTITION_FIELD)
        filled = pc.coalesce(column, partitions.cast(column.type))
        folded = folded.set_column(
            folded.column_names.index(PARTITION_FIELD), PARTITION_FIELD, filled
        )
    else:  # a table without meta fields: the view meets base rows by the slice's partition
        folded = folded.append_column(PARTITION_FIELD, partitions)
    folded = folded.append_column(FILE_ID_COLUMN, repeated(1))
    return folded.append_column(SOURCE_COLUMN, repeated(2))


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
