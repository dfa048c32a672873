"""BigQuery's API as a sync calls it: the client, one call (``Step``, printable for
``--dry-run``) applied with bounded retries, and a failure in one line."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hudi_sync import config as cfg
from hudi_sync.errors import HudiSyncError
from hudi_sync.warehouse.bigquery.config import BigQuerySyncConfig

if TYPE_CHECKING:
    from google.cloud import bigquery


MANIFEST_FILE_SET = "FILE_SET_SPEC_TYPE_NEW_LINE_DELIMITED_MANIFEST"


@dataclass
class Step:
    """One API call of a sync, printable for ``--dry-run``."""

    verb: str  # "create-dataset", "create", "update", "delete"
    object_id: str
    resource: dict[str, Any] = field(default_factory=dict)

    def render(self) -> str:
        body = json.dumps(self.resource, sort_keys=True) if self.resource else ""
        return f"{self.verb} {self.object_id} {body}".rstrip()


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


# What an update of each kind of object sets (besides description and labels).
UPDATED_FIELDS = {
    "view": ["view_query"],
    "external": ["schema", "external_data_configuration"],
    "native": ["schema"],
    # An Iceberg table's schema is the metadata file's: re-read on update (autodetect_schema).
    "iceberg": ["external_data_configuration"],
}

ICEBERG_FORMAT = "ICEBERG"


def resource_kind(resource: dict[str, Any]) -> str:
    """``view``, ``iceberg`` (an external table over Iceberg metadata), ``external`` or
    ``native``."""
    if "view" in resource:
        return "view"
    external = resource.get("externalDataConfiguration")
    if external is None:
        return "native"
    return "iceberg" if external.get("sourceFormat") == ICEBERG_FORMAT else "external"


# How long an offline dry run waits for BigQuery's first answer.
PROBE_SECONDS = 30.0

# Tables a plan reads at once (a MOR table with a change feed has eight objects).
READERS = 8


def failure(action: str, exc: Exception) -> HudiSyncError:
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


def apply_step(client: bigquery.Client, step: Step, bounded: dict[str, Any]) -> None:
    """Apply one call with the retry and timeout ``bounded``."""
    from google.api_core import exceptions
    from google.cloud import bigquery

    try:
        if step.verb == "create-dataset":
            dataset = bigquery.Dataset.from_api_repr(step.resource)
            client.create_dataset(dataset, **bounded)
        elif step.verb == "delete":
            client.delete_table(step.object_id, not_found_ok=True, **bounded)
        elif step.verb == "create":
            table = bigquery.Table.from_api_repr(step.resource)
            client.create_table(table, **bounded)
        else:
            resource = bigquery.Table.from_api_repr(step.resource)
            kind = resource_kind(step.resource)
            fields = ["description", "labels", *UPDATED_FIELDS[kind]]
            # An Iceberg table re-pointed at newer metadata takes that metadata's schema.
            autodetect = kind == "iceberg"
            client.update_table(resource, fields, autodetect_schema=autodetect, **bounded)
    except (exceptions.GoogleAPICallError, exceptions.RetryError) as exc:
        raise failure(f"{step.verb} {step.object_id}", exc) from exc
