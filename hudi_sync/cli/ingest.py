"""``hudi-sync ingest debezium``: Debezium change events from Kafka into a table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.progress import Progress

from hudi_sync import config as cfg
from hudi_sync.cli.common import (
    JsonFlag,
    StorageOption,
    command_group,
    command_options,
    emit,
    emit_summary,
    exit_on_error,
    parse_storage_options,
)
from hudi_sync.errors import BadInputError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ingest_app = command_group("Ingest change events into a table.")


@ingest_app.command("debezium")
def ingest_debezium(
    table_path: Annotated[
        str | None,
        typer.Option(
            "--table-path",
            help="Table base path or URI (s3://, gs://...; created on first batch): every "
            "topic read goes into this one table.",
        ),
    ] = None,
    base_path: Annotated[
        str | None,
        typer.Option(
            "--base-path",
            help="Instead of --table-path: one table per topic (--topic-pattern, --topic), "
            "at BASE/<table>, the table named after its topic's last dot-separated part "
            "(dbserver1.inventory.customers -> customers at BASE/customers), keyed by its "
            "events' Kafka key fields; each table keeps its own checkpoint, and one that "
            "fails does not stop the others.",
        ),
    ] = None,
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
        str | None,
        typer.Option(
            "--topic-pattern",
            help="Read every topic whose whole name matches this regex: into the one "
            "table (--table-path), or each into its own (--base-path; topics that appear "
            "later join with --continuous).",
        ),
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
    table_type: Annotated[
        str | None,
        typer.Option(
            "--table-type",
            help=f"COPY_ON_WRITE (default) or MERGE_ON_READ, for a new table "
            f"({cfg.WRITE_TABLE_TYPE.key}; both given must agree). An existing table keeps "
            f"its type: asking for the other is an error. MERGE_ON_READ compacts inline "
            f"({cfg.COMPACT_INLINE.key}=true unless set) every "
            f"{cfg.COMPACT_MAX_DELTA_COMMITS.default} deltacommits "
            f"({cfg.COMPACT_MAX_DELTA_COMMITS.key}).",
        ),
    ] = None,
    table_conf: Annotated[
        list[str] | None,
        typer.Option(
            "--table-conf",
            help="With --base-path: an option for one table, TABLE:KEY=VALUE (repeatable; "
            "TABLE is the table's name from its topic, or the whole topic), over the shared "
            f"ones and the flags, e.g. customers:{cfg.RECORD_KEY.key}=id or "
            f"customers:{cfg.TABLE_NAME.key}=clients (the table's name and folder).",
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
    and apply them to a Hudi table (Copy-on-Write, or Merge-on-Read with --table-type):
    one commit per batch, with the Kafka offsets in the commit
    (deltastreamer.checkpoint.key), so a restart resumes exactly. With --base-path, one
    table per topic; a table that fails is reported on one stderr line and the command
    exits 1 after the others. With hoodie.datasource.meta.sync.enable=true the sync hook
    runs after each commit."""
    import functools
    import signal
    import threading

    from hudi_sync.debezium.ingest import (
        IngestConfig,
        IngestSummary,
        TablesConfig,
        ingest,
        ingest_tables,
        parse_table_options,
    )

    def check_paths() -> None:
        if (table_path is None) == (base_path is None):
            raise BadInputError("give --table-path (one table) or --base-path (one per topic)")
        if table_conf and base_path is None:
            raise BadInputError("--table-conf needs --base-path (use --conf for --table-path)")

    exit_on_error(check_paths)
    options = exit_on_error(lambda: command_options(props, conf))
    if partition_field is not None:
        options[cfg.PARTITION_PATH.key] = partition_field
    if record_key is not None:
        options[cfg.RECORD_KEY.key] = record_key
    settings = dict(
        bootstrap_servers=bootstrap_servers,
        topics=tuple(topic or ()),
        topic_pattern=topic_pattern,
        table_type=table_type,
        max_events=max_events,
        truncate_policy=on_truncate,
        on_error=on_error,
        dead_letter_path=dead_letter,
        continuous=continuous,
        poll_interval_s=poll_interval,
        storage_options=exit_on_error(lambda: parse_storage_options(storage_option)) or None,
    )
    if base_path is not None:
        tables = exit_on_error(
            lambda: TablesConfig.from_options(
                base_path, options, parse_table_options(table_conf), **settings
            )
        )
        config = None
    else:
        assert table_path is not None
        config = exit_on_error(lambda: IngestConfig.from_options(table_path, options, **settings))
    stop = threading.Event()
    failed: list[str] = []
    with Progress(transient=True, disable=as_json, console=Console(stderr=True)) as progress:
        task = progress.add_task("ingesting", total=None)

        def show(summary: IngestSummary) -> None:
            where = f"{summary.table}: " if base_path is not None else ""
            progress.update(
                task,
                description=(
                    f"{where}events read {summary.events_read}, batches committed "
                    f"{summary.batches_committed}, lag {summary.lag}"
                ),
            )

        def report(table: str, topic_name: str, error: str) -> None:
            failed.append(table)
            typer.echo(f"error: table {table} (topic {topic_name}): {error}", err=True)

        def on_signals() -> None:
            for signum in (signal.SIGINT, signal.SIGTERM):
                signal.signal(signum, lambda *_: stop.set())

        @functools.cache
        def session() -> SparkSession:
            """Started by the first batch that needs Spark (Arrow batches need none)."""
            from hudi_sync.spark import local_session

            spark = local_session("hudi-sync ingest")
            on_signals()  # again, after Spark's own SIGINT handler
            return spark

        on_signals()
        if config is None:
            result = exit_on_error(lambda: ingest_tables(session, tables, show, stop, report))
        else:
            summary = exit_on_error(lambda: ingest(session, config, show, stop))
    if config is None:
        _emit_tables(result.rows(), as_json, f"ingest into {base_path}")
        if failed:
            raise typer.Exit(1)
        return
    values = summary.as_dict()
    if not as_json:
        values["instants"] = ",".join(values["instants"])
        values["sync_errors"] = "; ".join(values["sync_errors"])
    emit_summary(values, as_json, f"ingest into {table_path}")
    if summary.sync_errors:
        typer.echo(f"error: the sync failed: {summary.sync_errors[-1]}", err=True)
        raise typer.Exit(1)


def _emit_tables(rows: list[dict[str, Any]], as_json: bool, title: str) -> None:
    """One row per table; a table whose sync failed is reported (stderr, exit 1) as
    for one table."""
    failed = [(row["table"], row["sync_errors"][-1]) for row in rows if row["sync_errors"]]
    if not as_json:
        for row in rows:
            row["instants"] = ",".join(row["instants"])
            row["sync_errors"] = "; ".join(row["sync_errors"])
    emit(rows, as_json, title)
    for table, error in failed:
        typer.echo(f"error: table {table}: the sync failed: {error}", err=True)
    if failed:
        raise typer.Exit(1)
