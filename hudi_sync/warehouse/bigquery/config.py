"""The BigQuery sync's options (``hoodie.gcp.bigquery.sync.*``), read and checked."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError
from hudi_sync.warehouse.common.iceberg import OFF, ONLY

PREFIX = cfg.BIGQUERY_PREFIX

# Not a Hudi key: the BigQuery API endpoint, for emulators (reached without credentials).
API_ENDPOINT = cfg.BIGQUERY_API_ENDPOINT.key

# Project ids: lowercase, digits, hyphens (optionally domain-scoped); datasets: letters,
# digits and underscores; tables: letters, marks, digits, connectors, dashes and spaces.
_PROJECT = re.compile(r"(?:[a-z0-9.-]+:)?[a-z][a-z0-9-]{4,28}[a-z0-9]")

_DATASET = re.compile(r"\w{1,1024}")

_TABLE = re.compile(r"[\w\- ]{1,1024}")

# A BigLake connection: ``project.location.connection`` or its resource name
# ``projects/P/locations/L/connections/C``, as ExternalDataConfiguration.connectionId takes it.
_CONNECTION = re.compile(
    r"(?:[a-z0-9.:-]+)\.[a-z0-9-]+\.[\w-]{1,1024}"
    r"|projects/[a-z0-9.:-]+/locations/[a-z0-9-]+/connections/[\w-]{1,1024}"
)


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
    # ``<t>_iceberg`` over the published Iceberg metadata: off, beside or only.
    iceberg: str = OFF
    iceberg_connection: str | None = None

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> BigQuerySyncConfig:
        """Build from ``hoodie.gcp.bigquery.sync.*`` keys (the prefix may be omitted)."""
        # By full key, whether given with the prefix or without; blank values are unset.
        values = {
            PREFIX + k.removeprefix(PREFIX): v for k, v in options.items() if v not in (None, "")
        }
        unknown = set(values) - _OPTION_KEYS
        if unknown:
            key = sorted(unknown)[0]
            close = cfg.closest_option(key)
            hint = f"; did you mean {close}?" if close else ""
            raise BadInputError(f"unknown BigQuery sync option {key}{hint}")
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
            iceberg=cfg.BIGQUERY_ICEBERG.read(values),
            iceberg_connection=cfg.BIGQUERY_ICEBERG_CONNECTION.text(values),
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
        self._validate_iceberg()
        self._refuse_dead_options()

    def _refuse_dead_options(self) -> None:
        """An option no object of this configuration reads is refused, not ignored: with
        ``iceberg=only`` the one object is ``<t>_iceberg`` (over the Iceberg metadata,
        through ``iceberg.connection``), so the manifest objects' options are dead; the
        manifest-file table reads the manifest's URIs, never ``source_uri``. Options that
        need the table to decide (the hive partitioning) are checked at plan time
        (``BigQueryObjects.refuse_without_hive_partitions``)."""
        if self.iceberg == ONLY:
            manifest_objects = (
                (cfg.BIGQUERY_USE_MANIFEST_FILE.key + "=true", self.use_bq_manifest_file),
                (cfg.BIGQUERY_SOURCE_URI.key, bool(self.source_uri)),
                (cfg.BIGQUERY_PARTITION_FIELDS.key, bool(self.partition_fields)),
                (
                    cfg.BIGQUERY_REQUIRE_PARTITION_FILTER.key + "=true",
                    self.require_partition_filter,
                ),
                (cfg.BIGQUERY_BIG_LAKE_CONNECTION_ID.key, bool(self.big_lake_connection_id)),
            )
            for given, dead in manifest_objects:
                if dead:
                    raise BadInputError(
                        f"{given} has no effect: {cfg.BIGQUERY_ICEBERG.key} is only, so the "
                        f"one object is {self.table_name}_iceberg (through "
                        f"{cfg.BIGQUERY_ICEBERG_CONNECTION.key}); remove it"
                    )
        if self.use_bq_manifest_file and self.source_uri:
            raise BadInputError(
                f"{cfg.BIGQUERY_SOURCE_URI.key} has no effect: "
                f"{cfg.BIGQUERY_USE_MANIFEST_FILE.key} is true, so the table reads the "
                "files its snapshot's manifest lists; remove it"
            )

    def _validate_iceberg(self) -> None:
        """The Iceberg table needs a connection, and a connection needs the Iceberg table
        (given alone it would be silently ignored)."""
        mode, connection = cfg.BIGQUERY_ICEBERG.key, cfg.BIGQUERY_ICEBERG_CONNECTION.key
        if self.iceberg != OFF and not self.iceberg_connection:
            raise BadInputError(f"{connection} is required when {mode} is {self.iceberg}")
        if self.iceberg == OFF and self.iceberg_connection:
            raise BadInputError(f"{connection} is set but {mode} is off")
        if self.iceberg_connection and not _CONNECTION.fullmatch(self.iceberg_connection):
            raise BadInputError(
                f"{connection}={self.iceberg_connection!r} is not a BigLake connection id "
                "(project.location.connection)"
            )

    @property
    def mode(self) -> str:
        return "manifest" if self.use_bq_manifest_file else "view"

    @property
    def definition_digest(self) -> str:
        """A digest of the options that shape the objects' definitions but neither their
        names nor the marker (partition_fields, require_partition_filter,
        big_lake_connection_id, source_uri): recorded in a label, so a sync at the
        instant already shown updates objects whose options changed, with no extra call."""
        options = [
            list(self.partition_fields),
            self.require_partition_filter,
            self.big_lake_connection_id,
            list(self.source_uri),
        ]
        text = json.dumps(options, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# Every declared hoodie.gcp.bigquery.sync.* key but the endpoint (the target's, not the
# config's); base_path, use_file_listing_from_metadata and assume_date_partitioning are
# Hudi's keys that need nothing here, accepted and ignored.
_OPTION_KEYS = {spec.key for spec in cfg.group("sync/bigquery")} - {API_ENDPOINT}
