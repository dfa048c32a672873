"""DuckDB target: the three objects in a local DuckDB database file.

``<t>_manifest`` reads the published manifest CSV, ``<t>_history`` every parquet base
file under the table's partition folders (never ``.hoodie``), its columns bound from the
table's schema (creating it opens no file), and the view ``<t>`` keeps the history rows
whose file is in the manifest. All statements of a sync run in one transaction, so a
failure leaves the previous objects as they were.

Before the table's first commit there is no file to read: the manifest and history are
typed selects without rows (the history's columns from the table's Avro schema, typed
as ``read_parquet`` will read them), replaced by the first sync that has files.
"""

from __future__ import annotations

import functools
import hashlib
import os
import threading
import time
from collections.abc import Sequence
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from hudi_sync.errors import BadInputError, HudiSyncError, UnsupportedTableError
from hudi_sync.manifest.change_feed import (
    CHANGE_FILE_PREFIX,
    DATE_KEY,
    TIME_KEY,
    PublishedChanges,
)
from hudi_sync.manifest.file_set import FileSet
from hudi_sync.manifest.log_parquet import (
    EXTRA_COLUMNS,
    FILE_ID_COLUMN,
    PARTITION_FIELD,
    SOURCE_COLUMN,
)
from hudi_sync.manifest.snapshot import PublishedLogs, PublishedManifest
from hudi_sync.table import HudiTable
from hudi_sync.table.log_records import RECORD_KEY_FIELD
from hudi_sync.table.record_keys import (
    EMPTY_KEY_VALUE,
    KEY_PARTS_SEPARATOR,
    KEY_VALUE_SEPARATOR,
    NULL_KEY_VALUE,
    key_fields,
)
from hudi_sync.table.schema import META_FIELDS
from hudi_sync.warehouse.common import (
    ObjectNames,
    SnapshotQuery,
    SyncMarker,
    SyncPlan,
    SyncResult,
    changing_plan,
    declared_schema,
    ordering_kind,
    refuse_other_table,
    restore_reason,
    settled_plan,
    snapshot_query,
)
from hudi_sync.warehouse.common.quoting import duckdb_identifier as quote_identifier
from hudi_sync.warehouse.common.quoting import duckdb_literal as quote_literal

SOURCE_FILE_COLUMN = "__hudi_sync_source_file"
BUSY_TIMEOUT_SECONDS = 60.0


class _DatabaseBusy(Exception):
    """Another process holds the database file's lock, or a concurrent transaction won."""


# What DuckDB's glob and fsspec's (object stores) read as pattern syntax in a path.
_GLOB_CHARACTERS = frozenset("*?[]{}")


def glob_literal(path: str) -> str:
    """``path`` as a glob that matches only itself: every glob character in a class of
    its own (``t*`` is ``t[*]``). ``read_parquet`` and ``read_csv`` glob every path they
    are given, and neither DuckDB's glob nor fsspec's takes a backslash escape; both
    read a one-character class as that character."""
    if _GLOB_CHARACTERS.isdisjoint(path):
        return path  # the common case, at once: a change feed lists thousands of files
    return "".join(f"[{c}]" if c in _GLOB_CHARACTERS else c for c in path)


