"""The plan of a Snowflake sync: from the view's marker and digests and the stage's URL,
which objects are kept, refreshed or replaced, in order (or, offline, a first sync's)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from hudi_sync.errors import BadInputError
from hudi_sync.manifest.snapshot import PublishedManifest
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.common import (
    ObjectNames,
    SyncMarker,
    SyncPlan,
    changing_plan,
    objects_settled,
    offline_note,
    refuse_other_table,
    restore_reason,
    retired_feed,
    settled_plan,
)
from hudi_sync.warehouse.common.quoting import snowflake_literal as quote_literal
from hudi_sync.warehouse.snowflake.change_feed import feed_drops, feed_statements
from hudi_sync.warehouse.snowflake.config import PREFIX, SECRET_KEYS
from hudi_sync.warehouse.snowflake.connection import Statement
from hudi_sync.warehouse.snowflake.objects import SnowflakeObjects, digest
from hudi_sync.warehouse.snowflake.schema import sql_name, table_history_columns

MODE = "view"
MARKER_DIGESTS = re.compile(
    r"history=(?P<history>\w+) view=(?P<view>\w+)(?: logs=(?P<logs>\w+) rt=(?P<rt>\w+))?"
)


@dataclass(frozen=True)
class State:
    """What exists now: the view's marker and digests, and the stage's URL."""

    marker: SyncMarker | None
    history_digest: str | None
    view_digest: str | None
    view_exists: bool
    stage_url: str | None
    logs_digest: str | None = None  # MOR: the log history's and the snapshot view's
    rt_digest: str | None = None


def plan_statements(
    target: str,
    objects: SnowflakeObjects,
    table: HudiTable,
    published: PublishedManifest,
    names: ObjectNames,
    marker: SyncMarker,
    state: State,
    as_of: bool,
    force: bool,
    offline: str | None,
    replace_other_table: bool,
    view_shown: Callable[[str], bool],
    needs: Callable[[], str],
) -> tuple[SyncPlan, list[Statement]]:
    """The plan from what exists (``state``; ``view_shown``: a view of that name exists,
    asked of the change feed's view when the other objects are unchanged or the feed is
    no longer published); ``offline`` (why Snowflake
    cannot be reached; ``needs``: what a real run needs): a first sync's plan, and a note
    saying so. A view whose marker names another base is refused unless ``force`` or
    ``replace_other_table``."""
    url = marker.base
    marked = names.marked(published.logs)
    if state.view_exists and state.marker is None and not force:
        raise BadInputError(
            f"{objects.qualified(marked)} exists and was not created by hudi_sync; "
            "drop it or use --force"
        )
    replace = force or replace_other_table
    refuse_other_table(target, {objects.qualified(marked): state.marker}, marker, replace)
    columns = table_history_columns(table)
    history_sql = objects.history_sql(names.history, columns, table.config.base_file_format)
    view_sql = objects.view_sql(names, columns, published)
    history_digest, view_digest = digest(history_sql), digest(view_sql)
    snapshot = objects.snapshot_sql(table, names, columns, published.logs)
    logs_digest = None
    if snapshot is not None:  # "none": a snapshot view over the read-optimized one only
        logs_digest = digest(snapshot.log_history) if snapshot.log_history else "none"
    rt_digest = digest(snapshot.view) if snapshot else None
    current = state.marker
    same_objects = marker.same_objects(current)
    unchanged = (state.history_digest, state.view_digest) == (history_digest, view_digest)
    unchanged = unchanged and (state.logs_digest, state.rt_digest) == (logs_digest, rt_digest)
    # The feed turned on or off at the instant already shown: its objects still change.
    retired = retired_feed(names, as_of)
    feed = (names.changes,) if names.changes else ()
    unchanged = unchanged and objects_settled(feed, retired, view_shown)
    restored = restore_reason(table, marked, current, marker)
    settled = settled_plan(target, marked, current, marker, force, unchanged, restored)
    if settled is not None:
        return settled, []
    statements = stage_statements(objects, state, url, same_objects, force, offline)
    history = objects.qualified(names.history)
    if same_objects and state.history_digest == history_digest and not force:
        refresh = f"ALTER EXTERNAL TABLE {history} REFRESH"
        statements.append(Statement(refresh, refresh, f"refresh {history}"))
    else:  # new, changed schema or stage: replaced, and its files listed on creation
        statements.append(Statement(history_sql, history_sql, f"create {history}"))
    manifest_sql = objects.manifest_sql(table, published, names.manifest)
    statements.append(
        Statement(manifest_sql, manifest_sql, f"create {objects.qualified(names.manifest)}")
    )
    if names.changes is not None and published.changes is not None:
        statements += feed_statements(objects, table, names.changes, published.changes)
    elif any(view_shown(name) for name in retired):
        statements += feed_drops(objects, names.feed)  # the feed was turned off
    view = objects.qualified(names.view)
    comment = f"{marker.render()} history={history_digest} view={view_digest}"
    if same_objects and state.view_digest == view_digest and not force:
        sql = f"ALTER VIEW {view} SET COMMENT = {quote_literal(comment)}"
    else:
        sql = objects.view_sql(names, columns, published, comment)
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
        return SyncPlan(target, action, shown, offline_note(offline, needs())), statements
    return changing_plan(target, action, shown, restored), statements


def stage_statements(
    objects: SnowflakeObjects,
    state: State,
    url: str,
    same_objects: bool,
    force: bool,
    offline: str | None = None,
) -> list[Statement]:
    """The managed stage is created, or replaced when its URL changed; a stage named
    by ``stage_name`` must exist and is never altered (offline: assumed to exist)."""
    stage = objects.qualified(objects.stage())
    if objects.config.stage_name:
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
    if objects.config.storage_integration:
        access = f" STORAGE_INTEGRATION = {sql_name(objects.config.storage_integration)}"
        shown = access
    elif objects.config.credentials:
        pairs = " ".join(
            f"{k.upper()} = {quote_literal(v)}" for k, v in objects.config.credentials.items()
        )
        masked = " ".join(
            f"{k.upper()} = {quote_literal('***' if k in SECRET_KEYS else v)}"
            for k, v in objects.config.credentials.items()
        )
        access, shown = f" CREDENTIALS = ({pairs})", f" CREDENTIALS = ({masked})"
    head = f"CREATE OR REPLACE STAGE {stage} URL = {quote_literal(url)}"
    tail = " FILE_FORMAT = (TYPE = PARQUET) COMMENT = 'hudi_sync stage'"
    return [Statement(head + access + tail, head + shown + tail, f"create stage {stage}")]
