"""The post-commit hook: after a commit completes, sync the table to the configured targets.

A writer calls ``run_post_commit_hook`` with its write options. The targets come from
``hoodie.meta.sync.client.tool.class`` (Hudi's key; ``bigquery``, ``snowflake``,
``duckdb``, ``iceberg`` or Hudi's BigQuerySyncTool class name, comma-separated) and each
target's own options: ``hoodie.gcp.bigquery.sync.*`` for BigQuery,
``hoodie.snowflake.sync.*`` (or ``SNOWFLAKE_*`` variables) for Snowflake,
``hoodie.duckdb.sync.database`` and ``hoodie.duckdb.sync.table_name`` for DuckDB,
``hudi_sync.sync.iceberg.*`` for Iceberg (its SQL catalog, namespace and name).
``hoodie.manifest.delta.commits`` (N > 0) publishes delta manifests compacted every N
commits when every target reads them (``hudi_sync.manifest.delta``). A failing target
is reported in the result, never raised into the writer, and leaves its objects at the
previous snapshot (each target applies its changes atomically or in reader-safe order).
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping
from typing import Any

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError, HudiSyncError
from hudi_sync.manifest.delta import delta_commits_option
from hudi_sync.sync.job import SyncReport, Target, sync_table
from hudi_sync.table import HudiTable

SYNC_TOOLS = cfg.SYNC_TOOLS.key
MANIFEST_KEEP = cfg.MANIFEST_KEEP.key
DUCKDB_DATABASE = cfg.DUCKDB_DATABASE.key
DUCKDB_TABLE = cfg.DUCKDB_TABLE.key
_log = logging.getLogger(__name__)
_said: set[str] = set()  # tables whose hook was given no target: logged once each
_TOOL_ALIASES = {
    "bigquery": "bigquery",
    "org.apache.hudi.gcp.bigquery.bigquerysynctool": "bigquery",
    "duckdb": "duckdb",
    "snowflake": "snowflake",
    "iceberg": "iceberg",
}


def target_names(options: Mapping[str, Any]) -> list[str]:
    """The configured targets, in order, by our short names."""
    names = []
    for tool in cfg.SYNC_TOOLS.read(options):
        if tool.lower() not in _TOOL_ALIASES:
            raise BadInputError(
                f"{SYNC_TOOLS}: unknown sync tool {tool!r} (bigquery, snowflake, duckdb, iceberg)"
            )
        names.append(_TOOL_ALIASES[tool.lower()])
    return names


def required_target_names(options: Mapping[str, Any]) -> list[str]:
    """``target_names``, refusing none: a run that syncs no warehouse is a mistake (a
    properties file without the target line), not a success with no results."""
    names = target_names(options)
    if names:
        return names
    given = [str(key) for key in options if options[key] not in (None, "")]
    close = difflib.get_close_matches(SYNC_TOOLS, given, n=1, cutoff=0.8)
    hint = f" (is {close[0]} meant to be it?)" if close else ""
    raise BadInputError(
        f"no sync target: set {SYNC_TOOLS} to bigquery, snowflake, duckdb or iceberg "
        f"(comma-separated){hint}"
    )


def checked_target_names(options: Mapping[str, Any]) -> list[str]:
    """``required_target_names``, with the target options that need no table checked too
    (an Iceberg catalog URI of a scheme it cannot use), so ``watch`` and ``backfill``
    refuse them before the first sync."""
    names = required_target_names(options)
    if "iceberg" in names:
        from hudi_sync.warehouse.iceberg import check_catalog_uri

        uri = cfg.ICEBERG_CATALOG_URI.read(options)
        if uri:
            check_catalog_uri(uri, cfg.ICEBERG_CATALOG_URI.key)
    return names


def build_target(name: str, options: Mapping[str, Any], table: HudiTable) -> Target:
    """One target from the options; the warehouse table name defaults to the Hudi table's."""
    if name == "duckdb":
        from hudi_sync.warehouse.duckdb import DuckDBTarget

        database = cfg.DUCKDB_DATABASE.read(options)
        if not database:
            raise BadInputError(f"the duckdb sync target needs {DUCKDB_DATABASE}")
        return DuckDBTarget(
            database,
            cfg.DUCKDB_TABLE.read(options) or table.config.name,
            skip_ro_suffix=bool(cfg.SKIP_RO_SUFFIX.read(options)),
        )
    if name == "iceberg":
        from hudi_sync.warehouse.iceberg import IcebergTarget

        return IcebergTarget.from_options(options, table)
    if name == "snowflake":
        from hudi_sync.warehouse.snowflake import SnowflakeTarget

        return SnowflakeTarget.from_options(options, default_table_name=table.config.name)
    from hudi_sync.warehouse.bigquery import BigQueryTarget

    return BigQueryTarget.from_options(options, default_table_name=table.config.name)


def run_post_commit_hook(
    base_path: str,
    options: Mapping[str, Any],
    storage_options: Mapping[str, Any] | None = None,
    replace_other_table: bool = False,
) -> SyncReport:
    """Publish the manifest and sync each configured target. Never raises for a sync
    failure (the commit stands): failures are in the report's ``errors``, by target;
    options naming no target fail as ``hook`` (logged once per table too).
    ``replace_other_table``: replace objects another table's sync made (``--force``
    of ``watch`` and ``backfill``), refused otherwise."""
    cfg.warn_unknown_options(options)
    try:
        names = required_target_names(options)
    except BadInputError as exc:  # no target: said once in the log, and in every report
        if not cfg.SYNC_TOOLS.read(options) and base_path not in _said:
            _said.add(base_path)
            _log.warning("%s: the post-commit hook syncs nothing: %s", base_path, exc)
        return SyncReport.failed(base_path, "hook", str(exc))
    try:
        table = HudiTable.open(base_path, storage_options)
        targets = [build_target(name, options, table) for name in names]
        return sync_with_options(table, targets, options, replace_other_table=replace_other_table)
    except (HudiSyncError, OSError, ValueError) as exc:
        return SyncReport.failed(base_path, "hook", str(exc))


def sync_with_options(
    table: HudiTable,
    targets: list[Target],
    options: Mapping[str, Any],
    force: bool = False,
    replace_other_table: bool = False,
) -> SyncReport:
    """``sync_table`` of ``targets`` as the hook's ``options`` configure it (kept
    snapshots, delta manifests, log folding, change feed, cleaner, Iceberg metrics),
    each target's failure in the report, not raised: the hook's sync, and the one
    ``verify --repair`` runs."""
    return sync_table(
        table,
        targets,
        keep=cfg.MANIFEST_KEEP.read(options),
        force=force,
        continue_on_error=True,
        delta_commits=delta_commits_option(options),
        fold_processes=cfg.LOG_FOLD_PROCESSES.read(options),
        change_feed=cfg.CHANGE_FEED.read(options),
        replace_other_table=replace_other_table,
        cleaner_retained=cfg.COMMITS_RETAINED.read(options),
        iceberg_metrics=cfg.ICEBERG_METRICS.read(options),
    )
