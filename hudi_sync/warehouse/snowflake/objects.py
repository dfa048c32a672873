"""The Snowflake objects of a sync, as DDL: the history external table over the base
files, the manifest external table over a snapshot's list, the view, a Merge-on-Read
table's log tables and snapshot view, and the PATTERNs that pick their files."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass

from hudi_sync.errors import BadInputError, HudiSyncError, UnsupportedTableError
from hudi_sync.manifest.log_parquet import FILE_ID_COLUMN, SOURCE_COLUMN
from hudi_sync.manifest.snapshot import PublishedLogs, PublishedManifest
from hudi_sync.table import HudiTable
from hudi_sync.table.records.merge import BASE_ROW_COLUMN, DELETED_COLUMN, LOG_WINS_COLUMN
from hudi_sync.warehouse.common import ObjectNames, SnapshotQuery, ordering_kind, snapshot_query
from hudi_sync.warehouse.common.quoting import snowflake_literal as quote_literal
from hudi_sync.warehouse.snowflake.config import (
    CLOUD_URL,
    PREFIX,
    SnowflakeSyncConfig,
    snowflake_url,
)
from hudi_sync.warehouse.snowflake.connection import Statement
from hudi_sync.warehouse.snowflake.schema import Column, history_columns, sql_name, value_column

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
# The folded log files of MOR tables (``hudi_sync.manifest.log_parquet``), by name.
LOG_FILE_PATTERN = r"^(.*/)?[^/]+[.]parquet$"


def base_file_pattern(base_format: str) -> str:
    """``BASE_FILE_PATTERN`` for the base files of ``base_format`` (``ORC``: ``[.]orc$``)."""
    return _BASE_FILE_PATTERN.format(extension=base_format.lower())


def regex_literal(text: str) -> str:
    """``text`` as a PATTERN regex matching only itself: each metacharacter in a class of
    its own (``[.]``), or backslash-escaped where a class would not read it plainly
    (``^``, ``\\``, ``[``, ``]``)."""
    return "".join(f"\\{c}" if c in "^\\[]" else f"[{c}]" if c in ".()*+?{}|$" else c for c in text)


@dataclass(frozen=True)
class SnowflakeObjects:
    """The DDL of a sync's objects in the database and schema ``config`` names: the
    stage's name and URL, the history and manifest external tables, the view, a
    Merge-on-Read table's log tables and snapshot view."""

    config: SnowflakeSyncConfig

    # -- naming --------------------------------------------------------------------------
    def qualified(self, name: str) -> str:
        return ".".join(sql_name(n) for n in (self.config.database, self.config.schema, name))

    def stage(self) -> str:
        return self.config.stage_name or f"{self.config.table_name}_stage"

    def stage_url(self, table: HudiTable) -> str:
        """Where Snowflake reads the table: ``stage_url``, else the table's own URI."""
        url = self.config.stage_url or snowflake_url(table.uri)
        if not CLOUD_URL.fullmatch(url):
            raise BadInputError(
                f"{table.uri}: Snowflake reads s3://, gcs:// or azure:// locations; set "
                f"{PREFIX}stage_url to the table's location as Snowflake sees it"
            )
        return url.rstrip("/") + "/"

    def history_sql(self, name: str, columns: list[Column], base_format: str = "PARQUET") -> str:
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
            f"CREATE OR REPLACE EXTERNAL TABLE {self.qualified(name)} "
            f"({', '.join(c.definition() for c in columns)}){partition_by} "
            f"WITH LOCATION = @{self.qualified(self.stage())}/ "
            "REFRESH_ON_CREATE = TRUE AUTO_REFRESH = FALSE "
            f"PATTERN = {quote_literal(base_file_pattern(base_format))} "
            f"FILE_FORMAT = (TYPE = {base_format}) COPY GRANTS"
        )

    def manifest_sql(self, table: HudiTable, published: PublishedManifest, name: str) -> str:
        """Over immutable manifest files: replacing the table is the one atomic switch
        from the previous snapshot to this one. Full manifests: this instant's
        ``files.csv`` (column ``filename``). Delta manifests: the base's ``uris.csv``
        and the current changes file, matched exactly by PATTERN under the manifest
        folder, one whole line a row (column ``entry``, read by ``delta_files_select``)."""
        delta = published.delta
        if delta is None:
            folder = stage_path(table, published.files_uri).rsplit("/", 1)[0]
            column, pattern = "filename", MANIFEST_PATTERN
        else:
            base = stage_path(table, published.uris_uri)
            changes = stage_path(table, delta.changes_uri)
            folder = os.path.commonpath([base, changes])
            files = [regex_literal(p[len(folder) + 1 :]) for p in (base, changes)]
            column, pattern = DELTA_ENTRY_COLUMN, f"^(.*/)?({'|'.join(files)})$"
        return self.list_table_sql(self.qualified(name), folder, pattern, column)

    def list_table_sql(
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
            f"WITH LOCATION = @{self.qualified(self.stage())}/{folder}/ "
            "REFRESH_ON_CREATE = TRUE AUTO_REFRESH = FALSE "
            f"PATTERN = {quote_literal(pattern)} "
            "FILE_FORMAT = (TYPE = CSV FIELD_DELIMITER = NONE SKIP_HEADER = 0 "
            "FIELD_OPTIONALLY_ENCLOSED_BY = NONE) COPY GRANTS"
        )

    def view_sql(
        self,
        names: ObjectNames,
        columns: list[Column],
        published: PublishedManifest,
        comment: str | None = None,
    ) -> str:
        """Every column but the external table's ``VALUE`` variant, of the history rows
        whose file is in the manifest table's snapshot (``comment``: the marker)."""
        listed = ", ".join(sql_name(c.name) for c in columns)
        manifest = self.qualified(names.manifest)
        if published.delta is None:
            files = f"SELECT {sql_name('filename')} FROM {manifest}"
        else:
            files = delta_files_select(manifest, published.delta.base_prefix)
        query = (
            f"SELECT {listed} FROM {self.qualified(names.history)} "
            f"WHERE {sql_name('_hoodie_file_name')} IN ({files})"
        )
        return create_view(self.qualified(names.view), query, comment)

    def snapshot_sql(
        self,
        table: HudiTable,
        names: ObjectNames,
        columns: list[Column],
        logs: PublishedLogs | None,
    ) -> SnapshotObjects | None:
        """A MOR table's ``<t>_log_history`` (an external table over the folded log
        files' folder), ``<t>_log_manifest`` (the snapshot's list of them) and the
        snapshot view ``<t>_rt``; None when the table gets no snapshot view. A snapshot
        without log records: the view reads ``<t>_ro`` and the log objects are dropped."""
        if names.snapshot_view is None or logs is None:
            return None
        assert names.log_manifest and names.log_history
        rt = self.qualified(names.snapshot_view)
        ro = self.qualified(names.view)
        log_history = self.qualified(names.log_history)
        log_manifest = self.qualified(names.log_manifest)
        if not logs.names:
            return SnapshotObjects(rt, f"SELECT * FROM {ro}", (log_history, log_manifest))
        log_columns = history_columns(table.avro_schema, [], False, True)
        log_columns += [
            value_column(FILE_ID_COLUMN, "VARCHAR"),
            value_column(DELETED_COLUMN, "BOOLEAN"),
            value_column(LOG_WINS_COLUMN, "BOOLEAN"),
            value_column(BASE_ROW_COLUMN, "VARCHAR"),
            value_column(SOURCE_COLUMN, "VARCHAR"),
        ]
        stage = f"@{self.qualified(self.stage())}"
        history_sql = (
            f"CREATE OR REPLACE EXTERNAL TABLE {log_history} "
            f"({', '.join(c.definition() for c in log_columns)}) "
            f"WITH LOCATION = {stage}/{stage_path(table, logs.folder_uri)}/ "
            "REFRESH_ON_CREATE = TRUE AUTO_REFRESH = FALSE "
            f"PATTERN = {quote_literal(LOG_FILE_PATTERN)} "
            "FILE_FORMAT = (TYPE = PARQUET) COPY GRANTS"
        )
        folder = stage_path(table, logs.files_uri).rsplit("/", 1)[0]
        manifest_sql = self.list_table_sql(log_manifest, folder)
        query = snapshot_select(
            ro,
            log_history,
            log_manifest,
            columns,
            {c.name for c in log_columns},
            logs.ordering_field,
            ordering_kind(logs),
        )
        return SnapshotObjects(rt, query, (), log_history, history_sql, manifest_sql)


def create_view(name: str, query: str, comment: str | None = None) -> str:
    """``CREATE OR REPLACE VIEW`` of ``query`` keeping its grants, with ``comment`` (the
    marker) as a clause of its own: a statement is built whole, never edited as text
    (a name or URI holding `` COPY GRANTS AS `` or a quote stays inside its quotes)."""
    clause = "" if comment is None else f" COMMENT = {quote_literal(comment)}"
    return f"CREATE OR REPLACE VIEW {name} COPY GRANTS{clause} AS {query}"


def stage_path(table: HudiTable, uri: str) -> str:
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
class SnapshotObjects:
    """The statements of a MOR table's snapshot objects (``SnowflakeObjects.snapshot_sql``)."""

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


def digest(sql: str) -> str:
    return hashlib.sha256(sql.encode()).hexdigest()[:16]
