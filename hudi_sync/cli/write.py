"""``hudi-sync write``: data files to a Hudi table (small parquet files by the driver's
Arrow engine, the rest with PySpark, imported on use);
``hudi-sync compact``: Merge-on-Read compaction."""

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
    """Write data files to a Hudi table, by Hudi's write options (hoodie.table.name,
    hoodie.datasource.write.*, ...): parquet files of at most
    hudi_sync.write.driver.max.bytes together in this process, without Spark; the rest
    with PySpark. With hoodie.datasource.meta.sync.enable=true the sync hook runs after
    the commit; a failed sync keeps the commit and exits 1."""
    options = exit_on_error(lambda: command_options(props, conf))
    storage = exit_on_error(lambda: parse_storage_options(storage_option))

    def body() -> dict[str, Any]:
        from hudi_sync import config as cfg
        from hudi_sync.errors import MetaSyncError
        from hudi_sync.spark import local_session, write, write_arrow
        from hudi_sync.spark.writing.files import (
            arrow_rows,
            check_sources,
            load_files,
            source_format,
        )
        from hudi_sync.spark.writing.options import WriteOptions
        from hudi_sync.spark.writing.writer import driver_takes

        WriteOptions.precheck(options)  # bad options and sources fail before Spark starts
        check_sources(sources)
        kind = source_format(sources, file_format)
        try:
            # Small files, as write(df) routes a small DataFrame: no Spark session at all.
            rows = arrow_rows(sources, kind, cfg.WRITE_DRIVER_MAX_BYTES.read(options))
            if rows is not None and driver_takes(rows.schema, table, options, storage):
                return write_arrow(rows, table, options, storage).summary()
            spark = local_session("hudi-sync write")
            return write(load_files(spark, sources, kind), table, options, storage).summary()
        except MetaSyncError as failed:  # the commit stands: summarised, then exit 1
            summary: dict[str, Any] = failed.result.summary()
            return summary

    summary = exit_on_error(body)
    emit_summary(summary, as_json, f"write to {table}")
    if summary["sync_errors"]:
        typer.echo(
            f"error: committed {summary['instant']}, but the sync failed: {summary['sync_errors']}",
            err=True,
        )
        raise typer.Exit(1)


def compact_command(
    table: Annotated[str, typer.Argument(help="Merge-on-Read table base path or URI")],
    props: PropsOption = None,
    conf: ConfOption = None,
    storage_option: StorageOption = None,
    schedule_only: Annotated[
        bool, typer.Option("--schedule-only", help="Write the plan, do not run it.")
    ] = False,
    run_only: Annotated[
        bool, typer.Option("--run-only", help="Run pending plans, schedule none.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Compact a Merge-on-Read table: finish pending compactions, then schedule one over
    the file groups with log files and run it (base and log records merged into new base
    files, by the table's merge rules), under the table lock. Runs in this process. With
    hoodie.datasource.meta.sync.enable=true the sync hook runs after a completed
    compaction, as after any commit; a failed sync exits 1."""
    options = exit_on_error(lambda: command_options(props, conf))
    storage = exit_on_error(lambda: parse_storage_options(storage_option))

    def body() -> dict[str, Any]:
        from hudi_sync import config as cfg
        from hudi_sync.errors import BadInputError
        from hudi_sync.table import HudiTable
        from hudi_sync.table.write.compaction import compact
        from hudi_sync.table.write.lock import TableLock

        if schedule_only and run_only:
            raise BadInputError("--schedule-only and --run-only exclude each other")
        opened = HudiTable.open(table, storage)
        if not opened.config.is_mor:
            raise BadInputError(f"{opened.uri}: a COPY_ON_WRITE table has nothing to compact")
        lock = TableLock(
            opened.location,
            opened.location.join(".hoodie"),
            wait_ms=cfg.LOCK_WAIT_MS.read(options),
            expire_minutes=cfg.LOCK_EXPIRE_MINUTES.read(options),
        )
        instants = compact(opened, lock, schedule=not run_only, execute=not schedule_only)
        errors = ""
        if instants and not schedule_only and cfg.META_SYNC.read(options):
            from hudi_sync.sync import run_post_commit_hook

            errors = run_post_commit_hook(opened.uri, options, storage).error_summary()
        return {"table": opened.uri, "compactions": ",".join(instants), "sync_errors": errors}

    summary = exit_on_error(body)
    emit_summary(summary, as_json, f"compact {table}")
    if summary["sync_errors"]:
        typer.echo(f"error: compacted, but the sync failed: {summary['sync_errors']}", err=True)
        raise typer.Exit(1)
