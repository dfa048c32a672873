"""The table core on tables served by object stores over HTTP (moto S3, fake-gcs-server),
against hudi-rs reading the same objects through its own object-store client."""

from __future__ import annotations

import pytest

from hudi_sync.errors import TableNotFoundError
from hudi_sync.table import HudiTable
from tests import hudi_oracle
from tests.fixture_tables import fixture_tables

CASES = [
    "cow/v9_txns_simple_meta",
    "mor/parquet/v6_nonpartitioned_rollback",
    "cow/v6_complexkeygen_hivestyle",
]


def _rows(table: HudiTable, **kwargs: object) -> list[dict[str, object]]:
    return sorted(
        (s.to_json() for s in table.file_slices(**kwargs)),  # type: ignore[arg-type]
        key=lambda r: (r["partition_path"], r["file_id"]),
    )


@pytest.mark.parametrize("store_name", ["s3_server", "gcs_server"])
@pytest.mark.parametrize("suffix", CASES)
def test_remote_table_matches_hudi_rs(store_name: str, suffix: str, request, unpack_table) -> None:  # type: ignore[no-untyped-def]
    store = request.getfixturevalue(store_name)
    fixture = next(t for t in fixture_tables() if t.name.endswith(suffix))
    local = unpack_table(fixture)
    uri = store.upload_dir(local, store.make_bucket(), f"tables/{local.name}")
    table = HudiTable.open(uri, store.storage_options)
    local_table = HudiTable.open(str(local))

    assert [i.to_json() for i in table.completed_commits()] == [
        i.to_json() for i in local_table.completed_commits()
    ] or table.config.timeline_layout_version == 1  # layout 1 completion = object mtime
    assert [
        (i.requested_time, i.action) for i in table.completed_commits()
    ] == hudi_oracle.completed_instants(str(local))
    latest = _rows(table)
    assert latest and latest == hudi_oracle.slices(uri, storage=store.object_store_options)
    commits = table.completed_commits()
    # First, middle and last: hudi-rs takes seconds per as-of read of a v9 table on GCS.
    for instant in {commits[0], commits[len(commits) // 2], commits[-1]}:
        assert _rows(table, as_of=instant.requested_time) == hudi_oracle.slices(
            uri, as_of=instant.requested_time, storage=store.object_store_options
        )
    assert [f["name"] for f in table.avro_schema["fields"]] == [
        f["name"] for f in local_table.avro_schema["fields"]
    ]


def test_missing_remote_table(s3_server) -> None:  # type: ignore[no-untyped-def]
    bucket = s3_server.make_bucket()
    with pytest.raises(TableNotFoundError, match=f"s3://{bucket}/nothing"):
        HudiTable.open(f"s3://{bucket}/nothing", s3_server.storage_options)
