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
The marker (instant, base, mode) is recorded in each object's description and labels.

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

import json
import re
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError, HudiSyncError, UnsupportedTableError
from hudi_sync.manifest.change_feed import DATE_KEY, TIME_KEY, PublishedChanges
from hudi_sync.manifest.log_parquet import FILE_ID_COLUMN, SOURCE_COLUMN
from hudi_sync.manifest.snapshot import PublishedLogs, PublishedManifest
from hudi_sync.table import HudiTable
from hudi_sync.table.record_merge import BASE_ROW_COLUMN, DELETED_COLUMN, LOG_WINS_COLUMN
from hudi_sync.table.schema import PartitionField, partition_fields
from hudi_sync.warehouse.bigquery.schema import arrow_field, partition_key_type, table_schema
from hudi_sync.warehouse.common import (
    ObjectNames,
    SnapshotQuery,
    SyncMarker,
    SyncPlan,
    SyncResult,
    changing_plan,
    declared_schema,
    offline_note,
    ordering_kind,
    refuse_other_table,
    restore_reason,
    settled_plan,
    snapshot_query,
)
from hudi_sync.warehouse.common.quoting import bigquery_identifier as _quote
from hudi_sync.warehouse.common.quoting import bigquery_literal as _string

if TYPE_CHECKING:
    from google.cloud import bigquery

PREFIX = cfg.BIGQUERY_PREFIX
# Not a Hudi key: the BigQuery API endpoint, for emulators (reached without credentials).
API_ENDPOINT = cfg.BIGQUERY_API_ENDPOINT.key
MANIFEST_FILE_SET = "FILE_SET_SPEC_TYPE_NEW_LINE_DELIMITED_MANIFEST"
# Project ids: lowercase, digits, hyphens (optionally domain-scoped); datasets: letters,
# digits and underscores; tables: letters, marks, digits, connectors, dashes and spaces.
_PROJECT = re.compile(r"(?:[a-z0-9.-]+:)?[a-z][a-z0-9-]{4,28}[a-z0-9]")
_DATASET = re.compile(r"\w{1,1024}")
_TABLE = re.compile(r"[\w\- ]{1,1024}")
_LABEL_VALUE = re.compile(r"[^a-z0-9_-]")
_PARTITION_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,299}")


@dataclass(frozen=True)
class BigQuerySyncConfig:
    """The sync's options, named as Hudi's ``hoodie.gcp.bigquery.sync.*`` keys."""

    project_id: str
    dataset_name: str
    table_name: str
    dataset_location: str | None = None
    billing_project_id: str | None = None
    source_uri: tuple[str, ...] = ()
    source_uri_prefix: str | None = None
    use_bq_manifest_file: bool = False
    partition_fields: tuple[str, ...] = ()
    require_partition_filter: bool = False
    big_lake_connection_id: str | None = None
    retry_seconds: float = cfg.BIGQUERY_RETRY_SECONDS.read({})

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> BigQuerySyncConfig:
        """Build from ``hoodie.gcp.bigquery.sync.*`` keys (the prefix may be omitted)."""
        # By full key, whether given with the prefix or without; blank values are unset.
        values = {
            PREFIX + k.removeprefix(PREFIX): v for k, v in options.items() if v not in (None, "")
        }
        unknown = set(values) - _OPTION_KEYS
        if unknown:
            raise BadInputError(f"unknown BigQuery sync option {sorted(unknown)[0]}")
        for required in (
            cfg.BIGQUERY_PROJECT_ID,
            cfg.BIGQUERY_DATASET_NAME,
            cfg.BIGQUERY_TABLE_NAME,
        ):
            if not required.given(values):
                raise BadInputError(f"missing BigQuery sync option {required.key}")
        config = cls(
            project_id=str(cfg.BIGQUERY_PROJECT_ID.text(values)),
            dataset_name=str(cfg.BIGQUERY_DATASET_NAME.text(values)),
            table_name=str(cfg.BIGQUERY_TABLE_NAME.text(values)),
            dataset_location=cfg.BIGQUERY_DATASET_LOCATION.text(values),
            billing_project_id=cfg.BIGQUERY_BILLING_PROJECT_ID.text(values),
            source_uri=cfg.BIGQUERY_SOURCE_URI.read(values),
            source_uri_prefix=cfg.BIGQUERY_SOURCE_URI_PREFIX.text(values),
            use_bq_manifest_file=cfg.BIGQUERY_USE_MANIFEST_FILE.read(values),
            partition_fields=cfg.BIGQUERY_PARTITION_FIELDS.read(values),
            require_partition_filter=cfg.BIGQUERY_REQUIRE_PARTITION_FILTER.read(values),
            big_lake_connection_id=cfg.BIGQUERY_BIG_LAKE_CONNECTION_ID.text(values),
            retry_seconds=cfg.BIGQUERY_RETRY_SECONDS.read(values),
        )
        config.validate()
        return config

    def validate(self) -> None:
        checks = (
            (cfg.BIGQUERY_PROJECT_ID, self.project_id, _PROJECT),
            (cfg.BIGQUERY_BILLING_PROJECT_ID, self.billing_project_id, _PROJECT),
            (cfg.BIGQUERY_DATASET_NAME, self.dataset_name, _DATASET),
            (cfg.BIGQUERY_TABLE_NAME, self.table_name, _TABLE),
        )
        for spec, value, pattern in checks:
            if value is not None and not pattern.fullmatch(value):
                raise BadInputError(f"{spec.key}={value!r} is not a valid BigQuery identifier")
        for uri in (*self.source_uri, self.source_uri_prefix or "gs://"):
            if not uri.startswith("gs://"):
                raise BadInputError(
                    f"{cfg.BIGQUERY_SOURCE_URI.key} {uri!r}: BigQuery reads gs:// URIs only"
                )

    @property
    def mode(self) -> str:
        return "manifest" if self.use_bq_manifest_file else "view"