class DuckDBTarget:
    """Syncs a table's published manifest into a DuckDB database file."""

    mode = "view"
    # The manifest view can union a base snapshot and its changes (delta_manifest.py).
    supports_delta_manifests = True
    # The snapshot view of a table without meta fields builds its base rows' keys.
    supports_built_keys = True
    # The history view is built on read_parquet; ORC, HFile and Lance tables are refused.
    base_file_formats: frozenset[str] = frozenset({"PARQUET"})
    # A CDC table gets ``<t>_changes`` over its change feed (change_feed.py).
    supports_change_feed = True

    def __init__(self, database: str, table_name: str, skip_ro_suffix: bool = False) -> None:
        self.database = database
        self.table_name = table_name
        self.skip_ro_suffix = skip_ro_suffix

    @property
    def name(self) -> str:
        return f"duckdb:{self.database}"

    def _connect(self) -> duckdb.DuckDBPyConnection:
        try:
            return duckdb.connect(self.database)
        except duckdb.Error as exc:
            # "Could not set lock on file ...: Conflicting lock is held in ..." (the
            # message, not the path, which may itself contain "lock").
            message = str(exc).lower()
            if isinstance(exc, duckdb.IOException) and (
                "could not set lock" in message or "conflicting lock" in message
            ):
                raise _DatabaseBusy(str(exc)) from exc
            raise HudiSyncError(f"DuckDB database {self.database}: {exc}") from exc

    def object_names(
        self, table: HudiTable, published: PublishedManifest, as_of: bool
    ) -> ObjectNames:
        """Live objects, or ``_as_of_<instant>`` ones for a time-travel sync."""
        return ObjectNames.for_table(
            self.table_name,
            published.manifest.instant if as_of else None,
            merge_on_read=table.config.is_mor,
            skip_ro_suffix=self.skip_ro_suffix,
            change_feed=published.changes is not None,
        )

    def _comments(self, names: ObjectNames) -> dict[str, str]:
        if self.database != ":memory:" and not os.path.exists(self.database):
            return {}  # nothing synced yet; connecting would create the file (a dry run must not)
        with self._connect() as con:
            objects = list(names.all())
            marks = ", ".join("lower(?)" for _ in objects)
            # DuckDB identifiers are case-insensitive: "Sales" is the view "sales" replaces.
            rows = con.execute(
                "SELECT lower(view_name), comment FROM duckdb_views() "
                f"WHERE lower(view_name) IN ({marks}) AND NOT internal",
                objects,
            ).fetchall()
        found = {str(name): str(comment or "") for name, comment in rows}
        return {name: found[name.lower()] for name in objects if name.lower() in found}

    def current_marker(self, names: ObjectNames) -> SyncMarker | None:
        """The marker of the snapshot view, else (a COW table, a MOR table refused a
        snapshot view) of the view."""
        comments = self._comments(names)
        return SyncMarker.parse(comments.get(names.snapshot_view or "") or comments.get(names.view))

    def plan(
        self,
        table: HudiTable,
        published: PublishedManifest,
        as_of: bool = False,
        force: bool = False,
        replace_other_table: bool = False,
    ) -> SyncPlan:
        """The plan; objects whose marker names another base are refused unless
        ``force`` or ``replace_other_table`` (``refuse_other_table``)."""
        refuse_backslashes(table, published)
        names = self.object_names(table, published, as_of)
        marker = SyncMarker.of(published.manifest.instant, table.uri, self.mode)
        comments = self._comments(names)
        markers = {name: SyncMarker.parse(comment) for name, comment in comments.items()}
        refuse_other_table(self.name, markers, marker, force or replace_other_table)
        current = SyncMarker.parse(comments.get(names.marked(published.logs)))
        target = self.name
        marked = names.marked(published.logs)
        restored = restore_reason(table, marked, current, marker)
        settled = settled_plan(target, marked, current, marker, force, restored=restored)
        if settled is not None:
            return settled
        steps = self._statements(
            table, published, names, marker, comments if not force else {}, live=not as_of
        )
        return changing_plan(target, "create" if current is None else "update", steps, restored)

    def sync(
        self,
        table: HudiTable,
        published: PublishedManifest,
        as_of: bool = False,
        force: bool = False,
        dry_run: bool = False,
        replace_other_table: bool = False,
    ) -> tuple[SyncPlan, SyncResult]:
        """Plan and apply in one transaction. DuckDB lets one process write a database
        file at a time: while another sync holds it, wait and re-plan (the other sync may
        have brought the objects to this instant or past it already)."""
        deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
        pause = 0.02
        while True:
            try:
                return self._sync_once(table, published, as_of, force, dry_run, replace_other_table)
            except _DatabaseBusy as exc:
                if time.monotonic() > deadline:
                    raise HudiSyncError(
                        f"DuckDB database {self.database} stayed locked for "
                        f"{BUSY_TIMEOUT_SECONDS:.0f} s: {exc}"
                    ) from None
                time.sleep(pause)
                pause = min(pause * 2, 0.5)

    def _sync_once(
        self,
        table: HudiTable,
        published: PublishedManifest,
        as_of: bool,
        force: bool,
        dry_run: bool,
        replace_other_table: bool,
    ) -> tuple[SyncPlan, SyncResult]:
        plan = self.plan(table, published, as_of, force, replace_other_table)
        instant = published.manifest.instant
        names = self.object_names(table, published, as_of)
        objects = names.synced(published.logs)
        if dry_run or not plan.steps:
            return plan, plan.result(instant, objects, dry_run)
        with self._connect() as con:
            self._register_filesystem(con, table)
            try:
                con.execute("BEGIN TRANSACTION")
                for statement in plan.steps:
                    con.execute(statement)
                con.execute("COMMIT")
            except duckdb.TransactionException as exc:  # a concurrent sync's conflict
                con.execute("ROLLBACK")
                raise _DatabaseBusy(str(exc)) from exc
            except duckdb.Error as exc:
                con.execute("ROLLBACK")
                raise HudiSyncError(
                    f"DuckDB sync of {table.uri} into {self.database} failed: {exc}"
                ) from exc
        return plan, plan.result(instant, objects)

    @staticmethod
    def _register_filesystem(con: duckdb.DuckDBPyConnection, table: HudiTable) -> None:
        """Object stores are read through the table's own fsspec file system."""
        if not table.location.is_local:
            con.register_filesystem(table.location.fs)

    def _statements(
        self,
        table: HudiTable,
        published: PublishedManifest,
        names: ObjectNames,
        marker: SyncMarker,
        current: dict[str, str],
        live: bool = True,
    ) -> list[str]:
        """The sync's statements; ``live``: not a time-travel sync's ``_as_of_`` objects."""
        if published.delta is not None:
            manifest_sql = delta_manifest_select(published)
        elif published.manifest.files:
            manifest_sql = (
                f"SELECT filename FROM read_csv({_source(published.files_uri)}, "
                "header = false, columns = {'filename': 'VARCHAR'}, auto_detect = false, "
                f"{WHOLE_LINES})"
            )
        else:
            manifest_sql = "SELECT CAST(NULL AS VARCHAR) AS filename WHERE false"
        history_sql = self._history_select(table, published)
        file_column = (
            "_hoodie_file_name"
            if table.config.populate_meta_fields
            else f"regexp_extract({SOURCE_FILE_COLUMN}, '[^/]+$')"
        )
        view_sql = (
            f"SELECT * EXCLUDE ({SOURCE_FILE_COLUMN}) FROM {quote_identifier(names.history)} "
            f"WHERE {file_column} IN (SELECT filename FROM {quote_identifier(names.manifest)})"
        )
        # The history and the view are re-created only when their SQL changed (its
        # digest is kept in their comments: a new column re-binds the history); a new
        # snapshot replaces the manifest view alone, and the view reads it by name. A
        # history read by name (``union_by_name``) reads every base file's footer when
        # it is created.
        views: list[tuple[str, str | None]] = [
            (names.manifest, manifest_sql),
            (names.history, history_sql),
        ]
        feed_lists = changes_manifest(names.feed)
        if names.changes is not None and published.changes is not None:
            views.append((feed_lists, changes_lists_select(published.changes)))
            views.append((names.changes, changes_select(published.changes, feed_lists)))
        elif live:  # the feed was turned off (hudi_sync.sync.change.feed): drop it
            views += [(names.feed, None), (feed_lists, None)]
        views.append((names.view, view_sql))
        # Re-created every sync: the next snapshot's lists.
        switched = {names.manifest, feed_lists}
        if names.snapshot_view is not None and published.logs is not None:
            views += self._snapshot_views(table, names, published.logs)
            if names.log_manifest is not None:
                switched.add(names.log_manifest)
        statements = []
        for name, select in views:
            if select is None:
                statements.append(f"DROP VIEW IF EXISTS {quote_identifier(name)}")
                continue
            create = f"CREATE OR REPLACE VIEW {quote_identifier(name)} AS {select}"
            digest = hashlib.sha256(create.encode()).hexdigest()[:16]
            if name in switched or f"sql={digest}" not in current.get(name, ""):
                statements.append(create)
            feed = published.changes if name == names.changes else None
            described = f"; {feed.description()}" if feed is not None else ""
            comment = quote_literal(f"{marker.render()} sql={digest}{described}")
            statements.append(f"COMMENT ON VIEW {quote_identifier(name)} IS {comment}")
        return statements

    def _snapshot_views(
        self, table: HudiTable, names: ObjectNames, logs: PublishedLogs
    ) -> list[tuple[str, str | None]]:
        """``<t>_log_manifest``, ``<t>_log_history`` and ``<t>_rt`` (the snapshot view,
        last: its comment carries the marker). A snapshot without log records is its
        read-optimized view, and has no log objects."""
        assert names.snapshot_view and names.log_manifest and names.log_history
        ro = quote_identifier(names.view)
        if not logs.names:
            return [
                (names.log_manifest, None),
                (names.log_history, None),
                (names.snapshot_view, f"SELECT * FROM {ro}"),
            ]
        manifest_sql = (
            f"SELECT filename FROM read_csv({_source(logs.files_uri)}, "
            "header = false, columns = {'filename': 'VARCHAR'}, auto_detect = false)"
        )
        glob = quote_literal(glob_literal(logs.folder_uri.rstrip("/")) + "/*.parquet")
        schema = schema_map(log_columns(logs.schema))
        history_sql = f"SELECT * FROM read_parquet({glob}, schema = {schema})"
        return [
            (names.log_manifest, manifest_sql),
            (names.log_history, history_sql),
            (names.snapshot_view, snapshot_select(names, logs, built_key_rows(table, names))),
        ]

    def _history_select(self, table: HudiTable, published: PublishedManifest) -> str:
        if published.delta is not None:
            depths: Sequence[int] = published.delta.manifest.depths
        else:
            depths = published.manifest.depths()
        globs = partition_globs(table.location.uri, depths)
        if not globs:  # no base file yet (an empty table): typed, no rows
            typed = ", ".join(
                f"CAST(NULL AS {sql_type}) AS {quote_identifier(name)}"
                for name, sql_type in empty_history_columns(table)
            )
            return f"SELECT {typed}, CAST(NULL AS VARCHAR) AS {SOURCE_FILE_COLUMN} WHERE false"
        hive = table.config.hive_style_partitioning and table.config.drop_partition_columns
        sources = "[" + ", ".join(quote_literal(g) for g in globs) + "]"
        source_column = quote_literal(SOURCE_FILE_COLUMN)
        columns = None if hive else bound_columns(table, published.manifest.instant)
        if columns is None:  # only the files tell the columns
            return (
                f"SELECT * FROM read_parquet({sources}, filename = {source_column}, "
                f"union_by_name = true, hive_partitioning = {str(hive).lower()})"
            )
        # Bound from the table's schema: creating the view opens no file, a file without
        # a column (written before it was added) reads it as NULL.
        schema = schema_map(columns)
        return (
            f"SELECT * FROM read_parquet({sources}, filename = {source_column}, "
            f"hive_partitioning = false, schema = {schema})"
        )


