"""The change feed: each published commit's CDC rows as Parquet beside the manifests,
so warehouses can serve ``<t>_changes`` to incremental models.

Layout under ``<table>/.hoodie/manifest/changes/``:

- ``commit_date=<YYYY-MM-DD>/commit_time=<instant>/changes-<schema>.parquet`` — the rows
  the CDC query (``hudi_sync.table.cdc_query``) gives for that one commit, written once
  (under a temporary name, then moved into place) and never rewritten: a rerun or a sync
  after a crash finds it and reuses it. Hive-style folders, so a warehouse prunes by
  commit date and time; ``<schema>`` is a digest of the file's columns, so a reader can
  bind each group of equal files from one footer (``schema_digest``).
- ``snapshots/<instant>/files.csv`` and ``uris.csv`` — the change files the feed holds
  as of that snapshot (relative to ``changes/``, and as absolute URIs). Written before
  the warehouse objects switch to the snapshot, which read exactly the files listed:
  a commit's changes appear together with the manifest that publishes it, and a
  commit a rollback or restore removed is in no later list.

The feed covers the commits the CDC query can still answer (after the last clean's
earliest retained commit and the newest archived commit, ``plan_changes`` with
``earliest``) up to the published instant; files no retained list names are pruned
with the manifests' retention.

Each row: ``op``, ``ts_ms`` (the commit's instant, as the CDC query gives it),
``record_key``, ``partition_path``, ``before`` and ``after`` (Hudi's JSON images) and
the images' top-level columns typed, ``before_<column>``/``after_<column>``, for the
types ``typed_columns`` can parse from the JSON exactly (the rest are in the JSON only).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from hudi_sync.errors import CorruptTableError
from hudi_sync.manifest.file_set import lines_bytes
from hudi_sync.manifest.listed_files import FILES_LIST, INSTANT, ListedFileStore
from hudi_sync.table import HudiTable
from hudi_sync.table.cdc_query import (
    ChangePlan,
    ChangeSplit,
    change_rows,
    earliest_valid_begin,
    plan_changes,
)
from hudi_sync.table.instant import Instant, comparable_instant
from hudi_sync.table.record_keys import built_keys, key_fields
from hudi_sync.table.schema import META_FIELDS, parse_avro_schema
from hudi_sync.table.snapshot_read import avro_to_arrow

CHANGES_FOLDER = ".hoodie/manifest/changes"
CHANGE_FILE_PREFIX = "changes-"
# Hive partition keys of the change files' folders.
DATE_KEY = "commit_date"
TIME_KEY = "commit_time"
# Columns every change file has, before the typed image columns.
FIXED_COLUMNS = pa.schema(
    [
        pa.field("op", pa.string()),
        pa.field("ts_ms", pa.string()),
        pa.field("record_key", pa.string()),
        pa.field("partition_path", pa.string()),
        pa.field("before", pa.string()),
        pa.field("after", pa.string()),
    ]
)
# Decimals up to this precision survive the JSON images' doubles exactly.
_EXACT_DECIMAL_DIGITS = 15
_DIGEST_LENGTH = 12
PENDING_LIST = "pending.csv"
# ``change_file``'s names: the lines of the snapshots' ``files.csv``.
CHANGE_FILE_NAME = re.compile(
    rf"{DATE_KEY}=\d{{4}}-\d{{2}}-\d{{2}}/{TIME_KEY}=\d+/"
    rf"{CHANGE_FILE_PREFIX}[0-9a-f]{{{_DIGEST_LENGTH}}}\.parquet"
)


@dataclass(frozen=True)
class PublishedChanges:
    """The change feed as of one snapshot: its files, where their lists live, and the
    range of commits it holds (``after`` exclusive, ``through`` inclusive)."""

    instant: str | None
    names: tuple[str, ...]  # change files, relative to ``folder_uri``
    files_uri: str
    uris_uri: str
    folder_uri: str
    after: str | None  # the feed holds commits after this one (None: from the first)
    through: str | None
    # The newest change file's columns (``feed_schema``): what a warehouse declares.
    schema: pa.Schema = FIXED_COLUMNS
    written: int = 0  # change files this publication wrote (the rest were reused)

    def uris(self) -> list[str]:
        return [f"{self.folder_uri.rstrip('/')}/{name}" for name in self.names]

    def summary(self) -> dict[str, Any]:
        """The feed in a sync's ``--json`` report."""
        return {
            "commits": len(self.names),
            "after": self.after,
            "through": self.through,
            "written": self.written,
            "uris_uri": self.uris_uri,
        }

    def description(self) -> str:
        """What range the feed holds, for the warehouse object's description."""
        start = f"after {self.after}" if self.after else "from the first commit"
        return f"changes of the commits {start} through {self.through or '(none)'}"


