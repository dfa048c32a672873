"""``hudi-sync manifest``, ``sync`` (DuckDB, BigQuery, Snowflake, Iceberg), ``watch`` and
``backfill``: publish a table's snapshot manifest and sync it to warehouses, once, on each
new commit, or for every table under a root. The options the ``sync`` commands share are
declared once, in ``SyncRun``."""

from __future__ import annotations

import inspect
import json
import math
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from types import FrameType
from typing import Annotated, Any, get_type_hints

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from hudi_sync import config as cfg
from hudi_sync.cli.common import (
    ConfOption,
    JsonFlag,
    PropsOption,
    StorageOption,
    command_group,
    command_options,
    emit,
    exit_on_error,
    parse_storage_options,
)
from hudi_sync.errors import BadInputError
from hudi_sync.manifest.delta import DELTA_COMMITS_OPTION, delta_commits_option
from hudi_sync.manifest.snapshot import DEFAULT_KEEP, manifest_summary
from hudi_sync.storage import open_location
from hudi_sync.sync.backfill import backfill, discover_tables, path_under_root
from hudi_sync.sync.hook import (
    DUCKDB_DATABASE,
    DUCKDB_TABLE,
    build_target,
    checked_target_names,
)
from hudi_sync.sync.job import SyncReport, Target, publish_manifest, sync_table
from hudi_sync.sync.names import shown
from hudi_sync.sync.watch import DEFAULT_INTERVAL, DEFAULT_MAX_BACKOFF, WatchEvent, watch
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.bigquery import PREFIX as BIGQUERY_PREFIX
from hudi_sync.warehouse.bigquery import BigQueryTarget
from hudi_sync.warehouse.iceberg import IcebergTarget, check_catalog_uri
from hudi_sync.warehouse.snowflake import PREFIX as SNOWFLAKE_PREFIX
from hudi_sync.warehouse.snowflake import SnowflakeTarget

sync_app = command_group("Sync a table's snapshot to a warehouse.")

AsOfOption = Annotated[
    str | None,
    typer.Option("--as-of", help="Publish the snapshot as of a time (objects get a suffix)."),
]
KeepOption = Annotated[int, typer.Option("--keep", help="Manifest snapshots to keep.")]
DryRunOption = Annotated[bool, typer.Option("--dry-run", help="Print the plan, change nothing.")]
ForceOption = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Allow moving a target backwards, or replacing objects another table's sync "
        "made (their marker names another base path).",
    ),
]
ReplaceOtherOption = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Replace objects another table's sync made (their marker names another base "
        "path) instead of refusing them.",
    ),
]
DeltaCommitsOption = Annotated[
    int | None,
    typer.Option(
        "--delta-commits",
        help=f"{DELTA_COMMITS_OPTION}: publish delta manifests, a new base every N commits.",
    ),
]


def manifest_command(
    uri: Annotated[str, typer.Argument(help="Table base path or URI")],
    as_of: AsOfOption = None,
    keep: KeepOption = DEFAULT_KEEP,
    dry_run: DryRunOption = False,
    as_json: JsonFlag = False,
    storage_option: StorageOption = None,
) -> None:
    """Publish the table's snapshot manifest under <table>/.hoodie/manifest/."""

    def body() -> dict[str, Any]:
        table = HudiTable.open(uri, parse_storage_options(storage_option))
        return manifest_summary(publish_manifest(table, as_of=as_of, keep=keep, dry_run=dry_run))

    summary = exit_on_error(body)
    emit([summary], as_json, f"manifest of {uri}")


def _print_report(report: SyncReport, dry_run: bool, as_json: bool, uri: str) -> None:
    """``--dry-run`` prints each target's plan; otherwise a results table (or JSON)."""
    if as_json:
        sys.stdout.write(json.dumps(report.to_json(), indent=2) + "\n")
    elif dry_run:
        for plan in report.plans:
            typer.echo(f"-- {plan.target}: {plan.action} {plan.reason}".rstrip())
            for step in plan.steps:
                typer.echo(step + ";")
    elif report.instant is None:
        typer.echo(
            f"{uri}: no completed commit yet: empty objects created with the columns of "
            f"{cfg.CREATE_SCHEMA.key}; the first commit's sync fills them"
        )
        emit([r.to_json() for r in report.results], False, f"sync of {uri} (empty)")
    else:
        emit([r.to_json() for r in report.results], False, f"sync of {uri} at {report.instant}")