# A manifest list read one whole line a row: its lines hold no tab or line break
# (``hudi_sync.manifest.safe_paths``), and a comma or quote in a partition folder is
# part of the path, not a delimiter or quotation.
WHOLE_LINES = "delim = '\\t', quote = '', escape = ''"


def snapshot_select(names: ObjectNames, logs: PublishedLogs, base_rows: str | None = None) -> str:
    """The snapshot view's query (``snapshot_query``) in DuckDB: the columns by name
    (``UNION ALL BY NAME``), whatever the base files' schemas; ``base_rows``: see
    ``built_key_rows``."""
    assert names.log_manifest and names.log_history
    spelling = SnapshotQuery(
        quote_identifier,
        quote_literal,
        lambda column: f"regexp_extract({column}, '^[^_]+')",
        f"b.* EXCLUDE ({FILE_ID_COLUMN})",
        f"l.* EXCLUDE ({', '.join(EXTRA_COLUMNS)})",
        is_nan=lambda value: f"isnan({value})",
        fail=lambda message: f"error({message})",
        union="UNION ALL BY NAME",
    )
    return snapshot_query(
        spelling,
        quote_identifier(names.view),
        quote_identifier(names.log_history),
        quote_identifier(names.log_manifest),
        logs.ordering_field,
        ordering_kind(logs),
        base_rows,
    )


