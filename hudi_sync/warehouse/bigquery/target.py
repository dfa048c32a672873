"""BigQuery target: external tables over the table's files, switched per published manifest.

View mode (RFC-34, Hudi's default): ``<t>_history`` is a PARQUET (or ORC, the table's base
file format) external table over every base file version in the partition folders (hive
partitioning with typed keys when the paths are ``key=value``), ``<t>_manifest`` a CSV
external table over the immutable manifest of one instant, and the view ``<t>`` keeps the
history rows whose file is in the manifest. Manifest mode (``use_bq_manifest_file``): one
PARQUET (or ORC) external table ``<t>`` whose file set *is* the absolute-URI manifest
(``NEW_LINE_DELIMITED_MANIFEST``).

BigQuery has no multi-object transaction, so the order of the calls is what keeps
readers consistent: the history table (a superset of every snapshot's files, with the
newest schema) is updated first, then the manifest table is switched to the new
immutable manifest in one metadata update, then the view is stamped. A sync that stops
anywhere leaves the view showing the old or the new snapshot, and a rerun converges.
The marker (instant, base, mode) is recorded in each object's description and labels,
with a digest of the options that shape the definitions (``hudi_sync_options``): a sync
at the instant already shown updates the objects when it differs.

With delta manifests (``hudi_sync.manifest.delta``, view mode only) the manifest table
reads two files in one table: the base snapshot's ``uris.csv`` and the current changes
file, each line one ``entry`` string, and the view's query unions them (base files whose
group has no change, plus the changed groups' current files). Both URIs move in the
manifest table's one metadata update, so a reader never pairs a base with another base's
changes; the view's query is fixed while the table's base path stays the same.

Before the table's first commit there is no file for an external table to match, so the
history and manifest tables (the manifest-mode table) are created as native tables with
the same columns and no rows. The first sync with files deletes and re-creates each as
an external table (BigQuery cannot change a table's type in place): during that one sync,
between the two calls, a query of the view fails instead of showing no rows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError, HudiSyncError
from hudi_sync.manifest.change_feed import PublishedChanges
from hudi_sync.manifest.snapshot import PublishedManifest
from hudi_sync.storage import contained_uri
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.bigquery.change_feed import changes_resource
from hudi_sync.warehouse.bigquery.client import (
    PROBE_SECONDS,
    READERS,
    Step,
    apply_step,
    bigquery_client,
    failure,
)
from hudi_sync.warehouse.bigquery.config import API_ENDPOINT, PREFIX, BigQuerySyncConfig
from hudi_sync.warehouse.bigquery.iceberg import iceberg_plan
from hudi_sync.warehouse.bigquery.objects import BASE_FILE_FORMATS, BigQueryObjects
from hudi_sync.warehouse.bigquery.plan import offline_plan, plan_from_state
from hudi_sync.warehouse.bigquery.schema import column_type
from hudi_sync.warehouse.common import (
    ObjectNames,
    SyncMarker,
    SyncPlan,
    SyncResult,
    offline_note,
    retired_feed,
)
from hudi_sync.warehouse.common.iceberg import OFF, ONLY, IcebergModes, joined_plan
from hudi_sync.warehouse.common.state import Columns, ObjectState, TargetState

if TYPE_CHECKING:
    from google.cloud import bigquery


class BigQueryTarget(IcebergModes):
    """Syncs a table's published manifest into BigQuery external tables and a view."""

    @property
    def supports_delta_manifests(self) -> bool:
        """View mode can union a base and its changes; a manifest-file table cannot
        (``iceberg=only`` with ``use_bq_manifest_file=true`` is refused: no object
        would read the manifest)."""
        return not self.config.use_bq_manifest_file

    # External tables read PARQUET and ORC base files (sourceFormat is the table's format).
    base_file_formats: frozenset[str] = BASE_FILE_FORMATS

    def __init__(
        self,
        config: BigQuerySyncConfig,
        client: bigquery.Client | None = None,
        api_endpoint: str | None = None,
        skip_ro_suffix: bool = False,
    ) -> None:
        self.config = config
        self._client = client
        self.api_endpoint = api_endpoint
        self.skip_ro_suffix = skip_ro_suffix

    @classmethod
    def from_options(
        cls, options: Mapping[str, Any], default_table_name: str | None = None
    ) -> BigQueryTarget:
        """From every option given (the ``hoodie.gcp.bigquery.sync.*`` ones are used,
        plus ``api_endpoint``); the table name defaults to ``default_table_name``."""
        scoped = {k: v for k, v in options.items() if k.startswith(PREFIX) and k != API_ENDPOINT}
        if default_table_name:
            scoped.setdefault(cfg.BIGQUERY_TABLE_NAME.key, default_table_name)
        endpoint = options.get(API_ENDPOINT)
        return cls(
            BigQuerySyncConfig.from_options(scoped),
            api_endpoint=endpoint or None,
            skip_ro_suffix=bool(cfg.SKIP_RO_SUFFIX.read(options)),
        )

    @property
    def name(self) -> str:
        return f"bigquery:{self.config.project_id}.{self.config.dataset_name}"

    @property
    def client(self) -> bigquery.Client:
        if self._client is None:
            self._client = bigquery_client(self.config, self.api_endpoint)
        return self._client

    # -- naming --------------------------------------------------------------------------
    def object_names(
        self, table: HudiTable, published: PublishedManifest, as_of: bool
    ) -> ObjectNames:
        """Manifest-file mode has one table, the read-optimized one."""
        return ObjectNames.for_table(
            self.config.table_name,
            published.manifest.instant if as_of else None,
            merge_on_read=table.config.is_mor and not self.config.use_bq_manifest_file,
            skip_ro_suffix=self.skip_ro_suffix,
            change_feed=published.changes is not None,
        )

    # -- reading the current state -------------------------------------------------------
    def _get(self, table_id: str) -> bigquery.Table | None:
        from google.api_core import exceptions

        try:
            return self.client.get_table(self.objects.qualified(table_id), **self._bounded())
        except exceptions.NotFound:
            return None
        except (exceptions.GoogleAPICallError, exceptions.RetryError) as exc:
            raise failure(f"read table {self.objects.qualified(table_id)}", exc) from exc

    def _get_all(self, table_ids: tuple[str, ...]) -> dict[str, bigquery.Table | None]:
        """The tables by id (None when missing), read at once: each read is a round
        trip, and a plan needs them all."""
        with ThreadPoolExecutor(max_workers=min(len(table_ids), READERS)) as pool:
            return dict(zip(table_ids, pool.map(self._get, table_ids), strict=True))

    def _dataset_steps(self) -> list[Step]:
        """Create the dataset when missing; refuse one in another location."""
        from google.api_core import exceptions

        dataset_id = f"{self.config.project_id}.{self.config.dataset_name}"
        try:
            dataset = self.client.get_dataset(dataset_id, **self._bounded())
        except exceptions.NotFound:
            return [self.objects.create_dataset_step()]
        except (exceptions.GoogleAPICallError, exceptions.RetryError) as exc:
            raise failure(f"read dataset {dataset_id}", exc) from exc
        wanted = self.config.dataset_location
        if wanted and (dataset.location or "").lower() != wanted.lower():
            raise BadInputError(
                f"dataset {dataset_id} is in {dataset.location}, but "
                f"{cfg.BIGQUERY_DATASET_LOCATION.key} is {wanted}"
            )
        return []

    def _bounded(self) -> dict[str, Any]:
        """Each API call's retry and timeout: retried for ``retry_seconds`` (the client's
        own default is ten minutes, which would hold a watch and its stop signal)."""
        from google.cloud.bigquery.retry import DEFAULT_RETRY

        seconds = self.config.retry_seconds
        return {
            "retry": DEFAULT_RETRY.with_deadline(seconds),
            "timeout": max(min(seconds, 30.0), 1.0),
        }

    # -- verifying (read-only) -------------------------------------------------------------
    def inspect(self, table: HudiTable, change_feed: bool) -> TargetState:
        """The live objects of ``table`` as BigQuery has them (``hudi-sync verify``): read
        with ``get_table`` only; the manifest's file names from the list its manifest
        table (or manifest-file table) reads, in the table's storage."""
        if self.config.iceberg == ONLY:
            raise BadInputError(f"{self.name}: verify does not read BigQuery's Iceberg tables")
        manifest_mode = self.config.use_bq_manifest_file
        names = ObjectNames.for_table(
            self.config.table_name,
            merge_on_read=table.config.is_mor and not manifest_mode,
            skip_ro_suffix=self.skip_ro_suffix,
            change_feed=change_feed,
        )
        base = self.objects.base_uri(table)
        found = {i: t for i, t in self._get_all(names.all()).items() if t is not None}
        data = names.view if manifest_mode else names.history
        _, wanted = self.objects.declared_columns(table, None, base)
        partitions = None
        if data in found:
            external = found[data].external_data_configuration is not None
            # A native table holds the empty snapshot: the sync gave it the keys' columns.
            partitions = _hive_keys(found[data]) if external else wanted
        # The hive keys are compared as the prefix types them, not as the columns
        # BigQuery adds for them (which an emulator may not show).
        keys = {p.split(":", 1)[0] for p in partitions or ()}
        objects = {
            i: ObjectState(
                i,
                tuple(
                    (f.name, column_type(f.to_api_repr()))
                    for f in t.schema
                    if i != data or f.name not in keys
                ),
                SyncMarker.parse(t.description),
            )
            for i, t in found.items()
        }
        marked = objects.get(names.snapshot_view or "") or objects.get(names.view)
        lister = names.view if manifest_mode else names.manifest
        files, error = (None, None)
        if lister in found:
            files, error = _listed_files(self.objects, table, base, found[lister])
        return TargetState(
            names,
            base,
            objects,
            marked.marker if marked is not None else None,
            files,
            error,
            made=(names.view,) if manifest_mode else None,
            manifest_object=lister,
            partitioned=data,
            partition_columns=partitions,
            wanted_partitions=wanted,
        )

    def declared_columns(
        self, table: HudiTable, names: ObjectNames, instant: str | None
    ) -> dict[str, Columns]:
        """The data table's columns a sync to ``instant`` declares (``data_columns``, the
        sync's own mapping); the views' BigQuery derives."""
        columns, _ = self.objects.declared_columns(table, instant, self.objects.base_uri(table))
        data = names.view if self.config.use_bq_manifest_file else names.history
        return {data: columns}

    # -- planning ------------------------------------------------------------------------
    def _unreachable(self) -> str | None:
        """Why BigQuery cannot be read (no credentials, no answer, credentials refused),
        or None when it answers. One try, no retries: a dry run says at once that it
        planned offline instead of retrying for minutes."""
        import requests
        from google.api_core import exceptions
        from google.auth.exceptions import GoogleAuthError

        dataset_id = f"{self.config.project_id}.{self.config.dataset_name}"
        try:
            # retry=None: one request (the client's type says Retry; None is documented).
            self.client.get_dataset(dataset_id, retry=None, timeout=PROBE_SECONDS)  # type: ignore[arg-type]
        except HudiSyncError as exc:  # no credentials (bigquery_client)
            return str(exc)
        except (
            exceptions.Unauthorized,
            GoogleAuthError,
            requests.exceptions.ConnectionError,
            requests.exceptions.Timeout,
        ) as exc:
            return str(failure(f"read dataset {dataset_id}", exc))
        except exceptions.GoogleAPICallError:  # it answered: the plan reports the error
            return None
        return None

    def _needs(self) -> str:
        """What a real run needs, for an offline plan's note."""
        where = (
            f"{_flag(cfg.BIGQUERY_PROJECT_ID)} {self.config.project_id} and "
            f"{_flag(cfg.BIGQUERY_DATASET_NAME)} {self.config.dataset_name}"
        )
        if self.api_endpoint is not None:
            return f"{where} at --api-endpoint {self.api_endpoint}, answering"
        return (
            f"{where}, with Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS "
            "or 'gcloud auth application-default login') allowed to read and create them"
        )

    @property
    def objects(self) -> BigQueryObjects:
        """The REST bodies of the objects, in this target's dataset."""
        return BigQueryObjects(self.config)

    def _changes_resource(
        self,
        table_id: str,
        changes: PublishedChanges,
        stamp: dict[str, Any],
        seen_by_bigquery: Callable[[str], str],
    ) -> dict[str, Any]:
        """``<t>_changes``' REST resource (``change_feed.changes_resource``)."""
        reference = self.objects.reference(table_id)
        return changes_resource(reference, changes, stamp, seen_by_bigquery)

    def _plan(
        self,
        table: HudiTable,
        published: PublishedManifest,
        as_of: bool,
        force: bool,
        offline: str | None = None,
        replace_other_table: bool = False,
    ) -> tuple[SyncPlan, list[Step]]:
        """The plan, from the objects that exist; ``offline`` (why BigQuery cannot be
        read): a first sync's plan, every object created, and a note saying so. Objects
        whose marker names another base are refused unless ``force`` or
        ``replace_other_table``."""
        names = self.object_names(table, published, as_of)
        if self.config.iceberg != ONLY:  # before anything is read or created
            self.objects.refuse_without_hive_partitions(table)
        if self.config.iceberg == OFF:
            return self._manifest_plan(
                table, published, names, force, offline, replace_other_table, as_of
            )
        found = None if offline is not None else self._get(names.iceberg)
        iceberg, iceberg_steps = iceberg_plan(
            self.name, self.objects, table, published, names, found, force, replace_other_table
        )
        if self.config.iceberg == ONLY:
            main, steps = SyncPlan(self.name, "noop"), list[Step]()
            if offline is not None:
                main = SyncPlan(self.name, "create", [], offline_note(offline, self._needs()))
        else:
            main, steps = self._manifest_plan(
                table, published, names, force, offline, replace_other_table, as_of
            )
        if iceberg_steps and not steps:  # the dataset's steps come first, once
            dataset = [self.objects.create_dataset_step()] if offline else self._dataset_steps()
            iceberg = SyncPlan(
                iceberg.target,
                iceberg.action,
                [s.render() for s in dataset] + iceberg.steps,
                iceberg.reason,
            )
            iceberg_steps = dataset + iceberg_steps
        return joined_plan(self.name, main, iceberg), steps + iceberg_steps

    def _manifest_plan(
        self,
        table: HudiTable,
        published: PublishedManifest,
        names: ObjectNames,
        force: bool,
        offline: str | None,
        replace_other_table: bool,
        as_of: bool,
    ) -> tuple[SyncPlan, list[Step]]:
        """The plan of the manifest objects (tables and views, or the manifest-file table)."""
        objects = self.objects
        base = objects.base_uri(table)
        marker = SyncMarker.of(published.manifest.instant, base, self.config.mode)
        if offline is not None:
            note = offline_note(offline, self._needs())
            return offline_plan(self.name, objects, table, published, names, marker, note)
        # A feed no longer published (hudi_sync.sync.change.feed turned off) is dropped.
        feed = retired_feed(names, as_of)
        tables = self._get_all((*names.all(), *feed))
        return plan_from_state(
            self.name,
            objects,
            table,
            published,
            names,
            marker,
            tables,
            self._made(names, published),
            feed,
            self._dataset_steps,
            force,
            replace_other_table,
        )

    def _made(self, names: ObjectNames, published: PublishedManifest) -> tuple[str, ...]:
        """The manifest objects a sync makes: the manifest-file table (and the change
        feed) with ``use_bq_manifest_file``, else the tables and views."""
        if self.config.use_bq_manifest_file:
            return (names.view, *((names.changes,) if names.changes else ()))
        return names.synced(published.logs)

    # -- applying ------------------------------------------------------------------------
    def sync(
        self,
        table: HudiTable,
        published: PublishedManifest,
        as_of: bool = False,
        force: bool = False,
        dry_run: bool = False,
        replace_other_table: bool = False,
    ) -> tuple[SyncPlan, SyncResult]:
        offline = self._unreachable() if dry_run else None
        plan, calls = self._plan(table, published, as_of, force, offline, replace_other_table)
        names = self.object_names(table, published, as_of)
        objects = self._made(names, published)
        if self.config.iceberg == ONLY:
            objects = (names.iceberg,)
        elif self.config.iceberg != OFF:
            objects = (*objects, names.iceberg)
        instant = published.manifest.instant
        if dry_run or not plan.steps:
            return plan, plan.result(instant, objects, dry_run)
        for step in calls:
            self._apply(step)
        return plan, plan.result(instant, objects)

    def _apply(self, step: Step) -> None:
        apply_step(self.client, step, self._bounded())


