"""``hudi-sync``: the typer app, assembled from the command modules beside it.

``show`` (timeline, files, settings), ``changes`` (CDC rows), ``sync`` (``manifest``,
``sync duckdb|bigquery|snowflake``, ``watch``, ``backfill``), ``write`` (PySpark writer),
``compact`` (Merge-on-Read), ``ingest`` (Debezium), ``verify`` (targets against the
table); what they share (help layout, exit codes, output) is in ``common``.
"""

from __future__ import annotations

import logging
import sys
from typing import Annotated, Any, NoReturn

import typer

from hudi_sync import __version__
from hudi_sync.cli import changes, ingest, show, sync, verify, write
from hudi_sync.cli.common import command_group

app = command_group("Apache Hudi table tools.")
app.add_typer(show.show_app, name="show")
app.add_typer(sync.sync_app, name="sync")
app.add_typer(ingest.ingest_app, name="ingest")
app.command("changes")(changes.changes_command)
app.command("manifest")(sync.manifest_command)
app.command("write")(write.write_command)
app.command("compact")(write.compact_command)
app.command("watch")(sync.watch_command)
app.command("backfill")(sync.backfill_command)
app.command("verify")(verify.verify_command)


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


def _usage_error(exc: Any) -> NoReturn:
    """One line for click's usage error (a group's help for a group run without a
    command, as click shows it)."""
    if type(exc).__name__ == "NoArgsIsHelpError":
        exc.show()
        sys.exit(exc.exit_code)
    message = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    where = ctx.command_path if ctx is not None else "hudi-sync"
    typer.echo(f"error: {where}: {message} (see {where} --help)", err=True)
    sys.exit(exc.exit_code)


def main() -> None:
    """The ``hudi-sync`` command: a usage error (an unknown option or command, a missing
    argument) is one line on stderr, exit 2, as every other error is."""
    # gcsfs logs each failed request's traceback; the error itself is reported in one line
    logging.getLogger("gcsfs").addHandler(logging.NullHandler())
    logging.getLogger("gcsfs").propagate = False
    try:
        code = app(standalone_mode=False)
    except Exception as exc:  # click's errors, as typer (which vendors click) raises them
        kinds = {cls.__name__ for cls in type(exc).__mro__}
        if "Abort" in kinds:
            typer.echo("error: aborted", err=True)
            sys.exit(1)
        if "ClickException" not in kinds:
            raise
        _usage_error(exc)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
