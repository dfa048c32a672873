"""The BigQuery objects of a sync, as REST resources: the history and manifest external
tables and the view (manifest mode: one external table over the manifest), a
Merge-on-Read table's log tables and snapshot view, native tables without rows before
the first commit, and the views' GoogleSQL."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError, UnsupportedTableError
from hudi_sync.manifest.log_parquet import FILE_ID_COLUMN, SOURCE_COLUMN
from hudi_sync.manifest.snapshot import PublishedLogs, PublishedManifest
from hudi_sync.table import HudiTable
from hudi_sync.table.config.schema import PartitionField, partition_fields
from hudi_sync.table.records.merge import BASE_ROW_COLUMN, DELETED_COLUMN, LOG_WINS_COLUMN
from hudi_sync.table.timeline.listing import TimelineListing
from hudi_sync.warehouse.bigquery.change_feed import changes_resource
from hudi_sync.warehouse.bigquery.client import MANIFEST_FILE_SET, Step
from hudi_sync.warehouse.bigquery.config import BigQuerySyncConfig
from hudi_sync.warehouse.bigquery.schema import (
    Field,
    column_type,
    partition_key_type,
    table_schema,
)
from hudi_sync.warehouse.common import (
    ObjectNames,
    SnapshotQuery,
    SyncMarker,
    declared_schema,
    ordering_kind,
    snapshot_query,
)
from hudi_sync.warehouse.common.quoting import bigquery_identifier as _quote
from hudi_sync.warehouse.common.quoting import bigquery_literal as _string

if TYPE_CHECKING:
    from google.cloud import bigquery

# The label holding ``BigQuerySyncConfig.definition_digest`` on each manifest object.
DEFINITION_LABEL = "hudi_sync_options"
_LABEL_VALUE = re.compile(r"[^a-z0-9_-]")
_PARTITION_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,299}")
# External tables read PARQUET and ORC base files (sourceFormat is the table's format).
BASE_FILE_FORMATS: frozenset[str] = frozenset({"PARQUET", "ORC"})


@dataclass(frozen=True)
class BigQueryObjects:
    """The REST bodies of a sync's objects (tables, views, the dataset) in the dataset
    ``config`` names, in the order they must be applied."""

    config: BigQuerySyncConfig

    def qualified(self, table_id: str) -> str:
        return f"{self.config.project_id}.{self.config.dataset_name}.{table_id}"

    def reference(self, table_id: str) -> dict[str, str]:
        return {
            "projectId": self.config.project_id,
            "datasetId": self.config.dataset_name,
            "tableId": table_id,
        }

    def create_dataset_step(self) -> Step:
        dataset_id = f"{self.config.project_id}.{self.config.dataset_name}"
        resource: dict[str, Any] = {
            "datasetReference": {
                "projectId": self.config.project_id,
                "datasetId": self.config.dataset_name,
            }
        }
        if self.config.dataset_location:
            resource["location"] = self.config.dataset_location
        return Step("create-dataset", dataset_id, resource)

    def labels(self, marker: SyncMarker) -> dict[str, str]:
        """The manifest objects' labels: the marker's, and the definition options' digest
        (``definition_digest``) that a rerun at the same instant compares."""
        return labels(marker) | {DEFINITION_LABEL: self.config.definition_digest}

    def defined_alike(self, found: bigquery.Table | None) -> bool:
        """``found`` carries the digest of this sync's definition options: no option
        that shapes the objects changed since the sync that stamped it (an object
        stamped before the digest was recorded has none, and is updated once)."""
        return found is not None and (found.labels or {}).get(DEFINITION_LABEL) == (
            self.config.definition_digest
        )

    def base_uri(self, table: HudiTable) -> str:
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

    def refuse_without_hive_partitions(self, table: HudiTable) -> None:
        """``partition_fields`` and ``require_partition_filter=true`` shape the data
        table's hive partitioning, which a table without ``key=value`` partition folders
        (not partitioned, or not hive-style) has not: refused in one line rather than
        ignored (or, for ``partition_fields``, turned into keys no path has)."""
        config = table.config
        if config.is_partitioned and config.hive_style_partitioning:
            return
        why = (
            "is not partitioned"
            if not config.is_partitioned
            else f"has no key=value partition folders ({cfg.HIVE_STYLE.key}=false)"
        )
        given = (
            (cfg.BIGQUERY_PARTITION_FIELDS.key, bool(self.config.partition_fields)),
            (
                cfg.BIGQUERY_REQUIRE_PARTITION_FILTER.key + "=true",
                self.config.require_partition_filter,
            ),
        )
        for option, dead in given:
            if dead:
                raise BadInputError(
                    f"{option} has no effect: {table.uri} {why}, so BigQuery reads no "
                    "partition columns from its paths; remove it"
                )

    def resources(
        self, table: HudiTable, published: PublishedManifest, names: ObjectNames, marker: SyncMarker
    ) -> list[dict[str, Any]]:
        """REST resources of the objects, in the order they must be applied."""

        def seen_by_bigquery(uri: str) -> str:
            """A manifest's URI under ``source_uri_prefix`` (the table may be opened
            through another path, e.g. a local mount of the bucket)."""
            return marker.base + uri[len(table.uri.rstrip("/")) :]

        stamp = {"description": marker.render(), "labels": self.labels(marker)}
        feed: list[dict[str, Any]] = []
        if names.changes is not None and published.changes is not None:
            reference = self.reference(names.changes)
            feed = [changes_resource(reference, published.changes, stamp, seen_by_bigquery)]
        avro = snapshot_avro_schema(table, published.manifest.instant, published.timeline_listing)
        schema, fields, hive = self.data_columns(table, avro, marker.base)
        base_format = table.config.base_file_format
        if base_format not in BASE_FILE_FORMATS:
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
                "tableReference": self.reference(names.view),
                "schema": {"fields": schema},
                "externalDataConfiguration": external,
                **stamp,
            }
            if marker.is_empty:
                return [*self._empty_tables(table, names, fields, [single]), *feed]
            return [single, *feed]
        with_meta = table.config.populate_meta_fields
        history = {
            "tableReference": self.reference(names.history),
            "schema": {"fields": schema},
            "externalDataConfiguration": files
            | {"sourceUris": list(self.config.source_uri) or history_uris(table, marker.base)},
            **stamp,
        }
        file_column = "_hoodie_file_name" if with_meta else "_FILE_NAME"
        manifest_id = _quote(self.qualified(names.manifest))
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
            "tableReference": self.reference(names.manifest),
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
        history_id = _quote(self.qualified(names.history))
        query = f"SELECT * FROM {history_id} WHERE {file_column} IN ({files_sql})"
        view = _view_resource(self.reference(names.view), query, stamp)
        if marker.is_empty:
            empty = self._empty_tables(table, names, fields, [history, manifest, *feed, view])
            if names.snapshot_view and published.logs:  # no commit, no log: read-optimized rows
                query = f"SELECT * FROM {_quote(self.qualified(names.view))}"
                empty.append(_view_resource(self.reference(names.snapshot_view), query, stamp))
            return empty
        logs = published.logs
        if names.snapshot_view is None or logs is None:
            return [history, manifest, *feed, view]
        columns = [f["name"] for f in schema] + (self.partition_names(fields) if hive else [])
        snapshot = self._snapshot_resources(names, logs, columns, avro, stamp, seen_by_bigquery)
        return [history, manifest, *feed, view, *snapshot]

    def data_columns(
        self, table: HudiTable, avro: dict[str, Any], base: str
    ) -> tuple[list[Field], list[PartitionField], dict[str, Any] | None]:
        """The columns a sync declares on the data table (the history, or the
        manifest-file table): the meta fields when populated, then the schema's fields
        but the hive partition keys, which BigQuery adds from the paths; the partition
        fields; the hive partitioning (None when the paths are not ``key=value``)."""
        fields = partition_fields(avro, table.config.partition_fields, table.config.key_generator)
        hive = self._hive_partitioning(table, base, fields)
        excluded = frozenset(self.partition_names(fields)) if hive else frozenset()
        return table_schema(avro, table.config.populate_meta_fields, excluded), fields, hive

    def declared_columns(
        self, table: HudiTable, instant: str | None, base: str
    ) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
        """The data table's declared columns and types after a sync to ``instant``
        (``column_type``), and its hive partition keys as its ``sourceUriPrefix`` types
        them (``name:TYPE``; BigQuery adds them as columns)."""
        avro = snapshot_avro_schema(table, instant)
        schema, fields, hive = self.data_columns(table, avro, base)
        types = {f.name: f.avro_type for f in fields}
        partitions = tuple(
            f"{n}:{partition_key_type(types.get(n, 'string'), n)}"
            for n in (self.partition_names(fields) if hive else [])
        )
        return tuple((str(f["name"]), column_type(f)) for f in schema), partitions

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
        ro = _quote(self.qualified(names.view))
        if not logs.names:
            query = f"SELECT * FROM {ro}"
            return [_view_resource(self.reference(names.snapshot_view), query, stamp)]
        extra = {FILE_ID_COLUMN: "STRING", DELETED_COLUMN: "BOOLEAN"}
        extra |= {LOG_WINS_COLUMN: "BOOLEAN", BASE_ROW_COLUMN: "STRING", SOURCE_COLUMN: "STRING"}
        log_schema = [
            *table_schema(avro, True),
            *({"name": n, "type": t, "mode": "NULLABLE"} for n, t in extra.items()),
        ]
        base = seen_by_bigquery(logs.folder_uri)
        log_history = {
            "tableReference": self.reference(names.log_history),
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
            "tableReference": self.reference(names.log_manifest),
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
            _quote(self.qualified(names.log_history)),
            _quote(self.qualified(names.log_manifest)),
            columns,
            {f["name"] for f in log_schema},
            logs.ordering_field,
            ordering_kind(logs),
        )
        rt = _view_resource(self.reference(names.snapshot_view), query, stamp)
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
            for n in self.partition_names(fields)
        ]
        empty = []
        for resource in resources:
            resource = dict(resource)
            external = resource.pop("externalDataConfiguration", None)
            if external is not None and "hivePartitioningOptions" in external:
                resource["schema"] = {"fields": resource["schema"]["fields"] + partition_columns}
            if "view" in resource and not table.config.populate_meta_fields:
                query = f"SELECT * FROM {_quote(self.qualified(names.history))} WHERE FALSE"
                resource["view"] = {**resource["view"], "query": query}
            empty.append(resource)
        return empty

    def partition_names(self, fields: list[PartitionField]) -> list[str]:
        return list(self.config.partition_fields) or [f.name for f in fields]

    def _hive_partitioning(
        self, table: HudiTable, base: str, fields: list[PartitionField]
    ) -> dict[str, Any] | None:
        """Typed hive keys (``{dt:DATE}``) when the partition paths are ``key=value``."""
        names = self.partition_names(fields)
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


def snapshot_avro_schema(
    table: HudiTable, instant: str | None, listing: TimelineListing | None = None
) -> dict[str, Any]:
    """``table.avro_schema`` when it was read already (a cached property), else the
    declared schema (``declared_schema``: from the timeline's tail at the synced
    snapshot's ``instant``, from the sync's ``listing`` of the timeline folder), else
    ``table.avro_schema`` (a parquet footer)."""
    if "avro_schema" in vars(table):
        return table.avro_schema
    return declared_schema(table, instant, listing) or table.avro_schema


def history_uris(table: HudiTable, base: str) -> list[str]:
    """``<base>/<c>*.<ext>`` (``.parquet``, ``.orc``: the table's base file extension) for
    each first character ``c`` of the names in the table's folder (partition folders, or
    base files when not partitioned), so every version of every base file matches, with
    one wildcard per URI (BigQuery's rule) and never ``.hoodie/`` (hidden names are
    skipped; ``*`` crosses ``/`` but the first character does not). A partitioned table
    whose partition metafiles are base files gets ``metafile_safe_uris`` instead."""
    names = table.location.fs.ls(table.location.path, detail=False)
    firsts = {str(n).rstrip("/").rsplit("/", 1)[-1] for n in names}
    starts = {name[:1]: name for name in sorted(firsts)}
    if WILDCARD in starts:
        raise BadInputError(wildcard_refusal(f"{base}/{starts[WILDCARD]}"))
    extension = table.view.base_extension
    visible = sorted(starts.keys() - {"", ".", "_"})
    if table.config.is_partitioned and cfg.PARTITION_METAFILE_BASE_FORMAT.read(table.config.raw):
        return metafile_safe_uris(table, base, visible)
    return [f"{base}/{c}*{extension}" for c in visible]


def metafile_safe_uris(table: HudiTable, base: str, starts: list[str]) -> list[str]:
    """``<base>/<c>*<d>.<ext>``: as ``history_uris``, split by the last character ``d``
    of the base files' names, for a table written with
    ``hoodie.partition.metafile.use.base.format=true``, whose partitions each hold a
    ``.hoodie_partition_metadata.parquet`` that ``<c>*.parquet`` matches (``*`` crosses
    ``/`` and dots). A base file's name ends with its instant, a digit; the metafile's
    with a letter. Only the pairs some base file has become URIs: BigQuery fails a query
    of an external table whose URI matches no file."""
    extension = table.view.base_extension
    endings: dict[str, set[str]] = {}
    for partition, files in table.view.partitions.items():
        for base_file in files.base_files:
            last = base_file.name[: -len(extension)][-1:]
            endings.setdefault(partition[:1], set()).add(last)
    return [f"{base}/{c}*{d}{extension}" for c in starts for d in sorted(endings.get(c, ()))]


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


def labels(marker: SyncMarker) -> dict[str, str]:
    """Label values allow ``[a-z0-9_-]`` only: the instant and mode fit, the base does not."""
    return {
        "hudi_sync_instant": marker.instant,
        "hudi_sync_mode": _LABEL_VALUE.sub("_", marker.mode.lower()),
    }
