"""The ``FileListing`` protocol: what the file-system view asks of a listing.

A listing answers one question: the table's partitions and, per partition, the names
(and, where known, the sizes) of the files in it. Hudi's snapshot rules (committed
instants, file groups, slices) are the view's business, never the listing's: a
listing returns files of failed and pending writes too, and the view drops them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class ListedFiles:
    """The files of a table's partitions, as a listing found them.

    ``names``: ``partition path -> file names`` (names only, no folders; the
    non-partitioned table's single partition is ``""``). Names besides data files
    (the partition metafile, checksums, others) may appear; the view ignores them.

    ``sizes``: ``partition path -> file name -> size`` in bytes, where the listing
    knows them. A partition or name missing here has an unknown size (taken as 0;
    readers stat such a file when they need its size). Names and sizes are kept
    apart because a listing of a million files need not build a million pairs.
    """

    names: Mapping[str, Sequence[str]]
    sizes: Mapping[str, Mapping[str, int]]


class FileListing(Protocol):
    """A source of a table's partitions and their files (storage, metadata table...)."""

    def list_files(self, partitions: Sequence[str] | None = None) -> ListedFiles:
        """The files of every partition of the table when ``partitions`` is ``None``;
        else of those of the given partitions that exist (a dropped partition has no
        entry) and of no others.

        Called once per file-system view (the view keeps the answer); a listing may
        be shared by several views, e.g. a table's view and views of a few partitions.
        """
        ...