def changes_manifest(feed: str) -> str:
    """The view of the change files the feed's lists name (``<t>_changes_manifest``)."""
    return f"{feed}_manifest"


# A change file's name as its lists hold it: the last three parts of its path.
CHANGE_FILE_TAIL = "[^/]+/[^/]+/[^/]+$"


def changes_lists_select(changes: PublishedChanges) -> str:
    """``<t>_changes_manifest``: the lines of the snapshot's lists (its base's, and its
    delta's), each a change file relative to the feed's folder. Re-created each sync:
    the switch to the snapshot's feed."""
    if not changes.count:
        return "SELECT CAST(NULL AS VARCHAR) AS filename WHERE false"
    sources = "[" + ", ".join(_source(uri) for uri in changes.list_uris()) + "]"
    return (
        f"SELECT filename FROM read_csv({sources}, header = false, "
        f"columns = {{'filename': 'VARCHAR'}}, auto_detect = false, {WHOLE_LINES})"
    )


def changes_select(changes: PublishedChanges, lists: str) -> str:
    """``<t>_changes``: the rows of the change files the view ``lists`` names, with the
    hive columns ``commit_date`` and ``commit_time``. One ``read_parquet`` per group of
    files with the same columns (``schema_digest``), over a glob of the group's file
    name and bound from its columns: the query is the same whatever the feed's length
    (a sync re-creates it only when a group comes or goes), binding it opens no file,
    and a filter on ``commit_time`` opens only the files of the commits it keeps.
    Groups are unioned by name (newest first: its column order)."""
    if not changes.count:
        columns = ", ".join(
            f"CAST(NULL AS {kind}) AS {quote_identifier(name)}"
            for name, kind in arrow_columns(changes.schema)
        )
        return (
            f"SELECT {columns}, CAST(NULL AS DATE) AS {DATE_KEY}, "
            f"CAST(NULL AS VARCHAR) AS {TIME_KEY} WHERE false"
        )
    folder = glob_literal(changes.folder_uri.rstrip("/"))
    source = quote_identifier(SOURCE_FILE_COLUMN)
    # The hive columns from the path (DuckDB takes no ``schema`` with hive_partitioning);
    # a filter on them is a file filter, as on hive columns.
    date = quote_literal(f"{DATE_KEY}=([^/]*)/")
    time = quote_literal(f"{TIME_KEY}=([^/]*)/")
    reads = []
    for digest, schema in changes.groups:
        glob = f"{folder}/{DATE_KEY}=*/{TIME_KEY}=*/{CHANGE_FILE_PREFIX}{digest}.parquet"
        reads.append(
            f"SELECT * EXCLUDE ({source}), "
            f"CAST(regexp_extract({source}, {date}, 1) AS DATE) AS {DATE_KEY}, "
            f"regexp_extract({source}, {time}, 1) AS {TIME_KEY} "
            f"FROM read_parquet({quote_literal(glob)}, "
            f"filename = {quote_literal(SOURCE_FILE_COLUMN)}, "
            f"schema = {schema_map(arrow_columns(schema))}) "
            f"WHERE regexp_extract({source}, {quote_literal(CHANGE_FILE_TAIL)}) IN "
            f"(SELECT filename FROM {quote_identifier(lists)})"
        )
    return " UNION ALL BY NAME ".join(reads)