@dataclass(frozen=True)
class SyncRun:
    """The options every ``sync`` command takes, declared once: ``_sync_command``
    adds them to each command after the command's own (its URI and target flags)."""

    props: PropsOption = None
    conf: ConfOption = None
    as_of: AsOfOption = None
    keep: KeepOption = DEFAULT_KEEP
    force: ForceOption = False
    dry_run: DryRunOption = False
    as_json: JsonFlag = False
    storage_option: StorageOption = None
    delta_commits: DeltaCommitsOption = None

    def options(self, prefix: str = "", flags: dict[str, Any] | None = None) -> dict[str, Any]:
        """``--props``, then ``--conf``, then the command's flags (see ``command_options``)."""
        return command_options(self.props, self.conf, prefix, flags)

    def sync(self, uri: str, make_targets: Callable[[HudiTable], list[Target]]) -> None:
        """Open the table, build the targets, sync, print: the shape of every ``sync``
        command. A bad delta-commits value fails first, before the table is opened."""
        own = {DELTA_COMMITS_OPTION: self.delta_commits}
        delta_commits = exit_on_error(lambda: delta_commits_option(self.options(flags=own)))
        processes = exit_on_error(lambda: cfg.LOG_FOLD_PROCESSES.read(self.options()))
        change_feed = exit_on_error(lambda: cfg.CHANGE_FEED.read(self.options()))
        cleaner_retained = exit_on_error(lambda: cfg.COMMITS_RETAINED.read(self.options()))
        metrics = exit_on_error(lambda: cfg.ICEBERG_METRICS.read(self.options()))

        def body() -> SyncReport:
            table = HudiTable.open(uri, parse_storage_options(self.storage_option))
            return sync_table(
                table,
                make_targets(table),
                as_of=self.as_of,
                keep=self.keep,
                force=self.force,
                dry_run=self.dry_run,
                delta_commits=delta_commits,
                fold_processes=processes,
                change_feed=change_feed,
                cleaner_retained=cleaner_retained,
                iceberg_metrics=metrics,
            )

        report = exit_on_error(body)
        _print_report(report, self.dry_run, self.as_json, uri)


