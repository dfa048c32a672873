"""The plan of a BigQuery sync: from the objects that exist, which are kept, updated,
replaced or deleted, in order (or, offline, a first sync's plan)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from hudi_sync.errors import BadInputError
from hudi_sync.manifest.snapshot import PublishedManifest
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.bigquery.client import Step, resource_kind
from hudi_sync.warehouse.bigquery.objects import BigQueryObjects
from hudi_sync.warehouse.bigquery.schema import column_type
from hudi_sync.warehouse.common import (
    ObjectNames,
    SyncMarker,
    SyncPlan,
    changing_plan,
    objects_settled,
    refuse_other_table,
    restore_reason,
    settled_plan,
)

if TYPE_CHECKING:
    from google.cloud import bigquery


def offline_plan(
    target: str,
    objects: BigQueryObjects,
    table: HudiTable,
    published: PublishedManifest,
    names: ObjectNames,
    marker: SyncMarker,
    note: str,
) -> tuple[SyncPlan, list[Step]]:
    """A first sync's plan, every object created, when BigQuery cannot be read (``note``
    says why and what a real run needs: ``offline_note``)."""
    resources = objects.resources(table, published, names, marker)
    steps = [objects.create_dataset_step()]
    steps += [
        Step("create", objects.qualified(r["tableReference"]["tableId"]), r) for r in resources
    ]
    return SyncPlan(target, "create", [s.render() for s in steps], note), steps


def plan_from_state(
    target: str,
    objects: BigQueryObjects,
    table: HudiTable,
    published: PublishedManifest,
    names: ObjectNames,
    marker: SyncMarker,
    tables: Mapping[str, bigquery.Table | None],
    made: tuple[str, ...],
    feed: tuple[str, ...],
    dataset_steps: Callable[[], list[Step]],
    force: bool,
    replace_other_table: bool,
) -> tuple[SyncPlan, list[Step]]:
    """The plan from the objects that exist (``tables``, by id, None when missing;
    ``made``: the objects this sync makes, each read in ``tables``; ``feed``: a change
    feed no longer published, dropped; ``dataset_steps``: the
    dataset's, read only when the objects change). Objects whose marker names another
    base are refused unless ``force`` or ``replace_other_table``."""
    existing = {i: tables[i] for i in names.all()}
    markers = {i: SyncMarker.parse(t.description) for i, t in existing.items() if t}
    foreign = [i for i, t in existing.items() if t is not None and markers[i] is None]
    if foreign and not force:
        raise BadInputError(
            f"{objects.qualified(foreign[0])} exists and was not created by hudi_sync; "
            "drop it or use --force"
        )
    shown = {objects.qualified(i): m for i, m in markers.items()}
    refuse_other_table(target, shown, marker, force or replace_other_table)
    marked = names.marked(published.logs)
    current = markers.get(marked)
    restored = restore_reason(table, marked, current, marker)
    # An option turned on or off at the instant already shown (the change feed, the
    # read-optimized view's name): objects to create or drop, no no-op; nor is one that
    # shapes their definitions (the marked object, updated last, keeps the digest).
    unchanged = objects_settled(made, feed, lambda i: tables.get(i) is not None)
    unchanged = unchanged and objects.defined_alike(existing.get(marked))
    settled = settled_plan(target, marked, current, marker, force, unchanged, restored)
    if settled is not None:
        return settled, []
    same_objects = marker.same_objects(current)
    steps = dataset_steps()
    deleted: set[str] = set()
    if current is not None and not same_objects:
        # A changed base path or mode: the old objects go, the new ones are created.
        deleted = {i for i, t in existing.items() if t is not None}
        steps += [Step("delete", objects.qualified(i)) for i in sorted(deleted)]
    for resource in objects.resources(table, published, names, marker):
        table_id = resource["tableReference"]["tableId"]
        found = existing[table_id]
        exists = found is not None and table_id not in deleted
        if (
            found is not None
            and exists
            and (_kind(found) != resource_kind(resource) or _drops_columns(found, resource))
        ):
            # A native table made before the first commit becomes external (or back,
            # with --force), a manifest table switches between full and delta
            # manifests: BigQuery changes neither a table's type nor drops a column
            # in place. Until the view is updated, a query of it fails.
            steps.append(Step("delete", objects.qualified(table_id)))
            exists = False
        if exists and found is not None:
            resource = _cleared(found, resource)
        steps.append(Step("update" if exists else "create", objects.qualified(table_id), resource))
    if feed and tables[names.feed] is not None:
        steps.append(Step("delete", objects.qualified(names.feed)))
    # Log objects no longer read (a compaction left no log records): dropped after the
    # snapshot view stopped reading them.
    wanted = names.synced(published.logs)
    for table_id in (n for n in (names.log_manifest, names.log_history) if n):
        gone = table_id not in wanted and table_id not in deleted
        if gone and existing.get(table_id) is not None:
            steps.append(Step("delete", objects.qualified(table_id)))
    action = "create" if current is None else ("update" if same_objects else "recreate")
    return changing_plan(target, action, [s.render() for s in steps], restored), steps


def _kind(table: bigquery.Table) -> str:
    """``view``, ``external`` or ``native`` (a native table holds the empty snapshot)."""
    if table.view_query is not None:
        return "view"
    return "external" if table.external_data_configuration is not None else "native"


def _drops_columns(table: bigquery.Table, resource: dict[str, Any]) -> bool:
    """The resource's schema lacks a column the table has, or gives one another type
    (``column_type``): BigQuery changes neither in place, so the table is re-created."""
    if "schema" not in resource:
        return False
    wanted = {f["name"]: column_type(f) for f in resource["schema"]["fields"]}
    return any(
        f.name not in wanted or wanted[f.name] != column_type(f.to_api_repr()) for f in table.schema
    )


# External configuration keys an option sets only when given (the BigLake connection):
# an update names each one the table has and the resource lacks as null.
_OPTIONAL_EXTERNAL_KEYS = ("connectionId",)


def _cleared(table: bigquery.Table, resource: dict[str, Any]) -> dict[str, Any]:
    """``resource`` as an update of ``table``: an update merges the external
    configuration into the table's (a key left out is kept), so an option no longer given
    (``big_lake_connection_id`` unset) is sent as null, which removes it."""
    wanted = resource.get("externalDataConfiguration")
    found = table.external_data_configuration
    if wanted is None or found is None:
        return resource
    shown = found.to_api_repr()
    gone = {k: None for k in _OPTIONAL_EXTERNAL_KEYS if k in shown and k not in wanted}
    if not gone:
        return resource
    return resource | {"externalDataConfiguration": wanted | gone}