def built_key_rows(table: HudiTable, names: ObjectNames) -> str | None:
    """For a table without meta fields (None otherwise), the snapshot view's base rows:
    the read-optimized view's rows with the record key built from the key fields as the
    key generator builds it (``record_keys``; the sync checked their types when it
    folded the logs), the partition path and file group from the base file's path (the
    history's source file column). A file outside the table's folder fails the query."""
    if table.config.populate_meta_fields:
        return None
    q, lit = quote_identifier, quote_literal
    fields = key_fields(table.config, table.uri)
    texts = [f"CAST({q(f)} AS VARCHAR)" for f in fields]
    if len(fields) == 1:
        key = texts[0]
    else:
        parts = [
            f"{lit(f + KEY_VALUE_SEPARATOR)} || CASE WHEN {t} IS NULL THEN {lit(NULL_KEY_VALUE)} "
            f"WHEN {t} = '' THEN {lit(EMPTY_KEY_VALUE)} ELSE {t} END"
            for f, t in zip(fields, texts, strict=True)
        ]
        key = f"concat_ws({lit(KEY_PARTS_SEPARATOR)}, {', '.join(parts)})"
    source = q(SOURCE_FILE_COLUMN)
    name = f"regexp_extract({source}, '[^/]+$')"
    prefix = table.location.uri.rstrip("/") + "/"
    outside = lit(f"{table.uri}: a base file is outside the table's folder: ")
    partition = (
        f"CASE WHEN starts_with({source}, {lit(prefix)}) "
        f"THEN regexp_extract(substr({source}, {len(prefix) + 1}), '^(.*)/[^/]*$', 1) "
        f"ELSE error({outside} || {source}) END"
    )
    replaced = ", ".join(lit(c) for c in (SOURCE_FILE_COLUMN, RECORD_KEY_FIELD, PARTITION_FIELD))
    return (
        f"SELECT COLUMNS(lambda c: c NOT IN ({replaced})), {key} AS {q(RECORD_KEY_FIELD)}, "
        f"{partition} AS {q(PARTITION_FIELD)}, "
        f"regexp_extract({name}, '^[^_]+') AS {q(FILE_ID_COLUMN)} "
        f"FROM {q(names.history)} WHERE {name} IN (SELECT filename FROM {q(names.manifest)})"
    )


