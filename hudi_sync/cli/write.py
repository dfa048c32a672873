"""``hudi-sync write``: data files to a Copy-on-Write table with PySpark (imported on use)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from hudi_sync.cli.common import (
    ConfOption,
    JsonFlag,
    PropsOption,
    StorageOption,
    command_options,
    emit_summary,
    exit_on_error,
    parse_storage_options,
)


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
    options = exit_on_error(lambda: command_options(props, conf))
    storage = exit_on_error(lambda: parse_storage_options(storage_option))

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

    summary = exit_on_error(body)
    emit_summary(summary, as_json, f"write to {table}")
    if summary["sync_errors"]:
        typer.echo(
            f"error: committed {summary['instant']}, but the sync failed: {summary['sync_errors']}",
            err=True,
        )
        raise typer.Exit(1)
