"""``StorageListing``: a table's files listed from the storage itself.

Locally a depth-first ``os.scandir`` walk (names only); on object stores one recursive,
paginated ``find`` for the whole table, or one ``ls`` per partition when only a few
partitions are asked for. These request counts are what the sync's object-store
benchmarks measure: keep them.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any

from hudi_sync.storage import Location
from hudi_sync.table.config.properties import TableConfig
from hudi_sync.table.files.filenames import PARTITION_METAFILE_PREFIX
from hudi_sync.table.files.listing.protocol import ListedFiles


class StorageListing:
    """Lists partition folders on the table's storage (a ``FileListing``).

    Like Hudi, a folder is a partition when it holds a partition metadata file; a
    non-partitioned table has the single partition ``""``. Dot folders (``.hoodie``,
    ``.temp``...) are never walked.
    """

    def __init__(self, location: Location, config: TableConfig) -> None:
        self.location = location
        self.config = config

    def list_files(self, partitions: Sequence[str] | None = None) -> ListedFiles:
        names, sizes = self._tree(partitions)
        result: dict[str, Sequence[str]] = {}
        for relative_dir, folder_names in names.items():
            if not self.config.is_partitioned:
                if relative_dir != "":
                    continue
            elif PARTITION_METAFILE_PREFIX not in folder_names and not any(
                n.startswith(PARTITION_METAFILE_PREFIX) for n in folder_names
            ):
                continue
            result[relative_dir] = folder_names
        return ListedFiles(result, sizes)

    def _tree(
        self, partitions: Sequence[str] | None
    ) -> tuple[dict[str, list[str]], dict[str, dict[str, int]]]:
        """``relative dir -> file names`` of the folders listed, and ``relative dir ->
        name -> size`` where the listing gives sizes (object stores; a local walk
        gives none)."""
        if partitions is not None:
            return _sized(self._list_partitions(list(partitions)))
        if self.location.is_local:
            return _walk_local(self.location.path, recursive=self.config.is_partitioned), {}
        return _sized(_walk_remote(self.location, recursive=self.config.is_partitioned))

    def _list_partitions(self, partitions: list[str]) -> dict[str, list[tuple[str, int]]]:
        """The files of each given partition folder (one listing each); a folder that
        is gone (a dropped partition) has none."""
        result: dict[str, list[tuple[str, int]]] = {}
        fs = self.location.fs
        for partition in partitions:
            folder = self.location.join(partition)
            try:
                entries = fs.ls(folder, detail=True)
            except FileNotFoundError:
                continue
            result[partition] = [
                (str(e["name"]).rstrip("/").rsplit("/", 1)[-1], int(e.get("size") or 0))
                for e in entries
                if e.get("type") != "directory"
            ]
        return result


def _walk_local(root: str, recursive: bool) -> dict[str, list[str]]:
    """Fast local listing with ``os.scandir``: names only (Hudi's rules need no sizes),
    folder by folder depth first (threads do not help: ``os.scandir`` takes the GIL
    back for every entry)."""
    result: dict[str, list[str]] = {}
    stack = [""]
    while stack:
        relative = stack.pop()
        found = _scan_local(os.path.join(root, relative) if relative else root)
        if found is None:
            continue
        names, folders = found
        if recursive:
            stack += [
                f"{relative}/{name}" if relative else name
                for name in folders
                if not name.startswith(".")
            ]
        result[relative] = names
    return result


def _scan_local(directory: str) -> tuple[list[str], list[str]] | None:
    """``(file names, folder names)`` of a directory; ``None`` when it is gone."""
    names: list[str] = []
    folders: list[str] = []
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                (folders if entry.is_dir(follow_symlinks=False) else names).append(entry.name)
    except FileNotFoundError:
        return None
    return names, folders


def _sized(
    listing: dict[str, list[tuple[str, int]]],
) -> tuple[dict[str, list[str]], dict[str, dict[str, int]]]:
    """A listing of ``(name, size)`` split into names and sizes."""
    names = {directory: [name for name, _ in files] for directory, files in listing.items()}
    sizes = {directory: dict(files) for directory, files in listing.items()}
    return names, sizes


def _walk_remote(location: Location, recursive: bool) -> dict[str, list[tuple[str, int]]]:
    """Object-store listing: one recursive ``find`` (paginated by the store), then the
    ``.hoodie`` tree and other dot directories are dropped."""
    fs = location.fs
    root = location.path.rstrip("/")
    if recursive:
        entries: Iterator[tuple[str, Any]] = iter(
            fs.find(root, detail=True, withdirs=False).items()
        )
    else:
        entries = (
            (str(e["name"]), e) for e in fs.ls(root, detail=True) if e.get("type") != "directory"
        )
    result: dict[str, list[tuple[str, int]]] = defaultdict(list)
    prefix = root + "/"
    for path, info in entries:
        path = path.rstrip("/")
        if not path.startswith(prefix):
            continue
        relative = path[len(prefix) :]
        directory, _, name = relative.rpartition("/")
        if any(part.startswith(".") for part in directory.split("/") if part):
            continue
        result[directory].append((name, int(info.get("size") or 0)))
    return dict(result)