def delta_manifest_select(published: PublishedManifest) -> str:
    """The file names of a delta manifest's snapshot: the base snapshot's files whose
    file group has no change, plus the changed groups' current files. A file group is
    ``<table>/<partition>/<file id>``, the base URI up to the file name's first ``_``."""
    delta = published.delta
    assert delta is not None
    changes = (
        f"read_csv({_source(delta.changes_uri)}, header = false, auto_detect = false, "
        "columns = {'file_group': 'VARCHAR', 'filename': 'VARCHAR'}, quote = '\"', "
        "escape = '\"')"
    )
    base = (
        f"read_csv({_source(published.uris_uri)}, header = false, auto_detect = false, "
        f"columns = {{'uri': 'VARCHAR'}}, {WHOLE_LINES})"
    )
    return (
        f"SELECT regexp_extract(uri, '[^/]+$') AS filename FROM {base} "
        "WHERE regexp_extract(uri, '^.*/[^/_]*') NOT IN "
        f"(SELECT {quote_literal(delta.base_prefix)} || file_group FROM {changes}) "
        f"UNION ALL SELECT filename FROM {changes} WHERE filename IS NOT NULL"
    )


def refuse_backslashes(table: HudiTable, published: PublishedManifest) -> None:
    """DuckDB's glob over local files matches no path holding a backslash, escaped or
    not: such a table would read no file, and such a partition folder would silently
    drop its rows from the history. Refused, naming the path (object stores are globbed
    by fsspec, which reads a backslash as itself)."""
    if not table.location.is_local:
        return
    if "\\" in table.uri:
        raise BadInputError(f"{table.uri}: DuckDB cannot read a local table whose path holds '\\'")
    if published.delta is not None:
        changed = sorted(p for p, _ in published.delta.manifest.changes)
        paths = pa.array(changed, type=pa.string())
    else:
        paths = FileSet.of(published.manifest.files).paths
    found = paths.filter(pc.match_substring(paths, "\\"))
    if len(found):
        raise BadInputError(
            f"{table.uri}: DuckDB cannot read '{found[0].as_py()}': a local path holding "
            "'\\' matches no glob"
        )


