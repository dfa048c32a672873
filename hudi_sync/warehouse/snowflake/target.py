"""Snowflake target: an external stage, two external tables and a view per Hudi table.

- the stage ``<t>_stage`` over the table's location (``s3://``, ``gcs://``, ``azure://``),
  through a storage integration or credentials (or an existing stage, by name);
- ``<t>_history``: an external table over every parquet (or ORC, the table's base file
  format) base file version in the partition folders, typed columns from the Hudi Avro
  schema, partition columns parsed from ``METADATA$FILENAME`` and ``PARTITION BY`` them;
- ``<t>_manifest``: an external table over the published manifest of one instant
  (``.hoodie/manifest/snapshots/<instant>/files.csv``), ``filename`` from ``VALUE:c1``;
- the view ``<t>``: the history rows whose ``_hoodie_file_name`` is in the manifest.

With delta manifests (``hudi_sync.manifest.delta``) ``<t>_manifest`` is one external
table over the base snapshot's ``uris.csv`` and the current changes file (PATTERN names
exactly those two under ``.hoodie/manifest/``), one line a row, and the view computes
the snapshot's file names from them (``delta_files_select``): a sync after a commit
reads and writes that commit's changes, not the table's whole file list.

Snowflake commits each DDL statement on its own, so the order is what keeps readers
consistent, as in the BigQuery target: the history table (a superset of every snapshot's
files) is refreshed first, then the manifest table is replaced by one over the new
immutable manifest (``CREATE OR REPLACE`` is atomic), then the view's comment records the
instant. A sync that stops anywhere leaves the view on the old or the new snapshot, and
the next run converges. The marker (instant, stage URL, mode and the digests of the
history and view definitions) is the view's COMMENT.

Before the table's first commit the same objects are created and list no file (the
manifest table's folder, ``.hoodie/manifest/snapshots/empty/``, is never written): typed
by the table's Avro schema, without rows, until the first sync with files refreshes the
history and replaces the manifest table as any later sync does.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError, HudiSyncError, MissingExtraError
from hudi_sync.extras import extra_error
from hudi_sync.manifest.snapshot import PublishedManifest
from hudi_sync.secrets import scrub
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.common import ObjectNames, SyncMarker, SyncPlan, SyncResult, offline_note
from hudi_sync.warehouse.common.iceberg import OFF, ONLY, IcebergModes, joined_plan
from hudi_sync.warehouse.common.quoting import snowflake_literal as quote_literal
from hudi_sync.warehouse.common.state import Columns, ObjectState, TargetState
from hudi_sync.warehouse.snowflake.config import ENV_PREFIX, PREFIX, SnowflakeSyncConfig
from hudi_sync.warehouse.snowflake.connection import Connection, Cursor, Statement
from hudi_sync.warehouse.snowflake.iceberg import IcebergState, iceberg_statements
from hudi_sync.warehouse.snowflake.objects import BASE_FILE_FORMATS, SnowflakeObjects
from hudi_sync.warehouse.snowflake.plan import MARKER_DIGESTS, MODE, State, plan_statements
from hudi_sync.warehouse.snowflake.schema import (
    object_name,
    shown_type,
    sql_name,
    table_history_columns,
)


class SnowflakeTarget(IcebergModes):
    """Syncs a table's published manifest into Snowflake external tables and a view."""

    base_file_formats: frozenset[str] = BASE_FILE_FORMATS
    # The view unions a base snapshot and its changes (``hudi_sync.manifest.delta``).
    supports_delta_manifests: bool = True

    def __init__(
        self,
        config: SnowflakeSyncConfig,
        connect: Callable[[], Connection] | None = None,
        skip_ro_suffix: bool = False,
    ) -> None:
        self.config = config
        self._connect = connect or self._connector
        self.skip_ro_suffix = skip_ro_suffix

    @classmethod
    def from_options(
        cls,
        options: Mapping[str, Any],
        default_table_name: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> SnowflakeTarget:
        config = SnowflakeSyncConfig.from_options(options, environ, default_table_name)
        return cls(config, skip_ro_suffix=bool(cfg.SKIP_RO_SUFFIX.read(options)))

    @property
    def name(self) -> str:
        return f"snowflake:{object_name(self.config.database)}.{object_name(self.config.schema)}"

    def _connector(self) -> Connection:
        try:
            import snowflake.connector
        except ImportError:
            raise extra_error("snowflake") from None
        key_file = self.config.connection.get("private_key_file")
        if key_file and not os.path.isfile(key_file):  # the connector's FileNotFoundError
            raise BadInputError(
                f"{PREFIX}private_key_file (--private-key-file) {key_file}: no such file"
            )
        try:
            connection: Connection = snowflake.connector.connect(
                **self.config.connection, application="hudi_sync"
            )
        except snowflake.connector.errors.Error as exc:
            raise self._failure("connect", exc) from None
        return connection

    def object_names(
        self, table: HudiTable, published: PublishedManifest, as_of: bool
    ) -> ObjectNames:
        return ObjectNames.for_table(
            self.config.table_name,
            published.manifest.instant if as_of else None,
            merge_on_read=table.config.is_mor,
            skip_ro_suffix=self.skip_ro_suffix,
            change_feed=published.changes is not None,
        )

    def stage_url(self, table: HudiTable) -> str:
        """Where Snowflake reads the table: ``stage_url``, else the table's own URI."""
        return self.objects.stage_url(table)

    @property
    def objects(self) -> SnowflakeObjects:
        """The DDL of the objects, in this target's database and schema."""
        return SnowflakeObjects(self.config)

    # -- reading the current state -------------------------------------------------------
    def _show(self, cursor: Cursor, kind: str, name: str) -> dict[str, Any] | None:
        """The ``SHOW <kind> LIKE`` row of the object named exactly ``name``, by column."""
        schema = ".".join(sql_name(n) for n in (self.config.database, self.config.schema))
        stored = object_name(name)
        self._execute(
            cursor,
            Statement(
                f"SHOW {kind} LIKE {quote_literal(stored)} IN SCHEMA {schema}",
                "",
                f"list {kind.lower()} in {schema}",
            ),
        )
        columns = [str(d[0]).lower() for d in cursor.description]
        for row in cursor.fetchall():
            record = dict(zip(columns, row, strict=True))
            if record.get("name") == stored:
                return record
        return None

    def _state(self, cursor: Cursor | None, names: ObjectNames, marked: str) -> State:
        if cursor is None:  # offline: nothing read, as before a first sync
            return State(None, None, None, False, None)
        view = self._show(cursor, "VIEWS", marked)
        stage = self._show(cursor, "STAGES", self.objects.stage())
        comment = str(view.get("comment") or "") if view else ""
        digests = MARKER_DIGESTS.search(comment)
        return State(
            marker=SyncMarker.parse(comment),
            history_digest=digests["history"] if digests else None,
            view_digest=digests["view"] if digests else None,
            view_exists=view is not None,
            stage_url=str(stage["url"]) if stage else None,
            logs_digest=digests["logs"] if digests else None,
            rt_digest=digests["rt"] if digests else None,
        )

    # -- verifying (read-only) -------------------------------------------------------------
    def inspect(self, table: HudiTable, change_feed: bool) -> TargetState:
        """The live objects of ``table`` as Snowflake has them (``hudi-sync verify``):
        ``SHOW VIEWS`` for the marker (the view's comment), ``INFORMATION_SCHEMA.COLUMNS``
        for every object's columns, the manifest table's ``filename`` rows; only reads."""
        if self.config.iceberg == ONLY:
            raise BadInputError(f"{self.name}: verify does not read Snowflake's Iceberg tables")
        names = ObjectNames.for_table(
            self.config.table_name,
            merge_on_read=table.config.is_mor,
            skip_ro_suffix=self.skip_ro_suffix,
            change_feed=change_feed,
        )
        views = {names.view, names.snapshot_view}
        with self._cursor() as cursor:
            columns = self._columns(cursor, names.all())
            marked = names.snapshot_view if names.snapshot_view in columns else names.view
            shown = self._show(cursor, "VIEWS", marked) if marked in columns else None
            marker = SyncMarker.parse(str(shown.get("comment") or "")) if shown else None
            files, error = (None, None)
            if ("FILENAME", "TEXT") in columns.get(names.manifest, ()):
                files, error = self._listed_files(cursor, names.manifest)
        objects = {
            name: ObjectState(name, found, marker if name == marked else None, name in views)
            for name, found in columns.items()
        }
        declared = self.declared_columns(table, names, None).get(names.history, ())
        wanted = tuple(n for n, _ in declared if n in _partition_names(table))
        history = {n for n, _ in columns.get(names.history, ())}
        return TargetState(
            names,
            self.stage_url(table),
            objects,
            marker,
            files,
            error,
            partition_columns=tuple(n for n in wanted if n in history),
            wanted_partitions=wanted,
        )

    def declared_columns(
        self, table: HudiTable, names: ObjectNames, instant: str | None
    ) -> dict[str, Columns]:
        """The history's columns as ``INFORMATION_SCHEMA`` shows them after a sync (the
        sync's own ``history_columns``, and the ``VALUE`` every external table has)."""
        columns = [("VALUE", "VARIANT")]
        columns += [(object_name(c.name), shown_type(c.type)) for c in table_history_columns(table)]
        return {names.history: tuple(columns)}

    def _columns(self, cursor: Cursor, wanted: tuple[str, ...]) -> dict[str, Columns]:
        """The columns of the objects among ``wanted`` that exist, in order, by name."""
        stored = {object_name(n): n for n in wanted}
        listed = ", ".join(quote_literal(n) for n in stored)
        schema = quote_literal(object_name(self.config.schema))
        info = f"{sql_name(self.config.database)}.INFORMATION_SCHEMA.COLUMNS"
        sql = (
            f"SELECT table_name, column_name, data_type FROM {info} WHERE table_schema = "
            f"{schema} AND table_name IN ({listed}) ORDER BY table_name, ordinal_position"
        )
        self._execute(cursor, Statement(sql, sql, f"read the columns of {info}"))
        found: dict[str, list[tuple[str, str]]] = {}
        for table_name, column, data_type in cursor.fetchall():
            name = stored.get(str(table_name))
            if name is not None:
                found.setdefault(name, []).append((str(column), str(data_type).upper()))
        return {name: tuple(columns) for name, columns in found.items()}

    def _listed_files(
        self, cursor: Cursor, manifest: str
    ) -> tuple[frozenset[str] | None, str | None]:
        """The file names the manifest table lists, or None and why they could not be read."""
        sql = f"SELECT filename FROM {self.objects.qualified(manifest)}"
        try:
            self._execute(cursor, Statement(sql, sql, f"read {self.objects.qualified(manifest)}"))
        except HudiSyncError as exc:
            return None, str(exc)
        return frozenset(str(row[0]) for row in cursor.fetchall() if row[0] is not None), None

    # -- planning ------------------------------------------------------------------------
    def _plan(
        self,
        cursor: Cursor | None,
        table: HudiTable,
        published: PublishedManifest,
        as_of: bool,
        force: bool,
        offline: str | None = None,
        replace_other_table: bool = False,
    ) -> tuple[SyncPlan, list[Statement]]:
        """The plan, from the objects that exist; ``offline`` (why Snowflake cannot be
        reached; no cursor): a first sync's plan, and a note saying so. A view whose
        marker names another base is refused unless ``force`` or ``replace_other_table``."""
        names = self.object_names(table, published, as_of)
        if self.config.iceberg == OFF:
            return self._manifest_plan(
                cursor, table, published, names, as_of, force, offline, replace_other_table
            )
        state = None
        if cursor is not None:
            shown = self._show(cursor, "ICEBERG TABLES", names.iceberg)
            if shown is not None:
                state = IcebergState(
                    str(shown.get("comment") or ""),
                    _listed(shown, "external_volume_name"),
                    _listed(shown, "catalog_name"),
                )
        iceberg, iceberg_statements_ = iceberg_statements(
            self.name, self.objects, table, published, names, state, force, replace_other_table
        )
        if self.config.iceberg == ONLY:
            main, statements = SyncPlan(self.name, "noop"), list[Statement]()
            if offline is not None:
                main = SyncPlan(self.name, "create", [], offline_note(offline, self._needs()))
        else:
            main, statements = self._manifest_plan(
                cursor, table, published, names, as_of, force, offline, replace_other_table
            )
        return joined_plan(self.name, main, iceberg), statements + iceberg_statements_

    def _manifest_plan(
        self,
        cursor: Cursor | None,
        table: HudiTable,
        published: PublishedManifest,
        names: ObjectNames,
        as_of: bool,
        force: bool,
        offline: str | None,
        replace_other_table: bool,
    ) -> tuple[SyncPlan, list[Statement]]:
        """The plan of the stage, the external tables and the views."""
        url = self.stage_url(table)
        # Before the first commit the external tables list no file: the objects are
        # typed and empty, and the first sync with files refreshes them in place.
        marker = SyncMarker.of(published.manifest.instant, url, MODE)
        marked = names.marked(published.logs)
        state = self._state(cursor, names, marked)

        shown: dict[str, bool] = {}

        def view_shown(name: str) -> bool:
            """A view named ``name`` exists (the change feed's; each asked once)."""
            if name not in shown:
                shown[name] = cursor is not None and bool(self._show(cursor, "VIEWS", name))
            return shown[name]

        return plan_statements(
            self.name,
            self.objects,
            table,
            published,
            names,
            marker,
            state,
            as_of,
            force,
            offline,
            replace_other_table,
            view_shown,
            self._needs,
        )

    def _needs(self) -> str:
        """What a real run needs, for an offline plan's note: the connection options
        missing, or the account answering to them."""
        given = self.config.connection
        missing = [
            f"--{key.replace('_', '-')} (or {ENV_PREFIX}{key.upper()})"
            for key in ("account", "user")
            if key not in given
        ]
        if not {"password", "authenticator", "private_key_file", "token"} & set(given):
            missing.append(
                f"{ENV_PREFIX}PASSWORD, --authenticator or --private-key-file (key-pair)"
            )
        if missing:
            return ", ".join(missing)
        return f"account {given['account']} answering to these credentials"

    # -- applying ------------------------------------------------------------------------
    def sync(
        self,
        table: HudiTable,
        published: PublishedManifest,
        as_of: bool = False,
        force: bool = False,
        dry_run: bool = False,
        replace_other_table: bool = False,
    ) -> tuple[SyncPlan, SyncResult]:
        names = self.object_names(table, published, as_of)
        objects = names.synced(published.logs)
        if self.config.iceberg == ONLY:
            objects = (names.iceberg,)
        elif self.config.iceberg != OFF:
            objects = (*objects, names.iceberg)
        instant = published.manifest.instant
        if dry_run:
            try:
                connection = self._connect()
            except MissingExtraError:  # a real run could not start either: say what to install
                raise
            except HudiSyncError as exc:  # no credentials or answer
                plan, _ = self._plan(None, table, published, as_of, force, str(exc))
                return plan, plan.result(instant, objects, dry_run)
            connection.close()
        with self._cursor() as cursor:
            plan, statements = self._plan(
                cursor, table, published, as_of, force, replace_other_table=replace_other_table
            )
            if dry_run or not statements:
                return plan, plan.result(instant, objects, dry_run)
            for statement in statements:
                self._execute(cursor, statement)
        return plan, plan.result(instant, objects)

    @contextmanager
    def _cursor(self) -> Iterator[Cursor]:
        connection = self._connect()
        try:
            cursor: Cursor = connection.cursor()
            try:
                yield cursor
            finally:
                cursor.close()
        finally:
            connection.close()

    def _execute(self, cursor: Cursor, statement: Statement) -> None:
        from snowflake.connector.errors import Error

        try:
            cursor.execute(statement.sql)
        except Error as exc:
            raise self._failure(statement.what, exc) from None

    def _failure(self, action: str, exc: Exception) -> HudiSyncError:
        """One line, with every secret value masked (connector messages may quote SQL)."""
        text = scrub(str(exc), self.config.secrets()).strip()  # whole: a secret may span lines
        message = text.splitlines()[0] if text else type(exc).__name__
        return HudiSyncError(f"Snowflake {action} failed: {message}")


def _partition_names(table: HudiTable) -> frozenset[str]:
    return frozenset(object_name(c.name) for c in table_history_columns(table) if c.is_partition)


def _listed(shown: dict[str, Any], column: str) -> str | None:
    """A column of a ``SHOW ICEBERG TABLES`` row, None when not listed or empty."""
    value = shown.get(column)
    return str(value) if value else None
