"""One listing of a table's timeline folder, shared by the timelines read from it.

A sync reads the timeline several times: the manifest's tail, the change feed's range
and the warehouse's declared schema each need the instants since some point. On a long
timeline the folder holds tens of thousands of names, and listing it is most of what
reading a tail costs; so a sync lists it once (``TimelineListing``) and hands that
object to each ``Timeline`` it makes. A listing is a snapshot of the folder at one
moment: a reader that must see the folder as it is now (after publishing, to check
for a newer commit) makes a new one.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from hudi_sync.storage import Location
from hudi_sync.table.config.properties import TableConfig
from hudi_sync.table.timeline.instant import comparable_instant

if TYPE_CHECKING:
    from hudi_sync.table.timeline.commit_metadata import CommitMetadata

# ``file name -> fsspec info`` (None locally: names only).
Listing = dict[str, dict[str, Any] | None]


def timeline_folder(location: Location, config: TableConfig) -> str:
    """The folder of the table's active timeline: ``.hoodie`` (layout 1), else
    ``.hoodie/<hoodie.timeline.path>``."""
    if config.timeline_layout_version == 1:
        return location.join(".hoodie")
    return location.join(".hoodie", config.timeline_path)


class TimelineListing:
    """The files of a timeline folder, listed on first use, and the commit metadata
    parsed from them (a file's metadata is parsed once, whichever timeline reads it)."""

    def __init__(self, location: Location, folder: str) -> None:
        self.location = location
        self.folder = folder
        self.metadata: dict[str, CommitMetadata] = {}  # by file name

    @classmethod
    def of(cls, location: Location, config: TableConfig) -> TimelineListing:
        return cls(location, timeline_folder(location, config))

    @cached_property
    def files(self) -> Listing:
        """Every file of the folder (folders left out). Locally the info is ``None``
        (names only: a stat per file is what a sync of a long timeline would spend most
        of its time on, and only layout-1 completion times need it), and only names
        that do not start with a digit are checked for folders (``archived``,
        ``metadata``, ``history``): the timeline's own files are named by instants."""
        if self.location.is_local:
            try:
                names = os.listdir(self.folder)
            except FileNotFoundError:
                return {}
            folder = self.folder
            return {
                name: None
                for name in names
                if name[:1].isdigit() or not os.path.isdir(f"{folder}/{name}")
            }
        try:
            listed = self.location.fs.ls(self.folder, detail=True)
        except FileNotFoundError:
            listed = []
        return {
            str(info["name"]).rstrip("/").rsplit("/", 1)[-1]: info
            for info in listed
            if info.get("type") != "directory"
        }

    @cached_property
    def _sorted(self) -> list[str]:
        """The names in order: a tail is then a search and a slice, not a pass over
        every name."""
        return sorted(self.files)

    def tail(self, since: str, also: Sequence[str] = ()) -> Listing:
        """The files of instants requested at or after ``since`` or at one of ``also``,
        and the files that are not instants (``hoodie.properties``)."""
        names = self._sorted
        bound = comparable_instant(since)
        # Instant names start with a digit ("0" <= name < ":"); one below the bound's
        # seconds is older, so the tail starts at the first name not below them.
        kept = names[: bisect.bisect_left(names, "0")]
        for name in names[bisect.bisect_left(names, bound[:14]) :]:
            if name >= ":" or comparable_instant(name.partition(".")[0].partition("_")[0]) >= bound:
                kept.append(name)
        for prefix in also:
            at = bisect.bisect_left(names, prefix)
            while at < len(names) and names[at].startswith(prefix):
                kept.append(names[at])
                at += 1
        files = self.files
        return {name: files[name] for name in dict.fromkeys(kept)}