def _source(uri: str) -> str:
    """One file's URI as a ``read_csv`` source: a literal that globs to that file alone."""
    return quote_literal(glob_literal(uri))


def partition_globs(base_uri: str, depths: Sequence[int]) -> list[str]:
    """Globs over every partition folder depth the snapshot uses, each level ``[!.]*`` so
    ``.hoodie`` and other hidden folders never match; the base is matched literally."""
    base = glob_literal(base_uri.rstrip("/"))
    return ["/".join([base, *(["[!.]*"] * depth), "[!.]*.parquet"]) for depth in depths]


def bound_columns(table: HudiTable, instant: str | None) -> list[tuple[str, str]] | None:
    """The history's columns from the table's declared schema (``declared_schema`` at the
    synced ``instant``), or None where only the files can tell them (the history then
    reads every file's footer, by name): a table that declares no schema, or one with a
    type ``duckdb_type`` does not map. A table whose hive partition columns are dropped
    from its files is never bound (DuckDB takes no ``schema`` beside
    ``hive_partitioning``)."""
    avro = declared_schema(table, instant)
    if avro is None:
        return None
    try:
        return empty_history_columns(table, avro)
    except UnsupportedTableError:
        return None


def schema_map(columns: Sequence[tuple[str, str]]) -> str:
    """``read_parquet``'s ``schema`` argument for ``columns`` (name, DuckDB type): each
    file's columns are matched by name (Hudi's files have no field ids) and cast to the
    type; a column a file lacks reads NULL, a column the map lacks is left out."""
    entries = ", ".join(
        f"{quote_literal(name)}: {{name: {quote_literal(name)}, type: {quote_literal(sql_type)}, "
        "default_value: NULL}"
        for name, sql_type in columns
    )
    return f"MAP {{{entries}}}"


@functools.cache
def _types_database() -> duckdb.DuckDBPyConnection:
    """An in-memory database kept for the process, which ``arrow_columns`` asks how DuckDB
    reads Arrow types: opening one costs tens of milliseconds, every sync of a feed or a
    Merge-on-Read table asks."""
    return duckdb.connect()


_TYPES_LOCK = threading.Lock()


def arrow_columns(schema: pa.Schema) -> list[tuple[str, str]]:
    """The columns and DuckDB types of parquet files pyarrow writes with ``schema`` (the
    folded log files, the change files), as DuckDB reads Arrow: its Arrow and parquet
    readers agree on the types pyarrow writes."""
    with _TYPES_LOCK:  # a connection serves one thread at a time
        relation = _types_database().from_arrow(schema.empty_table())
        return [(str(n), str(t)) for n, t in zip(relation.columns, relation.types, strict=True)]


def log_columns(schema: pa.Schema) -> list[tuple[str, str]]:
    """The folded log files' columns (``PublishedLogs.schema``) in the order the files
    hold them (``folded_file_rows`` appends the file group and the file name last)."""
    columns = arrow_columns(schema)
    last = [c for c in columns if c[0] in (FILE_ID_COLUMN, SOURCE_COLUMN)]
    return [c for c in columns if c not in last] + last


