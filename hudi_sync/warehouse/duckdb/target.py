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

import logging
import os
import time

import duckdb

from hudi_sync.errors import HudiSyncError
from hudi_sync.manifest.snapshot import PublishedManifest
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.common import (
    ObjectNames,
    SyncMarker,
    SyncPlan,
    SyncResult,
    changing_plan,
    objects_settled,
    refuse_other_table,
    restore_reason,
    retired_feed,
    settled_plan,
)
from hudi_sync.warehouse.common.quoting import duckdb_identifier
from hudi_sync.warehouse.common.state import Columns, ObjectState, TargetState
from hudi_sync.warehouse.duckdb.files import SOURCE_FILE_COLUMN, refuse_backslashes
from hudi_sync.warehouse.duckdb.objects import statements
from hudi_sync.warehouse.duckdb.schema import (
    bound_columns,
    canonical_types,
    empty_history_columns,
)

BUSY_TIMEOUT_SECONDS = 60.0

# Without a logging configuration of the caller's, Python prints a warning on stderr.
_log = logging.getLogger(__name__)


class _DatabaseBusy(Exception):
    """Another process holds the database file's lock, or a concurrent transaction won."""


class DuckDBTarget:
    """Syncs a table's published manifest into a DuckDB database file."""

    mode = "view"
    # The manifest view can union a base snapshot and its changes (delta_manifest.py).
    supports_delta_manifests = True
    # The snapshot view of a table without meta fields builds its base rows' keys.
    supports_built_keys = True
    # The history view is built on read_parquet; ORC, HFile and Lance tables are refused.
    base_file_formats: frozenset[str] = frozenset({"PARQUET"})
    # A CDC table gets ``<t>_changes`` over its change feed (``hudi_sync.manifest.change_feed``;
    # the objects are this package's ``change_feed``).
    supports_change_feed = True

    def __init__(
        self,
        database: str,
        table_name: str,
        skip_ro_suffix: bool = False,
        lock_wait: float = BUSY_TIMEOUT_SECONDS,
    ) -> None:
        self.database = database
        self.table_name = table_name
        self.skip_ro_suffix = skip_ro_suffix
        self.lock_wait = lock_wait

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

    def _comments(self, names: ObjectNames, *more: str) -> dict[str, str]:
        """The comments of ``names``' objects (and of ``more``) that exist, by name."""
        if self.database != ":memory:" and not os.path.exists(self.database):
            return {}  # nothing synced yet; connecting would create the file (a dry run must not)
        with self._connect() as con:
            objects = [*names.all(), *more]
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

    def inspect(self, table: HudiTable, change_feed: bool) -> TargetState:
        """The live objects of ``table`` as the database file has them, opened read-only
        (``hudi-sync verify``): nothing is created, not even the file. ``change_feed``:
        whether a sync makes ``<t>_changes``."""
        names = ObjectNames.for_table(
            self.table_name,
            merge_on_read=table.config.is_mor,
            skip_ro_suffix=self.skip_ro_suffix,
            change_feed=change_feed,
        )
        if self.database != ":memory:" and not os.path.exists(self.database):
            return TargetState(names, table.uri)
        try:
            con = duckdb.connect(self.database, read_only=True)
        except duckdb.Error as exc:
            raise HudiSyncError(f"DuckDB database {self.database}: {exc}") from exc
        with con:
            objects = _objects(con, list(names.all()))
            files: frozenset[str] | None = None
            error = None
            manifest = objects.get(names.manifest)
            if manifest is not None:
                self._register_filesystem(con, table)
                try:
                    rows = con.execute(
                        f"SELECT filename FROM {duckdb_identifier(manifest.name)}"
                    ).fetchall()
                    files = frozenset(str(row[0]) for row in rows)
                except duckdb.Error as exc:
                    error = str(exc).splitlines()[0]
        marked = objects.get(names.snapshot_view or "") or objects.get(names.view)
        marker = marked.marker if marked is not None else None
        return TargetState(names, table.uri, objects, marker, files, error)

    def declared_columns(
        self, table: HudiTable, names: ObjectNames, instant: str | None
    ) -> dict[str, Columns]:
        """The columns and types a sync to ``instant`` declares, by object, from the
        sync's own mapping (``bound_columns``); an object a sync leaves its files to
        type (hive partition columns dropped from them, a type not mapped) is left out."""
        if instant is None:
            columns: list[tuple[str, str]] | None = empty_history_columns(table)
        elif table.config.hive_style_partitioning and table.config.drop_partition_columns:
            columns = None
        else:
            columns = bound_columns(table, instant)
        declared: dict[str, Columns] = {names.manifest: (("filename", "VARCHAR"),)}
        if columns is None:
            return declared
        types = canonical_types([t for _, t in columns])
        typed = tuple(zip([n for n, _ in columns], types, strict=True))
        declared[names.view] = typed
        declared[names.history] = (*typed, (SOURCE_FILE_COLUMN, "VARCHAR"))
        return declared

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
        # A feed no longer published is looked up too: a sync at the same instant drops it.
        retired = retired_feed(names, as_of)
        comments = self._comments(names, *retired)
        # An option turned on or off at the instant already shown (the change feed, the
        # read-optimized view's name): objects to create or drop, no no-op.
        unchanged = objects_settled(names.synced(published.logs), retired, comments.__contains__)
        for name in retired:
            comments.pop(name, None)
        markers = {name: SyncMarker.parse(comment) for name, comment in comments.items()}
        refuse_other_table(self.name, markers, marker, force or replace_other_table)
        current = SyncMarker.parse(comments.get(names.marked(published.logs)))
        target = self.name
        marked = names.marked(published.logs)
        restored = restore_reason(table, marked, current, marker)
        settled = settled_plan(
            target, marked, current, marker, force, unchanged=unchanged, restored=restored
        )
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
        file at a time: while another holds it, wait up to ``lock_wait`` seconds and
        re-plan (the other sync may have brought the objects to this instant or past it
        already). The wait is logged once as it begins, a warning: an operator sees why
        the sync stands still."""
        deadline = time.monotonic() + self.lock_wait
        pause = 0.02
        waiting = False
        while True:
            try:
                return self._sync_once(table, published, as_of, force, dry_run, replace_other_table)
            except _DatabaseBusy as exc:
                if time.monotonic() >= deadline:
                    raise HudiSyncError(
                        f"DuckDB database {self.database} stayed locked for "
                        f"{self.lock_wait:g} s: {exc}"
                    ) from None
                if not waiting:
                    waiting = True
                    _log.warning(
                        "DuckDB database %s is locked by another writer: waiting up to "
                        "%g s for it (%s)",
                        self.database,
                        self.lock_wait,
                        exc,
                    )
                time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
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
        """The sync's statements (``objects.statements``); ``live``: not a time-travel
        sync's ``_as_of_`` objects."""
        return statements(table, published, names, marker, current, live)