# Every declared hoodie.gcp.bigquery.sync.* key but the endpoint (the target's, not the
# config's); base_path, use_file_listing_from_metadata and assume_date_partitioning are
# Hudi's keys that need nothing here, accepted and ignored.
_OPTION_KEYS = {spec.key for spec in cfg.group("sync/bigquery")} - {API_ENDPOINT}


@dataclass
class _Step:
    """One API call of a sync, printable for ``--dry-run``."""

    verb: str  # "create-dataset", "create", "update", "delete"
    object_id: str
    resource: dict[str, Any] = field(default_factory=dict)

    def render(self) -> str:
        body = json.dumps(self.resource, sort_keys=True) if self.resource else ""
        return f"{self.verb} {self.object_id} {body}".rstrip()


class BigQueryTarget:
    """Syncs a table's published manifest into BigQuery external tables and a view."""

    @property
    def supports_delta_manifests(self) -> bool:
        """View mode can union a base and its changes; a manifest-file table cannot."""
        return not self.config.use_bq_manifest_file

    # External tables read PARQUET and ORC base files (sourceFormat is the table's format).
    base_file_formats: frozenset[str] = frozenset({"PARQUET", "ORC"})
    # A CDC table gets ``<t>_changes`` over its change feed (change_feed.py).
    supports_change_feed = True

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

    def _id(self, table_id: str) -> str:
        return f"{self.config.project_id}.{self.config.dataset_name}.{table_id}"

    def _ref(self, table_id: str) -> dict[str, str]:
        return {
            "projectId": self.config.project_id,
            "datasetId": self.config.dataset_name,
            "tableId": table_id,
        }

    # -- reading the current state -------------------------------------------------------
    def _get(self, table_id: str) -> bigquery.Table | None:
        from google.api_core import exceptions

        try:
            return self.client.get_table(self._id(table_id), **self._bounded())
        except exceptions.NotFound:
            return None
        except (exceptions.GoogleAPICallError, exceptions.RetryError) as exc:
            raise _failure(f"read table {self._id(table_id)}", exc) from exc

    def _get_all(self, table_ids: tuple[str, ...]) -> dict[str, bigquery.Table | None]:
        """The tables by id (None when missing), read at once: each read is a round
        trip, and a plan needs them all."""
        with ThreadPoolExecutor(max_workers=min(len(table_ids), _READERS)) as pool:
            return dict(zip(table_ids, pool.map(self._get, table_ids), strict=True))

    def _dataset_steps(self) -> list[_Step]:
        """Create the dataset when missing; refuse one in another location."""
        from google.api_core import exceptions

        dataset_id = f"{self.config.project_id}.{self.config.dataset_name}"
        try:
            dataset = self.client.get_dataset(dataset_id, **self._bounded())
        except exceptions.NotFound:
            return [self._create_dataset_step()]
        except (exceptions.GoogleAPICallError, exceptions.RetryError) as exc:
            raise _failure(f"read dataset {dataset_id}", exc) from exc
        wanted = self.config.dataset_location
        if wanted and (dataset.location or "").lower() != wanted.lower():
            raise BadInputError(
                f"dataset {dataset_id} is in {dataset.location}, but "
                f"{cfg.BIGQUERY_DATASET_LOCATION.key} is {wanted}"
            )
        return []

    def _create_dataset_step(self) -> _Step:
        dataset_id = f"{self.config.project_id}.{self.config.dataset_name}"
        resource: dict[str, Any] = {
            "datasetReference": {
                "projectId": self.config.project_id,
                "datasetId": self.config.dataset_name,
            }
        }
        if self.config.dataset_location:
            resource["location"] = self.config.dataset_location
        return _Step("create-dataset", dataset_id, resource)

    def _bounded(self) -> dict[str, Any]:
        """Each API call's retry and timeout: retried for ``retry_seconds`` (the client's
        own default is ten minutes, which would hold a watch and its stop signal)."""
        from google.cloud.bigquery.retry import DEFAULT_RETRY

        seconds = self.config.retry_seconds
        return {
            "retry": DEFAULT_RETRY.with_deadline(seconds),
            "timeout": max(min(seconds, 30.0), 1.0),
        }

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
            self.client.get_dataset(dataset_id, retry=None, timeout=_PROBE_SECONDS)  # type: ignore[arg-type]
        except HudiSyncError as exc:  # no credentials (bigquery_client)
            return str(exc)
        except (
            exceptions.Unauthorized,
            GoogleAuthError,
            requests.exceptions.ConnectionError,
            requests.exceptions.Timeout,
        ) as exc:
            return str(_failure(f"read dataset {dataset_id}", exc))
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

    def _plan(
        self,
        table: HudiTable,
        published: PublishedManifest,
        as_of: bool,
        force: bool,
        offline: str | None = None,
        replace_other_table: bool = False,
    ) -> tuple[SyncPlan, list[_Step]]:
        """The plan, from the objects that exist; ``offline`` (why BigQuery cannot be
        read): a first sync's plan, every object created, and a note saying so. Objects
        whose marker names another base are refused unless ``force`` or
        ``replace_other_table``."""
        names = self.object_names(table, published, as_of)
        marker = SyncMarker.of(published.manifest.instant, self._base_uri(table), self.config.mode)
        target = self.name
        if offline is not None:
            resources = self._resources(table, published, names, marker)
            steps = [self._create_dataset_step()]
            steps += [
                _Step("create", self._id(r["tableReference"]["tableId"]), r) for r in resources
            ]
            note = offline_note(offline, self._needs())
            return SyncPlan(target, "create", [s.render() for s in steps], note), steps
        # A feed no longer published (hudi_sync.sync.change.feed turned off) is dropped.
        feed = (names.feed,) if names.changes is None and not as_of else ()
        tables = self._get_all((*names.all(), *feed))
        existing = {i: tables[i] for i in names.all()}
        markers = {i: SyncMarker.parse(t.description) for i, t in existing.items() if t}
        foreign = [i for i, t in existing.items() if t is not None and markers[i] is None]
        if foreign and not force:
            raise BadInputError(
                f"{self._id(foreign[0])} exists and was not created by hudi_sync; "
                "drop it or use --force"
            )
        shown = {self._id(i): m for i, m in markers.items()}
        refuse_other_table(target, shown, marker, force or replace_other_table)
        marked = names.marked(published.logs)
        current = markers.get(marked)
        restored = restore_reason(table, marked, current, marker)
        settled = settled_plan(target, marked, current, marker, force, restored=restored)
        if settled is not None:
            return settled, []
        same_objects = marker.same_objects(current)
        steps = self._dataset_steps()
        deleted: set[str] = set()
        if current is not None and not same_objects:
            # A changed base path or mode: the old objects go, the new ones are created.
            deleted = {i for i, t in existing.items() if t is not None}
            steps += [_Step("delete", self._id(i)) for i in sorted(deleted)]
        for resource in self._resources(table, published, names, marker):
            table_id = resource["tableReference"]["tableId"]
            found = existing[table_id]
            exists = found is not None and table_id not in deleted
            if (
                found is not None
                and exists
                and (_kind(found) != _resource_kind(resource) or _drops_columns(found, resource))
            ):
                # A native table made before the first commit becomes external (or back,
                # with --force), a manifest table switches between full and delta
                # manifests: BigQuery changes neither a table's type nor drops a column
                # in place. Until the view is updated, a query of it fails.
                steps.append(_Step("delete", self._id(table_id)))
                exists = False
            steps.append(_Step("update" if exists else "create", self._id(table_id), resource))
        if feed and tables[names.feed] is not None:
            steps.append(_Step("delete", self._id(names.feed)))
        # Log objects no longer read (a compaction left no log records): dropped after the
        # snapshot view stopped reading them.
        wanted = names.synced(published.logs)
        for table_id in (n for n in (names.log_manifest, names.log_history) if n):
            gone = table_id not in wanted and table_id not in deleted
            if gone and existing.get(table_id) is not None:
                steps.append(_Step("delete", self._id(table_id)))
        action = "create" if current is None else ("update" if same_objects else "recreate")
        return changing_plan(target, action, [s.render() for s in steps], restored), steps

    def _base_uri(self, table: HudiTable) -> str:
        base = (self.config.source_uri_prefix or table.uri).rstrip("/")
        if not base.startswith("gs://"):
            raise BadInputError(
                f"{table.uri}: BigQuery reads gs:// only; set {cfg.BIGQUERY_SOURCE_URI_PREFIX.key} "
                "to the table's gs:// location"
            )
        if WILDCARD in base:
            raise BadInputError(wildcard_refusal(base))
        if self.config.use_bq_manifest_file and base != table.uri.rstrip("/"):
            raise BadInputError(
                f"{cfg.BIGQUERY_SOURCE_URI_PREFIX.key} {base} must be the table's own location "
                f"{table.uri} in manifest-file mode (the manifest lists absolute URIs)"
            )
        return base

    def _resources(
        self, table: HudiTable, published: PublishedManifest, names: ObjectNames, marker: SyncMarker
    ) -> list[dict[str, Any]]:
        """REST resources of the objects, in the order they must be applied."""

        def seen_by_bigquery(uri: str) -> str:
            """A manifest's URI under ``source_uri_prefix`` (the table may be opened
            through another path, e.g. a local mount of the bucket)."""
            return marker.base + uri[len(table.uri.rstrip("/")) :]

        stamp = {"description": marker.render(), "labels": _labels(marker)}
        feed = (
            [self._changes_resource(names.changes, published.changes, stamp, seen_by_bigquery)]
            if names.changes is not None and published.changes is not None
            else []
        )
        avro = snapshot_avro_schema(table, published.manifest.instant)
        fields = partition_fields(avro, table.config.partition_fields, table.config.key_generator)
        hive = self._hive_partitioning(table, marker.base, fields)
        excluded = frozenset(self._partition_names(fields)) if hive else frozenset()
        schema = table_schema(avro, table.config.populate_meta_fields, excluded)
        base_format = table.config.base_file_format
        if base_format not in self.base_file_formats:
            raise UnsupportedTableError(f"BigQuery external tables cannot read {base_format}")
        files: dict[str, Any] = {"sourceFormat": base_format, "autodetect": False}
        if base_format == "PARQUET":
            files["parquetOptions"] = {"enableListInference": True}
        if hive:
            files["hivePartitioningOptions"] = hive
        if self.config.big_lake_connection_id:
            files["connectionId"] = self.config.big_lake_connection_id
        if self.config.use_bq_manifest_file:
            external = files | {
                "sourceUris": [published.uris_uri],
                "fileSetSpecType": MANIFEST_FILE_SET,
            }
            single = {
                "tableReference": self._ref(names.view),
                "schema": {"fields": schema},
                "externalDataConfiguration": external,
                **stamp,
            }
            if marker.is_empty:
                return [*self._empty_tables(table, names, fields, [single]), *feed]
            return [single, *feed]
        with_meta = table.config.populate_meta_fields
        history = {
            "tableReference": self._ref(names.history),
            "schema": {"fields": schema},
            "externalDataConfiguration": files
            | {"sourceUris": list(self.config.source_uri) or history_uris(table, marker.base)},
            **stamp,
        }
        file_column = "_hoodie_file_name" if with_meta else "_FILE_NAME"
        manifest_id = _quote(self._id(names.manifest))
        delta = published.delta
        if delta is None:
            # Tables without meta fields filter on the _FILE_NAME pseudo column, which
            # holds absolute URIs: their manifest is the URI list.
            sources = [seen_by_bigquery(published.files_uri if with_meta else published.uris_uri)]
            column = "filename"
            files_sql = f"SELECT filename FROM {manifest_id}"
        else:
            sources = [seen_by_bigquery(published.uris_uri), seen_by_bigquery(delta.changes_uri)]
            column = DELTA_ENTRY_COLUMN
            files_sql = delta_files_select(
                manifest_id, delta.base_prefix, None if with_meta else marker.base
            )
        manifest = {
            "tableReference": self._ref(names.manifest),
            "schema": {"fields": [{"name": column, "type": "STRING", "mode": "NULLABLE"}]},
            "externalDataConfiguration": {
                "sourceFormat": "CSV",
                "sourceUris": sources,
                "csvOptions": {
                    "skipLeadingRows": "0",
                    "fieldDelimiter": LINE_DELIMITER,
                    "quote": "",
                },
                "autodetect": False,
            },
            **stamp,
        }
        query = (
            f"SELECT * FROM {_quote(self._id(names.history))} WHERE {file_column} IN ({files_sql})"
        )
        view = _view_resource(self._ref(names.view), query, stamp)
        if marker.is_empty:
            empty = self._empty_tables(table, names, fields, [history, manifest, *feed, view])
            if names.snapshot_view and published.logs:  # no commit, no log: read-optimized rows
                query = f"SELECT * FROM {_quote(self._id(names.view))}"
                empty.append(_view_resource(self._ref(names.snapshot_view), query, stamp))
            return empty
        logs = published.logs
        if names.snapshot_view is None or logs is None:
            return [history, manifest, *feed, view]
        columns = [f["name"] for f in schema] + (self._partition_names(fields) if hive else [])
        snapshot = self._snapshot_resources(names, logs, columns, avro, stamp, seen_by_bigquery)
        return [history, manifest, *feed, view, *snapshot]

    def _changes_resource(
        self,
        table_id: str,
        changes: PublishedChanges,
        stamp: dict[str, Any],
        seen_by_bigquery: Callable[[str], str],
    ) -> dict[str, Any]:
        """``<t>_changes``: a PARQUET external table whose file set is the feed's lists of
        change files (``NEW_LINE_DELIMITED_MANIFEST``: each source URI a list, the base's
        and the delta's; switched to the next lists in one metadata update),
        hive-partitioned by ``commit_date`` and ``commit_time`` so a query for recent
        changes reads only their files. A feed without a change file yet is a native
        table with the same columns and no rows (an external table whose list names no
        file cannot be queried)."""
        folder = seen_by_bigquery(changes.folder_uri).rstrip("/")
        partitions = [
            {"name": DATE_KEY, "type": "DATE", "mode": "NULLABLE"},
            {"name": TIME_KEY, "type": "STRING", "mode": "NULLABLE"},
        ]
        fields = [arrow_field(f.name, f.type) for f in changes.schema]
        described = {**stamp, "description": f"{stamp['description']} ({changes.description()})"}
        resource: dict[str, Any] = {"tableReference": self._ref(table_id), **described}
        if not changes.count:
            return resource | {"schema": {"fields": fields + partitions}}
        keys = "/".join(f"{{{p['name']}:{p['type']}}}" for p in partitions)
        return resource | {
            "schema": {"fields": fields},
            "externalDataConfiguration": {
                "sourceFormat": "PARQUET",
                "autodetect": False,
                "parquetOptions": {"enableListInference": True},
                "sourceUris": [seen_by_bigquery(uri) for uri in changes.uri_lists()],
                "fileSetSpecType": MANIFEST_FILE_SET,
                "hivePartitioningOptions": {
                    "mode": "CUSTOM",
                    "sourceUriPrefix": f"{folder}/{keys}",
                },
            },
        }

    def _snapshot_resources(
        self,
        names: ObjectNames,
        logs: PublishedLogs,
        columns: list[str],
        avro: dict[str, Any],
        stamp: dict[str, Any],
        seen_by_bigquery: Callable[[str], str],
    ) -> list[dict[str, Any]]:
        """``<t>_log_history`` (a PARQUET external table over the folded log files'
        folder), ``<t>_log_manifest`` (the snapshot's list of them) and the snapshot view
        ``<t>_rt``, last. A snapshot without log records: the view reads ``<t>_ro``."""
        assert names.snapshot_view and names.log_manifest and names.log_history
        ro = _quote(self._id(names.view))
        if not logs.names:
            query = f"SELECT * FROM {ro}"
            return [_view_resource(self._ref(names.snapshot_view), query, stamp)]
        extra = {FILE_ID_COLUMN: "STRING", DELETED_COLUMN: "BOOLEAN"}
        extra |= {LOG_WINS_COLUMN: "BOOLEAN", BASE_ROW_COLUMN: "STRING", SOURCE_COLUMN: "STRING"}
        log_schema = [
            *table_schema(avro, True),
            *({"name": n, "type": t, "mode": "NULLABLE"} for n, t in extra.items()),
        ]
        base = seen_by_bigquery(logs.folder_uri)
        log_history = {
            "tableReference": self._ref(names.log_history),
            "schema": {"fields": log_schema},
            "externalDataConfiguration": {
                "sourceFormat": "PARQUET",
                "autodetect": False,
                "parquetOptions": {"enableListInference": True},
                "sourceUris": [f"{base.rstrip('/')}/*.parquet"],
            },
            **stamp,
        }
        log_manifest = {
            "tableReference": self._ref(names.log_manifest),
            "schema": {"fields": [{"name": "filename", "type": "STRING", "mode": "NULLABLE"}]},
            "externalDataConfiguration": {
                "sourceFormat": "CSV",
                "sourceUris": [seen_by_bigquery(logs.files_uri)],
                "csvOptions": {"skipLeadingRows": "0", "fieldDelimiter": ",", "quote": ""},
                "autodetect": False,
            },
            **stamp,
        }
        query = snapshot_select(
            ro,
            _quote(self._id(names.log_history)),
            _quote(self._id(names.log_manifest)),
            columns,
            {f["name"] for f in log_schema},
            logs.ordering_field,
            ordering_kind(logs),
        )
        rt = _view_resource(self._ref(names.snapshot_view), query, stamp)
        return [log_history, log_manifest, rt]

    def _empty_tables(
        self,
        table: HudiTable,
        names: ObjectNames,
        fields: list[PartitionField],
        resources: list[dict[str, Any]],
    ) -> list[dict[str, Any]]:
        """Before the table's first commit no file exists, and a query of an external
        table whose URIs match no file fails: the external tables become native tables
        with the same columns (hive partition keys last, as BigQuery adds them) and no
        rows. The view keeps its query, or selects no row from the history where it
        would filter on the ``_FILE_NAME`` pseudo column, which only external tables have."""
        types = {f.name: f.avro_type for f in fields}
        partition_columns = [
            {"name": n, "type": partition_key_type(types.get(n, "string"), n), "mode": "NULLABLE"}
            for n in self._partition_names(fields)
        ]
        empty = []
        for resource in resources:
            resource = dict(resource)
            external = resource.pop("externalDataConfiguration", None)
            if external is not None and "hivePartitioningOptions" in external:
                resource["schema"] = {"fields": resource["schema"]["fields"] + partition_columns}
            if "view" in resource and not table.config.populate_meta_fields:
                query = f"SELECT * FROM {_quote(self._id(names.history))} WHERE FALSE"
                resource["view"] = {**resource["view"], "query": query}
            empty.append(resource)
        return empty

    def _partition_names(self, fields: list[PartitionField]) -> list[str]:
        return list(self.config.partition_fields) or [f.name for f in fields]

    def _hive_partitioning(
        self, table: HudiTable, base: str, fields: list[PartitionField]
    ) -> dict[str, Any] | None:
        """Typed hive keys (``{dt:DATE}``) when the partition paths are ``key=value``."""
        names = self._partition_names(fields)
        if not names or not table.config.hive_style_partitioning:
            return None
        brace = next((c for c in "{}" if c in base), None)
        if brace is not None:
            raise BadInputError(
                f"{base}: BigQuery cannot read this location's hive partitions: "
                f"{brace!r} in a hive sourceUriPrefix starts or ends a partition key"
            )
        types = {f.name: f.avro_type for f in fields}
        for name in names:  # each is a {name:TYPE} key of the URI template, then a column
            if not _PARTITION_KEY.fullmatch(name):
                raise BadInputError(
                    f"hive partition key {name!r} is not a BigQuery column name "
                    "(letters, digits and underscores)"
                )
        keys = "/".join(
            f"{{{name}:{partition_key_type(types.get(name, 'string'), name)}}}" for name in names
        )
        return {
            "mode": "CUSTOM",
            "sourceUriPrefix": f"{base}/{keys}",
            "requirePartitionFilter": self.config.require_partition_filter,
        }

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
        feed = (names.changes,) if names.changes else ()
        objects = (
            (names.view, *feed)
            if self.config.use_bq_manifest_file
            else names.synced(published.logs)
        )
        instant = published.manifest.instant
        if dry_run or not plan.steps:
            return plan, plan.result(instant, objects, dry_run)
        for step in calls:
            self._apply(step)
        return plan, plan.result(instant, objects)

    def _apply(self, step: _Step) -> None:
        from google.api_core import exceptions
        from google.cloud import bigquery

        try:
            if step.verb == "create-dataset":
                dataset = bigquery.Dataset.from_api_repr(step.resource)
                self.client.create_dataset(dataset, **self._bounded())
            elif step.verb == "delete":
                self.client.delete_table(step.object_id, not_found_ok=True, **self._bounded())
            elif step.verb == "create":
                table = bigquery.Table.from_api_repr(step.resource)
                self.client.create_table(table, **self._bounded())
            else:
                resource = bigquery.Table.from_api_repr(step.resource)
                fields = ["description", "labels", *_UPDATED_FIELDS[_resource_kind(step.resource)]]
                self.client.update_table(resource, fields, **self._bounded())
        except (exceptions.GoogleAPICallError, exceptions.RetryError) as exc:
            raise _failure(f"{step.verb} {step.object_id}", exc) from exc


