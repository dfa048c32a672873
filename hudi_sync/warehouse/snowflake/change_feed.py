"""A CDC table's change feed in Snowflake: ``<t>_changes_history`` over the change files,
``<t>_changes_manifest`` over the snapshot's lists of them, and the view ``<t>_changes``."""

from __future__ import annotations

import os

from hudi_sync.manifest.change_feed import DATE_KEY, TIME_KEY, PublishedChanges
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.common.quoting import snowflake_literal as quote_literal
from hudi_sync.warehouse.snowflake.connection import Statement
from hudi_sync.warehouse.snowflake.objects import (
    MANIFEST_PATTERN,
    SnowflakeObjects,
    create_view,
    regex_literal,
    stage_path,
)
from hudi_sync.warehouse.snowflake.schema import (
    FILENAME,
    Column,
    arrow_snowflake_type,
    sql_name,
    value_column,
)

# The change feed's files (``hudi_sync.manifest.change_feed``), relative to its folder as
# its lists name them, and the column holding that relative path.
CHANGE_FILE_REGEX = r"commit_date=[^/]+/commit_time=[0-9]+/changes-[0-9a-f]+[.]parquet$"
CHANGE_FILE_PATTERN = r"^(.*/)?" + CHANGE_FILE_REGEX
CHANGE_FILE_COLUMN = "change_file"


def feed_statements(
    objects: SnowflakeObjects, table: HudiTable, view: str, changes: PublishedChanges
) -> list[Statement]:
    """``<view>_history``: an external table over every change file under the stage's
    ``.hoodie/manifest/changes/`` (typed columns from ``VALUE``, ``commit_date`` and
    ``commit_time`` parsed from the path, ``PARTITION BY`` both, so a filter on them
    prunes files); ``<view>_manifest``: over the snapshot's lists of change files
    (its base's, and its delta's; replaced: the switch to this snapshot's feed); the
    view ``<view>``: the rows of the listed files, its comment the range the feed
    holds."""
    stage = f"@{objects.qualified(objects.stage())}"
    history, manifest = objects.qualified(f"{view}_history"), objects.qualified(f"{view}_manifest")
    columns = [value_column(f.name, arrow_snowflake_type(f.type, f.name)) for f in changes.schema]
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
        f"WITH LOCATION = {stage}/{stage_path(table, changes.folder_uri)}/ "
        "REFRESH_ON_CREATE = TRUE AUTO_REFRESH = FALSE "
        f"PATTERN = {quote_literal(CHANGE_FILE_PATTERN)} "
        "FILE_FORMAT = (TYPE = PARQUET) COPY GRANTS"
    )
    lists = [stage_path(table, uri) for uri in changes.list_uris()]
    if len(lists) == 1:
        folder, pattern = lists[0].rsplit("/", 1)[0], MANIFEST_PATTERN
    else:  # the base's list and the delta's, matched exactly under their folder
        folder = os.path.commonpath(lists)
        files = [regex_literal(p[len(folder) + 1 :]) for p in lists]
        pattern = f"^(.*/)?({'|'.join(files)})$"
    manifest_sql = objects.list_table_sql(manifest, folder, pattern)
    shown = ", ".join(sql_name(c.name) for c in [*columns, *keys])
    query = (
        f"SELECT {shown} FROM {history} WHERE {sql_name(CHANGE_FILE_COLUMN)} IN "
        f"(SELECT {sql_name('filename')} FROM {manifest})"
    )
    if not changes.count:  # no change file yet: no list to read
        query += " AND FALSE"
    view_sql = create_view(objects.qualified(view), query, changes.description())
    return [
        Statement(history_sql, history_sql, f"create {history}"),
        Statement(manifest_sql, manifest_sql, f"create {manifest}"),
        Statement(view_sql, view_sql, f"create {objects.qualified(view)}"),
    ]


def feed_drops(objects: SnowflakeObjects, view: str) -> list[Statement]:
    out = []
    for sql in (
        f"DROP VIEW IF EXISTS {objects.qualified(view)}",
        f"DROP EXTERNAL TABLE IF EXISTS {objects.qualified(f'{view}_history')}",
        f"DROP EXTERNAL TABLE IF EXISTS {objects.qualified(f'{view}_manifest')}",
    ):
        out.append(Statement(sql, sql, sql.lower().removeprefix("drop ")))
    return out