def _objects(con: duckdb.DuckDBPyConnection, wanted: list[str]) -> dict[str, ObjectState]:
    """The views and tables among ``wanted`` (by name, case-insensitive as DuckDB's
    identifiers are), with their columns in order and markers."""
    marks = ", ".join("lower(?)" for _ in wanted)
    found = con.execute(
        "SELECT view_name, comment FROM duckdb_views() "
        f"WHERE NOT internal AND lower(view_name) IN ({marks}) "
        "UNION ALL SELECT table_name, comment FROM duckdb_tables() "
        f"WHERE NOT internal AND lower(table_name) IN ({marks})",
        [*wanted, *wanted],
    ).fetchall()
    columns: dict[str, list[tuple[str, str]]] = {}
    for table_name, column, data_type in con.execute(
        "SELECT lower(table_name), column_name, data_type FROM duckdb_columns() "
        f"WHERE lower(table_name) IN ({marks}) ORDER BY table_name, column_index",
        wanted,
    ).fetchall():
        columns.setdefault(str(table_name), []).append((str(column), str(data_type)))
    by_lower = {name.lower(): name for name in wanted}
    return {
        by_lower[str(name).lower()]: ObjectState(
            by_lower[str(name).lower()],
            tuple(columns.get(str(name).lower(), ())),
            SyncMarker.parse(str(comment or "")),
        )
        for name, comment in found
    }