def bigquery_client(config: BigQuerySyncConfig, api_endpoint: str | None = None) -> bigquery.Client:
    """A client billed to ``billing.project.id`` (else the project); an ``api_endpoint``
    (an emulator) is reached without credentials."""
    from google.cloud import bigquery

    project = config.billing_project_id or config.project_id
    if api_endpoint is None:
        from google.auth.exceptions import DefaultCredentialsError

        try:
            return bigquery.Client(project=project)
        except DefaultCredentialsError as exc:
            raise HudiSyncError(f"BigQuery credentials for {project}: {exc}") from None
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials

    return bigquery.Client(
        project=project,
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options=ClientOptions(api_endpoint=api_endpoint),
    )


def snapshot_avro_schema(table: HudiTable, instant: str | None) -> dict[str, Any]:
    """``table.avro_schema`` when it was read already (a cached property), else the
    declared schema (``declared_schema``: from the timeline's tail at the synced
    snapshot's ``instant``), else ``table.avro_schema`` (a parquet footer)."""
    if "avro_schema" in vars(table):
        return table.avro_schema
    return declared_schema(table, instant) or table.avro_schema


def history_uris(table: HudiTable, base: str) -> list[str]:
    """``<base>/<c>*.<ext>`` (``.parquet``, ``.orc``: the table's base file extension) for
    each first character ``c`` of the names in the table's folder (partition folders, or
    base files when not partitioned), so every version of every base file matches, with
    one wildcard per URI (BigQuery's rule) and never ``.hoodie/`` (hidden names are
    skipped; ``*`` crosses ``/`` but the first character does not)."""
    names = table.location.fs.ls(table.location.path, detail=False)
    firsts = {str(n).rstrip("/").rsplit("/", 1)[-1] for n in names}
    starts = {name[:1]: name for name in sorted(firsts)}
    if WILDCARD in starts:
        raise BadInputError(wildcard_refusal(f"{base}/{starts[WILDCARD]}"))
    extension = table.view.base_extension
    return [f"{base}/{c}*{extension}" for c in sorted(starts.keys() - {"", ".", "_"})]


