"""Where base files' Iceberg metrics come from (``hudi_sync.sync.iceberg.metrics.source``):
``commit`` (record counts and sizes from the commit metadata, no file opened) publishes
what ``footers`` publishes but the column metrics, so readers read the same rows.

Every fixture table is replayed one commit at a time and published after each with
``commit``: each snapshot's base files carry their footer's record count and their size
on storage, no column metrics, and pyiceberg and Polars read hudi-rs's snapshot. A write
stat that disagrees with its file, or none at all, sends that file to its footer. A
value the code cannot honour is refused in one line.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import fsspec
import pyarrow.parquet as pq
import pytest

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError
from hudi_sync.manifest.iceberg import IcebergStore, PublishedIceberg
from hudi_sync.manifest.iceberg.write_stats import COMMIT, FOOTERS
from hudi_sync.sync.job import publish_manifest
from hudi_sync.table import HudiTable
from tests import hudi_oracle
from tests.fixture_tables import FixtureTable, fixture_tables
from tests.growing_timeline import growing_timeline
from tests.iceberg_readers import polars_rows, pyiceberg_rows
from tests.warehouse_rows import canonical, hudi_rs_rows

FIXTURES = fixture_tables()
ICEBERG_FOLDER = "/.hoodie/manifest/iceberg/"


def _publish(path: Path, metrics: str) -> PublishedIceberg:
    table = HudiTable.open(str(path))
    published = publish_manifest(table, keep=1000)
    return IcebergStore(table, 1000, metrics=metrics).publish(published)


def _base_files(metadata_location: str) -> list[Any]:
    """The current snapshot's live data files that are Hudi's base files (not ours)."""
    from pyiceberg.table import StaticTable

    scan = StaticTable.from_metadata(metadata_location).scan()
    return [t.file for t in scan.plan_files() if ICEBERG_FOLDER not in t.file.file_path]


def _local(uri: str) -> str:
    return uri.removeprefix("file://")


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.id for f in FIXTURES])
def test_commit_metrics_read_as_hudi_rs_after_every_commit(
    fixture: FixtureTable, unpack_table: Any, tmp_path: Path
) -> None:
    source: Path = unpack_table(fixture)
    path = tmp_path / fixture.id / source.name
    shutil.copytree(source, path)
    instants = [t for t, _ in hudi_oracle.completed_instants(str(path))]
    (path.parent / f"{path.name}-hidden").mkdir()
    last = None
    with growing_timeline(fsspec.filesystem("file"), str(path)) as advance:
        for instant in instants:
            advance(instant)
            last = _publish(path, COMMIT)
            assert last.instant == instant
            for data_file in _base_files(last.metadata_location):
                local = _local(data_file.file_path)
                # The footer's count and the file's size, yet no column metrics: no
                # footer was read for them.
                assert data_file.record_count == pq.read_metadata(local).num_rows, local
                assert data_file.file_size_in_bytes == Path(local).stat().st_size, local
                assert not data_file.lower_bounds and not data_file.value_counts, local
            expected = canonical(hudi_rs_rows(str(path), None))
            assert canonical(pyiceberg_rows(last.metadata_location)) == expected, instant
            assert canonical(polars_rows(last.metadata_location)) == expected, instant
    if last is not None:
        assert last.data_files > 0 or not _base_files(last.metadata_location)


def _v6_commit_file(path: Path) -> tuple[Path, dict[str, Any]]:
    """The newest JSON commit file of a version 6 table that wrote a base file."""
    for candidate in sorted((path / ".hoodie").glob("*.commit"), reverse=True):
        record = json.loads(candidate.read_text())
        stats = [s for ss in record["partitionToWriteStats"].values() for s in ss]
        if any(s["path"].endswith(".parquet") for s in stats):
            return candidate, record
    raise AssertionError(f"{path}: no commit wrote a base file")


def _entries_by_path(metadata_location: str) -> dict[str, Any]:
    return {_local(f.file_path): f for f in _base_files(metadata_location)}


@pytest.mark.parametrize("change", ["size", "missing", "no-records"])
def test_a_stat_that_does_not_match_its_file_falls_back_to_the_footer(
    fixture_copy: Any, change: str
) -> None:
    path = fixture_copy("cow/v6_nonpartitioned")
    commit_file, record = _v6_commit_file(path)
    stats = [s for ss in record["partitionToWriteStats"].values() for s in ss]
    target = next(s for s in stats if s["path"].endswith(".parquet"))
    local = str(path / target["path"])
    if change == "size":
        target["fileSizeInBytes"] += 1
    elif change == "missing":
        target["path"] = target["path"] + ".elsewhere"
    else:
        target["numWrites"] = 0
    commit_file.write_text(json.dumps(record))
    published = _publish(path, COMMIT)
    entries = _entries_by_path(published.metadata_location)
    assert local in entries
    for where, entry in entries.items():
        assert entry.record_count == pq.read_metadata(where).num_rows
        assert entry.file_size_in_bytes == Path(where).stat().st_size
        # The file whose stat does not fit was read (column metrics), no other was.
        assert bool(entry.lower_bounds) == (where == local), where
    expected = canonical(hudi_rs_rows(str(path), None))
    assert canonical(pyiceberg_rows(published.metadata_location)) == expected


def test_footers_and_commit_publish_the_same_counts(fixture_copy: Any, tmp_path: Path) -> None:
    path = fixture_copy("avro/v8_trips_8i3u1d")
    other = tmp_path / "other" / path.name
    shutil.copytree(path, other)
    by_footers = _entries_by_path(_publish(path, FOOTERS).metadata_location)
    by_commit = _entries_by_path(_publish(other, COMMIT).metadata_location)
    moved = {k.replace(str(other), str(path)): v for k, v in by_commit.items()}
    assert by_footers.keys() == moved.keys() and by_footers
    for where, entry in by_footers.items():
        assert entry.lower_bounds  # footers: bounds of the key columns at least
        assert (moved[where].record_count, moved[where].file_size_in_bytes) == (
            entry.record_count,
            entry.file_size_in_bytes,
        )


def test_an_unknown_metrics_source_is_refused_in_one_line() -> None:
    key = cfg.ICEBERG_METRICS.key
    assert cfg.ICEBERG_METRICS.read({}) == FOOTERS
    assert cfg.ICEBERG_METRICS.read({key: "commit"}) == COMMIT
    with pytest.raises(BadInputError) as caught:
        cfg.ICEBERG_METRICS.read({key: "column_stats"})
    message = str(caught.value)
    assert key in message and "\n" not in message


def test_the_cli_takes_the_option_and_refuses_a_bad_value_in_one_line(
    fixture_copy: Any,
) -> None:
    from typer.testing import CliRunner

    from hudi_sync.cli.app import app

    path = fixture_copy("cow/v6_nonpartitioned")
    key = cfg.ICEBERG_METRICS.key
    runner = CliRunner()
    refused = runner.invoke(app, ["sync", "iceberg", str(path), "--conf", f"{key}=exact"])
    assert refused.exit_code == 2
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and key in lines[0]
    assert not (path / ".hoodie" / "manifest").exists()  # nothing published
    done = runner.invoke(app, ["sync", "iceberg", str(path), "--conf", f"{key}=commit", "--json"])
    assert done.exit_code == 0, done.output
    location = json.loads(done.stdout)["iceberg"]["metadata_location"]
    entries = _entries_by_path(location)
    assert entries and not any(e.lower_bounds for e in entries.values())


def test_the_hook_takes_the_option(fixture_copy: Any) -> None:
    from hudi_sync.sync.hook import run_post_commit_hook

    path = fixture_copy("cow/v6_nonpartitioned")
    options = {cfg.SYNC_TOOLS.key: "iceberg", cfg.ICEBERG_METRICS.key: "commit"}
    report = run_post_commit_hook(str(path), options)
    assert report.ok, report.errors
    entries = _entries_by_path(report.to_json()["iceberg"]["metadata_location"])
    assert entries and not any(e.lower_bounds for e in entries.values())
    bad = run_post_commit_hook(str(path), {**options, cfg.ICEBERG_METRICS.key: "exact"})
    assert not bad.ok and cfg.ICEBERG_METRICS.key in " ".join(bad.errors.values())
