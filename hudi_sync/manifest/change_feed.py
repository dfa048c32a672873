"""The change feed: each published commit's CDC rows as Parquet beside the manifests,
so warehouses can serve ``<t>_changes`` to incremental models.

Layout under ``<table>/.hoodie/manifest/changes/``:

- ``commit_date=<YYYY-MM-DD>/commit_time=<instant>/changes-<schema>.parquet`` — the rows
  the CDC query (``hudi_sync.table.cdc.plan``) gives for that one commit, written once
  (under a temporary name, then moved into place) and never rewritten: a rerun or a sync
  after a crash finds it and reuses it. Hive-style folders, so a warehouse prunes by
  commit date and time; ``<schema>`` is a digest of the file's columns, so a reader can
  bind each group of equal files from one footer (``schema_digest``).
- ``snapshots/<instant>/`` — the change files the feed holds as of that snapshot, as a
  base list or a delta list, like the manifests' deltas (``delta``): a base holds
  ``files.csv`` and ``uris.csv`` (every change file, relative to ``changes/`` and as
  absolute URIs); a delta holds ``added.csv`` and ``added_uris.csv``, the change files
  added since its base (cumulative: a reader needs the base and this one delta), so a
  sync after one commit writes a list of the commits since the base, not of the feed.
  ``feed.json``, written last, says which (``base``: null, or the base's instant) and
  what the lists hold (count, oldest and newest commit, the newest file of each schema);
  a folder without it is incomplete (a folder of an older version, with ``files.csv``
  only, is read as a base). Every ``roll_commits`` commits, and whenever a commit leaves
  the feed (cleaning moved its range, a rollback or restore), a sync writes a new base.
  The lists are written before the warehouse objects switch to the snapshot, which
  read exactly the files listed: a commit's changes appear together with the manifest
  that publishes it, and a commit a rollback or restore removed is in no later list.

The feed covers the commits the CDC query can still answer (after the last clean's
earliest retained commit and the newest archived commit, ``plan_changes`` with
``earliest``) up to the published instant; files no retained list names are pruned
with the manifests' retention (the newest ``keep`` snapshots and the bases they name).

Each row: ``op``, ``ts_ms`` (the commit's instant, as the CDC query gives it),
``record_key``, ``partition_path``, ``before`` and ``after`` (Hudi's JSON images) and
the images' top-level columns typed, ``before_<column>``/``after_<column>``, for the
types ``typed_columns`` can parse from the JSON exactly (the rest are in the JSON only).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import re
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from hudi_sync.arrow_numpy import string_array
from hudi_sync.errors import CorruptTableError
from hudi_sync.manifest.file_set import lines_bytes
from hudi_sync.manifest.incremental import why_not_incremental
from hudi_sync.manifest.listed_files import FILES_LIST, INSTANT, ListedFileStore
from hudi_sync.table import HudiTable
from hudi_sync.table.avro.bounded import load_json
from hudi_sync.table.cdc.plan import plan_changes
from hudi_sync.table.cdc.read import change_rows
from hudi_sync.table.cdc.readable_range import ReadableRange, readable_range
from hudi_sync.table.cdc.splits import ChangePlan, ChangeSplit
from hudi_sync.table.config.schema import META_FIELDS, parse_avro_schema
from hudi_sync.table.keys.record_keys import built_keys, key_fields
from hudi_sync.table.read.snapshot import avro_to_arrow
from hudi_sync.table.timeline.active import Timeline
from hudi_sync.table.timeline.instant import Action, Instant, comparable_instant
from hudi_sync.table.timeline.listing import TimelineListing

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
# A delta snapshot's lists (the change files added since its base) and every complete
# snapshot's description, written last.
DELTA_LIST = "added.csv"
DELTA_URIS = "added_uris.csv"
FEED_META = "feed.json"
# Commits a chain of delta lists covers before a sync writes a new base list.
ROLL_COMMITS = 100
# Change files made durable together (``Location.write_files``): at most this many, or
# as many as reach this size, so a long backfill interrupted keeps most of its work.
_BATCH_FILES = 64
_BATCH_BYTES = 64 << 20
# ``change_file``'s names: the lines of the snapshots' ``files.csv``.
CHANGE_FILE_NAME = re.compile(
    rf"{DATE_KEY}=\d{{4}}-\d{{2}}-\d{{2}}/{TIME_KEY}=\d+/"
    rf"{CHANGE_FILE_PREFIX}[0-9a-f]{{{_DIGEST_LENGTH}}}\.parquet"
)


@dataclass(frozen=True)
class PublishedChanges:
    """The change feed as of one snapshot: where its lists live (a base list, and a
    delta list unless the snapshot is a base), how many files they name, and the range
    of commits it holds (``after`` exclusive, ``through`` inclusive)."""

    instant: str | None
    count: int  # change files the lists name
    files_uri: str  # the base's lists
    uris_uri: str
    folder_uri: str
    after: str | None  # the feed holds commits after this one (None: from the first)
    through: str | None
    # The newest change file's columns (``feed_schema``): what a warehouse declares.
    schema: pa.Schema = FIXED_COLUMNS
    written: int = 0  # change files this publication wrote (the rest were reused)
    # Each schema digest the lists name, with its columns, newest first.
    groups: tuple[tuple[str, pa.Schema], ...] = ()
    delta_files_uri: str | None = None  # the delta's lists (None: the snapshot is a base)
    delta_uris_uri: str | None = None

    def list_uris(self) -> list[str]:
        """The lists of change files relative to ``folder_uri`` (base, then delta)."""
        return [self.files_uri, *([self.delta_files_uri] if self.delta_files_uri else [])]

    def uri_lists(self) -> list[str]:
        """The lists of change files as absolute URIs (base, then delta)."""
        return [self.uris_uri, *([self.delta_uris_uri] if self.delta_uris_uri else [])]

    def summary(self) -> dict[str, Any]:
        """The feed in a sync's ``--json`` report."""
        return {
            "commits": self.count,
            "after": self.after,
            "through": self.through,
            "written": self.written,
            "uris_uri": self.uris_uri,
            "delta_uris_uri": self.delta_uris_uri,
        }

    def description(self) -> str:
        """What range the feed holds, for the warehouse object's description."""
        start = f"after {self.after}" if self.after else "from the first commit"
        return f"changes of the commits {start} through {self.through or '(none)'}"