def _sync_command(name: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register ``sync NAME``. The decorated function takes a ``SyncRun`` first,
    then its own parameters; typer sees its own parameters followed by SyncRun's fields
    (so help lists them in that order), and the call gets them back as one SyncRun."""

    def register(command: Callable[..., None]) -> Callable[..., None]:
        hints = get_type_hints(SyncRun, include_extras=True)
        shared = [
            inspect.Parameter(
                f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=hints[f.name]
            )
            for f in fields(SyncRun)
        ]
        own = list(inspect.signature(command, eval_str=True).parameters.values())[1:]

        def run_command(**values: Any) -> None:
            run = SyncRun(**{f.name: values.pop(f.name) for f in fields(SyncRun)})
            command(run, **values)

        run_command.__signature__ = inspect.Signature([*own, *shared])  # type: ignore[attr-defined]
        run_command.__name__ = command.__name__
        run_command.__qualname__ = command.__qualname__
        run_command.__doc__ = command.__doc__
        sync_app.command(name)(run_command)
        return run_command

    return register


@_sync_command("duckdb")
def sync_duckdb(
    run: SyncRun,
    uri: Annotated[str, typer.Argument(help="Table base path or URI")],
    database: Annotated[
        str | None, typer.Option("--database", help=f"{DUCKDB_DATABASE}: DuckDB database file.")
    ] = None,
    table_name: Annotated[
        str | None,
        typer.Option("--table", help=f"{DUCKDB_TABLE}: view name; default the Hudi table's."),
    ] = None,
) -> None:
    """Create NAME, NAME_manifest and NAME_history in a DuckDB file."""
    flags = {DUCKDB_DATABASE: database, DUCKDB_TABLE: table_name}
    run.sync(uri, lambda table: [build_target("duckdb", run.options(flags=flags), table)])


@_sync_command("iceberg")
def sync_iceberg(
    run: SyncRun,
    uri: Annotated[str, typer.Argument(help="Table base path or URI")],
    catalog_uri: Annotated[
        str | None,
        typer.Option(
            "--catalog-uri",
            help=f"{cfg.ICEBERG_CATALOG_URI.key}: catalog to register and commit the table "
            "in: a REST catalog (http(s)://...) or a SQL catalog (sqlite:///<path>); unset: "
            "metadata in the table's storage only.",
        ),
    ] = None,
    token_file: Annotated[
        str | None,
        typer.Option(
            "--catalog-token-file",
            help=f"{cfg.ICEBERG_CATALOG_TOKEN_FILE.key}: REST catalog bearer token file.",
        ),
    ] = None,
    token_env: Annotated[
        str | None,
        typer.Option(
            "--catalog-token-env",
            help=f"{cfg.ICEBERG_CATALOG_TOKEN_ENV.key}: variable holding the bearer token.",
        ),
    ] = None,
    catalog_name: Annotated[
        str | None,
        typer.Option("--catalog-name", help=f"{cfg.ICEBERG_CATALOG_NAME.key}: catalog name."),
    ] = None,
    namespace: Annotated[
        str | None,
        typer.Option("--namespace", help=f"{cfg.ICEBERG_NAMESPACE.key}: catalog namespace."),
    ] = None,
    table_name: Annotated[
        str | None,
        typer.Option(
            "--table", help=f"{cfg.ICEBERG_TABLE.key}: catalog table; default the Hudi table's."
        ),
    ] = None,
) -> None:
    """Publish the snapshot as Iceberg v2 metadata under <table>/.hoodie/manifest/iceberg/
    (Merge-on-Read: merged, with position deletes) and commit it to a REST or SQL catalog; --json
    names the metadata_location published."""
    flags = {
        cfg.ICEBERG_CATALOG_URI.key: catalog_uri,
        cfg.ICEBERG_CATALOG_TOKEN_FILE.key: token_file,
        cfg.ICEBERG_CATALOG_TOKEN_ENV.key: token_env,
        cfg.ICEBERG_CATALOG_NAME.key: catalog_name,
        cfg.ICEBERG_NAMESPACE.key: namespace,
        cfg.ICEBERG_TABLE.key: table_name,
    }
    options = exit_on_error(lambda: run.options(flags=flags))
    catalog = exit_on_error(lambda: cfg.ICEBERG_CATALOG_URI.read(options))
    if catalog:  # a bad catalog URI fails before the table is opened
        exit_on_error(lambda: check_catalog_uri(catalog, cfg.ICEBERG_CATALOG_URI.key))
    run.sync(uri, lambda table: [IcebergTarget.from_options(options, table)])


def _bq_option(name: str, help_text: str) -> Any:
    return typer.Option(
        f"--{name.replace('_', '-').replace('.', '-')}",
        help=f"{BIGQUERY_PREFIX}{name}: {help_text}",
    )


@_sync_command("bigquery")
def sync_bigquery(
    run: SyncRun,
    uri: Annotated[str, typer.Argument(help="Table base path or URI (gs://...)")],
    project_id: Annotated[str | None, _bq_option("project_id", "target project.")] = None,
    dataset_name: Annotated[str | None, _bq_option("dataset_name", "dataset.")] = None,
    table_name: Annotated[str | None, _bq_option("table_name", "view/table name.")] = None,
    dataset_location: Annotated[
        str | None, _bq_option("dataset_location", "location of a created dataset.")
    ] = None,
    billing_project_id: Annotated[
        str | None, _bq_option("billing.project.id", "project billed for jobs.")
    ] = None,
    source_uri: Annotated[
        str | None, _bq_option("source_uri", "history URIs, comma-separated.")
    ] = None,
    source_uri_prefix: Annotated[
        str | None, _bq_option("source_uri_prefix", "the table's gs:// location.")
    ] = None,
    use_bq_manifest_file: Annotated[
        bool | None, _bq_option("use_bq_manifest_file", "one manifest-file table.")
    ] = None,
    partition_fields: Annotated[
        str | None, _bq_option("partition_fields", "partition columns, comma-separated.")
    ] = None,
    require_partition_filter: Annotated[
        bool | None, _bq_option("require_partition_filter", "queries must filter partitions.")
    ] = None,
    big_lake_connection_id: Annotated[
        str | None, _bq_option("big_lake_connection_id", "BigLake connection.")
    ] = None,
    api_endpoint: Annotated[
        str | None,
        typer.Option("--api-endpoint", help="BigQuery API endpoint (an emulator), no credentials."),
    ] = None,
) -> None:
    """Create external tables and a view (or one manifest-file table) in BigQuery."""
    flags = {
        "project_id": project_id,
        "dataset_name": dataset_name,
        "table_name": table_name,
        "dataset_location": dataset_location,
        "billing.project.id": billing_project_id,
        "source_uri": source_uri,
        "source_uri_prefix": source_uri_prefix,
        "use_bq_manifest_file": use_bq_manifest_file,
        "partition_fields": partition_fields,
        "require_partition_filter": require_partition_filter,
        "big_lake_connection_id": big_lake_connection_id,
        "api_endpoint": api_endpoint,
    }
    run.sync(uri, lambda _table: [BigQueryTarget.from_options(run.options(BIGQUERY_PREFIX, flags))])


def _sf_option(name: str, help_text: str) -> Any:
    return typer.Option(
        f"--{name.replace('_', '-')}",
        help=f"{SNOWFLAKE_PREFIX}{name} (or SNOWFLAKE_{name.upper()}): {help_text}",
    )


@_sync_command("snowflake")
def sync_snowflake(
    run: SyncRun,
    uri: Annotated[str, typer.Argument(help="Table base path or URI (s3://, gs://, abfss://)")],
    account: Annotated[str | None, _sf_option("account", "account identifier.")] = None,
    user: Annotated[str | None, _sf_option("user", "login name.")] = None,
    role: Annotated[str | None, _sf_option("role", "role the sync runs as.")] = None,
    warehouse: Annotated[str | None, _sf_option("warehouse", "virtual warehouse.")] = None,
    database: Annotated[str | None, _sf_option("database", "database of the objects.")] = None,
    schema: Annotated[str | None, _sf_option("schema", "schema of the objects.")] = None,
    authenticator: Annotated[
        str | None, _sf_option("authenticator", "e.g. SNOWFLAKE_JWT, externalbrowser.")
    ] = None,
    private_key_file: Annotated[
        str | None, _sf_option("private_key_file", "key-pair authentication key (PEM).")
    ] = None,
    table_name: Annotated[
        str | None, _sf_option("table_name", "view name; default the Hudi table's.")
    ] = None,
    stage_url: Annotated[
        str | None, _sf_option("stage_url", "the table's location as Snowflake reads it.")
    ] = None,
    stage_name: Annotated[
        str | None, _sf_option("stage_name", "an existing stage to use as is.")
    ] = None,
    storage_integration: Annotated[
        str | None, _sf_option("storage_integration", "storage integration of the stage.")
    ] = None,
) -> None:
    """Create a stage, external tables and a view in Snowflake. Secrets (password,
    private_key_file_pwd, token, aws_secret_key, azure_sas_token) come from SNOWFLAKE_*
    variables or --props only, never from flags, and are never printed."""
    flags = {
        "account": account,
        "user": user,
        "role": role,
        "warehouse": warehouse,
        "database": database,
        "schema": schema,
        "authenticator": authenticator,
        "private_key_file": private_key_file,
        "table_name": table_name,
        "stage_url": stage_url,
        "stage_name": stage_name,
        "storage_integration": storage_integration,
    }

    def targets(table: HudiTable) -> list[Target]:
        options = run.options(SNOWFLAKE_PREFIX, flags)
        return [SnowflakeTarget.from_options(options, default_table_name=table.config.name)]

    run.sync(uri, targets)


def _hook_options(
    props: str | None, conf: list[str] | None, storage_option: list[str] | None
) -> tuple[dict[str, str], dict[str, Any]]:
    """The hook's options and storage options, with the configured targets checked."""
    options = exit_on_error(lambda: command_options(props, conf))
    storage = exit_on_error(lambda: parse_storage_options(storage_option))
    exit_on_error(lambda: checked_target_names(options))
    return options, storage


def _watch_settings(
    uris: list[str],
    root: str | None,
    interval: float,
    max_backoff: float | None,
    max_syncs: int | None,
) -> float:
    """Refuse, before the first poll, a watch that could not run as asked; return the
    backoff cap (by default 300 s, or the interval when that is longer)."""
    if not uris and root is None:
        raise BadInputError("watch needs a table URI or --root")
    if not math.isfinite(interval) or interval <= 0:
        raise BadInputError(f"--interval {interval:g}: must be a number of seconds above 0")
    if max_backoff is not None and (not math.isfinite(max_backoff) or max_backoff < interval):
        raise BadInputError(
            f"--max-backoff {max_backoff:g}: must be a number of seconds not below "
            f"--interval ({interval:g})"
        )
    if max_syncs is not None and max_syncs < 1:
        raise BadInputError(f"--max-syncs {max_syncs}: must be at least 1")
    return max(DEFAULT_MAX_BACKOFF, interval) if max_backoff is None else max_backoff


def _verbose_needs_json(verbose: bool, as_json: bool) -> None:
    """``--verbose`` adds fields to the JSON lines; text lines have none to add."""
    if verbose and not as_json:
        raise BadInputError("--verbose: only with --json (it adds each sync's statements)")


def _checked_sync_options(options: dict[str, Any]) -> None:
    """The hook options every sync reads, parsed once up front: a bad value would fail
    every poll the same way, so it is a bad option, not a transient error."""
    checked_target_names(options)
    delta_commits_option(options)
    cfg.MANIFEST_KEEP.read(options)
    cfg.LOG_FOLD_PROCESSES.read(options)


@contextmanager
def _stopped_by_signals(stop: threading.Event) -> Iterator[None]:
    """SIGTERM and SIGINT set ``stop`` (the sync in progress finishes, the wait between
    polls wakes at once) instead of killing the process; the old handlers come back after."""

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def watch_command(
    uris: Annotated[
        list[str] | None,
        typer.Argument(help="Table base paths or URIs", metavar="URI", show_default=False),
    ] = None,
    root: Annotated[
        str | None,
        typer.Option(
            "--root",
            help="Also watch every Hudi table under this folder or URI, re-listed each poll "
            "(warehouse names as backfill gives them).",
        ),
    ] = None,
    props: PropsOption = None,
    conf: ConfOption = None,
    interval: Annotated[
        float, typer.Option("--interval", help="Seconds between polls.")
    ] = DEFAULT_INTERVAL,
    max_backoff: Annotated[
        float | None,
        typer.Option(
            "--max-backoff",
            help="Most seconds before retrying a failing table (the wait doubles per "
            f"failure); default {DEFAULT_MAX_BACKOFF:g}, or --interval when longer.",
            show_default=False,
        ),
    ] = None,
    max_syncs: Annotated[
        int | None, typer.Option("--max-syncs", help="Stop after this many successful syncs.")
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print one JSON object per line and event, as it happens."),
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose", help="With --json: each sync's SQL statements too (plans[].steps)."
        ),
    ] = False,
    storage_option: StorageOption = None,
    force: ReplaceOtherOption = False,
) -> None:
    """Run as a service: poll the tables' timelines; when a table's latest completed
    commit changes, run the configured sync targets (the hook's options:
    hoodie.meta.sync.client.tool.class=duckdb,bigquery and theirs). Errors are reported
    one line each and retried with backoff; SIGTERM or SIGINT stops it (exit 0) after the
    sync in progress. Exit 2 only for bad options, before the first poll. --json lines carry
    event, timestamp (ISO-8601 UTC), table, instant, error, retry_in, duration_s and a
    sync's report; its SQL statements only with --verbose."""
    tables = list(uris or [])
    cap = exit_on_error(lambda: _watch_settings(tables, root, interval, max_backoff, max_syncs))
    exit_on_error(lambda: _verbose_needs_json(verbose, as_json))
    options, storage = _hook_options(props, conf, storage_option)
    exit_on_error(lambda: _checked_sync_options(options))

    def report(event: WatchEvent) -> None:
        line = json.dumps(event.to_json(verbose), default=str) if as_json else event.line()
        typer.echo(line)  # click flushes each line: a log pipeline sees it at once

    stop = threading.Event()
    with _stopped_by_signals(stop):
        watch(
            tables,
            options,
            storage,
            interval,
            max_syncs,
            roots=[root] if root is not None else [],
            max_backoff=cap,
            stop=stop,
            on_event=report,
            replace_other_table=force,
        )


