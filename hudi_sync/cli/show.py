"""``hudi-sync show``: a table's instants, file slices and settings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from hudi_sync.cli.common import (
    JsonFlag,
    StorageOption,
    command_group,
    emit,
    exit_on_error,
    parse_storage_options,
)
from hudi_sync.table import HudiTable

show_app = command_group("Show a table's timeline and files.")


def _show(
    uri: str,
    storage_option: list[str] | None,
    as_json: bool,
    title: str,
    rows_of: Callable[[HudiTable], list[dict[str, Any]]],
) -> None:
    """Open the table, compute rows, print them: the shape of every ``show`` command."""
    rows = exit_on_error(
        lambda: rows_of(HudiTable.open(uri, parse_storage_options(storage_option)))
    )
    emit(rows, as_json, f"{title} of {uri}")


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