def change_file(instant: str, digest: str) -> str:
    """A commit's change file, relative to ``changes/``: hive folders of its date and
    instant (``YYYYMMDD...`` → ``commit_date=YYYY-MM-DD``), named by its schema's digest."""
    day = f"{instant[:4]}-{instant[4:6]}-{instant[6:8]}"
    return f"{DATE_KEY}={day}/{TIME_KEY}={instant}/{CHANGE_FILE_PREFIX}{digest}.parquet"


def _commit_of(name: str) -> str:
    """The instant of a change file (its ``commit_time=`` folder)."""
    return name.split("/")[1].removeprefix(f"{TIME_KEY}=")


def schema_digest(name: str) -> str:
    """The schema digest in a change file's name: files with the same one have the same
    columns."""
    return name.rsplit("/", 1)[-1].removeprefix(CHANGE_FILE_PREFIX).removesuffix(".parquet")


def feed_schema(typed: pa.Schema) -> pa.Schema:
    """A change file's columns: ``FIXED_COLUMNS``, then each typed column's before and
    after images."""
    images = [
        pa.field(f"{side}_{field.name}", field.type)
        for field in typed
        for side in ("before", "after")
    ]
    return pa.schema([*FIXED_COLUMNS, *images])


def _digest(schema: pa.Schema) -> str:
    digest = hashlib.sha256(schema.to_string(show_schema_metadata=False).encode())
    return digest.hexdigest()[:_DIGEST_LENGTH]


