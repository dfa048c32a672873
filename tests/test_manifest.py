"""Manifests: full vs incremental derivation, atomic publication, retention."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hudi_sync.manifest.snapshot import ManifestStore, build_manifest, derive_manifest
from hudi_sync.table import HudiTable
from tests import hudi_oracle
from tests.fixture_tables import fixture_tables
from tests.timeline_files import write_clean

MULTI_COMMIT = [t for t in fixture_tables() if "empty" not in t.name]


@pytest.mark.parametrize("fixture", MULTI_COMMIT, ids=[t.id for t in MULTI_COMMIT])
def test_incremental_equals_full_listing_at_every_commit(fixture, unpack_table) -> None:  # type: ignore[no-untyped-def]
    table = HudiTable.open(str(unpack_table(fixture)))
    instants = [i.requested_time for i in table.completed_commits()]
    previous = build_manifest(table, instants[0])
    for instant in instants[1:]:
        derived = derive_manifest(table, previous, instant)
        full = build_manifest(table, instant)
        assert derived.files == full.files, instant
        # Only a rollback (the one fixture that has one) forces a full listing.
        rolled_back = any(
            i.action == "rollback" and previous.instant < i.requested_time <= instant  # type: ignore[operator]
            for i in table.instants()
        )
        assert derived.derived_incrementally is not rolled_back
        previous = derived


def test_manifest_is_the_read_optimized_snapshot(unpack_table) -> None:  # type: ignore[no-untyped-def]
    for fixture in MULTI_COMMIT:
        path = str(unpack_table(fixture))
        manifest = build_manifest(HudiTable.open(path))
        expected = sorted(r["base_file"] for r in hudi_oracle.slices(path) if r["base_file"])
        assert manifest.names() == expected, fixture.name


def test_base_file_listing_equals_read_optimized_slices_at_every_commit(unpack_table) -> None:  # type: ignore[no-untyped-def]
    # The manifest's fast path reads names without building slices; the slice rules
    # (uncommitted and newer files hidden, replaced groups dropped) must agree.
    for fixture in MULTI_COMMIT:
        table = HudiTable.open(str(unpack_table(fixture)))
        for instant in [None, *(i.requested_time for i in table.completed_commits())]:
            slices = table.view.slices_as_of(instant, read_optimized=True)
            expected = {
                (s.partition_path, s.file_id): s.base_file.name for s in slices if s.base_file
            }
            assert table.view.base_files_as_of(instant) == expected, (fixture.name, instant)


def _publish_all(path: Path, keep: int) -> list[Any]:
    table = HudiTable.open(str(path))
    store = ManifestStore(table, keep=keep)
    published = []
    for instant in [i.requested_time for i in table.completed_commits()]:
        published.append(store.publish(store.build(as_of=instant)))
    return published


def test_publication_layout_pointer_and_retention(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    path: Path = fixture_copy("cow/v9_txns_simple_meta")
    published = _publish_all(path, keep=3)
    folder = path / ".hoodie" / "manifest"
    snapshots = sorted(p.name for p in (folder / "snapshots").iterdir())
    assert snapshots == [p.manifest.instant for p in published[-3:]]
    pointer = json.loads((folder / "latest.json").read_text())
    assert pointer["instant"] == published[-1].manifest.instant
    latest_names = (folder / "latest_snapshot_files.csv").read_text().splitlines()
    assert latest_names == sorted(r["base_file"] for r in hudi_oracle.slices(str(path)))
    uris = (folder / "snapshots" / pointer["instant"] / "uris.csv").read_text().splitlines()
    assert sorted(u.rsplit("/", 1)[1] for u in uris) == latest_names
    assert all(Path(u).is_file() and u.startswith(str(path) + "/region=") for u in uris)
    assert not list(folder.rglob(".tmp-*"))


def test_later_sync_derives_incrementally_from_the_pointer(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    path: Path = fixture_copy("cow/v9_txns_simple_meta")
    table = HudiTable.open(str(path))
    instants = [i.requested_time for i in table.completed_commits()]
    store = ManifestStore(table)
    store.publish(store.build(as_of=instants[3]))
    reloaded = store.latest()
    assert reloaded is not None and reloaded.files == build_manifest(table, instants[3]).files
    following = store.build()
    assert following.derived_incrementally
    assert following.files == build_manifest(table).files


def test_a_clean_since_the_last_sync_keeps_the_derivation(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    """A clean removes no latest file: the next snapshot is still derived from the
    previous one (with Hudi's automatic clean, most commits are followed by one)."""
    path: Path = fixture_copy("cow/v8_simplekeygen_nonhivestyle")
    table = HudiTable.open(str(path))
    first = table.completed_commits()[0].requested_time
    store = ManifestStore(table)
    store.publish(store.build(as_of=first))
    write_clean(
        path / ".hoodie" / "timeline",
        "20260101000000000",
        first,
        "20260101000000000_20260101000000500.clean",
    )
    table = HudiTable.open(str(path))
    rebuilt = ManifestStore(table).build()
    assert rebuilt.derived_incrementally
    assert rebuilt.files == build_manifest(table).files
    assert rebuilt.files != build_manifest(table, first).files  # commits since were applied


def test_manifest_of_a_non_parquet_table_lists_its_base_files(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    """A manifest is names only, whatever the format (which warehouse can read the files
    is decided per target, before publishing: tests/test_base_formats.py). The table is
    derived: its base files and their names in the JSON timeline renamed to ``.hfile``."""
    path: Path = fixture_copy("cow/v6_nonpartitioned")
    parquet = HudiTable.open(str(path))
    instants = [i.requested_time for i in parquet.completed_commits()]
    expected = {
        k: v.replace(".parquet", ".hfile") for k, v in build_manifest(parquet).files.items()
    }
    for base_file in path.glob("*.parquet"):
        base_file.rename(base_file.with_suffix(".hfile"))
    for commit in (path / ".hoodie").glob("*.commit"):
        commit.write_text(commit.read_text().replace(".parquet", ".hfile"))
    props = path / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text() + "hoodie.table.base.file.format=HFILE\n")
    table = HudiTable.open(str(path))
    assert build_manifest(table).files == expected
    derived = derive_manifest(table, build_manifest(table, instants[0]), instants[-1])
    assert derived.derived_incrementally and derived.files == expected
    assert ManifestStore(table).build().files == expected


@pytest.mark.parametrize("fixture", MULTI_COMMIT, ids=[t.id for t in MULTI_COMMIT])
def test_published_lists_equal_a_full_listing_after_each_derived_publication(
    fixture, fixture_copy
) -> None:  # type: ignore[no-untyped-def]
    # Derived publications splice the commit's changes into the previous (sorted) lists
    # instead of sorting again: both files must still be exactly a full listing, sorted.
    path: Path = fixture_copy(fixture.name)
    table = HudiTable.open(str(path))
    store = ManifestStore(table)
    instants = [i.requested_time for i in table.completed_commits()]
    store.publish(store.build(as_of=instants[0]))
    folder = path / ".hoodie" / "manifest" / "snapshots"
    for instant in instants[1:]:
        previous = store.latest()
        assert previous is not None
        manifest = derive_manifest(table, previous, instant)
        if manifest.derived_incrementally:
            assert getattr(manifest.files, "is_sorted", False), instant  # the splice path
        store.publish(manifest)
        full = build_manifest(table, instant)
        names = (folder / instant / "files.csv").read_text().splitlines()
        uris = (folder / instant / "uris.csv").read_text().splitlines()
        assert names == full.names(), instant
        assert uris == [table.location.uri_of(p) for p in full.relative_paths()], instant


def test_file_set_splices_changes_into_sorted_lists() -> None:
    import random

    from hudi_sync.manifest.file_set import FileSet, lines_bytes, relative_path, string_array

    rng = random.Random(7)
    partitions = ["", "a", "b", "a/x", "é", "z", "0"]
    for _ in range(500):
        groups: dict[tuple[str, str], str] = {}
        for _ in range(rng.randint(0, 30)):
            fid = f"f{rng.randint(0, 60)}"  # one id in two partitions: a name repeats
            groups[(rng.choice(partitions), fid)] = f"{fid}_{rng.randint(0, 3)}.parquet"
        paths = sorted(relative_path(p, n) for (p, _), n in groups.items())
        names = lines_bytes(string_array(sorted(groups.values())))
        files = FileSet(string_array(paths), is_sorted=True).with_names(names)
        changes: dict[tuple[str, str], str] = {}
        for _ in range(rng.randint(0, 6)):
            if groups and rng.random() < 0.6:
                key = rng.choice(list(groups))  # update or replace an existing group
            else:
                key = (rng.choice(partitions), f"f{rng.randint(0, 60)}")  # insert
            changes[key] = rng.choice(["", f"{key[1]}_{rng.randint(4, 9)}.parquet"])
        expected = dict(groups)
        for key, name in changes.items():
            if name:
                expected[key] = name
            else:
                expected.pop(key, None)
        result = files.apply(changes)
        want = sorted(relative_path(p, n) for (p, _), n in expected.items())
        assert result.sorted_paths().to_pylist() == want, (groups, changes)
        assert result.sorted_names().to_pylist() == sorted(expected.values()), (groups, changes)
