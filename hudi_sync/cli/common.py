"""What every ``hudi-sync`` command shares: plain-help command groups, the shared options,
error-to-exit-code mapping, ``KEY=VALUE`` option parsing and table output.

Exit codes: 0 ok, 2 bad input (a one-line message naming what is wrong), 1 failure.
Help is click's plain layout: flags show as flags (no ``<bool>``) and no help text is cut.
Tables go to a terminal as rich tables and to a pipe or file as tab-separated values, whole.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from hudi_sync.config import SNOWFLAKE_SECRETS, warn_unknown_options
from hudi_sync.errors import BadInputError, HudiSyncError
from hudi_sync.extras import missing_extra
from hudi_sync.storage import nest_option
from hudi_sync.table.config.properties import parse_java_properties

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
PropsOption = Annotated[
    str | None, typer.Option("--props", help="Java properties file of hoodie.* options.")
]
ConfOption = Annotated[
    list[str] | None,
    typer.Option("--conf", "-c", help="A hoodie.* option KEY=VALUE (repeatable)."),
]


def command_group(help_text: str) -> typer.Typer:
    """A command group with plain click help (typer's rich help prints ``<bool>`` after
    every flag and cuts long option help at the terminal width)."""
    return typer.Typer(
        no_args_is_help=True, add_completion=False, rich_markup_mode=None, help=help_text
    )


def exit_on_error(action: Callable[[], T]) -> T:
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
    except ImportError as exc:  # a module an extra brings (pyspark, s3fs...) is missing
        missing = missing_extra(exc)
        if missing is None:
            raise
        typer.echo(f"error: {missing}", err=True)
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


def load_properties(path: str | None) -> dict[str, str]:
    """A Java properties file of ``hoodie.*`` options (none when ``path`` is None)."""
    if path is None:
        return {}
    try:
        with open(path, encoding="utf-8") as handle:
            return parse_java_properties(handle.read())
    except OSError as exc:
        raise BadInputError(f"properties file {path}: {exc.strerror or exc}") from None


def command_options(
    props: str | None,
    conf: list[str] | None,
    prefix: str = "",
    flags: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Options from ``--props FILE``, overridden by ``--conf KEY=VALUE`` pairs, overridden
    by a command's own flags (named without ``prefix``; unset ones are None). A key in
    hudi_sync's own namespaces that no option declares is warned of (once)."""
    options: dict[str, Any] = load_properties(props)
    for pair in conf or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise BadInputError(f"option {pair!r} is not KEY=VALUE")
        if key.strip() in SNOWFLAKE_SECRETS:  # named, never echoed
            raise BadInputError(
                f"--conf {key.strip()}: a secret is read from its SNOWFLAKE_* variable or "
                "--props only, never from the command line"
            )
        options[key.strip()] = value
    options.update({prefix + k: v for k, v in (flags or {}).items() if v is not None})
    warn_unknown_options(options, say_warning)
    return options


def say_warning(line: str) -> None:
    """A warning as the CLI prints one: one line on stderr."""
    typer.echo(f"warning: {line}", err=True)


def _cell(value: Any) -> str:
    """A value as table text: lists comma-joined, records as JSON, None empty."""
    if value is None:
        return ""
    if isinstance(value, list):
        return ", ".join(_cell(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, default=str)
    return str(value)


def emit(rows: list[dict[str, Any]], as_json: bool, title: str) -> None:
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


def emit_summary(summary: dict[str, Any], as_json: bool, title: str) -> None:
    """A one-record summary as indented JSON, or as a two-column table of its values."""
    if as_json:
        sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    else:
        emit([{"": k, "value": v} for k, v in summary.items()], False, title)
