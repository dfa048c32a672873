"""The Snowflake sync's options: ``hoodie.snowflake.sync.*`` keys or ``SNOWFLAKE_*``
variables, the connector's arguments and the stage's credentials (kept secret), checked."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError
from hudi_sync.warehouse.common.iceberg import OFF

PREFIX = cfg.SNOWFLAKE_PREFIX

ENV_PREFIX = "SNOWFLAKE_"

# Passed to snowflake.connector.connect as they are.
CONNECTION_KEYS = (
    "account",
    "user",
    "password",
    "role",
    "warehouse",
    "database",
    "schema",
    "authenticator",
    "private_key_file",
    "private_key_file_pwd",
    "token",
    "host",
)

# Never printed, logged or put in an error message.
SECRET_KEYS = frozenset(key.removeprefix(PREFIX) for key in cfg.SNOWFLAKE_SECRETS)

_STAGE_KEYS = (
    "stage_name",
    "stage_url",
    "storage_integration",
    "aws_key_id",
    "aws_secret_key",
    "aws_token",
    "azure_sas_token",
)

# ``<t>_iceberg`` over the published Iceberg metadata (``hudi_sync.warehouse.snowflake.iceberg``).
ICEBERG_KEYS = (
    "iceberg",
    "iceberg.external_volume",
    "iceberg.catalog_integration",
    "iceberg.volume_url",
)

# The keys by their names after PREFIX (each declared in hudi_sync.config).
OPTION_KEYS = frozenset(spec.key.removeprefix(PREFIX) for spec in cfg.group("sync/snowflake"))

CLOUD_URL = re.compile(r"(s3|gcs|azure)://[^/]+(/.*)?")

_HOST = re.compile(r"(?P<name>[A-Za-z0-9_-]+(?:[.][A-Za-z0-9_-]+)*)(?::(?P<port>[0-9]{1,5}))?")


def snowflake_url(uri: str) -> str:
    """The table's URI as a stage URL: ``s3a://``/``s3n://`` are ``s3://``, ``gs://`` is
    ``gcs://``, and ``abfs[s]://container@account.dfs.core.windows.net/p`` is
    ``azure://account.blob.core.windows.net/container/p``."""
    for alias in ("s3a://", "s3n://"):
        if uri.startswith(alias):
            return "s3://" + uri[len(alias) :]
    if uri.startswith("gs://"):
        return "gcs://" + uri[len("gs://") :]
    match = re.fullmatch(r"abfss?://([^@/]+)@([^./]+)\.dfs\.core\.windows\.net(/.*)?", uri)
    if match:
        return f"azure://{match[2]}.blob.core.windows.net/{match[1]}{match[3] or ''}"
    return uri


def _with_port(connection: dict[str, str]) -> dict[str, str]:
    """``host`` as the connector takes it: a ``host:port`` split into ``host`` and
    ``port`` (the connector appends its own port to the host, and fails to parse
    ``host:443:443``); anything but a host name with an optional port is refused."""
    host = connection.get("host")
    if host is None:
        return connection
    match = _HOST.fullmatch(host)
    if match is None or not 0 < int(match["port"] or 443) < 65536:
        raise BadInputError(
            f"{PREFIX}host {host!r} is not a host name with an optional :port "
            "(e.g. myaccount.snowflakecomputing.com:443)"
        )
    connection["host"] = match["name"]
    if match["port"]:
        connection["port"] = match["port"]
    return connection


