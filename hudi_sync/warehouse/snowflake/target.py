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

import hashlib
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from hudi_sync import config as cfg
from hudi_sync.errors import (
    BadInputError,
    HudiSyncError,
    MissingExtraError,
    UnsupportedTableError,
)
from hudi_sync.extras import extra_error
from hudi_sync.manifest.change_feed import DATE_KEY, TIME_KEY, PublishedChanges
from hudi_sync.manifest.log_parquet import FILE_ID_COLUMN, SOURCE_COLUMN
from hudi_sync.manifest.snapshot import PublishedLogs, PublishedManifest
from hudi_sync.secrets import scrub
from hudi_sync.table import HudiTable
from hudi_sync.table.record_merge import BASE_ROW_COLUMN, DELETED_COLUMN, LOG_WINS_COLUMN
from hudi_sync.warehouse.common import (
    ObjectNames,
    SnapshotQuery,
    SyncMarker,
    SyncPlan,
    SyncResult,
    changing_plan,
    offline_note,
    ordering_kind,
    refuse_other_table,
    restore_reason,
    settled_plan,
    snapshot_query,
)
from hudi_sync.warehouse.common.quoting import snowflake_literal as quote_literal
from hudi_sync.warehouse.snowflake.schema import (
    FILENAME,
    Column,
    arrow_snowflake_type,
    history_columns,
    object_name,
    sql_name,
    value_column,
)

PREFIX = cfg.SNOWFLAKE_PREFIX
ENV_PREFIX = "SNOWFLAKE_"
MODE = "view"
# Passed to snowflake.connector.connect as they are.
CONNECTION_KEYS = (
    "account",
    "user",
    "password",
    "role",
    "warehouse",
    "database",
    "schema",
    "authenticator",
    "private_key_file",
    "private_key_file_pwd",
    "token",
    "host",
)
# Never printed, logged or put in an error message.
SECRET_KEYS = frozenset(key.removeprefix(PREFIX) for key in cfg.SNOWFLAKE_SECRETS)
_STAGE_KEYS = (
    "stage_name",
    "stage_url",
    "storage_integration",
    "aws_key_id",
    "aws_secret_key",
    "aws_token",
    "azure_sas_token",
)
# The keys by their names after PREFIX (each declared in hudi_sync.config).
OPTION_KEYS = frozenset(spec.key.removeprefix(PREFIX) for spec in cfg.group("sync/snowflake"))
# Base files (<file id>_<write token>_<instant>.parquet, or .orc) in any folder that is not
# hidden, so .hoodie (timeline, metadata table, manifests) never matches. Anchored at both
# ends, so it means the same whether Snowflake matches it against the path or within it.
_BASE_FILE_PATTERN = r"^/?([^./][^/]*/)*[^./][^/]*_[0-9]{{14,17}}[.]{extension}$"
BASE_FILE_PATTERN = _BASE_FILE_PATTERN.format(extension="parquet")
# External tables read PARQUET and ORC base files (FILE_FORMAT is the table's format).
BASE_FILE_FORMATS = frozenset({"PARQUET", "ORC"})
MANIFEST_PATTERN = r"^(.*/)?files[.]csv$"
# A delta manifest table reads each line whole (FIELD_DELIMITER = NONE) as one column.
DELTA_ENTRY_COLUMN = "entry"
_MARKER_DIGESTS = re.compile(
    r"history=(?P<history>\w+) view=(?P<view>\w+)(?: logs=(?P<logs>\w+) rt=(?P<rt>\w+))?"
)
# The folded log files of MOR tables (``hudi_sync.manifest.log_parquet``), by name.
LOG_FILE_PATTERN = r"^(.*/)?[^/]+[.]parquet$"
# The change feed's files (``hudi_sync.manifest.change_feed``), relative to its folder as
# its lists name them, and the column holding that relative path.
CHANGE_FILE_REGEX = r"commit_date=[^/]+/commit_time=[0-9]+/changes-[0-9a-f]+[.]parquet$"
CHANGE_FILE_PATTERN = r"^(.*/)?" + CHANGE_FILE_REGEX
CHANGE_FILE_COLUMN = "change_file"
_CLOUD_URL = re.compile(r"(s3|gcs|azure)://[^/]+(/.*)?")
_HOST = re.compile(r"(?P<name>[A-Za-z0-9_-]+(?:[.][A-Za-z0-9_-]+)*)(?::(?P<port>[0-9]{1,5}))?")


