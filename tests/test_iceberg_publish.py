"""Every fixture table published as Iceberg after each of its commits reads, in two
independent Iceberg readers, as hudi-rs reads the Hudi table at that commit.

The fixtures (Apache Hudi's own tables: COW and MOR, table versions 6, 8 and 9, logs,
deletes, compaction, clean, rollback, insert_overwrite, several key generators) are
replayed one commit at a time (``growing_timeline``); after each, the snapshot is
published as the sync publishes it (manifest, then Iceberg metadata). pyiceberg reads
the current snapshot then; at the end pyiceberg and Polars read every snapshot again by
time travel, each equal to hudi-rs's merged snapshot as of its instant.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pytest

from hudi_sync.manifest.iceberg import IcebergStore, PublishedIceberg
from hudi_sync.manifest.iceberg.store import INSTANT_KEY
from hudi_sync.sync.job import publish_manifest
from hudi_sync.table import HudiTable
from tests import hudi_oracle
from tests.fixture_tables import FixtureTable, fixture_tables
from tests.growing_timeline import growing_timeline
from tests.iceberg_readers import polars_rows, pyiceberg_rows
from tests.warehouse_rows import canonical, hudi_rs_rows

FIXTURES = fixture_tables()
# Snapshots kept in these tests: every one, so each can be read back by time travel.
KEEP_ALL = 1000


def _copy(unpack_table: Any, fixture: FixtureTable, tmp_path: Path) -> Path:
    source: Path = unpack_table(fixture)
    target = tmp_path / fixture.id / source.name
    shutil.copytree(source, target)
    return target


def publish(path: Path, keep: int = KEEP_ALL) -> PublishedIceberg:
    """What a sync publishes: the manifest, then the Iceberg metadata."""
    table = HudiTable.open(str(path))
    published = publish_manifest(table, keep=keep)
    return IcebergStore(table, keep).publish(published)


def _plain(rows: pa.Table) -> Any:
    return canonical(rows)


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.id for f in FIXTURES])
def test_every_commit_reads_as_hudi_rs_in_pyiceberg_and_polars(
    fixture: FixtureTable, unpack_table: Any, tmp_path: Path
) -> None:
    path = _copy(unpack_table, fixture, tmp_path)
    instants = [t for t, _ in hudi_oracle.completed_instants(str(path))]
    published: list[PublishedIceberg] = []
    fs = fsspec.filesystem("file")
    (path.parent / f"{path.name}-hidden").mkdir()  # where growing_timeline moves files
    with growing_timeline(fs, str(path)) as advance:
        for instant in instants:
            advance(instant)
            result = publish(path)
            assert result.instant == instant
            published.append(result)
            # The pointer's current snapshot is this instant's, read now.
            assert _plain(pyiceberg_rows(result.metadata_location)) == _plain(
                hudi_rs_rows(str(path), None)
            ), instant
    if not published:
        return
    last = published[-1]
    # Time travel in both readers, through the last metadata file, to every snapshot.
    from pyiceberg.table import StaticTable

    snapshots = StaticTable.from_metadata(last.metadata_location).metadata.snapshots
    by_instant = {s.summary[INSTANT_KEY]: s.snapshot_id for s in snapshots}
    # Kept: the newest instants (older ones expire before the writer's cleaner, which
    # keeps 10 commits by default, may remove their files).
    kept = instants[-len(by_instant) :]
    assert set(by_instant) == set(kept) and len(kept) >= min(len(instants), 9)
    for instant in kept:
        expected = _plain(hudi_rs_rows(str(path), instant))
        snapshot_id = by_instant[instant]
        assert _plain(pyiceberg_rows(last.metadata_location, snapshot_id)) == expected, instant
        assert _plain(polars_rows(last.metadata_location, snapshot_id)) == expected, instant