# A source URI's one wildcard; BigQuery reads every other character as itself, and has
# no escape for a literal one.
WILDCARD = "*"


def wildcard_refusal(path: str) -> str:
    """Why ``path`` (holding ``*``) cannot be a BigQuery source URI's literal part."""
    return (
        f"{path}: BigQuery reads '{WILDCARD}' in a source URI as its one wildcard and "
        "cannot escape it; move the table to a location without it"
    )


# A manifest table reads each line whole: a tab never occurs in a manifest's lines
# (``hudi_sync.manifest.safe_paths``), where a comma can (a partition folder's).
DELTA_ENTRY_COLUMN = "entry"
LINE_DELIMITER = "\t"


def delta_files_select(manifest_id: str, base_prefix: str, uri_base: str | None) -> str:
    """The file names (with ``uri_base``: absolute URIs under it) of a delta manifest's
    snapshot, from its table's entries: base lines are absolute URIs starting with
    ``base_prefix``; change lines are CSV rows ``<partition>/<file id>,<file name>`` (the
    name empty for a removed group, the first field quoted when it holds a comma). A
    base file's group is its path up to the file name's first ``_``."""
    prefix = _string(base_prefix)
    first_field = r"REGEXP_EXTRACT(entry, r'^(.*),[^,]*$')"
    unquoted = (
        f"IF(STARTS_WITH({first_field}, '\"'), "
        f"REPLACE(SUBSTR({first_field}, 2, LENGTH({first_field}) - 2), '\"\"', '\"'), "
        f"{first_field})"
    )
    relative = (
        "WITH lines AS ("
        f"SELECT entry, STARTS_WITH(entry, {prefix}) AS is_base FROM {manifest_id}), "
        f"base AS (SELECT SUBSTR(entry, {len(base_prefix) + 1}) AS path "
        "FROM lines WHERE is_base), "
        f"changes AS (SELECT {unquoted} AS file_group, "
        "REGEXP_EXTRACT(entry, r',([^,]*)$') AS filename FROM lines WHERE NOT is_base) "
        "SELECT path FROM base WHERE REGEXP_EXTRACT(path, r'^(?:.*/)?[^/_]*') NOT IN "
        "(SELECT file_group FROM changes) "
        "UNION ALL SELECT CONCAT(IFNULL(REGEXP_EXTRACT(file_group, r'^(.*/)'), ''), filename) "
        "FROM changes WHERE filename != ''"
    )
    if uri_base is None:
        return f"SELECT REGEXP_EXTRACT(path, r'[^/]+$') FROM ({relative})"
    return f"SELECT CONCAT({_string(uri_base.rstrip('/') + '/')}, path) FROM ({relative})"


