"""Immutable data files beside the manifests, named per snapshot by a list.

The folded log files of Merge-on-Read tables (``log_parquet``) and the change feed
(``change_feed``) keep their files under a folder of ``.hoodie/manifest/`` and, per
published snapshot, ``snapshots/<instant>/files.csv`` (the files, relative to the data
folder) and ``uris.csv`` (the same as absolute URIs). Both are written once; the lists
are pruned with the manifests' retention, and a file no kept list names is removed.

A list is read back as storage gives it, and whoever can write the table's storage can
write it: each line must be a name the store itself writes (its ``name_patterns``) and
stay below its folder, else the list is a ``CorruptTableError`` naming it. Otherwise a
``../`` line would have a sync delete any file (pruning what a dropped list named) or
publish a foreign file as the store's.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Mapping

from hudi_sync.arrow_numpy import string_array
from hudi_sync.errors import CorruptTableError
from hudi_sync.manifest.file_set import lines_bytes
from hudi_sync.storage import contained_relative, modified_time, remove_stale_temporaries
from hudi_sync.table import HudiTable
from hudi_sync.table.timeline.instant import comparable_instant

# A file no list names yet may be a concurrent sync's, not yet listed: removed only when
# it is older than this.
UNNAMED_GRACE_SECONDS = 600.0
FILES_LIST = "files.csv"
INSTANT = re.compile(r"\d+")  # a line of a list of instants


class ListedFileStore:
    """Files under ``<relative_folder>/<data_folder>`` of a table, listed per snapshot
    under ``<relative_folder>/snapshots/``; subclasses say which files exist and
    which lines each of their lists holds (``name_patterns``: list name -> pattern)."""

    def __init__(
        self,
        table: HudiTable,
        relative_folder: str,
        data_folder: str,
        keep: int,
        name_patterns: Mapping[str, re.Pattern[str]],
    ):
        self.table = table
        self.name_patterns = name_patterns
        self.keep = keep
        self.relative_folder = relative_folder
        self.data_folder = data_folder  # "" when the files sit in the folder itself
        self.folder = table.location.join(relative_folder)

    def path(self, *parts: str) -> str:
        return "/".join([self.folder, *(p for p in parts if p)])

    def uri(self, *parts: str) -> str:
        return self.table.location.uri_of(
            "/".join([self.relative_folder, *(p for p in parts if p)])
        )

    def data_path(self, name: str) -> str:
        """Where a listed file is (its name is relative to the data folder)."""
        return self.path(self.data_folder, name)

    def existing(self) -> set[str]:
        """The data files present, by their listed names."""
        raise NotImplementedError

    def write_lists(self, folder: str, names: tuple[str, ...]) -> None:
        """``uris.csv`` then ``files.csv`` (written last: a folder without it is
        incomplete) of snapshot ``folder``; an existing list is kept (immutable)."""
        for path, data in self.list_files(folder, names):
            self.table.location.write_file(path, data)

    def list_files(self, folder: str, names: tuple[str, ...]) -> list[tuple[str, bytes]]:
        """``(path, contents)`` of snapshot ``folder``'s lists, in the order
        ``write_lists`` writes them; none when they exist (a rerun of the snapshot)."""
        files = self.path("snapshots", folder, FILES_LIST)
        if self.table.location.fs.exists(files):
            return []
        listed = string_array(list(names))
        uris = lines_bytes(listed, self.uri(self.data_folder) + "/")
        return [
            (self.path("snapshots", folder, "uris.csv"), uris),
            (files, lines_bytes(listed, "")),
        ]

    def snapshot_folders(self) -> list[str]:
        """The snapshot list folders, oldest first."""
        try:
            entries = self.table.location.fs.ls(self.path("snapshots"), detail=False)
        except FileNotFoundError:
            return []
        names = [str(e).rstrip("/").rsplit("/", 1)[-1] for e in entries]
        return sorted((n for n in names if n.isdigit()), key=comparable_instant)

    def listed(self, folder: str, list_name: str = FILES_LIST) -> set[str]:
        """The lines of snapshot ``folder``'s list ``list_name`` (by default the files it
        names; none: no list), each checked (``checked_line``)."""
        source = self.uri("snapshots", folder, list_name)
        try:
            data = self.table.location.read_file(self.path("snapshots", folder, list_name))
        except FileNotFoundError:
            return set()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptTableError(f"{source}: not UTF-8 text ({exc.reason})") from None
        return {self.checked_line(line, list_name, source) for line in text.splitlines() if line}

    def checked_line(self, line: str, list_name: str, source: str) -> str:
        """``line`` of the list ``list_name`` read from ``source``, when it stays below
        the store's folder and is a name the store writes there."""
        contained_relative(line, source)
        if not self.name_patterns[list_name].fullmatch(line):
            raise CorruptTableError(f"{source}: {line!r} is not a name this list holds")
        return line

    def names_of(self, folder: str) -> set[str]:
        """Every file snapshot ``folder`` names (by default its ``files.csv``)."""
        return self.listed(folder)

    def prune(
        self,
        current: str,
        current_names: set[str],
        scan: bool = True,
        retained: frozenset[str] | set[str] = frozenset(),
    ) -> None:
        """Keep the newest ``keep`` lists up to ``current`` (which counts even when it
        names nothing and has no folder) and the ``retained`` ones; remove the files a
        dropped list named that no kept list names. With ``scan`` every present file is
        checked too: one no list names goes once it is older than
        ``UNNAMED_GRACE_SECONDS``. Lists after ``current`` (a newer sync's, or one a
        restore undid) stay."""
        location = self.table.location
        key = comparable_instant(current)
        older = [f for f in self.snapshot_folders() if comparable_instant(f) < key]
        dropped = [f for f in [*older, current][: -self.keep] if f not in retained]
        released: set[str] = set()
        for folder in dropped:  # all read before any goes (one may name another's list)
            released |= self.names_of(folder)
        for folder in dropped:
            location.remove_tree(self.path("snapshots", folder))
        named = set(current_names)
        for folder in self.snapshot_folders():
            if folder != current:
                named |= self.names_of(folder)
        if scan and location.is_local:  # a sync killed mid-write
            remove_stale_temporaries(self.folder, UNNAMED_GRACE_SECONDS)
        deadline = time.time() - UNNAMED_GRACE_SECONDS
        for name in (self.existing() if scan else released) - named:
            path = self.data_path(name)
            with contextlib.suppress(FileNotFoundError):
                if name in released or modified_time(location.fs.info(path)) < deadline:
                    location.remove(path)


__all__ = ["FILES_LIST", "INSTANT", "UNNAMED_GRACE_SECONDS", "ListedFileStore"]
