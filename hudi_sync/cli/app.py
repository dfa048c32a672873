"""``hudi-sync``: typer CLI over the table core.

Exit codes: 0 ok, 2 bad input (a one-line message naming what is wrong), 1 failure.
Help is click's plain layout: flags show as flags (no ``<bool>``) and no help text is cut.
Tables go to a terminal as rich tables and to a pipe or file as tab-separated values, whole.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Annotated, Any, TypeVar, get_type_hints

import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from hudi_sync import __version__
from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError, HudiSyncError
from hudi_sync.manifest.delta import DELTA_COMMITS_OPTION, delta_commits_option
from hudi_sync.manifest.snapshot import DEFAULT_KEEP, manifest_summary
from hudi_sync.storage import nest_option
from hudi_sync.sync.backfill import backfill, discover_tables
from hudi_sync.sync.hook import DUCKDB_DATABASE, DUCKDB_TABLE, build_target, target_names
from hudi_sync.sync.job import SyncReport, Target, publish_manifest, sync_table
from hudi_sync.sync.watch import watch
from hudi_sync.table import HudiTable
from hudi_sync.table.cdc_query import ChangePlan, ChangeSplit, plan_changes, read_split
from hudi_sync.table.properties import parse_java_properties
from hudi_sync.warehouse.bigquery_target import PREFIX as BIGQUERY_PREFIX
from hudi_sync.warehouse.bigquery_target import BigQueryTarget
from hudi_sync.warehouse.snowflake_target import PREFIX as SNOWFLAKE_PREFIX
from hudi_sync.warehouse.snowflake_target import SnowflakeTarget


def _commands(help_text: str) -> typer.Typer:
    """A command group with plain click help (typer's rich help prints ``<bool>`` after
    every flag and cuts long option help at the terminal width)."""
    return typer.Typer(
        no_args_is_help=True, add_completion=False, rich_markup_mode=None, help=help_text
    )


app = _commands("Apache Hudi table tools.")
show_app = _commands("Show a table's timeline and files.")
app.add_typer(show_app, name="show")
sync_app = _commands("Sync a table's snapshot to a warehouse.")
app.add_typer(sync_app, name="sync")
ingest_app = _commands("Ingest change events into a table.")
app.add_typer(ingest_app, name="ingest")


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"hudi-sync {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Apache Hudi table tools: show, sync, write, watch, backfill, ingest."""


T = TypeVar("T")

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
StorageOption = Annotated[
    list[str] | None,
    typer.Option(
        "--storage-option",
        "-o",
        help="fsspec storage option KEY=VALUE (repeatable), e.g. endpoint_url=http://...",
    ),
]


def _run(action: Callable[[], T]) -> T:
    """Run a command body, mapping errors to one line on stderr and an exit code."""
    try:
        return action()
    except BadInputError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except HudiSyncError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    except (OSError, ValueError) as exc:
        typer.echo(f"error: {type(exc).__name__}: {exc}", err=True)
        raise typer.Exit(1) from None


def parse_storage_options(pairs: list[str] | None) -> dict[str, Any]:
    """``KEY=VALUE`` pairs to fsspec options; dotted keys nest (``client_kwargs.endpoint_url``)."""
    options: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise BadInputError(f"storage option {pair!r} is not KEY=VALUE")
        nest_option(options, key, value)
    return options