def _view_resource(reference: dict[str, str], query: str, stamp: dict[str, Any]) -> dict[str, Any]:
    return {"tableReference": reference, "view": {"query": query, "useLegacySql": False}, **stamp}


def snapshot_select(
    ro: str,
    log_history: str,
    log_manifest: str,
    columns: list[str],
    log_columns: set[str],
    ordering: str | None,
    kind: str | None = None,
) -> str:
    """The snapshot view's query (``snapshot_query``) in GoogleSQL: ``columns`` (the
    read-optimized view's, in its order) on both sides, null where the log files lack one."""
    q = _quote
    spelling = SnapshotQuery(
        q,
        _string,
        lambda column: f"REGEXP_EXTRACT({column}, r'^[^_]+')",
        ", ".join(f"b.{q(c)}" for c in columns),
        ", ".join(f"l.{q(c)}" if c in log_columns else f"NULL AS {q(c)}" for c in columns),
        is_nan=lambda value: f"IS_NAN({value})",
        fail=lambda message: f"ERROR({message})",
    )
    return snapshot_query(spelling, ro, log_history, log_manifest, ordering, kind)


# What an update of each kind of object sets (besides description and labels).
_UPDATED_FIELDS = {
    "view": ["view_query"],
    "external": ["schema", "external_data_configuration"],
    "native": ["schema"],
}


