"""A CDC table's change feed in DuckDB: ``<t>_changes_manifest`` over the snapshot's
lists of change files, and the view ``<t>_changes`` over the files they name."""

from __future__ import annotations

from hudi_sync.manifest.change_feed import (
    CHANGE_FILE_PREFIX,
    DATE_KEY,
    TIME_KEY,
    PublishedChanges,
)
from hudi_sync.warehouse.common.quoting import duckdb_identifier as quote_identifier
from hudi_sync.warehouse.common.quoting import duckdb_literal as quote_literal
from hudi_sync.warehouse.duckdb.files import (
    SOURCE_FILE_COLUMN,
    WHOLE_LINES,
    glob_literal,
    source_literal,
)
from hudi_sync.warehouse.duckdb.schema import (
    arrow_columns,
    schema_map,
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
    sources = "[" + ", ".join(source_literal(uri) for uri in changes.list_uris()) + "]"
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