def _flag(spec: cfg.OptionSpec[Any]) -> str:
    """The CLI flag of a ``hoodie.gcp.bigquery.sync.*`` option."""
    return "--" + spec.key.removeprefix(PREFIX).replace("_", "-").replace(".", "-")


_HIVE_KEY = re.compile(r"\{([^}]+)\}")


def _hive_keys(data: bigquery.Table) -> tuple[str, ...]:
    """The hive partition keys of an external table's ``sourceUriPrefix`` template, as
    it types them (``dt:DATE``), none for a native table or one without hive
    partitioning."""
    external = data.external_data_configuration
    hive = external.hive_partitioning if external is not None else None
    if hive is None or not hive.source_uri_prefix:
        return ()
    return tuple(_HIVE_KEY.findall(hive.source_uri_prefix))


def _listed_files(
    objects: BigQueryObjects, table: HudiTable, base: str, lister: bigquery.Table
) -> tuple[frozenset[str] | None, str | None]:
    """The base file names of the list ``lister`` reads (a native table: the empty
    snapshot's, none), or None and why it could not be read; (None, None) for a
    delta manifest (a base and its changes)."""
    external = lister.external_data_configuration
    if external is None:
        return frozenset(), None
    uris = list(external.source_uris or [])
    if len(uris) != 1:
        return None, None
    source = f"{objects.qualified(lister.table_id)} sourceUris"
    try:
        relative = contained_uri(uris[0], base, source)
        data = table.location.read_file(table.location.inside(relative, source))
    except (HudiSyncError, OSError) as exc:
        return None, f"{uris[0]}: {type(exc).__name__}: {exc}"
    lines = data.decode("utf-8", "replace").splitlines()
    return frozenset(line.rsplit("/", 1)[-1] for line in lines if line), None