@dataclass(frozen=True)
class SnowflakeSyncConfig:
    """The sync's options, as ``hoodie.snowflake.sync.*`` keys or ``SNOWFLAKE_*`` variables."""

    database: str
    schema: str
    table_name: str
    stage_name: str | None = None
    stage_url: str | None = None
    storage_integration: str | None = None
    # ``<t>_iceberg``: off, beside or only; its external volume and catalog integration, and
    # the volume's storage base URL (metadata paths are relative to it).
    iceberg: str = OFF
    iceberg_external_volume: str | None = None
    iceberg_catalog_integration: str | None = None
    iceberg_volume_url: str | None = None
    # Everything handed to the connector, and the stage credentials: kept out of repr.
    connection: Mapping[str, str] = field(default_factory=dict, repr=False)
    credentials: Mapping[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def from_options(
        cls,
        options: Mapping[str, Any],
        environ: Mapping[str, str] | None = None,
        default_table_name: str | None = None,
    ) -> SnowflakeSyncConfig:
        """Options win over ``SNOWFLAKE_<KEY>`` environment variables (``SNOWFLAKE_ACCOUNT``,
        ``SNOWFLAKE_PASSWORD``, ...); the table name defaults to ``default_table_name``."""
        environ = os.environ if environ is None else environ
        values = {
            k.removeprefix(PREFIX): str(v)
            for k, v in options.items()
            if k.startswith(PREFIX) and v not in (None, "")
        }
        unknown = set(values) - OPTION_KEYS
        if unknown:
            key = PREFIX + sorted(unknown)[0]
            close = cfg.closest_option(key)
            hint = f"; did you mean {close}?" if close else ""
            raise BadInputError(f"unknown Snowflake sync option {key}{hint}")
        for key in sorted(OPTION_KEYS - set(values)):
            variable = ENV_PREFIX + key.upper().replace(".", "_")
            if environ.get(variable):
                values[key] = environ[variable]
        if default_table_name:
            values.setdefault("table_name", default_table_name)
        for required in ("database", "schema", "table_name"):
            if required not in values:
                raise BadInputError(
                    f"missing Snowflake sync option {PREFIX}{required} "
                    f"(or {ENV_PREFIX}{required.upper()})"
                )
        credentials = {k: values[k] for k in _STAGE_KEYS[3:] if k in values}
        config = cls(
            database=values["database"],
            schema=values["schema"],
            table_name=values["table_name"],
            stage_name=values.get("stage_name"),
            stage_url=values.get("stage_url"),
            storage_integration=values.get("storage_integration"),
            iceberg=cfg.SNOWFLAKE_ICEBERG.read({cfg.SNOWFLAKE_ICEBERG.key: values.get("iceberg")}),
            iceberg_external_volume=values.get("iceberg.external_volume"),
            iceberg_catalog_integration=values.get("iceberg.catalog_integration"),
            iceberg_volume_url=values.get("iceberg.volume_url"),
            connection=_with_port({k: values[k] for k in CONNECTION_KEYS if k in values}),
            credentials=credentials,
        )
        config.validate()
        return config

    def validate(self) -> None:
        for key in ("database", "schema", "table_name", "stage_name", "storage_integration"):
            value = getattr(self, key)
            if value is not None and (not value or "\x00" in value):
                raise BadInputError(f"{PREFIX}{key} {value!r} is empty or has a NUL byte")
        self._validate_iceberg()
        if self.stage_url is not None and not CLOUD_URL.fullmatch(self.stage_url):
            raise BadInputError(
                f"{PREFIX}stage_url {self.stage_url!r} is not an s3://, gcs:// or azure:// URL"
            )
        if self.stage_name and (self.storage_integration or self.credentials):
            raise BadInputError(
                f"{PREFIX}stage_name names an existing stage; its storage integration or "
                "credentials are the stage's own, not the sync's"
            )
        if self.storage_integration and self.credentials:
            raise BadInputError(
                f"{PREFIX}storage_integration and stage credentials exclude each other"
            )
        if self.credentials and not (
            {"aws_key_id", "aws_secret_key"} <= set(self.credentials)
            or set(self.credentials) == {"azure_sas_token"}
        ):
            raise BadInputError(
                f"stage credentials are {PREFIX}aws_key_id with {PREFIX}aws_secret_key "
                f"(and optionally {PREFIX}aws_token), or {PREFIX}azure_sas_token"
            )

    def _validate_iceberg(self) -> None:
        """The Iceberg table needs its external volume and catalog integration; they (and
        the volume's URL) given without it would be silently ignored: refused."""
        given = {
            "iceberg.external_volume": self.iceberg_external_volume,
            "iceberg.catalog_integration": self.iceberg_catalog_integration,
            "iceberg.volume_url": self.iceberg_volume_url,
        }
        for key, value in given.items():
            if value is None:
                if self.iceberg != OFF and key != "iceberg.volume_url":
                    raise BadInputError(
                        f"{PREFIX}{key} is required when {PREFIX}iceberg is {self.iceberg}"
                    )
            elif self.iceberg == OFF:
                raise BadInputError(f"{PREFIX}{key} is set but {PREFIX}iceberg is off")
            elif "\x00" in value:
                raise BadInputError(f"{PREFIX}{key} {value!r} has a NUL byte")
        url = self.iceberg_volume_url
        if url is not None and not CLOUD_URL.fullmatch(url):
            raise BadInputError(
                f"{PREFIX}iceberg.volume_url {url!r} is not an s3://, gcs:// or azure:// URL"
            )

    def secrets(self) -> list[str]:
        """Secret values to scrub from anything printed."""
        values = {**self.connection, **self.credentials}
        return [v for k, v in values.items() if k in SECRET_KEYS and v]
