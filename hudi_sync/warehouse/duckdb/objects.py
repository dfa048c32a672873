"""The DuckDB objects of a sync, as SQL: the manifest, history and view (and a
Merge-on-Read table's log objects and snapshot view, a CDC table's feed), each re-created
only when its definition changed, and its comment the marker."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from hudi_sync.manifest.log_parquet import (
    EXTRA_COLUMNS,
    FILE_ID_COLUMN,
    PARTITION_FIELD,
)
from hudi_sync.manifest.snapshot import PublishedLogs, PublishedManifest
from hudi_sync.table import HudiTable
from hudi_sync.table.keys.record_keys import (
    EMPTY_KEY_VALUE,
    KEY_PARTS_SEPARATOR,
    KEY_VALUE_SEPARATOR,
    NULL_KEY_VALUE,
    key_fields,
)
from hudi_sync.table.records.log_records import RECORD_KEY_FIELD
from hudi_sync.warehouse.common import (
    ObjectNames,
    SnapshotQuery,
    SyncMarker,
    ordering_kind,
    snapshot_query,
)
from hudi_sync.warehouse.common.quoting import duckdb_identifier as quote_identifier
from hudi_sync.warehouse.common.quoting import duckdb_literal as quote_literal
from hudi_sync.warehouse.duckdb.change_feed import (
    changes_lists_select,
    changes_manifest,
    changes_select,
)
from hudi_sync.warehouse.duckdb.files import (
    SOURCE_FILE_COLUMN,
    WHOLE_LINES,
    glob_literal,
    partition_globs,
    source_literal,
)
from hudi_sync.warehouse.duckdb.schema import (
    bound_columns,
    empty_history_columns,
    log_columns,
    schema_map,
)


def statements(
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
            f"SELECT filename FROM read_csv({source_literal(published.files_uri)}, "
            "header = false, columns = {'filename': 'VARCHAR'}, auto_detect = false, "
            f"{WHOLE_LINES})"
        )
    else:
        manifest_sql = "SELECT CAST(NULL AS VARCHAR) AS filename WHERE false"
    history_sql = history_select(table, published)
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
        views += snapshot_views(table, names, published.logs)
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


def snapshot_views(
    table: HudiTable, names: ObjectNames, logs: PublishedLogs
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
        f"SELECT filename FROM read_csv({source_literal(logs.files_uri)}, "
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


def history_select(table: HudiTable, published: PublishedManifest) -> str:
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
    columns = (
        None
        if hive
        else bound_columns(table, published.manifest.instant, published.timeline_listing)
    )
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
        f"read_csv({source_literal(delta.changes_uri)}, header = false, auto_detect = false, "
        "columns = {'file_group': 'VARCHAR', 'filename': 'VARCHAR'}, quote = '\"', "
        "escape = '\"')"
    )
    base = (
        f"read_csv({source_literal(published.uris_uri)}, header = false, auto_detect = false, "
        f"columns = {{'uri': 'VARCHAR'}}, {WHOLE_LINES})"
    )
    return (
        f"SELECT regexp_extract(uri, '[^/]+$') AS filename FROM {base} "
        "WHERE regexp_extract(uri, '^.*/[^/_]*') NOT IN "
        f"(SELECT {quote_literal(delta.base_prefix)} || file_group FROM {changes}) "
        f"UNION ALL SELECT filename FROM {changes} WHERE filename IS NOT NULL"
    )