class _BackfillProgress:
    """What ``backfill`` prints as it goes. ``stream`` (``--json``, or stdout not a
    terminal): one JSON line per table as it completes, flushed at once, then a summary
    line, so a scheduler's log shows each table when it is done. On a terminal: a progress
    bar on stderr naming the table in flight, then the results table."""

    def __init__(self, root: str, root_uri: str, total: int, stream: bool) -> None:
        self.root = root
        self.root_uri = root_uri
        self.stream = stream
        self.rows: list[dict[str, Any]] = []
        self.failed = 0
        self._began = time.monotonic()
        self._started = self._began
        self._bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[failed]} failed"),
            TimeElapsedColumn(),
            transient=True,
            disable=stream,
            console=Console(stderr=True),
        )
        self._task = self._bar.add_task("finding tables", total=total, failed=0)

    def __enter__(self) -> _BackfillProgress:
        self._bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.__exit__(None, None, None)

    def start(self, uri: str) -> None:
        self._started = time.monotonic()
        relative = path_under_root(self.root_uri, uri)
        self._bar.update(self._task, description=f"syncing {shown(relative)}")

    def done(self, uri: str, report: SyncReport) -> None:
        took = time.monotonic() - self._started
        row = {"table": uri, "instant": report.instant, "errors": report.error_summary()}
        self.rows.append(row)
        self.failed += not report.ok
        self._bar.update(self._task, advance=1, failed=self.failed)
        if self.stream:
            _json_line({"event": "table", **row, "duration_s": round(took, 3)})

    def summary(self) -> None:
        """The summary line (streaming), or the results table as ``emit`` prints it."""
        if not self.stream:
            emit(self.rows, False, f"backfill of {self.root}")
            return
        _json_line(
            {
                "event": "summary",
                "root": self.root,
                "tables": len(self.rows),
                "synced": len(self.rows) - self.failed,
                "failed": self.failed,
                "duration_s": round(time.monotonic() - self._began, 3),
            }
        )