class ChangeFeedStore(ListedFileStore):
    """Writes and publishes a table's change feed under ``.hoodie/manifest/changes`` (the
    files listed per snapshot: ``ListedFileStore``)."""

    def __init__(self, table: HudiTable, keep: int) -> None:
        super().__init__(
            table, CHANGES_FOLDER, "", keep, {FILES_LIST: CHANGE_FILE_NAME, PENDING_LIST: INSTANT}
        )
        # A table without CDC has its changes inferred (``plan_changes(infer=True)``).
        self.infer = not table.config.cdc_enabled
        self._typed: dict[str, pa.Schema] = {}  # typed_at, by instant

    def publish(self, instant: str | None, dry_run: bool = False) -> PublishedChanges:
        """Write the change file of every commit in the feed's range that has none yet,
        then the snapshot's lists (unless ``dry_run``: nothing is written)."""
        table = self.table
        boundary = earliest_valid_begin(table) if instant is not None else None
        kept, plan, full = (
            self._plan(instant, boundary) if instant is not None else ([], None, True)
        )
        commits = list(plan.instants) if plan is not None else []
        by_commit: dict[str, list[ChangeSplit]] = defaultdict(list)
        for split in plan.splits if plan is not None else ():
            by_commit[split.instant].append(split)
        new = [
            change_file(commit.requested_time, _digest(feed_schema(self.typed_at(commit))))
            for commit in commits
        ]
        names = (*kept, *new)
        newest = commits[-1] if commits else self._commit_instant(kept[-1]) if kept else None
        schema = feed_schema(self.typed_at(newest)) if newest is not None else FIXED_COLUMNS
        written = 0
        if not dry_run:
            fs = table.location.fs
            for commit, name in zip(commits, new, strict=True):
                if fs.exists(self.path(name)):
                    continue  # immutable: written by an earlier (perhaps interrupted) sync
                rows = self.commit_rows(commit, by_commit.get(commit.requested_time, []))
                self._write_parquet(self.path(name), rows)
                written += 1
            if instant is not None:
                pending = sorted(i.requested_time for i in table.timeline.pending)
                self._write_lists(instant, names, pending)
                self.prune(instant, set(names), scan=full)
        folder = instant or "empty"
        return PublishedChanges(
            instant,
            names,
            self.uri("snapshots", folder, "files.csv"),
            self.uri("snapshots", folder, "uris.csv"),
            self.uri(),
            boundary,
            instant,
            schema,
            written,
        )

    def _plan(self, instant: str, boundary: str | None) -> tuple[list[str], ChangePlan, bool]:
        """The change files the previous list holds that stay (their commits still on
        the timeline and readable), the plan of the commits after it (a sync after one
        commit plans that commit alone), and whether the plan is a full one: without a
        usable previous list (the first sync, a restore that undid its last commit,
        cleaning past it, a pending write completed since) every readable commit is
        planned."""
        table = self.table
        folder = self._previous_folder(instant)
        previous = self.listed(folder) if folder is not None else set()
        completed = {i.requested_time for i in table.timeline.completed_writes}
        by_commit = {_commit_of(name): name for name in previous}
        last = max(by_commit, key=comparable_instant) if by_commit else None
        readable = boundary is None or (
            last is not None and comparable_instant(last) >= comparable_instant(boundary)
        )
        completed_since = folder is not None and bool(self.listed(folder, PENDING_LIST) & completed)
        if last is not None and last in completed and readable and not completed_since:
            kept = [
                name
                for commit, name in sorted(
                    by_commit.items(), key=lambda c: comparable_instant(c[0])
                )
                if commit in completed
                and (boundary is None or comparable_instant(commit) > comparable_instant(boundary))
            ]
            return kept, plan_changes(table, last, instant, self.infer, boundary), False
        return [], plan_changes(table, "earliest", instant, self.infer, boundary), True

    def _commit_instant(self, name: str) -> Instant | None:
        """The completed write a change file holds the changes of."""
        commit = _commit_of(name)
        return next(
            (i for i in self.table.timeline.completed_writes if i.requested_time == commit), None
        )

    def _previous_folder(self, instant: str) -> str | None:
        """The newest complete list folder before ``instant`` (None: no earlier list)."""
        key = comparable_instant(instant)
        older = [f for f in self.snapshot_folders() if comparable_instant(f) < key]
        fs = self.table.location.fs
        complete = [f for f in older if fs.exists(self.path("snapshots", f, "files.csv"))]
        return complete[-1] if complete else None

    def commit_rows(self, commit: Instant, splits: list[ChangeSplit]) -> pa.Table:
        """One commit's change rows with their keys, partitions and typed images."""
        table = self.table
        where = f"{table.uri}: changes of {commit.requested_time}"
        parts = []
        for split in splits:
            rows = change_rows(table.location, [split])
            partition = pa.array([split.partition_path] * rows.num_rows, pa.string())
            parts.append(rows.append_column("partition_path", partition))
        rows = pa.concat_tables(parts) if parts else None
        columns = self.typed_at(commit)
        before = typed_images(rows.column("before") if rows else None, columns, where)
        after = typed_images(rows.column("after") if rows else None, columns, where)
        count = rows.num_rows if rows is not None else 0
        keys = self._keys(before, after, where) if count else pa.array([], pa.string())
        out: dict[str, Any] = {}
        for field in FIXED_COLUMNS:
            if field.name == "record_key":
                out[field.name] = keys
            elif rows is not None:
                out[field.name] = rows.column(field.name).cast(field.type)
            else:
                out[field.name] = pa.array([], field.type)
        for name in columns.names:
            out[f"before_{name}"] = before.column(name)
            out[f"after_{name}"] = after.column(name)
        return pa.table(out, schema=feed_schema(columns))

    def typed_at(self, commit: Instant) -> pa.Schema:
        """The typed image columns of the commit's change file (``typed_columns``), parsed
        once a commit: its file name and its rows both need them."""
        typed = self._typed.get(commit.requested_time)
        if typed is None:
            typed = self._typed[commit.requested_time] = typed_columns(self.schema_at(commit))
        return typed

    def schema_at(self, commit: Instant) -> pa.Schema:
        """The table's columns as the commit wrote them (its commit metadata's schema,
        else the table's), without meta fields."""
        text = self.table.timeline.commit_metadata(commit).schema
        avro = (
            parse_avro_schema(text, f"{self.table.uri}: {commit.file_name}")
            if text
            else self.table.avro_schema
        )
        named: dict[str, Any] = {}
        fields = []
        for field in avro.get("fields", []):
            if field["name"] in META_FIELDS:
                continue
            with contextlib.suppress(Exception):  # a type Arrow lacks stays JSON only
                fields.append(pa.field(field["name"], avro_to_arrow(field["type"], named)))
        return pa.schema(fields)

    def _keys(self, before: pa.Table, after: pa.Table, where: str) -> pa.Array:
        """Each row's record key, built from the after image's key fields, else the
        before image's (a delete)."""
        fields = key_fields(self.table.config, where)
        missing = [f for f in fields if f not in after.column_names]
        if missing:
            raise CorruptTableError(f"{where}: key field {missing[0]} has no typed column")
        has_after = pc.is_valid(after.column(fields[0]))
        for name in fields[1:]:
            has_after = pc.or_(has_after, pc.is_valid(after.column(name)))
        images = pa.table(
            {
                name: pc.if_else(has_after, after.column(name), before.column(name))
                for name in fields
            }
        )
        return built_keys(images, fields, where, CorruptTableError)

    def _write_parquet(self, path: str, rows: pa.Table) -> None:
        sink = io.BytesIO()
        pq.write_table(rows, sink, compression="zstd")
        self.table.location.write_file(path, sink.getvalue())

    def _write_lists(self, instant: str, names: tuple[str, ...], pending: list[str]) -> None:
        """The snapshot's lists, after ``pending.csv``: the writes pending at this
        publication (one that completes later, requested before the last listed commit,
        makes the next sync plan in full)."""
        if not self.table.location.fs.exists(self.path("snapshots", instant, "files.csv")):
            self.table.location.write_file(
                self.path("snapshots", instant, PENDING_LIST),
                lines_bytes(pa.array(pending, pa.string()), ""),
            )
        self.write_lists(instant, names)

    def existing(self) -> set[str]:
        """Change files present, relative to ``changes/``."""
        fs = self.table.location.fs
        root = self.folder.rstrip("/")
        try:
            found = fs.find(root)
        except FileNotFoundError:
            return set()
        relative = (str(p)[len(root) + 1 :] for p in found if str(p).startswith(root + "/"))
        return {
            r
            for r in relative
            if r.startswith(f"{DATE_KEY}=")
            and r.rsplit("/", 1)[-1].startswith(CHANGE_FILE_PREFIX)
            and r.endswith(".parquet")
        }


