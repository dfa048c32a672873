"""``hudi-sync ingest debezium``: Debezium change events from Kafka into a table."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.progress import Progress

from hudi_sync import config as cfg
from hudi_sync.cli.common import (
    JsonFlag,
    StorageOption,
    command_group,
    command_options,
    emit_summary,
    exit_on_error,
    parse_storage_options,
)

ingest_app = command_group("Ingest change events into a table.")


@ingest_app.command("debezium")
def ingest_debezium(
    table_path: Annotated[
        str,
        typer.Option(
            "--table-path", help="Table base path or URI (s3://, gs://...; created on first batch)"
        ),
    ],
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
        str | None, typer.Option("--topic-pattern", help="Read every topic matching this regex.")
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
    and apply them to a Copy-on-Write Hudi table: one commit per batch, with the Kafka
    offsets in the commit (deltastreamer.checkpoint.key), so a restart resumes exactly.
    With hoodie.datasource.meta.sync.enable=true the sync hook runs after each commit."""
    import signal
    import threading

    from hudi_sync.debezium.ingest import IngestConfig, IngestSummary, ingest

    options = exit_on_error(lambda: command_options(props, conf))
    if partition_field is not None:
        options[cfg.PARTITION_PATH.key] = partition_field
    if record_key is not None:
        options[cfg.RECORD_KEY.key] = record_key
    config = exit_on_error(
        lambda: IngestConfig.from_options(
            table_path,
            options,
            bootstrap_servers=bootstrap_servers,
            topics=tuple(topic or ()),
            topic_pattern=topic_pattern,
            max_events=max_events,
            truncate_policy=on_truncate,
            on_error=on_error,
            dead_letter_path=dead_letter,
            continuous=continuous,
            poll_interval_s=poll_interval,
            storage_options=parse_storage_options(storage_option) or None,
        )
    )
    stop = threading.Event()
    with Progress(transient=True, disable=as_json, console=Console(stderr=True)) as progress:
        task = progress.add_task("ingesting", total=None)

        def show(summary: IngestSummary) -> None:
            progress.update(
                task,
                description=(
                    f"events read {summary.events_read}, batches committed "
                    f"{summary.batches_committed}, lag {summary.lag}"
                ),
            )

        def body() -> IngestSummary:
            from hudi_sync.spark import local_session

            spark = local_session("hudi-sync ingest")
            for signum in (signal.SIGINT, signal.SIGTERM):  # after Spark's own SIGINT handler
                signal.signal(signum, lambda *_: stop.set())
            return ingest(spark, config, show, stop)

        summary = exit_on_error(body)
    values = summary.as_dict()
    if not as_json:
        values["instants"] = ",".join(values["instants"])
        values["sync_errors"] = "; ".join(values["sync_errors"])
    emit_summary(values, as_json, f"ingest into {table_path}")
    if summary.sync_errors:
        typer.echo(f"error: the sync failed: {summary.sync_errors[-1]}", err=True)
        raise typer.Exit(1)
