"""The names of a sync's warehouse objects: the view, the manifest and history, and a
Merge-on-Read table's snapshot view and log objects, a CDC table's change feed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hudi_sync.errors import BadInputError

if TYPE_CHECKING:
    from hudi_sync.manifest.snapshot import PublishedLogs


@dataclass(frozen=True)
class ObjectNames:
    """``<t>`` (the view), ``<t>_manifest`` and ``<t>_history``; time-travel syncs add
    ``_as_of_<instant>`` so they never replace the live objects.

    A Merge-on-Read table gets Hive sync's names: ``<t>_ro``, the read-optimized view
    (``<t>`` with ``hoodie.datasource.hive_sync.skip_ro_suffix``), and ``<t>_rt``, the
    snapshot view over ``<t>_log_manifest`` and ``<t>_log_history`` (the folded log
    files, ``hudi_sync.manifest.log_parquet``)."""

    view: str
    manifest: str
    history: str
    snapshot_view: str | None = None
    log_manifest: str | None = None
    log_history: str | None = None
    changes: str | None = None  # ``<t>_changes``: a CDC table's change feed

    @classmethod
    def for_table(
        cls,
        name: str,
        as_of_instant: str | None = None,
        merge_on_read: bool = False,
        skip_ro_suffix: bool = False,
        change_feed: bool = False,
    ) -> ObjectNames:
        if not name or "\x00" in name:
            raise BadInputError(f"warehouse table name {name!r} is empty or has a NUL byte")
        stem = f"{name}_as_of_{as_of_instant}" if as_of_instant else name
        changes = f"{stem}_changes" if change_feed else None
        if not merge_on_read:
            return cls(stem, f"{stem}_manifest", f"{stem}_history", changes=changes)
        return cls(
            stem if skip_ro_suffix else f"{stem}_ro",
            f"{stem}_manifest",
            f"{stem}_history",
            f"{stem}_rt",
            f"{stem}_log_manifest",
            f"{stem}_log_history",
            changes,
        )

    @property
    def feed(self) -> str:
        """``<t>_changes``, whether or not this sync makes it (a target drops a feed
        that is no longer published)."""
        return self.manifest.removesuffix("_manifest") + "_changes"

    @property
    def iceberg(self) -> str:
        """``<t>_iceberg``: the table a warehouse reads the snapshot published as Iceberg
        metadata through (``hudi_sync.warehouse.common.iceberg``)."""
        return self.manifest.removesuffix("_manifest") + "_iceberg"

    def marked(self, logs: PublishedLogs | None) -> str:
        """The object whose marker says which instant the objects show: the one a
        sync updates last (the snapshot view of a MOR table, when it gets one)."""
        return self.snapshot_view if self.snapshot_view and logs is not None else self.view

    def all(self) -> tuple[str, ...]:
        """Every object, in the order a sync reports them."""
        named = (self.view, self.snapshot_view, self.manifest, self.history)
        return tuple(n for n in (*named, self.log_manifest, self.log_history, self.changes) if n)

    def synced(self, logs: PublishedLogs | None) -> tuple[str, ...]:
        """The objects a sync of a snapshot with these folded logs makes: no snapshot
        view without them (a COW table, or a MOR table refused one), no log objects
        when the snapshot has no log records."""
        feed = (self.changes,) if self.changes else ()
        if self.snapshot_view is None or logs is None:
            return (self.view, self.manifest, self.history, *feed)
        if not logs.names:
            return (self.view, self.snapshot_view, self.manifest, self.history, *feed)
        return self.all()
