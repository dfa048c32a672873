"""A CDC table's change feed in BigQuery: the REST body of ``<t>_changes``, an external
table whose file set is the feed's lists of change files."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hudi_sync.manifest.change_feed import DATE_KEY, TIME_KEY, PublishedChanges
from hudi_sync.warehouse.bigquery.client import MANIFEST_FILE_SET
from hudi_sync.warehouse.bigquery.schema import arrow_field


def changes_resource(
    reference: dict[str, str],
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
    resource: dict[str, Any] = {"tableReference": reference, **described}
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
