"""The file-system view computes slices from the ``FileListing`` it is given, never
from storage behind the listing's back.

A listing that hides one file must give exactly the slices the storage gives once
that file is really gone, while the file is still on storage.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from hudi_sync.table import FileSlice, HudiTable
from hudi_sync.table.files.fs_view import FileSystemView
from hudi_sync.table.files.listing import FileListing, ListedFiles, StorageListing


class HidingListing:
    """The storage's listing less some files; records what it was asked."""

    def __init__(self, inner: FileListing, hidden: set[tuple[str, str]]) -> None:
        self.inner = inner
        self.hidden = hidden
        self.asked: list[Sequence[str] | None] = []

    def list_files(self, partitions: Sequence[str] | None = None) -> ListedFiles:
        self.asked.append(partitions)
        listed = self.inner.list_files(partitions)
        names = {
            partition: [n for n in names if (partition, n) not in self.hidden]
            for partition, names in listed.names.items()
        }
        return ListedFiles(names, listed.sizes)


def _view(path: Path, listing: FileListing | None = None, **kwargs: object) -> FileSystemView:
    table = HudiTable.open(str(path))
    return FileSystemView(table.location, table.config, table.timeline, listing=listing, **kwargs)  # type: ignore[arg-type]


def _files(slices: list[FileSlice]) -> set[tuple[str, str]]:
    return {
        (s.partition_path, name)
        for s in slices
        for name in [*([s.base_file.name] if s.base_file else []), *(f.name for f in s.log_files)]
    }


def _snapshots(view: FileSystemView) -> list[object]:
    """Every question the view answers from its listing, at every commit."""
    commits = [i.requested_time for i in view.timeline.completed_writes]
    answers: list[object] = []
    for as_of in [None, *commits]:
        answers.append(view.slices_as_of(as_of))
        answers.append(view.slices_as_of(as_of, read_optimized=True))
        answers.append(view.base_files_as_of(as_of))
    return answers


@pytest.mark.parametrize(
    ("fixture", "kind"),
    [
        ("cow/v6_simplekeygen_nonhivestyle", "base"),  # newest base of a group with two
        ("cow/v8_simplekeygen_nonhivestyle", "base"),
        ("mor/parquet/v6_simplekeygen_nonhivestyle", "log"),
        ("mor/avro/v8_trips_8i3u1d", "log"),
        ("mor/avro/v9_txns_simple_meta", "only"),  # a group's only file: the group goes
    ],
)
def test_view_computes_slices_from_its_listing(fixture_copy, fixture: str, kind: str) -> None:  # type: ignore[no-untyped-def]
    path: Path = fixture_copy(fixture)
    latest = _view(path).slices_as_of()
    if kind == "base":
        # A file group with an older base file: hiding the newest changes the slice.
        candidates = [
            (s.partition_path, s.base_file.name)
            for s in latest
            if s.base_file is not None
            and len(list((path / s.partition_path).glob(f"{s.file_id}_*"))) > 1
        ]
    elif kind == "log":
        candidates = [(s.partition_path, s.log_files[-1].name) for s in latest if s.log_files]
    else:
        candidates = [(s.partition_path, s.base_file.name) for s in latest if s.base_file]
    assert candidates, f"{fixture}: no {kind} file to hide"
    hidden = candidates[0]
    listing = HidingListing(_storage(path), {hidden})
    through_listing = _view(path, listing)
    answers = _snapshots(through_listing)
    assert listing.asked == [None]  # asked once, for every partition
    assert hidden not in _files(through_listing.slices_as_of())
    assert answers != _snapshots(_view(path))  # the file is still on storage, and counts

    (path / hidden[0] / hidden[1]).unlink()
    assert answers == _snapshots(_view(path))  # as if the file were gone


def test_partition_views_ask_their_listing_for_those_partitions(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    path: Path = fixture_copy("cow/v6_simplekeygen_nonhivestyle")
    full = _view(path).slices_as_of()
    partition = full[0].partition_path
    hidden = (partition, full[0].base_file.name)  # type: ignore[union-attr]
    listing = HidingListing(_storage(path), {hidden})
    view = _view(path, listing, partitions=[partition, "no-such-partition", partition])
    slices = view.slices_as_of()
    assert listing.asked == [sorted({partition, "no-such-partition"})]  # once each
    assert {s.partition_path for s in slices} == {partition}
    assert hidden not in _files(slices)


def test_the_table_view_lists_through_storage_by_default(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    path: Path = fixture_copy("mor/avro/v8_trips_8i3u1d")
    # A v8+ table with a metadata table is listed through it (test_metadata_table_read).
    shutil.rmtree(path / ".hoodie" / "metadata")
    table = HudiTable.open(str(path))
    assert isinstance(table.view.listing, StorageListing)
    assert _snapshots(table.view) == _snapshots(_view(path, HidingListing(_storage(path), set())))


def _storage(path: Path) -> StorageListing:
    table = HudiTable.open(str(path))
    return StorageListing(table.location, table.config)
