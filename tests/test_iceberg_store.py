"""The Iceberg store's publication rules on tables our writer makes (no Spark): reruns,
manifests reused for untouched buckets, a sync killed at each write, snapshots expired
by count, by a restore and by the cleaner (and the files only they named deleted), and
hostile files of our own one line each."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow as pa
import pytest
from fsspec.implementations.local import LocalFileSystem
from pyiceberg.table import StaticTable

from hudi_sync.errors import CorruptTableError
from hudi_sync.manifest.iceberg.published import METADATA_FOLDER, PublishedIceberg
from hudi_sync.manifest.iceberg.store import INSTANT_KEY, VERSION_HINT, IcebergStore
from hudi_sync.spark.writing.writer import write_arrow
from hudi_sync.storage import Location
from hudi_sync.sync.job import publish_manifest
from hudi_sync.table import HudiTable
from tests.hudi_restore import restore_to
from tests.iceberg_readers import polars_rows, pyiceberg_rows

PARTITIONS = [f"p{i:02d}" for i in range(12)]


def _options(operation: str = "upsert", **extra: object) -> dict[str, object]:
    return {
        "hoodie.table.name": "store",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.operation": operation,
        "hoodie.metadata.enable": "false",  # tests/hudi_restore.py restores data files only
        "hoodie.clean.automatic": "false",
        **extra,
    }


def _write(path: Path, ids: list[int], ts: int, **extra: object) -> str:
    rows = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "p": pa.array([PARTITIONS[i % len(PARTITIONS)] for i in ids]),
            "v": pa.array([f"v{ts}-{i}" for i in ids]),
            "ts": pa.array([ts] * len(ids), pa.int64()),
        }
    )
    return write_arrow(rows, str(path), _options(**extra)).instant


def _publish(path: Path, keep: int = 100, per_manifest: int = 3) -> PublishedIceberg:
    """A publication as the sync runs it: publish, then (its readers moved on) collect."""
    table = HudiTable.open(str(path))
    store = IcebergStore(table, keep, entries_per_manifest=per_manifest)
    published = store.publish(publish_manifest(table, keep=keep))
    store.collect()
    return published


def _ids(rows: pa.Table) -> list[tuple[int, str]]:
    return sorted(zip(rows.column("id").to_pylist(), rows.column("v").to_pylist(), strict=True))


def _files(path: Path) -> set[str]:
    root = path / ".hoodie" / "manifest" / "iceberg"
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_rerun_writes_nothing_and_one_commit_rewrites_only_its_buckets(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _write(path, list(range(36)), 1)  # 12 partitions, 12 file groups
    first = _publish(path)
    assert first.manifests_written == 4 and first.full_listing  # 12 groups, 3 a manifest
    before = _files(path)
    again = _publish(path)
    assert again.metadata_location == first.metadata_location
    assert _files(path) == before
    _write(path, [0, 12], 2)  # one partition (p00) changes
    second = _publish(path)
    assert not second.full_listing
    assert second.manifests_written == 1 and second.manifests_reused == 3
    expected = {i: f"v1-{i}" for i in range(36)} | {0: "v2-0", 12: "v2-12"}
    assert _ids(pyiceberg_rows(second.metadata_location)) == sorted(expected.items())
    assert _ids(polars_rows(second.metadata_location)) == sorted(expected.items())


def test_a_sync_killed_at_each_write_leaves_the_previous_metadata_current(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t"
    _write(path, list(range(24)), 1)
    published = _publish(path)
    rows_before = _ids(pyiceberg_rows(published.metadata_location))
    _write(path, [1, 2, 3], 2)
    real_write = Location.write_file
    real_writes = Location.write_files
    hint = str(path / METADATA_FOLDER / VERSION_HINT)
    killed_at = 0
    while True:
        calls = 0
        allowed = killed_at

        def dying(self: Location, *args: Any, allowed: int = allowed, **kwargs: Any) -> Any:
            nonlocal calls
            calls += 1
            if calls > allowed:
                raise OSError("killed")
            write = real_writes if isinstance(args[0], list) else real_write
            return write(self, *args, **kwargs)

        with (
            mock.patch.object(Location, "write_file", dying),
            mock.patch.object(Location, "write_files", dying),
        ):
            try:
                _publish(path)
            except OSError:
                # The hint still names the previous metadata, which reads as before.
                location = _current(Path(hint))
                assert location == published.metadata_location
                assert _ids(pyiceberg_rows(location)) == rows_before
                killed_at += 1
                continue
        break
    assert killed_at >= 3  # the manifests, the metadata and the hint were each a step
    final = _publish(path)  # the next sync completes over what the killed ones left
    assert final.snapshot_id == 2
    expected = {i: f"v1-{i}" for i in range(24)} | {i: f"v2-{i}" for i in (1, 2, 3)}
    assert _ids(pyiceberg_rows(final.metadata_location)) == sorted(expected.items())


def _current(hint: Path) -> str:
    return str(hint.parent / f"v{hint.read_text().strip()}.metadata.json")


def test_expired_snapshots_leave_no_file_only_they_named(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _write(path, list(range(24)), 1)
    for ts in range(2, 7):
        _write(path, [ts, ts + 12], ts)
        last = _publish(path, keep=2)
    metadata = StaticTable.from_metadata(last.metadata_location).metadata
    assert [s.snapshot_id for s in metadata.snapshots] == [4, 5]  # 5 published, 2 kept
    # Every file left is named by a kept snapshot (or is the current metadata chain).
    named: set[str] = set()
    root = str(path / ".hoodie" / "manifest" / "iceberg") + "/"
    table = StaticTable.from_metadata(last.metadata_location)
    for snapshot in metadata.snapshots:
        named.add(snapshot.manifest_list)
        for manifest in snapshot.manifests(table.io):
            named.add(manifest.manifest_path)
    left = {root + f for f in _files(path) if f.endswith(".avro")}
    assert left == named
    for snapshot in metadata.snapshots:
        rows = pyiceberg_rows(last.metadata_location, snapshot.snapshot_id)
        assert len(rows) == 24


def test_a_restore_expires_the_snapshots_it_undid(tmp_path: Path) -> None:
    path = tmp_path / "t"
    first = _write(path, list(range(24)), 1)
    _publish(path)
    _write(path, [5], 2)
    _publish(path)
    _write(path, [6], 3)
    _publish(path)
    restore_to(HudiTable.open(str(path)), first)
    restored = _publish(path)
    assert restored.full_listing  # a restore since: the whole table listed again
    metadata = StaticTable.from_metadata(restored.metadata_location).metadata
    instants = [s.summary[INSTANT_KEY] for s in metadata.snapshots]
    assert instants == [first, first]  # the undone ones expired; the first, and now
    assert _ids(pyiceberg_rows(restored.metadata_location)) == [(i, f"v1-{i}") for i in range(24)]


def test_snapshots_older_than_the_next_clean_keeps_expire(tmp_path: Path) -> None:
    """With the cleaner keeping 4 commits, a snapshot older than the 3 newest commits
    may lose files at the next commit's clean: it expires now, before that clean."""
    path = tmp_path / "t"
    instants = [_write(path, list(range(24)), 1)]
    for ts in range(2, 7):
        instants.append(_write(path, [0], ts))
        table = HudiTable.open(str(path))
        last = IcebergStore(table, 100, cleaner_retained=4).publish(publish_manifest(table))
    metadata = StaticTable.from_metadata(last.metadata_location).metadata
    assert [s.summary[INSTANT_KEY] for s in metadata.snapshots] == instants[-3:]


