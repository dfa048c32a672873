"""``<t>_iceberg`` in BigQuery: an external table over the Iceberg metadata file the sync
published (``sourceFormat: ICEBERG``, through a BigLake connection), created the first sync
and re-pointed at each newer metadata file (``tables.patch`` with ``autodetect_schema``, so
the table takes that metadata's schema). Its marker is the one the other objects carry
(description and labels), with mode ``iceberg``.

BigQuery reads the snapshot itself from the metadata (data files, position deletes,
partition spec): the table is one REST resource, with no schema of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hudi_sync.errors import BadInputError
from hudi_sync.manifest.snapshot import PublishedManifest
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.bigquery.client import ICEBERG_FORMAT, Step
from hudi_sync.warehouse.bigquery.objects import (
    WILDCARD,
    BigQueryObjects,
    labels,
    wildcard_refusal,
)
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

if TYPE_CHECKING:
    from google.cloud import bigquery


def iceberg_resource(
    objects: BigQueryObjects, table_id: str, metadata_uri: str, marker: SyncMarker
) -> dict[str, Any]:
    """The REST resource of ``<t>_iceberg`` over ``metadata_uri``, stamped with ``marker``."""
    assert objects.config.iceberg_connection  # BigQuerySyncConfig refuses a mode without one
    return {
        "tableReference": objects.reference(table_id),
        "externalDataConfiguration": {
            "sourceFormat": ICEBERG_FORMAT,
            "sourceUris": [metadata_uri],
            "connectionId": objects.config.iceberg_connection,
        },
        "description": marker.render(),
        "labels": labels(marker),
    }


def iceberg_plan(
    target: str,
    objects: BigQueryObjects,
    table: HudiTable,
    published: PublishedManifest,
    names: ObjectNames,
    found: bigquery.Table | None,
    force: bool,
    replace_other_table: bool,
) -> tuple[SyncPlan, list[Step]]:
    """The plan of ``<t>_iceberg`` from the table that exists (``found``, None when missing
    or offline): created, re-pointed (update), or kept when it shows this snapshot already
    or a newer one (a restore or rollback is followed back; ``force`` moves it anyway).
    A table not made by hudi_sync, or showing another table's base, is refused unless
    ``force`` (``replace_other_table`` for the latter)."""
    base = objects.base_uri(table)
    marker = SyncMarker.of(published.manifest.instant, base, MARKER_MODE)
    relative = metadata_path(table, published, target)
    if relative is None:
        return SyncPlan(
            target, "noop", [], "no Iceberg snapshot before the table's first commit"
        ), []
    uri = f"{base}/{relative}"  # as BigQuery reads it (source_uri_prefix, like the manifests)
    if WILDCARD in uri:  # a source URI's wildcard: no escape reads it as itself
        raise BadInputError(wildcard_refusal(uri))
    table_id = names.iceberg
    qualified = objects.qualified(table_id)
    current = SyncMarker.parse(found.description) if found is not None else None
    if found is not None and current is None and not force:
        raise BadInputError(
            f"{qualified} exists and was not created by hudi_sync; drop it or use --force"
        )
    refuse_other_table(target, {qualified: current}, marker, force or replace_other_table)
    restored = restore_reason(table, qualified, current, marker)
    external = found.external_data_configuration if found is not None else None
    points = external is not None and (
        external.source_format == ICEBERG_FORMAT
        and list(external.source_uris or ()) == [uri]
        and external.connection_id == objects.config.iceberg_connection
    )
    settled = settled_plan(target, qualified, current, marker, force, points, restored)
    if settled is not None:
        return settled, []
    resource = iceberg_resource(objects, table_id, uri, marker)
    if found is None:
        steps = [Step("create", qualified, resource)]
    elif external is None or external.source_format != ICEBERG_FORMAT:
        # A view or another kind of table under the name (--force): BigQuery changes no
        # table's type in place.
        steps = [Step("delete", qualified), Step("create", qualified, resource)]
    else:
        steps = [Step("update", qualified, resource)]
    action = (
        "create" if current is None else ("update" if marker.same_objects(current) else "recreate")
    )
    return changing_plan(target, action, [s.render() for s in steps], restored), steps
