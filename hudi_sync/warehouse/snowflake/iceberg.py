"""``<t>_iceberg`` in Snowflake: an externally managed Iceberg table over the metadata file
the sync published, through an external volume over the table's location and an
object-store catalog integration. The first sync creates it
(``CREATE ICEBERG TABLE IF NOT EXISTS … METADATA_FILE_PATH = '<path>'``); each later one
re-points it (``ALTER ICEBERG TABLE … REFRESH '<path>'``), then records the marker in its
COMMENT, last. Metadata paths are relative to the external volume's active storage location
(``iceberg.volume_url``, by default the table's location as Snowflake reads it).

Every name and value enters the statements through ``sql_name`` and ``quote_literal``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hudi_sync.errors import BadInputError
from hudi_sync.manifest.snapshot import PublishedManifest
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.common import (
    ObjectNames,
    SyncMarker,
    SyncPlan,
    changing_plan,
    refuse_other_table,
    restore_reason,
    settled_plan,
)
from hudi_sync.warehouse.common.iceberg import MARKER_MODE, metadata_path
from hudi_sync.warehouse.common.quoting import snowflake_literal as quote_literal
from hudi_sync.warehouse.snowflake.config import PREFIX
from hudi_sync.warehouse.snowflake.connection import Statement
from hudi_sync.warehouse.snowflake.objects import SnowflakeObjects, digest
from hudi_sync.warehouse.snowflake.schema import object_name

# The digest of the metadata path the table reads, after the marker in its COMMENT.
_METADATA_DIGEST = re.compile(r" metadata=(?P<digest>\w+)")


@dataclass(frozen=True)
class IcebergState:
    """``<t>_iceberg`` as ``SHOW ICEBERG TABLES`` lists it (None fields: not listed)."""

    comment: str | None
    external_volume: str | None = None
    catalog: str | None = None


def metadata_file_path(objects: SnowflakeObjects, table: HudiTable, relative: str) -> str:
    """The metadata file at ``relative`` (to the table) as a path relative to the external
    volume's active storage location, without a leading slash (Snowflake's rule)."""
    full = objects.stage_url(table) + relative
    volume = (objects.config.iceberg_volume_url or objects.stage_url(table)).rstrip("/") + "/"
    if not full.startswith(volume):
        raise BadInputError(
            f"Iceberg metadata {full} is not under the external volume's location {volume} "
            f"({PREFIX}iceberg.volume_url)"
        )
    return full[len(volume) :]


def iceberg_statements(
    target: str,
    objects: SnowflakeObjects,
    table: HudiTable,
    published: PublishedManifest,
    names: ObjectNames,
    state: IcebergState | None,
    force: bool,
    replace_other_table: bool,
) -> tuple[SyncPlan, list[Statement]]:
    """The plan of ``<t>_iceberg`` from what exists (``state``; None: missing, or offline):
    created, refreshed to this snapshot's metadata, or kept when it shows it already or a
    newer snapshot (a restore or rollback is followed back; ``force`` moves it anyway). A
    table not made by hudi_sync, showing another table's base, or made over another
    external volume or catalog integration is refused unless ``force``."""
    config = objects.config
    assert config.iceberg_external_volume and config.iceberg_catalog_integration
    marker = SyncMarker.of(published.manifest.instant, objects.stage_url(table), MARKER_MODE)
    relative = metadata_path(table, published, target)
    if relative is None:
        return SyncPlan(
            target, "noop", [], "no Iceberg snapshot before the table's first commit"
        ), []
    path = metadata_file_path(objects, table, relative)
    name = objects.qualified(names.iceberg)
    current = SyncMarker.parse(state.comment) if state is not None else None
    if state is not None and current is None and not force:
        raise BadInputError(
            f"{name} exists and was not created by hudi_sync; drop it or use --force"
        )
    refuse_other_table(target, {name: current}, marker, force or replace_other_table)
    moved = state is not None and (
        _differs(state.external_volume, config.iceberg_external_volume)
        or _differs(state.catalog, config.iceberg_catalog_integration)
    )
    if moved and not force:
        assert state is not None
        raise BadInputError(
            f"{name} reads external volume {state.external_volume} and catalog "
            f"{state.catalog}, not {config.iceberg_external_volume} and "
            f"{config.iceberg_catalog_integration}; drop it or use --force"
        )
    recorded = _METADATA_DIGEST.search(state.comment or "") if state is not None else None
    unchanged = recorded is not None and recorded["digest"] == digest(path)
    restored = restore_reason(table, name, current, marker)
    settled = settled_plan(target, name, current, marker, force, unchanged, restored)
    if settled is not None:
        return settled, []
    comment = f"{marker.render()} metadata={digest(path)}"
    if state is None or moved:
        head = "CREATE OR REPLACE ICEBERG TABLE" if moved else "CREATE ICEBERG TABLE IF NOT EXISTS"
        sql = (
            f"{head} {name} EXTERNAL_VOLUME = {quote_literal(config.iceberg_external_volume)} "
            f"CATALOG = {quote_literal(config.iceberg_catalog_integration)} "
            f"METADATA_FILE_PATH = {quote_literal(path)} COMMENT = {quote_literal(comment)}"
        )
        statements = [Statement(sql, sql, f"create {name}")]
    else:
        refresh = f"ALTER ICEBERG TABLE {name} REFRESH {quote_literal(path)}"
        stamp = f"ALTER ICEBERG TABLE {name} SET COMMENT = {quote_literal(comment)}"
        statements = [
            Statement(refresh, refresh, f"refresh {name}"),
            Statement(stamp, stamp, f"mark {name}"),
        ]
    action = (
        "create" if current is None else ("update" if marker.same_objects(current) else "recreate")
    )
    return changing_plan(target, action, [s.shown for s in statements], restored), statements


def _differs(listed: str | None, configured: str) -> bool:
    """A listed name (stored form) is not the configured one (as users write it)."""
    return listed is not None and listed != object_name(configured)