def _kind(table: bigquery.Table) -> str:
    """``view``, ``external`` or ``native`` (a native table holds the empty snapshot)."""
    if table.view_query is not None:
        return "view"
    return "external" if table.external_data_configuration is not None else "native"


def _drops_columns(table: bigquery.Table, resource: dict[str, Any]) -> bool:
    """The resource's schema lacks a column the table has."""
    if "schema" not in resource:
        return False
    wanted = {f["name"] for f in resource["schema"]["fields"]}
    return any(f.name not in wanted for f in table.schema)


def _resource_kind(resource: dict[str, Any]) -> str:
    if "view" in resource:
        return "view"
    return "external" if "externalDataConfiguration" in resource else "native"


def _labels(marker: SyncMarker) -> dict[str, str]:
    """Label values allow ``[a-z0-9_-]`` only: the instant and mode fit, the base does not."""
    return {
        "hudi_sync_instant": marker.instant,
        "hudi_sync_mode": _LABEL_VALUE.sub("_", marker.mode.lower()),
    }


def _flag(spec: cfg.OptionSpec[Any]) -> str:
    """The CLI flag of a ``hoodie.gcp.bigquery.sync.*`` option."""
    return "--" + spec.key.removeprefix(PREFIX).replace("_", "-").replace(".", "-")


# How long an offline dry run waits for BigQuery's first answer.
_PROBE_SECONDS = 30.0
# Tables a plan reads at once (a MOR table with a change feed has eight objects).
_READERS = 8


def _failure(action: str, exc: Exception) -> HudiSyncError:
    from google.api_core import exceptions

    if isinstance(exc, exceptions.RetryError):  # no answer within retry_seconds
        cause = exc.cause if exc.cause is not None else exc
        last = str(cause).splitlines()[0] if str(cause) else type(cause).__name__
        return HudiSyncError(
            f"BigQuery {action} failed: no answer within the retries of "
            f"{cfg.BIGQUERY_RETRY_SECONDS.key}: {last}"
        )
    message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return HudiSyncError(f"BigQuery {action} failed: {message}")
