"""One sync of the ``iceberg`` target through a REST catalog: publish, then register or
commit, the commit last.

The catalog's table is this table's when its ``table-uuid`` is the published metadata's
and ``main`` shows a snapshot whose manifest list is in this table's metadata folder
(one we published, kept or expired since). Anything else (another table registered
under the name, another writer's snapshot on ``main``) is refused before anything is
written, unless ``--force``, which drops the catalog's entry (never its files) and
registers ours. A lost race (409) is re-read once: retried when ``main`` now shows an
older snapshot of ours, a no-op when it shows ours, else refused in one line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from hudi_sync.errors import CorruptTableError, HudiSyncError
from hudi_sync.manifest.iceberg.metadata import TableMetadata
from hudi_sync.manifest.iceberg.published import METADATA_FOLDER
from hudi_sync.manifest.iceberg.store import IcebergStore
from hudi_sync.manifest.snapshot import DEFAULT_KEEP, PublishedManifest
from hudi_sync.storage import reporting_storage_failures
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.common import OtherTableError, SyncPlan, SyncResult
from hudi_sync.warehouse.common.iceberg import published_iceberg
from hudi_sync.warehouse.iceberg.rest_catalog import (
    CatalogSnapshot,
    CatalogTable,
    RestCatalog,
    RestConflictError,
    describe,
    published_by_us,
    requirements,
    updates,
)
from hudi_sync.warehouse.iceberg.sql_catalog import CatalogConflictError, TableId

if TYPE_CHECKING:
    from hudi_sync.manifest.iceberg.published import PublishedIceberg


class CatalogTarget(Protocol):
    """What the REST half needs of the ``iceberg`` target: its name and the catalog
    table a sync commits (``IcebergTarget``)."""

    @property
    def name(self) -> str: ...

    def table_id(self, as_of_instant: str | None) -> TableId: ...


class RestSync:
    """The REST catalog half of ``IcebergTarget.sync`` (module docstring)."""

    def __init__(
        self,
        target: CatalogTarget,
        catalog: RestCatalog,
        table: HudiTable,
        published: PublishedManifest,
    ) -> None:
        self.target = target
        self.catalog = catalog
        self.table = table
        self.published = published
        # What the sync published is read through the store (``current``, ``uri``).
        self.store = IcebergStore(table, DEFAULT_KEEP, listing=published.timeline_listing)
        self.folder = table.location.uri_of(METADATA_FOLDER)

    def run(
        self, as_of: bool, force: bool, dry_run: bool
    ) -> tuple[SyncPlan, SyncResult, dict[str, Any]]:
        """Publish the snapshot and bring the catalog's table to it. Returns the plan,
        its result and the ``iceberg`` part of the report (with the metadata file the
        catalog shows now, ``catalog_metadata_location``)."""
        instant = self.published.manifest.instant
        as_of_instant = instant if as_of else None
        table_id = self.target.table_id(as_of_instant)
        loaded = self.catalog.load(table_id)
        foreign = None if loaded is None else self._foreign(loaded, as_of_instant)
        if foreign is not None and not force:
            raise OtherTableError(
                f"{self.target.name}: {table_id} {foreign}, not this table's "
                f"({self.table.uri!r}): use --force to replace it"
            )
        iceberg = published_iceberg(self.target.name, self.published)
        objects = (str(table_id),)
        summary: dict[str, Any] = {
            "metadata_location": iceberg.metadata_location,
            **iceberg.summary(),
            "catalog_metadata_location": None if loaded is None else loaded.metadata_location,
        }
        if dry_run:
            plan = self._dry_plan(table_id, loaded, foreign, iceberg)
            return plan, plan.result(instant, objects, True), summary
        if loaded is None or foreign is not None:
            if foreign is not None:
                self.catalog.drop(table_id)
            registered = self.catalog.register(table_id, iceberg.metadata_location)
            if registered is not None:
                action = "create" if foreign is None else "recreate"
                steps = self._register_steps(table_id, iceberg.metadata_location, foreign)
                plan = SyncPlan(self.target.name, action, steps, foreign or "")
                summary["catalog_metadata_location"] = registered.metadata_location
                return plan, plan.result(instant, objects), summary
            loaded = self.catalog.load(table_id)  # registered by another writer first
            if loaded is None or self._foreign(loaded, as_of_instant) is not None:
                raise CatalogConflictError(
                    f"Iceberg REST catalog {self.catalog.uri}: {table_id} was registered by "
                    "another writer while this sync registered it: not replaced"
                )
        ours = self._read(iceberg.metadata_location)
        plan, shown = self._commit(table_id, loaded, ours)
        summary["catalog_metadata_location"] = shown
        return plan, plan.result(instant, objects), summary

    # -- whose table -------------------------------------------------------------------
    def _is_ours(self, snapshot: CatalogSnapshot) -> bool:
        return published_by_us(snapshot, self.folder)

    def _foreign(self, loaded: CatalogTable, as_of: str | None) -> str | None:
        """Why the catalog's table is not this table's (None: it is)."""
        if as_of is not None:
            expected = self.store.uri("metadata", f"asof-{as_of}.metadata.json")
            if loaded.metadata_location != expected:
                return f"shows the metadata {loaded.metadata_location!r}"
            return None
        with reporting_storage_failures(self.table.location):
            current = self.store.current()
        if current is None or current.metadata.uuid != loaded.uuid:
            return f"is another table (table-uuid {loaded.uuid})"
        shown = loaded.main_snapshot
        if shown is not None and not self._is_ours(shown):
            return f"shows another writer's snapshot {shown.snapshot_id} on main"
        return None

    def _read(self, location: str) -> TableMetadata:
        """The metadata file the store published, read back (bounded)."""
        prefix = self.folder + "/"
        name = location[len(prefix) :]
        if not location.startswith(prefix) or not name or "/" in name:
            raise CorruptTableError(f"{location!r} is not a metadata file of {self.folder}")
        path = self.table.location.inside(f"{METADATA_FOLDER}/{name}", self.target.name)
        with reporting_storage_failures(self.table.location):
            data = self.table.location.read_file(path)
        return TableMetadata.read(data, location)

    # -- committing --------------------------------------------------------------------
    def _commit(
        self, table_id: TableId, loaded: CatalogTable, ours: TableMetadata
    ) -> tuple[SyncPlan, str]:
        """Commit the updates from ``loaded`` to ``ours``; a lost race re-read once."""
        name = self.target.name
        mine = ours.current_snapshot
        for attempt in (1, 2):
            shown = loaded.main_snapshot
            if shown is not None and mine is not None:
                if shown.snapshot_id == mine.snapshot_id and self._is_ours(shown):
                    reason = f"{table_id} already shows snapshot {mine.snapshot_id}"
                    return SyncPlan(name, "noop", [], reason), loaded.metadata_location
                if shown.sequence > mine.sequence:
                    reason = (
                        f"{table_id} shows newer snapshot {shown.snapshot_id} "
                        f"(hudi.instant {shown.instant}) than {mine.snapshot_id}"
                    )
                    return SyncPlan(name, "skip-older", [], reason), loaded.metadata_location
            try:
                changes = updates(loaded, ours, self.folder)
            except HudiSyncError as exc:
                raise HudiSyncError(
                    f"Iceberg REST catalog {self.catalog.uri}: {table_id}: {exc}"
                ) from None
            if not changes:
                return SyncPlan(name, "noop", [], f"{table_id} is up to date"), (
                    loaded.metadata_location
                )
            asserted = requirements(loaded)
            try:
                committed = self.catalog.commit(table_id, asserted, changes)
            except RestConflictError as exc:
                if attempt == 2:
                    raise CatalogConflictError(f"{exc}, twice: not retried again") from None
                loaded = self._reread(table_id, ours, str(exc))
                continue
            steps = [self._commit_step(table_id, asserted, changes)]
            reason = "" if attempt == 1 else "retried once after another sync's commit"
            return SyncPlan(name, "update", steps, reason), committed.metadata_location
        raise AssertionError("unreachable")  # pragma: no cover

    def _reread(self, table_id: TableId, ours: TableMetadata, conflict: str) -> CatalogTable:
        """The catalog's table after a lost race, when retrying from it is right: it is
        still ours and ``main`` shows an older snapshot of ours (or ours itself, which
        the retry finds a no-op). Else the commit is refused in one line."""
        loaded = self.catalog.load(table_id)
        mine = ours.current_snapshot
        shown = None if loaded is None else loaded.main_snapshot
        if loaded is None:
            why = "it was dropped"
        elif loaded.uuid != ours.uuid:
            why = f"it is another table now (table-uuid {loaded.uuid})"
        elif shown is None:
            why = "main shows no snapshot"
        elif not self._is_ours(shown):
            why = f"main shows another writer's snapshot {shown.snapshot_id}"
        elif mine is not None and shown.sequence > mine.sequence:
            why = f"main shows newer snapshot {shown.snapshot_id} of this table"
        else:
            assert loaded is not None
            return loaded
        raise CatalogConflictError(f"{conflict} and {why}: not replaced")

    # -- plans -------------------------------------------------------------------------
    def _commit_step(
        self, table_id: TableId, asserted: list[dict[str, Any]], changes: list[dict[str, Any]]
    ) -> str:
        uuid, main = asserted[0]["uuid"], asserted[1]["snapshot-id"]
        return (
            f"POST {self.catalog.table_route(table_id)} requirements: assert-table-uuid "
            f"{uuid}, assert-ref-snapshot-id main={main}; updates: "
            + "; ".join(describe(c) for c in changes)
        )

    def _register_steps(self, table_id: TableId, location: str, foreign: str | None) -> list[str]:
        base = self.catalog.base
        prefix = f"/{self.catalog.prefix}" if self.catalog.prefix else ""
        route = f"{base}/v1{prefix}/namespaces"
        steps = [] if foreign is None else [f"DELETE {self.catalog.table_route(table_id)}"]
        return [
            *steps,
            f"POST {route} namespace={table_id.namespace!r} (when missing)",
            f"POST {route}/{table_id.namespace}/register name={table_id.name!r} "
            f"metadata-location={location!r}",
        ]

    def _dry_plan(
        self,
        table_id: TableId,
        loaded: CatalogTable | None,
        foreign: str | None,
        iceberg: PublishedIceberg,
    ) -> SyncPlan:
        """What a sync would send: a registration, or a commit from what ``main`` shows
        (its updates are known once the metadata is written, so they are named)."""
        name = self.target.name
        location = iceberg.metadata_location
        if loaded is None or foreign is not None:
            action = "create" if foreign is None else "recreate"
            return SyncPlan(name, action, self._register_steps(table_id, location, foreign))
        shown = loaded.main_snapshot
        if shown is not None and shown.snapshot_id == iceberg.snapshot_id:
            return SyncPlan(name, "noop", [], f"{table_id} already shows {location}")
        step = (
            f"POST {self.catalog.table_route(table_id)} requirements: assert-table-uuid "
            f"{loaded.uuid}, assert-ref-snapshot-id main={loaded.main}; updates: add-snapshot "
            f"(the snapshot of {iceberg.instant} in {location}), set-snapshot-ref main, "
            "remove-snapshots (those the publication expires), set-properties"
        )
        return SyncPlan(name, "update", [step])
