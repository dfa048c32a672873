"""``hudi-sync verify``: compare each configured target's objects with the table, print
what differs, exit 1 on any difference; ``--repair`` re-syncs what a sync can fix."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from hudi_sync import config as cfg
from hudi_sync.cli.common import (
    ConfOption,
    JsonFlag,
    PropsOption,
    StorageOption,
    command_options,
    exit_on_error,
    parse_storage_options,
)
from hudi_sync.sync.hook import build_target, checked_target_names
from hudi_sync.sync.verify import VerifyReport, repair_table, verify_table
from hudi_sync.table import HudiTable


def verify_command(
    uri: Annotated[str, typer.Argument(help="Table base path or URI")],
    props: PropsOption = None,
    conf: ConfOption = None,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="Re-sync what a sync can fix (behind, a restore not followed, missing "
            "objects, altered columns, manifest drift), then verify again.",
        ),
    ] = False,
    as_json: JsonFlag = False,
    storage_option: StorageOption = None,
) -> None:
    """Compare each configured target (the hook's options:
    hoodie.meta.sync.client.tool.class=duckdb and theirs) with the table: the instant
    its objects show against the timeline, the objects and their columns against the
    table's schema, the partition columns, the manifest against a listing. Prints what
    differs; exit 0 when every target agrees, 1 otherwise. Without --repair nothing is
    written."""
    options = exit_on_error(lambda: command_options(props, conf))
    storage = exit_on_error(lambda: parse_storage_options(storage_option))
    names = exit_on_error(lambda: checked_target_names(options))  # none: one line, exit 2

    def body() -> VerifyReport:
        table = HudiTable.open(uri, storage)
        targets = [build_target(name, options, table) for name in names]
        if repair:
            return repair_table(table, targets, options)
        return verify_table(table, targets, cfg.CHANGE_FEED.read(options))

    report = exit_on_error(body)
    if as_json:
        sys.stdout.write(json.dumps(report.to_json(), indent=2) + "\n")
    else:
        for line in report.lines():
            typer.echo(line)
    if not report.ok:
        raise typer.Exit(1)