def typed_columns(schema: pa.Schema) -> pa.Schema:
    """The columns whose values the JSON images carry exactly: integers, floats,
    booleans, strings, dates, timestamps and decimals of up to 15 digits."""
    kept = []
    for field in schema:
        kind = field.type
        if (
            pa.types.is_integer(kind)
            or pa.types.is_floating(kind)
            or pa.types.is_boolean(kind)
            or pa.types.is_string(kind)
            or pa.types.is_large_string(kind)
            or pa.types.is_date(kind)
            or pa.types.is_timestamp(kind)
            or (pa.types.is_decimal(kind) and kind.precision <= _EXACT_DECIMAL_DIGITS)
        ):
            kept.append(field)
    return pa.schema(kept)


def typed_images(images: pa.ChunkedArray | None, columns: pa.Schema, where: str) -> pa.Table:
    """The JSON images parsed into ``columns`` (a null image: every column null).
    Dates and timestamps are read as their ISO text and decimals as doubles, then cast."""
    if images is None or len(images) == 0:
        return columns.empty_table()
    texts = pc.fill_null(
        images.combine_chunks() if isinstance(images, pa.ChunkedArray) else images, "{}"
    )
    read_as = pa.schema([pa.field(f.name, _json_type(f.type)) for f in columns])
    data = b"\n".join(t.encode("utf-8") for t in texts.to_pylist())
    try:
        parsed = pa_json.read_json(
            io.BytesIO(data),
            read_options=pa_json.ReadOptions(use_threads=False),
            parse_options=pa_json.ParseOptions(
                explicit_schema=read_as, unexpected_field_behavior="ignore"
            ),
        )
        return pa.table(
            {f.name: parsed.column(f.name).cast(f.type) for f in columns}, schema=columns
        )
    except pa.ArrowInvalid as exc:
        raise CorruptTableError(
            f"{where}: an image does not match the table's columns: {exc}"
        ) from exc


def _json_type(kind: pa.DataType) -> pa.DataType:
    if pa.types.is_date(kind) or pa.types.is_timestamp(kind):
        return pa.string()
    if pa.types.is_decimal(kind):
        return pa.float64()
    return kind


def feed_enabled(table: HudiTable, setting: str) -> bool:
    """Whether syncs publish the table's change feed (``hudi_sync.sync.change.feed``):
    ``auto`` for CDC tables (``hoodie.table.cdc.enabled``), ``on`` for every table."""
    return setting == "on" or (setting == "auto" and bool(table.config.cdc_enabled))


__all__ = [
    "CHANGES_FOLDER",
    "ChangeFeedStore",
    "PublishedChanges",
    "change_file",
    "feed_enabled",
    "feed_schema",
    "schema_digest",
    "typed_columns",
    "typed_images",
]