def test_the_cleaner_expires_snapshots_whose_files_it_may_remove(tmp_path: Path) -> None:
    path = tmp_path / "t"
    clean = {"hoodie.clean.automatic": "true", "hoodie.cleaner.commits.retained": 1}
    _write(path, list(range(24)), 1, **clean)
    for ts in (2, 3, 4):
        _write(path, [0], ts, **clean)  # partition p00's file group rewritten each time
        last = _publish(path)
    table = HudiTable.open(str(path))
    assert table.timeline.latest_clean() is not None
    metadata = StaticTable.from_metadata(last.metadata_location).metadata
    for snapshot in metadata.snapshots:  # every kept snapshot still reads
        assert len(pyiceberg_rows(last.metadata_location, snapshot.snapshot_id)) == 24
    assert len(metadata.snapshots) < 3


@pytest.mark.parametrize(
    "hint,message",
    [(b"../v1", "is not a metadata version"), (b"7", "which is missing")],
)
def test_a_bad_version_hint_is_one_line(tmp_path: Path, hint: bytes, message: str) -> None:
    path = tmp_path / "t"
    _write(path, list(range(3)), 1)
    _publish(path)
    (path / METADATA_FOLDER / VERSION_HINT).write_bytes(hint)
    with pytest.raises(CorruptTableError, match=message) as caught:
        _publish(path)
    assert "\n" not in str(caught.value)


