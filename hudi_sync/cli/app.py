"""``hudi-sync``: the typer app, assembled from the command modules beside it.

``show`` (timeline, files, settings), ``changes`` (CDC rows), ``sync`` (``manifest``,
``sync duckdb|bigquery|snowflake``, ``watch``, ``backfill``), ``write`` (PySpark writer),
``compact`` (Merge-on-Read), ``ingest`` (Debezium), ``verify`` (targets against the
table); what they share (help layout, exit codes, output) is in ``common``.
"""

from __future__ import annotations

from typing import Annotated

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


def main() -> None:
    app()


if __name__ == "__main__":
    main()