def base_file_pattern(base_format: str) -> str:
    """``BASE_FILE_PATTERN`` for the base files of ``base_format`` (``ORC``: ``[.]orc$``)."""
    return _BASE_FILE_PATTERN.format(extension=base_format.lower())


def regex_literal(text: str) -> str:
    """``text`` as a PATTERN regex matching only itself: each metacharacter in a class of
    its own (``[.]``), or backslash-escaped where a class would not read it plainly
    (``^``, ``\\``, ``[``, ``]``)."""
    return "".join(f"\\{c}" if c in "^\\[]" else f"[{c}]" if c in ".()*+?{}|$" else c for c in text)


def snowflake_url(uri: str) -> str:
    """The table's URI as a stage URL: ``s3a://``/``s3n://`` are ``s3://``, ``gs://`` is
    ``gcs://``, and ``abfs[s]://container@account.dfs.core.windows.net/p`` is
    ``azure://account.blob.core.windows.net/container/p``."""
    for alias in ("s3a://", "s3n://"):
        if uri.startswith(alias):
            return "s3://" + uri[len(alias) :]
    if uri.startswith("gs://"):
        return "gcs://" + uri[len("gs://") :]
    match = re.fullmatch(r"abfss?://([^@/]+)@([^./]+)\.dfs\.core\.windows\.net(/.*)?", uri)
    if match:
        return f"azure://{match[2]}.blob.core.windows.net/{match[1]}{match[3] or ''}"
    return uri


def _with_port(connection: dict[str, str]) -> dict[str, str]:
    """``host`` as the connector takes it: a ``host:port`` split into ``host`` and
    ``port`` (the connector appends its own port to the host, and fails to parse
    ``host:443:443``); anything but a host name with an optional port is refused."""
    host = connection.get("host")
    if host is None:
        return connection
    match = _HOST.fullmatch(host)
    if match is None or not 0 < int(match["port"] or 443) < 65536:
        raise BadInputError(
            f"{PREFIX}host {host!r} is not a host name with an optional :port "
            "(e.g. myaccount.snowflakecomputing.com:443)"
        )
    connection["host"] = match["name"]
    if match["port"]:
        connection["port"] = match["port"]
    return connection


