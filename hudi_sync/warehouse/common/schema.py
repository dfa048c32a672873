"""The table's declared Avro schema at the synced instant, which the targets type their
objects from."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hudi_sync.table import HudiTable
    from hudi_sync.table.timeline.listing import TimelineListing


def declared_schema(
    table: HudiTable, instant: str | None, listing: TimelineListing | None = None
) -> dict[str, Any] | None:
    """``table.declared_avro_schema`` (the newest write's schema, else
    ``hoodie.table.create.schema``; None when the table declares none), read from the
    timeline's tail at the synced snapshot's ``instant`` when a write there has it: a
    sync after one commit does not parse the whole active timeline (thousands of
    instants on a large table) for it. ``listing``: the sync's listing of the timeline
    folder (``PublishedManifest.timeline_listing``), else a new one."""
    from hudi_sync.manifest.incremental import timeline_tail
    from hudi_sync.table.config.schema import parse_avro_schema

    if instant is not None and "declared_avro_schema" not in vars(table):
        tail = timeline_tail(table, instant, (), listing)
        for write in reversed(tail.completed_writes):
            schema = tail.commit_metadata(write).schema
            if schema:
                return parse_avro_schema(schema, f"{table.uri}: {write.file_name}")
    return table.declared_avro_schema
