"""``hudi-sync``: typer CLI over the table core.

Exit codes: 0 ok, 2 bad input (a one-line message naming what is wrong), 1 failure.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from hudi_sync.errors import BadInputError, HudiSyncError
from hudi_sync.manifest import DEFAULT_KEEP, manifest_summary
from hudi_sync.sync import publish_manifest, sync_table
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.duckdb_target import DuckDBTarget

app = typer.Typer(no_args_is_help=True, add_completion=False, help="Apache Hudi table tools.")
show_app = typer.Typer(no_args_is_help=True, help="Show a table's timeline and files.")
app.add_typer(show_app, name="show")
sync_app = typer.Typer(no_args_is_help=True, help="Sync a table's snapshot to a warehouse.")
app.add_typer(sync_app, name="sync")

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
        target = options
        *parents, leaf = key.split(".")
        for parent in parents:
            target = target.setdefault(parent, {})
        target[leaf] = value
    return options


def _emit(rows: list[dict[str, Any]], as_json: bool, title: str) -> None:
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    table = Table(title=title)
    columns = list(rows[0]) if rows else []
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(
            *[", ".join(v) if isinstance(v, list) else str(v or "") for v in row.values()]
        )
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


@sync_app.command("duckdb")
def sync_duckdb(
    uri: Annotated[str, typer.Argument(help="Table base path or URI")],
    database: Annotated[str, typer.Option("--database", help="DuckDB database file.")],
    table_name: Annotated[str, typer.Option("--table", help="Name of the view to create.")],
    as_of: AsOfOption = None,
    keep: KeepOption = DEFAULT_KEEP,
    force: ForceOption = False,
    dry_run: DryRunOption = False,
    as_json: JsonFlag = False,
    storage_option: StorageOption = None,
) -> None:
    """Create NAME, NAME_manifest and NAME_history in a DuckDB file."""
    target = DuckDBTarget(database, table_name)
    report = _run(
        lambda: sync_table(
            uri,
            [target],
            parse_storage_options(storage_option),
            as_of=as_of,
            keep=keep,
            force=force,
            dry_run=dry_run,
        )
    )
    if dry_run and not as_json:
        for plan in report.plans:
            typer.echo(f"-- {plan.target}: {plan.action} {plan.reason}".rstrip())
            for step in plan.steps:
                typer.echo(step + ";")
        return
    _emit([r.to_json() for r in report.results], as_json, f"sync of {uri} at {report.instant}")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