@dataclass(frozen=True)
class SnowflakeSyncConfig:
    """The sync's options, as ``hoodie.snowflake.sync.*`` keys or ``SNOWFLAKE_*`` variables."""

    database: str
    schema: str
    table_name: str
    stage_name: str | None = None
    stage_url: str | None = None
    storage_integration: str | None = None
    # Everything handed to the connector, and the stage credentials: kept out of repr.
    connection: Mapping[str, str] = field(default_factory=dict, repr=False)
    credentials: Mapping[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def from_options(
        cls,
        options: Mapping[str, Any],
        environ: Mapping[str, str] | None = None,
        default_table_name: str | None = None,
    ) -> SnowflakeSyncConfig:
        """Options win over ``SNOWFLAKE_<KEY>`` environment variables (``SNOWFLAKE_ACCOUNT``,
        ``SNOWFLAKE_PASSWORD``, ...); the table name defaults to ``default_table_name``."""
        environ = os.environ if environ is None else environ
        values = {
            k.removeprefix(PREFIX): str(v)
            for k, v in options.items()
            if k.startswith(PREFIX) and v not in (None, "")
        }
        unknown = set(values) - OPTION_KEYS
        if unknown:
            raise BadInputError(f"unknown Snowflake sync option {PREFIX}{sorted(unknown)[0]}")
        for key in sorted(OPTION_KEYS - set(values)):
            if environ.get(ENV_PREFIX + key.upper()):
                values[key] = environ[ENV_PREFIX + key.upper()]
        if default_table_name:
            values.setdefault("table_name", default_table_name)
        for required in ("database", "schema", "table_name"):
            if required not in values:
                raise BadInputError(
                    f"missing Snowflake sync option {PREFIX}{required} "
                    f"(or {ENV_PREFIX}{required.upper()})"
                )
        credentials = {k: values[k] for k in _STAGE_KEYS[3:] if k in values}
        config = cls(
            database=values["database"],
            schema=values["schema"],
            table_name=values["table_name"],
            stage_name=values.get("stage_name"),
            stage_url=values.get("stage_url"),
            storage_integration=values.get("storage_integration"),
            connection=_with_port({k: values[k] for k in CONNECTION_KEYS if k in values}),
            credentials=credentials,
        )
        config.validate()
        return config

    def validate(self) -> None:
        for key in ("database", "schema", "table_name", "stage_name", "storage_integration"):
            value = getattr(self, key)
            if value is not None and (not value or "\x00" in value):
                raise BadInputError(f"{PREFIX}{key} {value!r} is empty or has a NUL byte")
        if self.stage_url is not None and not _CLOUD_URL.fullmatch(self.stage_url):
            raise BadInputError(
                f"{PREFIX}stage_url {self.stage_url!r} is not an s3://, gcs:// or azure:// URL"
            )
        if self.stage_name and (self.storage_integration or self.credentials):
            raise BadInputError(
                f"{PREFIX}stage_name names an existing stage; its storage integration or "
                "credentials are the stage's own, not the sync's"
            )
        if self.storage_integration and self.credentials:
            raise BadInputError(
                f"{PREFIX}storage_integration and stage credentials exclude each other"
            )
        if self.credentials and not (
            {"aws_key_id", "aws_secret_key"} <= set(self.credentials)
            or set(self.credentials) == {"azure_sas_token"}
        ):
            raise BadInputError(
                f"stage credentials are {PREFIX}aws_key_id with {PREFIX}aws_secret_key "
                f"(and optionally {PREFIX}aws_token), or {PREFIX}azure_sas_token"
            )

    def secrets(self) -> list[str]:
        """Secret values to scrub from anything printed."""
        values = {**self.connection, **self.credentials}
        return [v for k, v in values.items() if k in SECRET_KEYS and v]


class Cursor(Protocol):
    """The part of a DB-API cursor the target uses."""

    description: Any

    def execute(self, command: str, params: Any = None) -> Any: ...

    def fetchall(self) -> Sequence[Any]: ...

    def close(self) -> Any: ...


class Connection(Protocol):
    def cursor(self) -> Any: ...

    def close(self) -> Any: ...


@dataclass(frozen=True)
class Statement:
    """One SQL statement of a sync; ``shown`` is its text with secrets masked."""

    sql: str
    shown: str
    what: str  # "create stage X", "refresh X", ... for error messages


@dataclass(frozen=True)
class _State:
    """What exists now: the view's marker and digests, and the stage's URL."""

    marker: SyncMarker | None
    history_digest: str | None
    view_digest: str | None
    view_exists: bool
    stage_url: str | None
    logs_digest: str | None = None  # MOR: the log history's and the snapshot view's
    rt_digest: str | None = None


class SnowflakeTarget:
    """Syncs a table's published manifest into Snowflake external tables and a view."""

    base_file_formats: frozenset[str] = BASE_FILE_FORMATS
    # The view unions a base snapshot and its changes (``hudi_sync.manifest.delta``).
    supports_delta_manifests: bool = True
    # A CDC table gets ``<t>_changes`` over its change feed (change_feed.py).
    supports_change_feed: bool = True

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
        try:
            connection: Connection = snowflake.connector.connect(
                **self.config.connection, application="hudi_sync"
            )
        except snowflake.connector.errors.Error as exc:
            raise self._failure("connect", exc) from None
        return connection

    # -- naming --------------------------------------------------------------------------
    def _qualified(self, name: str) -> str:
        return ".".join(sql_name(n) for n in (self.config.database, self.config.schema, name))

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

    def _stage(self) -> str:
        return self.config.stage_name or f"{self.config.table_name}_stage"

    def stage_url(self, table: HudiTable) -> str:
        """Where Snowflake reads the table: ``stage_url``, else the table's own URI."""
        url = self.config.stage_url or snowflake_url(table.uri)
        if not _CLOUD_URL.fullmatch(url):
            raise BadInputError(
                f"{table.uri}: Snowflake reads s3://, gcs:// or azure:// locations; set "
                f"{PREFIX}stage_url to the table's location as Snowflake sees it"
            )
        return url.rstrip("/") + "/"

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

    def _state(self, cursor: Cursor | None, names: ObjectNames, marked: str) -> _State:
        if cursor is None:  # offline: nothing read, as before a first sync
            return _State(None, None, None, False, None)
        view = self._show(cursor, "VIEWS", marked)
        stage = self._show(cursor, "STAGES", self._stage())
        comment = str(view.get("comment") or "") if view else ""
        digests = _MARKER_DIGESTS.search(comment)
        return _State(
            marker=SyncMarker.parse(comment),
            history_digest=digests["history"] if digests else None,
            view_digest=digests["view"] if digests else None,
            view_exists=view is not None,
            stage_url=str(stage["url"]) if stage else None,
            logs_digest=digests["logs"] if digests else None,
            rt_digest=digests["rt"] if digests else None,
        )

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
        url = self.stage_url(table)
        # Before the first commit the external tables list no file: the objects are
        # typed and empty, and the first sync with files refreshes them in place.
        marker = SyncMarker.of(published.manifest.instant, url, MODE)
        marked = names.marked(published.logs)
        state = self._state(cursor, names, marked)
        target = self.name
        if state.view_exists and state.marker is None and not force:
            raise BadInputError(
                f"{self._qualified(marked)} exists and was not created by hudi_sync; "
                "drop it or use --force"
            )
        replace = force or replace_other_table
        refuse_other_table(target, {self._qualified(marked): state.marker}, marker, replace)
        columns = history_columns(
            table.avro_schema,
            table.partition_fields,
            table.config.hive_style_partitioning,
            table.config.populate_meta_fields,
        )
        history_sql = self._history_sql(names.history, columns, table.config.base_file_format)
        view_sql = self._view_sql(names, columns, published)
        history_digest, view_digest = _digest(history_sql), _digest(view_sql)
        snapshot = self._snapshot_sql(table, names, columns, published.logs)
        logs_digest = None
        if snapshot is not None:  # "none": a snapshot view over the read-optimized one only
            logs_digest = _digest(snapshot.log_history) if snapshot.log_history else "none"
        rt_digest = _digest(snapshot.view) if snapshot else None
        current = state.marker
        same_objects = marker.same_objects(current)
        unchanged = (state.history_digest, state.view_digest) == (history_digest, view_digest)
        unchanged = unchanged and (state.logs_digest, state.rt_digest) == (logs_digest, rt_digest)
        restored = restore_reason(table, marked, current, marker)
        settled = settled_plan(target, marked, current, marker, force, unchanged, restored)
        if settled is not None:
            return settled, []
        statements = self._stage_statements(state, url, same_objects, force, offline)
        history = self._qualified(names.history)
        if same_objects and state.history_digest == history_digest and not force:
            refresh = f"ALTER EXTERNAL TABLE {history} REFRESH"
            statements.append(Statement(refresh, refresh, f"refresh {history}"))
        else:  # new, changed schema or stage: replaced, and its files listed on creation
            statements.append(Statement(history_sql, history_sql, f"create {history}"))
        manifest_sql = self._manifest_sql(table, published, names.manifest)
        statements.append(
            Statement(manifest_sql, manifest_sql, f"create {self._qualified(names.manifest)}")
        )
        if names.changes is not None and published.changes is not None:
            statements += self._feed_statements(table, names.changes, published.changes)
        elif cursor is not None and not as_of and self._show(cursor, "VIEWS", names.feed):
            statements += self._feed_drops(names.feed)  # the feed was turned off
        view = self._qualified(names.view)
        comment = f"{marker.render()} history={history_digest} view={view_digest}"
        if same_objects and state.view_digest == view_digest and not force:
            sql = f"ALTER VIEW {view} SET COMMENT = {quote_literal(comment)}"
        else:
            sql = self._view_sql(names, columns, published, comment)
        statements.append(Statement(sql, sql, f"create {view}"))
        if snapshot is not None:
            digests = f"history={history_digest} view={view_digest}"
            digests += f" logs={logs_digest} rt={rt_digest}"
            keep = same_objects and not force
            statements += snapshot.statements(
                f"{marker.render()} {digests}",
                refresh=keep and state.logs_digest == logs_digest,
                view_unchanged=keep and state.rt_digest == rt_digest,
            )
        action = "create" if current is None else ("update" if same_objects else "recreate")
        shown = [s.shown for s in statements]
        if offline is not None:
            return SyncPlan(target, action, shown, offline_note(offline, self._needs())), statements
        return changing_plan(target, action, shown, restored), statements

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

    def _stage_statements(
        self, state: _State, url: str, same_objects: bool, force: bool, offline: str | None = None
    ) -> list[Statement]:
        """The managed stage is created, or replaced when its URL changed; a stage named
        by ``stage_name`` must exist and is never altered (offline: assumed to exist)."""
        stage = self._qualified(self._stage())
        if self.config.stage_name:
            if state.stage_url is None and offline is None:
                raise BadInputError(f"stage {stage} ({PREFIX}stage_name) does not exist")
            return []
        if state.stage_url is not None and state.stage_url.rstrip("/") + "/" != url:
            if not (force or (state.marker is not None and not same_objects)):
                raise BadInputError(
                    f"stage {stage} exists over {state.stage_url}, not {url}; "
                    "drop it, name another with "
                    f"{PREFIX}stage_name, or use --force"
                )
        elif state.stage_url is not None and same_objects and not force:
            return []
        access = ""
        shown = ""
        if self.config.storage_integration:
            access = f" STORAGE_INTEGRATION = {sql_name(self.config.storage_integration)}"
            shown = access
        elif self.config.credentials:
            pairs = " ".join(
                f"{k.upper()} = {quote_literal(v)}" for k, v in self.config.credentials.items()
            )
            masked = " ".join(
                f"{k.upper()} = {quote_literal('***' if k in SECRET_KEYS else v)}"
                for k, v in self.config.credentials.items()
            )
            access, shown = f" CREDENTIALS = ({pairs})", f" CREDENTIALS = ({masked})"
        head = f"CREATE OR REPLACE STAGE {stage} URL = {quote_literal(url)}"
        tail = " FILE_FORMAT = (TYPE = PARQUET) COMMENT = 'hudi_sync stage'"
        return [Statement(head + access + tail, head + shown + tail, f"create stage {stage}")]

    def _history_sql(self, name: str, columns: list[Column], base_format: str = "PARQUET") -> str:
        """Over every base file of ``base_format`` (PARQUET or ORC) under the stage."""
        if base_format not in BASE_FILE_FORMATS:
            raise UnsupportedTableError(f"Snowflake external tables cannot read {base_format}")
        partitions = [c for c in columns if c.is_partition]
        partition_by = (
            f" PARTITION BY ({', '.join(sql_name(c.name) for c in partitions)})"
            if partitions
            else ""
        )
        return (
            f"CREATE OR REPLACE EXTERNAL TABLE {self._qualified(name)} "
            f"({', '.join(c.definition() for c in columns)}){partition_by} "
            f"WITH LOCATION = @{self._qualified(self._stage())}/ "
            "REFRESH_ON_CREATE = TRUE AUTO_REFRESH = FALSE "
            f"PATTERN = {quote_literal(base_file_pattern(base_format))} "
            f"FILE_FORMAT = (TYPE = {base_format}) COPY GRANTS"
        )

    def _manifest_sql(self, table: HudiTable, published: PublishedManifest, name: str) -> str:
        """Over immutable manifest files: replacing the table is the one atomic switch
        from the previous snapshot to this one. Full manifests: this instant's
        ``files.csv`` (column ``filename``). Delta manifests: the base's ``uris.csv``
        and the current changes file, matched exactly by PATTERN under the manifest
        folder, one whole line a row (column ``entry``, read by ``delta_files_select``)."""
        delta = published.delta
        if delta is None:
            folder = _stage_path(table, published.files_uri).rsplit("/", 1)[0]
            column, pattern = "filename", MANIFEST_PATTERN
        else:
            base = _stage_path(table, published.uris_uri)
            changes = _stage_path(table, delta.changes_uri)
            folder = os.path.commonpath([base, changes])
            files = [regex_literal(p[len(folder) + 1 :]) for p in (base, changes)]
            column, pattern = DELTA_ENTRY_COLUMN, f"^(.*/)?({'|'.join(files)})$"
        return self._list_table_sql(self._qualified(name), folder, pattern, column)

    def _list_table_sql(
        self,
        qualified: str,
        folder: str,
        pattern: str = MANIFEST_PATTERN,
        column: str = "filename",
    ) -> str:
        """An external table over list files under the stage's ``folder`` (matched by
        ``pattern``), each whole line one row of ``column``: replacing it is the atomic
        switch to another snapshot's list."""
        return (
            f"CREATE OR REPLACE EXTERNAL TABLE {qualified} "
            f"({sql_name(column)} VARCHAR AS (VALUE['c1']::VARCHAR)) "
            f"WITH LOCATION = @{self._qualified(self._stage())}/{folder}/ "
            "REFRESH_ON_CREATE = TRUE AUTO_REFRESH = FALSE "
            f"PATTERN = {quote_literal(pattern)} "
            "FILE_FORMAT = (TYPE = CSV FIELD_DELIMITER = NONE SKIP_HEADER = 0 "
            "FIELD_OPTIONALLY_ENCLOSED_BY = NONE) COPY GRANTS"
        )

    def _view_sql(
        self,
        names: ObjectNames,
        columns: list[Column],
        published: PublishedManifest,
        comment: str | None = None,
    ) -> str:
        """Every column but the external table's ``VALUE`` variant, of the history rows
        whose file is in the manifest table's snapshot (``comment``: the marker)."""
        listed = ", ".join(sql_name(c.name) for c in columns)
        manifest = self._qualified(names.manifest)
        if published.delta is None:
            files = f"SELECT {sql_name('filename')} FROM {manifest}"
        else:
            files = delta_files_select(manifest, published.delta.base_prefix)
        query = (
            f"SELECT {listed} FROM {self._qualified(names.history)} "
            f"WHERE {sql_name('_hoodie_file_name')} IN ({files})"
        )
        return create_view(self._qualified(names.view), query, comment)

    def _snapshot_sql(
        self,
        table: HudiTable,
        names: ObjectNames,
        columns: list[Column],
        logs: PublishedLogs | None,
    ) -> _SnapshotObjects | None:
        """A MOR table's ``<t>_log_history`` (an external table over the folded log
        files' folder), ``<t>_log_manifest`` (the snapshot's list of them) and the
        snapshot view ``<t>_rt``; None when the table gets no snapshot view. A snapshot
        without log records: the view reads ``<t>_ro`` and the log objects are dropped."""
        if names.snapshot_view is None or logs is None:
            return None
        assert names.log_manifest and names.log_history
        rt = self._qualified(names.snapshot_view)
        ro = self._qualified(names.view)
        log_history = self._qualified(names.log_history)
        log_manifest = self._qualified(names.log_manifest)
        if not logs.names:
            return _SnapshotObjects(rt, f"SELECT * FROM {ro}", (log_history, log_manifest))
        log_columns = history_columns(table.avro_schema, [], False, True)
        log_columns += [
            value_column(FILE_ID_COLUMN, "VARCHAR"),
            value_column(DELETED_COLUMN, "BOOLEAN"),
            value_column(LOG_WINS_COLUMN, "BOOLEAN"),
            value_column(BASE_ROW_COLUMN, "VARCHAR"),
            value_column(SOURCE_COLUMN, "VARCHAR"),
        ]
        stage = f"@{self._qualified(self._stage())}"
        history_sql = (
            f"CREATE OR REPLACE EXTERNAL TABLE {log_history} "
            f"({', '.join(c.definition() for c in log_columns)}) "
            f"WITH LOCATION = {stage}/{_stage_path(table, logs.folder_uri)}/ "
            "REFRESH_ON_CREATE = TRUE AUTO_REFRESH = FALSE "
            f"PATTERN = {quote_literal(LOG_FILE_PATTERN)} "
            "FILE_FORMAT = (TYPE = PARQUET) COPY GRANTS"
        )
        folder = _stage_path(table, logs.files_uri).rsplit("/", 1)[0]
        manifest_sql = self._list_table_sql(log_manifest, folder)
        query = snapshot_select(
            ro,
            log_history,
            log_manifest,
            columns,
            {c.name for c in log_columns},
            logs.ordering_field,
            ordering_kind(logs),
        )
        return _SnapshotObjects(rt, query, (), log_history, history_sql, manifest_sql)

    def _feed_statements(
        self, table: HudiTable, view: str, changes: PublishedChanges
    ) -> list[Statement]:
        """``<view>_history``: an external table over every change file under the stage's
        ``.hoodie/manifest/changes/`` (typed columns from ``VALUE``, ``commit_date`` and
        ``commit_time`` parsed from the path, ``PARTITION BY`` both, so a filter on them
        prunes files); ``<view>_manifest``: over the snapshot's lists of change files
        (its base's, and its delta's; replaced: the switch to this snapshot's feed); the
        view ``<view>``: the rows of the listed files, its comment the range the feed
        holds."""
        stage = f"@{self._qualified(self._stage())}"
        history, manifest = self._qualified(f"{view}_history"), self._qualified(f"{view}_manifest")
        columns = [
            value_column(f.name, arrow_snowflake_type(f.type, f.name)) for f in changes.schema
        ]
        file_column = Column(
            CHANGE_FILE_COLUMN,
            "VARCHAR",
            f"REGEXP_SUBSTR({FILENAME}, {quote_literal(CHANGE_FILE_REGEX)})",
        )
        keys = []
        for key, kind in ((DATE_KEY, "DATE"), (TIME_KEY, "VARCHAR")):
            folder_value = quote_literal(f"(^|/){key}=([^/]*)/")
            text = f"REGEXP_SUBSTR({FILENAME}, {folder_value}, 1, 1, 'e', 2)::{kind}"
            keys.append(Column(key, kind, text, is_partition=True))
        defined = [*columns, file_column, *keys]
        history_sql = (
            f"CREATE OR REPLACE EXTERNAL TABLE {history} "
            f"({', '.join(c.definition() for c in defined)}) "
            f"PARTITION BY ({sql_name(DATE_KEY)}, {sql_name(TIME_KEY)}) "
            f"WITH LOCATION = {stage}/{_stage_path(table, changes.folder_uri)}/ "
            "REFRESH_ON_CREATE = TRUE AUTO_REFRESH = FALSE "
            f"PATTERN = {quote_literal(CHANGE_FILE_PATTERN)} "
            "FILE_FORMAT = (TYPE = PARQUET) COPY GRANTS"
        )
        lists = [_stage_path(table, uri) for uri in changes.list_uris()]
        if len(lists) == 1:
            folder, pattern = lists[0].rsplit("/", 1)[0], MANIFEST_PATTERN
        else:  # the base's list and the delta's, matched exactly under their folder
            folder = os.path.commonpath(lists)
            files = [regex_literal(p[len(folder) + 1 :]) for p in lists]
            pattern = f"^(.*/)?({'|'.join(files)})$"
        manifest_sql = self._list_table_sql(manifest, folder, pattern)
        shown = ", ".join(sql_name(c.name) for c in [*columns, *keys])
        query = (
            f"SELECT {shown} FROM {history} WHERE {sql_name(CHANGE_FILE_COLUMN)} IN "
            f"(SELECT {sql_name('filename')} FROM {manifest})"
        )
        if not changes.count:  # no change file yet: no list to read
            query += " AND FALSE"
        view_sql = create_view(self._qualified(view), query, changes.description())
        return [
            Statement(history_sql, history_sql, f"create {history}"),
            Statement(manifest_sql, manifest_sql, f"create {manifest}"),
            Statement(view_sql, view_sql, f"create {self._qualified(view)}"),
        ]

    def _feed_drops(self, view: str) -> list[Statement]:
        out = []
        for sql in (
            f"DROP VIEW IF EXISTS {self._qualified(view)}",
            f"DROP EXTERNAL TABLE IF EXISTS {self._qualified(f'{view}_history')}",
            f"DROP EXTERNAL TABLE IF EXISTS {self._qualified(f'{view}_manifest')}",
        ):
            out.append(Statement(sql, sql, sql.lower().removeprefix("drop ")))
        return out

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


def create_view(name: str, query: str, comment: str | None = None) -> str:
    """``CREATE OR REPLACE VIEW`` of ``query`` keeping its grants, with ``comment`` (the
    marker) as a clause of its own: a statement is built whole, never edited as text
    (a name or URI holding `` COPY GRANTS AS `` or a quote stays inside its quotes)."""
    clause = "" if comment is None else f" COMMENT = {quote_literal(comment)}"
    return f"CREATE OR REPLACE VIEW {name} COPY GRANTS{clause} AS {query}"


def _stage_path(table: HudiTable, uri: str) -> str:
    """``uri`` (a manifest file of ``table``) relative to the table: a path under the
    stage, which is the table's location."""
    root = table.uri.rstrip("/") + "/"
    if not uri.startswith(root):
        raise HudiSyncError(f"manifest {uri} is not under {table.uri}")
    path = uri[len(root) :]
    if not re.fullmatch(r"[\w./-]+", path):
        raise HudiSyncError(f"manifest file {path!r} cannot be a stage path")
    return path


def delta_files_select(manifest: str, base_prefix: str) -> str:
    """The file names of a delta manifest's snapshot, from its table's ``entry`` lines
    (Snowflake SQL): base lines are absolute URIs starting with ``base_prefix``; change
    lines are CSV rows ``<partition>/<file id>,<file name>`` (the name empty for a
    removed group, the first field quoted when it holds a comma; a base file name never
    holds one). A base file's group is its path up to the file name's first ``_``."""
    entry = sql_name(DELTA_ENTRY_COLUMN)
    name = f"REGEXP_SUBSTR({entry}, '[^,]*$')"
    group = f"LEFT({entry}, LENGTH({entry}) - LENGTH({name}) - 1)"
    unquoted = (
        f"IFF(STARTSWITH({group}, '\"'), "
        f"REPLACE(SUBSTR({group}, 2, LENGTH({group}) - 2), '\"\"', '\"'), {group})"
    )
    return (
        "WITH lines AS ("
        f"SELECT {entry}, STARTSWITH({entry}, {quote_literal(base_prefix)}) AS is_base "
        f"FROM {manifest}), "
        f"base AS (SELECT SUBSTR({entry}, {len(base_prefix) + 1}) AS path "
        "FROM lines WHERE is_base), "
        f"changes AS (SELECT {unquoted} AS file_group, {name} AS filename "
        "FROM lines WHERE NOT is_base) "
        "SELECT REGEXP_SUBSTR(path, '[^/]+$') FROM base "
        "WHERE REGEXP_SUBSTR(path, '^(.*/)?[^/_]*') NOT IN "
        "(SELECT file_group FROM changes WHERE file_group IS NOT NULL) "
        "UNION ALL SELECT filename FROM changes WHERE filename <> ''"
    )


@dataclass(frozen=True)
class _SnapshotObjects:
    """The statements of a MOR table's snapshot objects (``SnowflakeTarget._snapshot_sql``)."""

    name: str  # the snapshot view, qualified
    query: str  # its query
    dropped: tuple[str, ...] = ()  # log tables no longer read
    log_history_name: str = ""
    log_history: str = ""
    log_manifest: str = ""

    @property
    def view(self) -> str:
        """The view's statement without its comment (what its digest is of)."""
        return create_view(self.name, self.query)

    def statements(self, comment: str, refresh: bool, view_unchanged: bool) -> list[Statement]:
        """In order: the log history (refreshed when its definition is unchanged), the
        log manifest (replaced: the switch to this snapshot's list), the snapshot view
        (created, or its comment set: the marker, last), then dropped log tables."""
        out = []
        if self.log_history:
            name = self.log_history_name
            if refresh:
                sql = f"ALTER EXTERNAL TABLE {name} REFRESH"
                out.append(Statement(sql, sql, f"refresh {name}"))
            else:
                out.append(Statement(self.log_history, self.log_history, f"create {name}"))
            out.append(Statement(self.log_manifest, self.log_manifest, "create log manifest"))
        if view_unchanged:
            sql = f"ALTER VIEW {self.name} SET COMMENT = {quote_literal(comment)}"
        else:
            sql = create_view(self.name, self.query, comment)
        out.append(Statement(sql, sql, f"create {self.name}"))
        for table in self.dropped:
            sql = f"DROP EXTERNAL TABLE IF EXISTS {table}"
            out.append(Statement(sql, sql, f"drop {table}"))
        return out


def snapshot_select(
    ro: str,
    log_history: str,
    log_manifest: str,
    columns: list[Column],
    log_columns: set[str],
    ordering: str | None,
    kind: str | None = None,
) -> str:
    """The snapshot view's query (``snapshot_query``) in Snowflake SQL: ``columns`` (the
    read-optimized view's, in order) on both sides, the log side cast to their types,
    null where the log files lack one. Snowflake SQL has no function that raises an
    error: a query fails with its message as a string that is no boolean does
    (``Boolean value '...' is not recognized``)."""
    from_log = (
        f"CAST({'l.' + sql_name(c.name) if c.name in log_columns else 'NULL'} AS {c.type}) "
        f"AS {sql_name(c.name)}"
        for c in columns
    )
    spelling = SnapshotQuery(
        sql_name,
        quote_literal,
        lambda column: f"SPLIT_PART({column}, '_', 1)",
        ", ".join(f"b.{sql_name(c.name)}" for c in columns),
        ", ".join(from_log),
        is_nan=lambda value: f"({value} = {quote_literal('NaN')}::FLOAT)",
        fail=lambda message: f"({message})::BOOLEAN",
    )
    return snapshot_query(spelling, ro, log_history, log_manifest, ordering, kind)


def _digest(sql: str) -> str:
    return hashlib.sha256(sql.encode()).hexdigest()[:16]