@dataclass(frozen=True)
class ListsMeta:
    """A snapshot's ``feed.json``: its base (None: it is one), the commits its deltas
    cover since the base, what its lists name, and the CDC query's readable range at
    its publication (None: unknown, from an older version), which the next sync moves
    on the timeline's tail."""

    base: str | None
    commits: int
    count: int
    oldest: str | None  # the oldest and newest listed commit
    last: str | None
    digests: dict[str, str]  # schema digest -> the newest change file with it
    readable: ReadableRange | None = None

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "base": self.base,
                "commits": self.commits,
                "count": self.count,
                "oldest": self.oldest,
                "last": self.last,
                "digests": self.digests,
                "readable": dataclasses.asdict(self.readable) if self.readable else None,
            },
            sort_keys=True,
        ).encode()


def _lists_meta(names: list[str], base: str | None, commits: int) -> ListsMeta:
    """The description of lists naming ``names`` (in commit order)."""
    digests: dict[str, str] = {}
    for name in names:
        digests[schema_digest(name)] = name  # the newest wins
    oldest = _commit_of(names[0]) if names else None
    last = _commit_of(names[-1]) if names else None
    return ListsMeta(base, commits, len(names), oldest, last, digests)


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
    files listed per snapshot: ``ListedFileStore``, as base and delta lists)."""

    def __init__(
        self,
        table: HudiTable,
        keep: int,
        roll_commits: int = ROLL_COMMITS,
        listing: TimelineListing | None = None,
    ) -> None:
        """``listing``: the sync's listing of the timeline folder (``TimelineListing``),
        which the tail since the previous snapshot is read from; else a new one."""
        super().__init__(
            table,
            CHANGES_FOLDER,
            "",
            keep,
            {FILES_LIST: CHANGE_FILE_NAME, DELTA_LIST: CHANGE_FILE_NAME, PENDING_LIST: INSTANT},
        )
        # A table without CDC has its changes inferred (``plan_changes(infer=True)``).
        self.infer = not table.config.cdc_enabled
        self.roll_commits = roll_commits
        self.listing = listing
        # The timeline this publication reads: the table's, or its tail (``_readable``).
        self.timeline = table.timeline
        self._typed: dict[str, pa.Schema] = {}  # typed_at, by instant
        self._metas: dict[str, ListsMeta | None] = {}
        self._lists: dict[tuple[str, str], set[str]] = {}  # listed: lists are immutable

    def listed(self, folder: str, list_name: str = FILES_LIST) -> set[str]:
        key = (folder, list_name)
        if key not in self._lists:
            self._lists[key] = super().listed(folder, list_name)
        return self._lists[key]

    def publish(self, instant: str | None, dry_run: bool = False) -> PublishedChanges:
        """Write the change file of every commit in the feed's range that has none yet,
        then the snapshot's lists (unless ``dry_run``: nothing is written): a delta list
        of the commits since the base when the previous snapshot's lists still hold
        (``_delta_base``), else a new base list. The range and the commits come from the
        timeline's tail since the previous snapshot when it can tell them (``_readable``),
        so a sync after one commit parses no older instant."""
        table = self.table
        if instant is None:
            return self._published("empty", None, None, ListsMeta(None, 0, 0, None, None, {}))
        done = self.meta(instant)
        if done is not None:  # a rerun of a published snapshot: its lists are immutable
            boundary = self._readable(instant, done).boundary
            return self._published(instant, done.base or instant, boundary, done)
        previous = self._previous_folder(instant)
        before = self.meta(previous) if previous is not None else None
        readable = self._readable(previous, before)
        boundary = readable.boundary
        plan = self._incremental_plan(instant, previous, before, boundary)
        full = plan is None
        if plan is None:
            self.timeline = table.timeline  # every readable commit: the whole timeline
            plan = plan_changes(table, "earliest", instant, self.infer, boundary)
        commits = list(plan.instants)
        by_commit: dict[str, list[ChangeSplit]] = defaultdict(list)
        for split in plan.splits:
            by_commit[split.instant].append(split)
        fresh = {commit.requested_time: feed_schema(self.typed_at(commit)) for commit in commits}
        new = [change_file(c.requested_time, _digest(fresh[c.requested_time])) for c in commits]
        base = None if full else self._delta_base(instant, previous, before, boundary, commits)
        if base is not None:
            assert previous is not None and before is not None
            added = sorted(
                {*self._delta_names(previous, before), *new},
                key=lambda n: comparable_instant(_commit_of(n)),
            )
            base_meta = self.meta(base)
            assert base_meta is not None
            meta = _lists_meta(added, base, before.commits + len(commits))
            meta = ListsMeta(
                base,
                meta.commits,
                base_meta.count + meta.count,
                base_meta.oldest or meta.oldest,
                meta.last or base_meta.last,
                {**base_meta.digests, **meta.digests},
            )
            listed = tuple(added)
        else:
            kept = [] if full or previous is None else self._kept(previous, boundary)
            listed = (*kept, *new)
            meta = _lists_meta(list(listed), None, 0)
        written = 0
        if not dry_run:
            # Change files are written in batches (``Location.write_files``), the last
            # one with the snapshot's lists.
            batch: list[tuple[str, bytes]] = []
            size = 0
            for commit, name in zip(commits, new, strict=True):
                if table.location.fs.exists(self.path(name)):
                    continue  # immutable: written by an earlier (perhaps interrupted) sync
                rows = self.commit_rows(commit, by_commit.get(commit.requested_time, []))
                batch.append((self.path(name), _parquet_bytes(rows)))
                size += len(batch[-1][1])
                written += 1
                if len(batch) >= _BATCH_FILES or size >= _BATCH_BYTES:
                    table.location.write_files(batch)
                    batch, size = [], 0
            pending = sorted(i.requested_time for i in self.timeline.pending)
            meta = replace(meta, readable=_kept_range(readable))
            self._write_lists(instant, listed, pending, meta, batch)
            self.prune_chains(instant, meta, scan=full)
        published = self._published(instant, base or instant, boundary, meta, fresh)
        return replace(published, written=written)

    def _published(
        self,
        folder: str,
        base: str | None,
        boundary: str | None,
        meta: ListsMeta,
        fresh: dict[str, pa.Schema] | None = None,
    ) -> PublishedChanges:
        """The feed as ``folder``'s lists hold it (``base``: where its base lists are)."""
        groups = self._groups(meta, fresh or {})
        delta = base is not None and base != folder
        return PublishedChanges(
            None if folder == "empty" else folder,
            meta.count,
            self.uri("snapshots", base or folder, FILES_LIST),
            self.uri("snapshots", base or folder, "uris.csv"),
            self.uri(),
            boundary,
            None if folder == "empty" else folder,
            groups[0][1] if groups else FIXED_COLUMNS,
            0,
            groups,
            self.uri("snapshots", folder, DELTA_LIST) if delta else None,
            self.uri("snapshots", folder, DELTA_URIS) if delta else None,
        )

    def _groups(
        self, meta: ListsMeta, fresh: dict[str, pa.Schema]
    ) -> tuple[tuple[str, pa.Schema], ...]:
        """Each schema digest the lists name with its columns, newest first: a file
        written now has its schema at hand, an older one's is read from its footer."""
        newest_first = sorted(
            meta.digests.items(), key=lambda d: comparable_instant(_commit_of(d[1])), reverse=True
        )
        groups = []
        for digest, name in newest_first:
            schema = fresh.get(_commit_of(name))
            if schema is None or _digest(schema) != digest:
                schema = self._footer_schema(name)
            groups.append((digest, schema))
        return tuple(groups)

    def _footer_schema(self, name: str) -> pa.Schema:
        path = self.path(name)
        try:
            with self.table.location.fs.open(path, "rb") as handle:
                return pq.read_schema(handle).remove_metadata()
        except (OSError, pa.ArrowInvalid) as exc:
            raise CorruptTableError(
                f"{self.uri(name)}: not a readable change file ({exc})"
            ) from None

    def _readable(self, folder: str | None, meta: ListsMeta | None) -> ReadableRange:
        """The CDC query's readable range now, and the timeline this publication reads
        (``self.timeline``): snapshot ``folder``'s range moved on the timeline's tail
        from its newest listed commit on (``ReadableRange.advanced``), else the whole
        timeline's."""
        table = self.table
        if folder is not None and meta is not None and meta.readable is not None:
            pending = tuple(sorted(self.listed(folder, PENDING_LIST)))
            since = min(folder, meta.last or folder, key=comparable_instant)
            also = (*pending, *meta.readable.watched())
            tail = Timeline(table.location, table.config, since, also, self.listing)
            readable = meta.readable.advanced(tail, pending)
            if readable is not None:
                self.timeline = tail
                return readable
        self.timeline = table.timeline
        return readable_range(table)

    def _incremental_plan(
        self, instant: str, previous: str | None, before: ListsMeta | None, boundary: str | None
    ) -> ChangePlan | None:
        """The plan of the commits after the previous snapshot's newest listed commit (a
        sync after one commit plans that commit alone); None when every readable commit
        must be planned: no usable previous list (the first sync, a restore that undid
        its last commit, cleaning past it, a pending write completed since)."""
        if previous is None or before is None:
            return None
        table = self.table
        completed = {i.requested_time for i in self.timeline.completed_writes}
        completed_since = bool(self.listed(previous, PENDING_LIST) & completed)
        last = before.last
        if last is None or completed_since:
            return None
        if before.base is not None and self.meta(before.base) is None:
            return None  # its base list is gone: what the feed held is unknown
        readable = boundary is None or comparable_instant(last) >= comparable_instant(boundary)
        if last not in completed or not readable:
            return None
        return plan_changes(table, last, instant, self.infer, boundary, self.timeline)

    def _delta_base(
        self,
        instant: str,
        previous: str | None,
        before: ListsMeta | None,
        boundary: str | None,
        commits: list[Instant],
    ) -> str | None:
        """The base the snapshot's delta list extends, or None when it gets a base list of
        its own: every ``roll_commits`` commits, and whenever a listed commit leaves the
        feed (the range moved past the oldest, a rollback or restore since)."""
        if previous is None or before is None or before.oldest is None:
            return None
        base = before.base or previous
        if before.commits + len(commits) > self.roll_commits or self.meta(base) is None:
            return None
        if boundary is not None and comparable_instant(before.oldest) <= comparable_instant(
            boundary
        ):
            return None
        pending = tuple(sorted(self.listed(previous, PENDING_LIST)))
        if why_not_incremental(self.timeline, previous, pending) is not None:
            return None
        return base

    def _delta_names(self, folder: str, meta: ListsMeta) -> set[str]:
        """The change files ``folder``'s delta list adds to its base (none for a base)."""
        return self.listed(folder, DELTA_LIST) if meta.base is not None else set()

    def _kept(self, previous: str, boundary: str | None) -> list[str]:
        """The change files the previous snapshot lists whose commits are still on the
        timeline and readable, in commit order. On the timeline's tail (``_readable``:
        no write left it since, no pending one completed) a listed commit older than the
        tail is still there unless a rollback or restore shows on it; then, or on no
        tail, the whole timeline tells."""
        timeline = self.timeline
        if timeline.since is None or any(
            i.action in (Action.ROLLBACK, Action.RESTORE) for i in timeline.instants
        ):
            timeline = self.table.timeline
        found = {i.requested_time: i for i in timeline.instants}
        older = comparable_instant(timeline.since) if timeline.since is not None else ""
        by_commit = {_commit_of(name): name for name in self.names_of(previous)}
        kept = []
        for commit, name in sorted(by_commit.items(), key=lambda c: comparable_instant(c[0])):
            instant = found.get(commit)
            there = (
                instant.is_completed and instant.is_write
                if instant is not None
                else comparable_instant(commit) < older
            )
            if there and (
                boundary is None or comparable_instant(commit) > comparable_instant(boundary)
            ):
                kept.append(name)
        return kept

    def names_of(self, folder: str) -> set[str]:
        """Every change file snapshot ``folder`` lists: its base's and its delta's."""
        meta = self.meta(folder)
        if meta is None or meta.base is None:
            return self.listed(folder) | self.listed(folder, DELTA_LIST)
        return self.listed(meta.base) | self.listed(folder, DELTA_LIST)

    def meta(self, folder: str) -> ListsMeta | None:
        """Snapshot ``folder``'s ``feed.json`` (read once); a folder of an older version
        (``files.csv`` alone) is a base described from its list; None: incomplete."""
        if folder not in self._metas:
            self._metas[folder] = self._read_meta(folder)
        return self._metas[folder]

    def _read_meta(self, folder: str) -> ListsMeta | None:
        source = self.uri("snapshots", folder, FEED_META)
        try:
            data = self.table.location.read_file(self.path("snapshots", folder, FEED_META))
        except FileNotFoundError:
            if not self.table.location.fs.exists(self.path("snapshots", folder, FILES_LIST)):
                return None
            names = sorted(self.listed(folder), key=lambda n: comparable_instant(_commit_of(n)))
            return _lists_meta(names, None, 0)
        document = load_json(data, source, "change feed lists")
        try:
            base = document["base"]
            if base is not None:
                base = self.checked_line(str(base), PENDING_LIST, source)
            instants = [document[k] for k in ("oldest", "last")]
            oldest, last = (
                None if i is None else self.checked_line(str(i), PENDING_LIST, source)
                for i in instants
            )
            digests = {}
            for digest, name in dict(document["digests"]).items():
                checked = self.checked_line(str(name), FILES_LIST, source)
                if schema_digest(checked) != digest:
                    raise CorruptTableError(f"{source}: {name!r} is not of schema {digest!r}")
                digests[digest] = checked
            readable = document.get("readable")
            if readable is not None:
                parts = {f.name: readable[f.name] for f in dataclasses.fields(ReadableRange)}
                readable = ReadableRange(
                    **{
                        name: None
                        if value is None
                        else self.checked_line(str(value), PENDING_LIST, source)
                        for name, value in parts.items()
                    }
                )
            meta = ListsMeta(
                base,
                int(document["commits"]),
                int(document["count"]),
                oldest,
                last,
                digests,
                readable,
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CorruptTableError(f"{source} is corrupt ({exc!r})") from None
        if meta.base is not None and comparable_instant(meta.base) >= comparable_instant(folder):
            raise CorruptTableError(f"{source}: its base {meta.base} is not older than it")
        return meta

    def _previous_folder(self, instant: str) -> str | None:
        """The newest complete list folder before ``instant`` (None: no earlier list)."""
        key = comparable_instant(instant)
        older = [f for f in self.snapshot_folders() if comparable_instant(f) < key]
        for folder in reversed(older):
            if self.meta(folder) is not None:
                return folder
        return None

    def prune_chains(self, current: str, meta: ListsMeta, scan: bool) -> None:
        """Keep the newest ``keep`` snapshots up to ``current`` and the bases their deltas
        extend; drop the rest (``ListedFileStore.prune``'s rules for their files). A
        dropped delta whose base stays lists nothing a newer delta on that base does not
        (deltas are cumulative and a removal makes a new base): then no list is read."""
        key = comparable_instant(current)
        older = [f for f in self.snapshot_folders() if comparable_instant(f) < key]
        window = [*older, current][-self.keep :]
        retained = set(window)
        if meta.base is not None:
            retained.add(meta.base)
        for folder in window[:-1]:
            folder_meta = self.meta(folder)
            if folder_meta is not None and folder_meta.base is not None:
                retained.add(folder_meta.base)
        dropped = [f for f in older if f not in retained]
        metas = [self.meta(f) for f in dropped]
        if not scan and all(m is not None and m.base in retained for m in metas):
            for folder in dropped:
                self.table.location.remove_tree(self.path("snapshots", folder))
            return
        self.prune(current, self.names_of(current), scan, retained)

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
        text = self.timeline.commit_metadata(commit).schema
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

    def _write_lists(
        self,
        instant: str,
        names: tuple[str, ...],
        pending: list[str],
        meta: ListsMeta,
        files: list[tuple[str, bytes]],
    ) -> None:
        """The snapshot's lists, made durable together with ``files`` (change files not
        written yet, ``Location.write_files``): ``pending.csv`` (the writes pending at
        this publication: one that completes later, requested before the last listed
        commit, makes the next sync plan in full), a base's ``uris.csv`` or a delta's
        ``added_uris.csv`` and ``added.csv``; then a base's ``files.csv`` (a folder with
        it and no ``feed.json`` reads as an older version's base: it comes after every
        file it names), then ``feed.json``, which completes the folder."""
        location = self.table.location
        last: list[tuple[str, bytes]] = []
        files = [
            *files,
            (
                self.path("snapshots", instant, PENDING_LIST),
                lines_bytes(pa.array(pending, pa.string()), ""),
            ),
        ]
        if meta.base is None:
            lists = self.list_files(instant, names)  # uris.csv, files.csv (none: a rerun)
            files, last = [*files, *lists[:-1]], lists[-1:]
        else:
            listed = string_array(list(names))
            uris = lines_bytes(listed, self.uri(self.data_folder) + "/")
            files += [
                (self.path("snapshots", instant, DELTA_URIS), uris),
                (self.path("snapshots", instant, DELTA_LIST), lines_bytes(listed, "")),
            ]
        location.write_files(files)
        location.write_files(last)
        location.write_file(self.path("snapshots", instant, FEED_META), meta.to_json())
        self._metas[instant] = meta

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


def _parquet_bytes(rows: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()  # no call back into Python for every write
    pq.write_table(rows, sink, compression="zstd")
    return bytes(sink.getvalue())


def _kept_range(readable: ReadableRange) -> ReadableRange | None:
    """The range as ``feed.json`` keeps it: its parts are instants (a clean's retained
    commit is whatever its metadata says; anything else is found again next time)."""
    parts = dataclasses.astuple(readable)
    return readable if all(p is None or INSTANT.fullmatch(p) for p in parts) else None


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
    "ListsMeta",
    "PublishedChanges",
    "change_file",
    "feed_enabled",
    "feed_schema",
    "schema_digest",
    "typed_columns",
    "typed_images",
]
