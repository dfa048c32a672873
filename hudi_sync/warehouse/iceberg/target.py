"""The ``iceberg`` sync target: the table's snapshot published as Iceberg v2 metadata in
its own storage (``hudi_sync.manifest.iceberg``), then committed to a catalog: a SQL
catalog (``sqlite:///``, below) or an Iceberg REST catalog (``http(s)://``: registered
once, then commits of the updates that assert the snapshot read, ``rest_sync``).

The metadata is the table's own (``.hoodie/manifest/iceberg/metadata/``): the store
writes it and moves ``version-hint.text`` last. With a catalog configured the table is
registered once under ``<namespace>.<name>`` and each sync then moves the catalog's
metadata location from the one it read to the new one (``SqlCatalog.commit``), the last
step of the sync. A catalog row that names another table's metadata (not under this
table's metadata folder) is refused unless ``--force``; one that names newer metadata of
this table (a later sync committed first) is left as it is (``skip-older``).

A time-travel sync (``--as-of``) publishes a metadata file whose current snapshot is
that instant without moving the table's pointer, and registers it as
``<name>_as_of_<instant>`` so the live table never moves back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError, CorruptTableError
from hudi_sync.manifest.iceberg.published import METADATA_FOLDER
from hudi_sync.manifest.snapshot import PublishedManifest
from hudi_sync.storage import reporting_storage_failures
from hudi_sync.table import HudiTable
from hudi_sync.table.avro.bounded import load_json
from hudi_sync.warehouse.common import ObjectNames, OtherTableError, SyncPlan, SyncResult
from hudi_sync.warehouse.common.iceberg import published_iceberg
from hudi_sync.warehouse.iceberg.rest_catalog import RestCatalog, is_rest_uri, read_token
from hudi_sync.warehouse.iceberg.sql_catalog import SqlCatalog, TableId

if TYPE_CHECKING:
    from hudi_sync.manifest.iceberg.published import PublishedIceberg


class IcebergTarget:
    """Publishes a table's snapshots as Iceberg metadata and commits them to a catalog."""

    # Iceberg's readers read the base files in place: Parquet only (ORC is an Iceberg
    # format too, but the data files' statistics are read from Parquet footers).
    base_file_formats: frozenset[str] = frozenset({"PARQUET"})
    # A Merge-on-Read table's logs become Iceberg data and delete files of the store's
    # own (``mor_files``): the sync need not fold them for an ``_rt`` view.
    uses_folded_logs = False
    # The sync publishes the snapshot's Iceberg metadata for it (``publish_iceberg``).
    wants_iceberg = True
    # It reads no manifest file, only the published instant: a sync whose other targets
    # read delta manifests too (``--delta-commits``) keeps them, so its manifest step
    # stays flat as the table grows instead of writing every file's name each commit.
    supports_delta_manifests = True

    def __init__(
        self,
        table_uri: str,
        catalog_uri: str | None = None,
        catalog_name: str = "hudi_sync",
        namespace: str = "default",
        table_name: str = "",
        token: str | None = None,
    ) -> None:
        self.table_uri = table_uri
        option = cfg.ICEBERG_CATALOG_URI.key
        rest = catalog_uri is not None and is_rest_uri(catalog_uri)
        self.catalog = SqlCatalog(catalog_uri, option) if catalog_uri and not rest else None
        self.rest = (
            RestCatalog(catalog_uri, option, token, warehouse=catalog_name)
            if catalog_uri and rest
            else None
        )
        if token is not None and self.rest is None:
            raise BadInputError(
                f"{cfg.ICEBERG_CATALOG_TOKEN_FILE.key}/{cfg.ICEBERG_CATALOG_TOKEN_ENV.key}: a "
                "bearer token is for a REST catalog (http(s)://), not "
                + ("a SQL catalog" if catalog_uri else "a sync without a catalog")
            )
        self.catalog_name = catalog_name
        self.namespace = namespace
        self.table_name = table_name
        if self.catalog is not None or self.rest is not None:
            TableId(catalog_name, namespace, table_name)  # refuses an empty or NUL name now

    @classmethod
    def from_options(cls, options: Mapping[str, Any], table: HudiTable) -> IcebergTarget:
        """The target of ``hudi_sync.sync.iceberg.*``; the catalog table's name
        defaults to the Hudi table's (the snapshots kept are the sync's
        ``hoodie.manifest.snapshots.retained``)."""
        return cls(
            table.uri,
            catalog_uri=cfg.ICEBERG_CATALOG_URI.read(options) or None,
            catalog_name=cfg.ICEBERG_CATALOG_NAME.read(options),
            namespace=cfg.ICEBERG_NAMESPACE.read(options),
            table_name=cfg.ICEBERG_TABLE.read(options) or table.config.name,
            token=read_token(
                cfg.ICEBERG_CATALOG_TOKEN_FILE.read(options) or None,
                cfg.ICEBERG_CATALOG_TOKEN_ENV.read(options) or None,
                cfg.ICEBERG_CATALOG_TOKEN_FILE.key,
                cfg.ICEBERG_CATALOG_TOKEN_ENV.key,
            ),
        )

    @property
    def name(self) -> str:
        if self.rest is not None:
            return f"iceberg:{self.rest.uri}"
        return f"iceberg:{self.catalog.uri if self.catalog is not None else self.table_uri}"

    def table_id(self, as_of_instant: str | None) -> TableId:
        """The catalog table a sync commits: the live one, or ``<name>_as_of_<instant>``."""
        name = ObjectNames.for_table(self.table_name, as_of_instant).view
        return TableId(self.catalog_name, self.namespace, name)

    def sync(
        self,
        table: HudiTable,
        published: PublishedManifest,
        as_of: bool = False,
        force: bool = False,
        dry_run: bool = False,
        replace_other_table: bool = False,
    ) -> tuple[SyncPlan, SyncResult]:
        """Publish the metadata (the store moves its pointer unless ``as_of``), then
        commit it to the catalog when one is configured. A dry run writes nothing: its
        plan names the metadata file the sync would publish and the catalog statements
        it would run. A catalog row showing another table is refused (``OtherTableError``)
        before anything is written, unless ``force`` or ``replace_other_table``."""
        if self.rest is not None:
            from hudi_sync.warehouse.iceberg.rest_sync import RestSync

            rest_sync = RestSync(self, self.rest, table, published)
            plan, result, summary = rest_sync.run(as_of, force or replace_other_table, dry_run)
            return plan, _result(result, summary)
        instant = published.manifest.instant
        as_of_instant = instant if as_of else None
        table_id = self.table_id(as_of_instant) if self.catalog is not None else None
        current = None
        if self.catalog is not None and table_id is not None:
            current = self.catalog.current(table_id)
            other = current is not None and self._order(table, current) is None
            if other and not (force or replace_other_table):
                raise OtherTableError(
                    f"{self.name}: {table_id} shows the metadata {current!r}, not this "
                    f"table's ({table.uri!r}): another table's under this name (give the "
                    "tables distinct names, or use --force to replace it)"
                )
        iceberg = published_iceberg(self.name, published)
        plan = self._plan(table, iceberg, table_id, current, force, dry_run)
        objects = (str(table_id),) if table_id is not None else ()
        summary = {"metadata_location": iceberg.metadata_location, **iceberg.summary()}
        if dry_run or not plan.steps or self.catalog is None or table_id is None:
            return plan, _result(plan.result(instant, objects, dry_run), summary)
        ours = self._order(table, iceberg.metadata_location)

        def replaceable(other: str) -> bool:
            theirs = self._order(table, other)
            return theirs is not None and ours is not None and theirs < ours

        self.catalog.commit(table_id, current, iceberg.metadata_location, replaceable)
        return plan, _result(plan.result(instant, objects), summary)

    def _plan(
        self,
        table: HudiTable,
        iceberg: PublishedIceberg,
        table_id: TableId | None,
        current: str | None,
        force: bool,
        dry_run: bool,
    ) -> SyncPlan:
        location = iceberg.metadata_location
        published = f"metadata {location}"
        if iceberg.partition_reason:
            published += f" (unpartitioned: {iceberg.partition_reason})"
        if self.catalog is None or table_id is None:
            return SyncPlan(self.name, "update", [], published)
        if current is None:
            return SyncPlan(self.name, "create", self.catalog.register_steps(table_id, location))
        if current == location:
            return SyncPlan(self.name, "noop", [], f"{table_id} already shows {location}")
        theirs = self._order(table, current)
        ours = None if dry_run else self._order(table, location)
        if theirs is not None and ours is not None and theirs > ours and not force:
            reason = f"{table_id} shows newer metadata {current}; use --force"
            return SyncPlan(self.name, "skip-older", [], reason)
        steps = self.catalog.move_steps(table_id, current, location)
        reason = "" if theirs is not None else f"replaces another table's metadata {current}"
        return SyncPlan(self.name, "update", steps, reason)

    def _order(self, table: HudiTable, metadata_location: str) -> int | None:
        """The ``last-sequence-number`` of a metadata file of this table (the order its
        metadata was published in; -1 for one expired since), or None when the location is
        not under this table's metadata folder (another table's)."""
        folder = table.location.uri_of(METADATA_FOLDER) + "/"
        if not metadata_location.startswith(folder):
            return None
        name = metadata_location[len(folder) :]
        source = f"{self.name}: metadata location"
        if "/" in name:
            return None
        path = table.location.inside(f"{METADATA_FOLDER}/{name}", source)
        where = f"{table.uri}: {METADATA_FOLDER}/{name}"
        try:
            with reporting_storage_failures(table.location):
                data = table.location.read_file(path)
        except FileNotFoundError:
            return -1  # ours, expired since: older than any metadata published now
        document = load_json(data, where, "Iceberg table metadata")
        sequence = document.get("last-sequence-number") if isinstance(document, dict) else None
        if not isinstance(sequence, int) or isinstance(sequence, bool):
            raise CorruptTableError(f"{where}: no last-sequence-number in Iceberg table metadata")
        return sequence


def _result(result: SyncResult, summary: dict[str, Any]) -> SyncResult:
    """The result, carrying what the store published (its ``summary()``)."""
    return replace(result, iceberg=summary)