def empty_history_columns(
    table: HudiTable, avro: dict[str, Any] | None = None
) -> list[tuple[str, str]]:
    """The history's columns and DuckDB types: what ``read_parquet`` gives for the files
    Hudi writes with the table's Avro schema (the history's bound schema, and its typed
    select without rows before the table's first commit). Meta fields first (Hudi writes
    them even when it does not populate them), then the schema's fields; partition
    columns dropped from the files come from the path, last (typed by the schema here;
    DuckDB infers them from the values once there are files). ``avro``: the table's
    schema when already read."""
    fields: list[Any] = (avro or table.avro_schema).get("fields", [])
    columns = [(name, "VARCHAR") for name in META_FIELDS]
    named: dict[str, Any] = {}
    columns += [
        (str(f["name"]), duckdb_type(f["type"], named, str(f["name"])))
        for f in fields
        if f["name"] not in META_FIELDS
    ]
    if table.config.hive_style_partitioning and table.config.drop_partition_columns:
        partitions = [p.name for p in table.partition_fields]
        types = dict(columns)
        columns = [c for c in columns if c[0] not in partitions]
        columns += [(name, types.get(name, "VARCHAR")) for name in partitions]
    return columns


_DUCKDB_PRIMITIVES = {
    "boolean": "BOOLEAN",
    "int": "INTEGER",
    "long": "BIGINT",
    "float": "FLOAT",
    "double": "DOUBLE",
    "string": "VARCHAR",
    "enum": "VARCHAR",
    "bytes": "BLOB",
    "fixed": "BLOB",
}
_DUCKDB_LOGICAL = {
    "date": "DATE",
    "time-millis": "TIME",
    "time-micros": "TIME",
    "timestamp-millis": "TIMESTAMP WITH TIME ZONE",
    "timestamp-micros": "TIMESTAMP WITH TIME ZONE",
    "timestamp-nanos": "TIMESTAMP WITH TIME ZONE",
    "local-timestamp-millis": "TIMESTAMP",
    "local-timestamp-micros": "TIMESTAMP",
    "local-timestamp-nanos": "TIMESTAMP_NS",
    "uuid": "VARCHAR",
}
_DUCKDB_MAX_DECIMAL_PRECISION = 38  # wider parquet decimals read as DOUBLE


def duckdb_type(avro_type: Any, named: dict[str, Any], column: str) -> str:
    """The DuckDB type ``read_parquet`` gives a parquet column written from ``avro_type``
    (a union with null is its other branch; ``named`` collects named types for
    references by name)."""
    if isinstance(avro_type, list):
        branches = [t for t in avro_type if t != "null"]
        if len(branches) == 1:
            return duckdb_type(branches[0], named, column)
        # parquet-avro writes any other union as a group of member<i> fields.
        members = ", ".join(
            f"member{i} {duckdb_type(t, named, column)}" for i, t in enumerate(branches)
        )
        return f"STRUCT({members})"
    if isinstance(avro_type, str):
        if avro_type in _DUCKDB_PRIMITIVES:
            return _DUCKDB_PRIMITIVES[avro_type]
        if avro_type in named:
            return duckdb_type(named[avro_type], named, column)
        raise UnsupportedTableError(f"column {column!r}: Avro type {avro_type!r} is not mapped")
    if not isinstance(avro_type, dict):
        raise UnsupportedTableError(f"column {column!r}: Avro type {avro_type!r} is not mapped")
    kind = avro_type.get("type")
    if kind in ("record", "enum", "fixed") and "name" in avro_type:
        name = str(avro_type["name"])
        named[name] = avro_type
        if avro_type.get("namespace"):
            named[f"{avro_type['namespace']}.{name}"] = avro_type
    logical = avro_type.get("logicalType")
    if logical == "decimal":
        precision, scale = int(avro_type["precision"]), int(avro_type.get("scale", 0))
        if precision > _DUCKDB_MAX_DECIMAL_PRECISION:
            return "DOUBLE"
        return f"DECIMAL({precision},{scale})"
    if logical in _DUCKDB_LOGICAL:
        return _DUCKDB_LOGICAL[str(logical)]
    if kind == "record":
        fields = ", ".join(
            f"{quote_identifier(str(f['name']))} {duckdb_type(f['type'], named, column)}"
            for f in avro_type.get("fields", [])
        )
        return f"STRUCT({fields})"
    if kind == "array":
        return f"{duckdb_type(avro_type['items'], named, column)}[]"
    if kind == "map":
        return f"MAP(VARCHAR, {duckdb_type(avro_type['values'], named, column)})"
    return duckdb_type(kind, named, column)