def _json_line(record: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(record, default=str) + "\n")
    sys.stdout.flush()


def backfill_command(
    root: Annotated[str, typer.Argument(help="Folder or URI holding Hudi tables")],
    props: PropsOption = None,
    conf: ConfOption = None,
    allow_empty: Annotated[
        bool, typer.Option("--allow-empty", help="Exit 0 when ROOT holds no table.")
    ] = False,
    as_json: JsonFlag = False,
    storage_option: StorageOption = None,
    force: ReplaceOtherOption = False,
) -> None:
    """Find every Hudi table under ROOT and sync each one to the configured targets; each
    table's warehouse name is its path under ROOT with '/' (and any character but letters,
    digits and '_') replaced by '_'. Two tables with one name: the first holds it, the
    other fails naming both. A ROOT with no table exits 1 (0 with --allow-empty), a
    failed table 1. With --json or when stdout is not a terminal: one JSON line per table
    as it completes (table, instant, errors, duration_s), then a summary line; on a
    terminal a progress bar naming the table in flight, then the results table."""
    options, storage = _hook_options(props, conf, storage_option)
    tables = exit_on_error(lambda: discover_tables(root, storage))
    if not tables:
        typer.echo(f"{'warning' if allow_empty else 'error'}: no Hudi table under {root}", err=True)
        raise typer.Exit(0 if allow_empty else 1)
    root_uri = exit_on_error(lambda: open_location(root, storage).uri)
    stream = as_json or not sys.stdout.isatty()
    progress = _BackfillProgress(root, root_uri, len(tables), stream)
    with progress:
        exit_on_error(
            lambda: backfill(
                root,
                options,
                storage,
                progress.done,
                replace_other_table=force,
                on_start=progress.start,
                tables=tables,
            )
        )
    progress.summary()
    if progress.failed:
        raise typer.Exit(1)