def test_a_removed_list_naming_a_file_outside_ours_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _write(path, list(range(24)), 1)
    _publish(path, keep=1)
    victim = path / "victim.txt"
    victim.write_text("keep me")
    (path / METADATA_FOLDER / "removed-1.json").write_text('{"files": ["../../../victim.txt"]}')
    _write(path, [1], 2)
    with pytest.raises(CorruptTableError, match=r"does not stay inside|is not a file of ours"):
        _publish(path, keep=1)
    assert victim.read_text() == "keep me"


class _CountingFileSystem(LocalFileSystem):
    """The local file system, recording every file it opens (a real store, wrapped)."""

    cachable = False  # never handed out by fsspec's instance cache to other tests

    def __init__(self) -> None:
        super().__init__()
        self.opened: list[str] = []

    def _open(self, path: Any, mode: str = "rb", *args: Any, **kwargs: Any) -> Any:
        self.opened.append(str(path))
        return super()._open(path, mode, *args, **kwargs)

    def cat_file(self, path: Any, *args: Any, **kwargs: Any) -> Any:
        self.opened.append(str(path))
        return super().cat_file(path, *args, **kwargs)


def test_a_publication_after_one_commit_reads_no_older_instant(tmp_path: Path) -> None:
    """After one commit the publication reads the timeline from the last published
    instant on: not the older replacecommit's nor the older clean's metadata (which a
    full timeline's file-group view and snapshot validity would read), nor any
    partition listing, and the snapshot is still the table's."""
    path = tmp_path / "t"
    clean = {"hoodie.clean.automatic": "true", "hoodie.cleaner.commits.retained": 1}
    _write(path, list(range(36)), 1, **clean)
    _write(path, [1, 13], 2, **clean)
    _write(path, [0, 12, 24], 3, operation="insert_overwrite", **clean)  # a replacecommit
    _write(path, [2, 14], 4, **clean)
    published = _publish(path, keep=1).instant
    assert published is not None
    history = HudiTable.open(str(path)).timeline
    assert history.latest_clean() is not None
    older = [i.requested_time for i in history.instants if i.requested_time < published]
    assert {i.action for i in history.instants if i.requested_time in older} >= {
        "clean",
        "replacecommit",
    }
    newest = _write(path, [5, 17], 5, **clean)

    opened = HudiTable.open(str(path))
    fs = _CountingFileSystem()
    table = HudiTable(replace(opened.location, fs=fs), opened.config)
    store = IcebergStore(table, 1, entries_per_manifest=3)
    manifest = publish_manifest(table, keep=1)
    fs.opened.clear()  # the manifest sync's own reads are not the store's
    result = store.publish(manifest)
    assert result.instant == newest and not result.full_listing
    folder = table.timeline.folder + "/"
    read = [p[len(folder) :] for p in fs.opened if p.startswith(folder)]
    instants = [name.partition(".")[0].partition("_")[0] for name in read if name[:1].isdigit()]
    assert newest in instants  # the new commit's metadata was read
    assert [i for i in instants if i < published] == []
    # Nothing under a partition was opened but the new commit's base file (p05's).
    data = {p for p in fs.opened if "/.hoodie/" not in p}
    assert len(data) == 1 and data.pop().endswith(f"_{newest}.parquet")
    expected = {i: f"v1-{i}" for i in range(36)}
    expected.update({1: "v2-1", 13: "v2-13", 0: "v3-0", 12: "v3-12", 24: "v3-24"})
    expected.update({2: "v4-2", 14: "v4-14", 5: "v5-5", 17: "v5-17"})
    assert _ids(pyiceberg_rows(result.metadata_location)) == sorted(expected.items())


def test_a_commit_after_an_unpartitioned_fallback_publishes_the_table(tmp_path: Path) -> None:
    """A partition path that does not parse back (a value holding ``/``) published the
    table unpartitioned; a commit since, to a partition that parses, must not read the
    old manifests under the identity spec: the table is published anew, every row."""
    path = tmp_path / "t"

    def write(ids: list[int], parts: list[str], ts: int) -> str:
        rows = pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "p": pa.array(parts),
                "v": pa.array([f"v{ts}-{i}" for i in ids]),
                "ts": pa.array([ts] * len(ids), pa.int64()),
            }
        )
        return write_arrow(rows, str(path), _options()).instant

    write([1, 2, 3], ["a/b", "p00", "p01"], 1)
    first = _publish(path)
    assert first.partition_reason is not None and "a/b" in first.partition_reason
    newest = write([2], ["p00"], 2)
    after = _publish(path)
    assert after.instant == newest
    rows = _ids(pyiceberg_rows(after.metadata_location))
    assert rows == [(1, "v1-1"), (2, "v2-2"), (3, "v1-3")]
