"""``hudi-sync changes``: a CDC-enabled table's change rows between two instants."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from hudi_sync.cli.common import StorageOption, emit, exit_on_error, parse_storage_options
from hudi_sync.table import HudiTable
from hudi_sync.table.cdc.plan import plan_changes
from hudi_sync.table.cdc.read import read_split
from hudi_sync.table.cdc.splits import ChangePlan, ChangeSplit


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

    table, plan = exit_on_error(body)

    def rows_of(split: ChangeSplit) -> list[dict[str, Any]]:
        return exit_on_error(lambda: read_split(table.location, split).to_pylist())

    if as_json:
        for split in plan.splits:
            for row in rows_of(split):
                sys.stdout.write(json.dumps(row) + "\n")
        return
    rows = [row for split in plan.splits for row in rows_of(split)]
    emit(rows, False, f"changes of {uri} in ({plan.begin or 'earliest'}, {plan.end or 'latest'}]")