def _cell(value: Any) -> str:
    """A value as table text: lists comma-joined, records as JSON, None empty."""
    if value is None:
        return ""
    if isinstance(value, list):
        return ", ".join(_cell(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, default=str)
    return str(value)


def _emit(rows: list[dict[str, Any]], as_json: bool, title: str) -> None:
    """Rows as JSON, as a rich table on a terminal, or as whole tab-separated values
    (header first) when stdout is a pipe or file, so no value is ever cut."""
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2, default=str) + "\n")
        return
    columns = list(rows[0]) if rows else []
    if not sys.stdout.isatty():
        escape = str.maketrans({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\\": "\\\\"})
        for cells in [columns, *([_cell(v) for v in row.values()] for row in rows)]:
            sys.stdout.write("\t".join(c.translate(escape) for c in cells) + "\n")
        return
    table = Table(title=title)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*[_cell(v) for v in row.values()])
    Console().print(table)


def _show(
    uri: str,
    storage_option: list[str] | None,
    as_json: bool,
    title: str,
    rows_of: Callable[[HudiTable], list[dict[str, Any]]],
) -> None:
    """Open the table, compute rows, print them: the shape of every ``show`` command."""
    rows = _run(lambda: rows_of(HudiTable.open(uri, parse_storage_options(storage_option))))
    _emit(rows, as_json, f"{title} of {uri}")


@show_app.command("instants")
def show_instants(
    uri: Annotated[str, typer.Argument(help="Table base path or URI")],
    include_archived: Annotated[
        bool, typer.Option("--all", help="Include archived instants.")
    ] = False,
    as_json: JsonFlag = False,
    storage_option: StorageOption = None,
) -> None:
    """List the table's instants: requested time, completion time, action, state."""
    _show(
        uri,
        storage_option,
        as_json,
        "instants",
        lambda table: [i.to_json() for i in table.instants(include_archived=include_archived)],
    )


@show_app.command("files")
def show_files(
    uri: Annotated[str, typer.Argument(help="Table base path or URI")],
    as_of: Annotated[
        str | None,
        typer.Option("--as-of", help="Time travel: instant, date-time, ISO-8601 or epoch."),
    ] = None,
    read_optimized: Annotated[
        bool, typer.Option("--read-optimized", help="Base files only (MOR read-optimized).")
    ] = False,
    as_json: JsonFlag = False,
    storage_option: StorageOption = None,
) -> None:
    """List the file slices of the latest snapshot (or of the snapshot as of a time)."""
    _show(
        uri,
        storage_option,
        as_json,
        "file slices",
        lambda table: [
            s.to_json() for s in table.file_slices(as_of=as_of, read_optimized=read_optimized)
        ],
    )


@show_app.command("table")
def show_table(
    uri: Annotated[str, typer.Argument(help="Table base path or URI")],
    as_json: JsonFlag = False,
    storage_option: StorageOption = None,
) -> None:
    """Show the table's settings: type, version, keys, partitioning, CDC."""

    def settings(table: HudiTable) -> list[dict[str, Any]]:
        config = table.config
        values = {
            "name": config.name,
            "type": config.table_type.value,
            "version": config.version,
            "record_key": ",".join(config.record_key_fields),
            "ordering": ",".join(config.ordering_fields),
            "partition_fields": ",".join(config.partition_fields),
            "base_file_format": config.base_file_format,
            "cdc": config.cdc_enabled,
            "cdc_mode": config.cdc_logging_mode.upper() if config.cdc_enabled else "",
            "latest_instant": table.latest_instant() or "",
        }
        return [{"setting": k, "value": v} for k, v in values.items()]

    _show(uri, storage_option, as_json, "table", settings)


@app.command("changes")
def changes_command(
    uri: Annotated[str, typer.Argument(help="Table base path or URI (CDC enabled)")],
    begin: Annotated[
        str,
        typer.Option("--from", help="Exclusive start instant, or 'earliest'."),
    ],
    end: Annotated[
        str | None, typer.Option("--to", help="Inclusive end instant (default: latest).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False,
    storage_option: StorageOption = None,
) -> None:
    """Print the CDC rows (op, ts_ms, before, after) of the commits in (FROM, TO]."""

    def body() -> tuple[HudiTable, ChangePlan]:
        table = HudiTable.open(uri, parse_storage_options(storage_option))
        return table, plan_changes(table, begin, end)

    table, plan = _run(body)

    def rows_of(split: ChangeSplit) -> list[dict[str, Any]]:
        return _run(lambda: read_split(table.location, split).to_pylist())

    if as_json:
        for split in plan.splits:
            for row in rows_of(split):
                sys.stdout.write(json.dumps(row) + "\n")
        return
    rows = [row for split in plan.splits for row in rows_of(split)]
    _emit(rows, False, f"changes of {uri} in ({plan.begin or 'earliest'}, {plan.end or 'latest'}]")


AsOfOption = Annotated[
    str | None,
    typer.Option("--as-of", help="Publish the snapshot as of a time (objects get a suffix)."),
]
KeepOption = Annotated[int, typer.Option("--keep", help="Manifest snapshots to keep.")]
DryRunOption = Annotated[bool, typer.Option("--dry-run", help="Print the plan, change nothing.")]
ForceOption = Annotated[bool, typer.Option("--force", help="Allow moving a target backwards.")]


@app.command("manifest")
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

    summary = _run(body)
    _emit([summary], as_json, f"manifest of {uri}")


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
        _emit([r.to_json() for r in report.results], False, f"sync of {uri} (empty)")
    else:
        _emit([r.to_json() for r in report.results], False, f"sync of {uri} at {report.instant}")


def load_properties(path: str | None) -> dict[str, str]:
    """A Java properties file of ``hoodie.*`` options (none when ``path`` is None)."""
    if path is None:
        return {}
    try:
        with open(path, encoding="utf-8") as handle:
            return parse_java_properties(handle.read())
    except OSError as exc:
        raise BadInputError(f"properties file {path}: {exc.strerror or exc}") from None


def _options(
    props: str | None,
    conf: list[str] | None,
    prefix: str = "",
    flags: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Options from ``--props FILE``, overridden by ``--conf KEY=VALUE`` pairs, overridden
    by a command's own flags (named without ``prefix``; unset ones are None)."""
    options: dict[str, Any] = load_properties(props)
    for pair in conf or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise BadInputError(f"option {pair!r} is not KEY=VALUE")
        options[key.strip()] = value
    options.update({prefix + k: v for k, v in (flags or {}).items() if v is not None})
    return options


PropsOption = Annotated[
    str | None, typer.Option("--props", help="Java properties file of hoodie.* options.")
]
ConfOption = Annotated[
    list[str] | None,
    typer.Option("--conf", "-c", help="A hoodie.* option KEY=VALUE (repeatable)."),
]


DeltaCommitsOption = Annotated[
    int | None,
    typer.Option(
        "--delta-commits",
        help=f"{DELTA_COMMITS_OPTION}: publish delta manifests, a new base every N commits.",
    ),
]


@dataclass(frozen=True)
class SyncRun:
    """The options every ``sync`` command takes, declared once: :func:`_sync_command`
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
        """``--props``, then ``--conf``, then the command's flags (see ``_options``)."""
        return _options(self.props, self.conf, prefix, flags)

    def sync(self, uri: str, make_targets: Callable[[HudiTable], list[Target]]) -> None:
        """Open the table, build the targets, sync, print: the shape of every ``sync``
        command. A bad delta-commits value fails first, before the table is opened."""
        own = {DELTA_COMMITS_OPTION: self.delta_commits}
        delta_commits = _run(lambda: delta_commits_option(self.options(flags=own)))

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
            )

        report = _run(body)
        _print_report(report, self.dry_run, self.as_json, uri)


def _sync_command(name: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register ``sync NAME``. The decorated function takes a :class:`SyncRun` first,
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


@app.command("write")
def write_command(
    table: Annotated[
        str, typer.Argument(help="Table base path or URI (s3://, gs://...; created if missing)")
    ],
    sources: Annotated[list[str], typer.Argument(help="Data files or folders to write")],
    props: PropsOption = None,
    conf: ConfOption = None,
    storage_option: StorageOption = None,
    file_format: Annotated[
        str | None,
        typer.Option(
            "--format", help="parquet, json (lines) or csv (header row); default by suffix."
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Write data files to a Copy-on-Write Hudi table with PySpark, by Hudi's write options
    (hoodie.table.name, hoodie.datasource.write.*, ...). With
    hoodie.datasource.meta.sync.enable=true the sync hook runs after the commit; a failed
    sync keeps the commit and exits 1."""
    options = _run(lambda: _options(props, conf))
    storage = _run(lambda: parse_storage_options(storage_option))

    def body() -> dict[str, Any]:
        from hudi_sync.spark import local_session, write
        from hudi_sync.spark.files import check_sources, load_files, source_format
        from hudi_sync.spark.options import WriteOptions

        WriteOptions.parse(options)  # bad options and sources fail before Spark starts
        check_sources(sources)
        kind = source_format(sources, file_format)
        spark = local_session("hudi-sync write")
        result = write(load_files(spark, sources, kind), table, options, storage)
        return result.summary()

    summary = _run(body)
    if as_json:
        sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    else:
        _emit([{"": k, "value": v} for k, v in summary.items()], False, f"write to {table}")
    if summary["sync_errors"]:
        typer.echo(
            f"error: committed {summary['instant']}, but the sync failed: {summary['sync_errors']}",
            err=True,
        )
        raise typer.Exit(1)


def _hook_options(
    props: str | None, conf: list[str] | None, storage_option: list[str] | None
) -> tuple[dict[str, str], dict[str, Any]]:
    """The hook's options and storage options, with the configured targets checked."""
    options = _run(lambda: _options(props, conf))
    storage = _run(lambda: parse_storage_options(storage_option))
    _run(lambda: target_names(options))
    return options, storage


@app.command("watch")
def watch_command(
    uri: Annotated[str, typer.Argument(help="Table base path or URI")],
    props: PropsOption = None,
    conf: ConfOption = None,
    interval: Annotated[float, typer.Option("--interval", help="Seconds between polls.")] = 10.0,
    max_syncs: Annotated[
        int | None, typer.Option("--max-syncs", help="Stop after this many syncs.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON line per sync.")] = False,
    storage_option: StorageOption = None,
) -> None:
    """Poll the timeline; on each new commit run the configured sync targets (the hook's
    options: hoodie.meta.sync.client.tool.class=duckdb,bigquery and theirs)."""
    options, storage = _hook_options(props, conf, storage_option)
    failures = 0

    def report(result: SyncReport) -> None:
        nonlocal failures
        failures += 0 if result.ok else 1
        if as_json:
            typer.echo(json.dumps(result.to_json(), default=str))
        else:
            status = "ok" if result.ok else result.error_summary()
            typer.echo(f"{result.table} {result.instant}: {status}")

    _run(lambda: watch(uri, options, storage, interval, max_syncs, report))
    if failures:
        raise typer.Exit(1)


@app.command("backfill")
def backfill_command(
    root: Annotated[str, typer.Argument(help="Folder or URI holding Hudi tables")],
    props: PropsOption = None,
    conf: ConfOption = None,
    allow_empty: Annotated[
        bool, typer.Option("--allow-empty", help="Exit 0 when ROOT holds no table.")
    ] = False,
    as_json: JsonFlag = False,
    storage_option: StorageOption = None,
) -> None:
    """Find every Hudi table under ROOT and sync each one to the configured targets; each
    table's warehouse name is its path under ROOT with '/' replaced by '_'. A ROOT with
    no table exits 1 (0 with --allow-empty)."""
    options, storage = _hook_options(props, conf, storage_option)
    tables = _run(lambda: discover_tables(root, storage))
    if not tables:
        typer.echo(f"{'warning' if allow_empty else 'error'}: no Hudi table under {root}", err=True)
        raise typer.Exit(0 if allow_empty else 1)
    rows: list[dict[str, Any]] = []
    with Progress(transient=True, disable=as_json) as progress:
        task = progress.add_task("syncing", total=len(tables))

        def done(uri: str, result: SyncReport) -> None:
            rows.append({"table": uri, "instant": result.instant, "errors": result.error_summary()})
            progress.advance(task)

        _run(lambda: backfill(root, options, storage, done))
    _emit(rows, as_json, f"backfill of {root}")
    if any(row["errors"] for row in rows):
        raise typer.Exit(1)


@ingest_app.command("debezium")
def ingest_debezium(
    table_path: Annotated[
        str,
        typer.Option(
            "--table-path", help="Table base path or URI (s3://, gs://...; created on first batch)"
        ),
    ],
    bootstrap_servers: Annotated[
        str | None, typer.Option("--bootstrap-servers", help="Kafka host:port[,host:port]")
    ] = None,
    topic: Annotated[
        list[str] | None,
        typer.Option(
            "--topic",
            help=f"Topic to read (repeatable; default: {cfg.TOPIC.key})",
        ),
    ] = None,
    topic_pattern: Annotated[
        str | None, typer.Option("--topic-pattern", help="Read every topic matching this regex.")
    ] = None,
    props: Annotated[
        str | None,
        typer.Option(
            "--props",
            help="Java properties file: hoodie.* options and Kafka consumer settings "
            "(security.protocol, sasl.*, ssl.*...), as HoodieStreamer reads them.",
        ),
    ] = None,
    conf: Annotated[
        list[str] | None,
        typer.Option("--conf", "-c", help="A hoodie.* option or Kafka consumer setting KEY=VALUE."),
    ] = None,
    record_key: Annotated[
        str | None,
        typer.Option(
            "--record-key",
            help="Record key fields, read from the event's row (the Kafka key is then not "
            "parsed: plain-string or opaque keys are fine). Default: the Kafka key's fields.",
        ),
    ] = None,
    partition_field: Annotated[
        str | None,
        typer.Option("--partition-field", help=cfg.PARTITION_PATH.key),
    ] = None,
    max_events: Annotated[
        int | None,
        typer.Option("--max-events", help=f"Events per batch ({cfg.MAX_EVENTS.key})."),
    ] = None,
    on_truncate: Annotated[
        str | None, typer.Option("--on-truncate", help="fail (default), ignore or delete.")
    ] = None,
    on_error: Annotated[
        str | None,
        typer.Option("--on-error", help="stop (default) or skip: log bad events to --dead-letter."),
    ] = None,
    dead_letter: Annotated[
        str | None, typer.Option("--dead-letter", help="JSON-lines file of skipped events.")
    ] = None,
    continuous: Annotated[
        bool, typer.Option("--continuous", help="Keep polling until SIGINT/SIGTERM.")
    ] = False,
    poll_interval: Annotated[
        float, typer.Option("--poll-interval", help="Seconds between polls when caught up.")
    ] = 5.0,
    storage_option: StorageOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Read Debezium change events (PostgreSQL, MySQL; JSON, Avro or flattened) from Kafka
    and apply them to a Copy-on-Write Hudi table: one commit per batch, with the Kafka
    offsets in the commit (deltastreamer.checkpoint.key), so a restart resumes exactly.
    With hoodie.datasource.meta.sync.enable=true the sync hook runs after each commit."""
    import signal
    import threading

    from hudi_sync.debezium.ingest import IngestConfig, IngestSummary, ingest

    options = _run(lambda: _options(props, conf))
    if partition_field is not None:
        options[cfg.PARTITION_PATH.key] = partition_field
    if record_key is not None:
        options[cfg.RECORD_KEY.key] = record_key
    config = _run(
        lambda: IngestConfig.from_options(
            table_path,
            options,
            bootstrap_servers=bootstrap_servers,
            topics=tuple(topic or ()),
            topic_pattern=topic_pattern,
            max_events=max_events,
            truncate_policy=on_truncate,
            on_error=on_error,
            dead_letter_path=dead_letter,
            continuous=continuous,
            poll_interval_s=poll_interval,
            storage_options=parse_storage_options(storage_option) or None,
        )
    )
    stop = threading.Event()
    with Progress(transient=True, disable=as_json, console=Console(stderr=True)) as progress:
        task = progress.add_task("ingesting", total=None)

        def show(summary: IngestSummary) -> None:
            progress.update(
                task,
                description=(
                    f"events read {summary.events_read}, batches committed "
                    f"{summary.batches_committed}, lag {summary.lag}"
                ),
            )

        def body() -> IngestSummary:
            from hudi_sync.spark import local_session

            spark = local_session("hudi-sync ingest")
            for signum in (signal.SIGINT, signal.SIGTERM):  # after Spark's own SIGINT handler
                signal.signal(signum, lambda *_: stop.set())
            return ingest(spark, config, show, stop)

        summary = _run(body)
    if as_json:
        sys.stdout.write(json.dumps(summary.as_dict(), indent=2) + "\n")
    else:
        rows = summary.as_dict()
        rows["instants"] = ",".join(rows["instants"])
        rows["sync_errors"] = "; ".join(rows["sync_errors"])
        _emit([{"": k, "value": v} for k, v in rows.items()], False, f"ingest into {table_path}")
    if summary.sync_errors:
        typer.echo(f"error: the sync failed: {summary.sync_errors[-1]}", err=True)
        raise typer.Exit(1)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
