"""The sync core: publish a table's manifest, then bring each warehouse target to it.

The CLI, the post-commit hook and the watcher all call ``sync_table``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from hudi_sync import config as cfg
from hudi_sync.errors import (
    BadInputError,
    HudiSyncError,
    TimeTravelError,
    UnsupportedTableError,
)
from hudi_sync.extras import missing_extra
from hudi_sync.manifest.change_feed import ChangeFeedStore, PublishedChanges, feed_enabled
from hudi_sync.manifest.delta import DeltaStore
from hudi_sync.manifest.iceberg import IcebergStore, PublishedIceberg
from hudi_sync.manifest.iceberg.write_stats import FOOTERS
from hudi_sync.manifest.log_parquet import LogParquetStore
from hudi_sync.manifest.snapshot import (
    DEFAULT_KEEP,
    ManifestStore,
    PublishedManifest,
    snapshot_folder,
)
from hudi_sync.storage import reporting_storage_failures
from hudi_sync.table import HudiTable
from hudi_sync.table.records.merge import AmbiguousBaseRowError, NullOrderingError
from hudi_sync.table.timeline.listing import TimelineListing
from hudi_sync.warehouse.common import OtherTableError, SyncPlan, SyncResult


class Target(Protocol):
    """A warehouse target: plans and applies the objects for a published manifest."""

    @property
    def name(self) -> str:
        """``kind:location``, e.g. ``duckdb:/path/db.duckdb`` (used in reports)."""
        ...

    @property
    def base_file_formats(self) -> frozenset[str]:
        """The base file formats (``hoodie.table.base.file.format`` values, e.g.
        ``PARQUET``) the warehouse can read; a table in any other is refused before
        anything is written."""
        ...

    def sync(
        self,
        table: HudiTable,
        published: PublishedManifest,
        as_of: bool = False,
        force: bool = False,
        dry_run: bool = False,
        replace_other_table: bool = False,
    ) -> tuple[SyncPlan, SyncResult]:
        """Plan and apply. Objects whose marker names another base (another table's)
        are refused with ``OtherTableError`` unless ``force`` or ``replace_other_table``."""
        ...


@dataclass(frozen=True)
class SyncReport:
    table: str
    instant: str | None
    manifest_files: int
    incremental: bool
    plans: tuple[SyncPlan, ...]
    results: tuple[SyncResult, ...]
    errors: Mapping[str, str] = field(default_factory=dict)
    # The change feed this sync published (``hudi_sync.manifest.change_feed``), if any.
    changes: PublishedChanges | None = None
    # The targets that refused the sync because their objects under this name show
    # another table (``OtherTableError``): the name is not this table's there.
    taken_at: tuple[str, ...] = ()
    # The Iceberg metadata this sync published (``hudi_sync.manifest.iceberg``), when a
    # target wanted it (``wants_iceberg``).
    iceberg: PublishedIceberg | None = None

    @property
    def ok(self) -> bool:
        return not self.errors

    def error_summary(self) -> str:
        """``target: message; ...`` (empty when every target succeeded)."""
        return "; ".join(f"{where}: {message}" for where, message in self.errors.items())

    @classmethod
    def failed(cls, table: str, where: str, message: str) -> SyncReport:
        return cls(table, None, 0, False, (), (), {where: message})

    def to_json(self) -> dict[str, Any]:
        shown = self._json()
        if self.iceberg is not None:  # only when a target wanted it: other reports unchanged
            shown["iceberg"] = self.iceberg.summary()
            for result in self.results:  # what a catalog added (the file it shows now)
                shown["iceberg"].update(result.iceberg or {})
        return shown

    def _json(self) -> dict[str, Any]:
        return {
            "errors": dict(self.errors),
            "table": self.table,
            "instant": self.instant,
            "manifest_files": self.manifest_files,
            "incremental": self.incremental,
            "results": [r.to_json() for r in self.results],
            "changes": self.changes.summary() if self.changes is not None else None,
            "plans": [
                {"target": p.target, "action": p.action, "reason": p.reason, "steps": p.steps}
                for p in self.plans
            ],
        }


def publish_manifest(
    table: HudiTable,
    as_of: str | None = None,
    keep: int = DEFAULT_KEEP,
    dry_run: bool = False,
    delta_commits: int = 0,
    before_empty: Callable[[], None] | None = None,
    listing: TimelineListing | None = None,
) -> PublishedManifest:
    """Build and (unless ``dry_run``) publish the table's manifest; with
    ``delta_commits`` (latest snapshot only) as a delta on a base compacted every that
    many commits (``hudi_sync.manifest.delta``). A table without a completed commit
    publishes the empty manifest (in delta mode ``delta.json`` names it too); an empty
    manifest (also in a dry run or a time-travel sync) is first shown to
    ``before_empty``, which may refuse it before anything is written; a time-travel
    sync to before the first commit publishes nothing. ``listing``: the sync's listing
    of the timeline folder (``TimelineListing``), else a new one."""
    with reporting_storage_failures(table.location):  # a store refusing a PUT: one line
        return _publish_manifest(table, as_of, keep, dry_run, delta_commits, before_empty, listing)


def _publish_manifest(
    table: HudiTable,
    as_of: str | None,
    keep: int,
    dry_run: bool,
    delta_commits: int,
    before_empty: Callable[[], None] | None,
    listing: TimelineListing | None,
) -> PublishedManifest:
    store = ManifestStore(table, keep=keep, listing=listing)
    if delta_commits and as_of is None and not dry_run:
        published = DeltaStore(store, delta_commits).publish()
        if published is not None:
            return published
    manifest = store.build(as_of=as_of)
    if manifest.instant is not None:  # an incremental build may not have parsed it
        store.timeline.snapshot_write(manifest.instant)  # corrupt: raises, nothing written
    if manifest.is_empty and before_empty is not None:
        before_empty()  # may refuse: nothing is written yet
    if dry_run or (manifest.is_empty and as_of is not None):
        files_uri, uris_uri = store.snapshot_uris(snapshot_folder(manifest.instant))
        return PublishedManifest(manifest, files_uri, uris_uri)
    if manifest.is_empty:
        published = store.publish(manifest)
        if delta_commits:
            DeltaStore(store, delta_commits).publish_empty()
        return published
    return store.publish(manifest, make_latest=as_of is None)


# The key of ``SyncReport.errors`` that says why a MOR table got no snapshot view.
SNAPSHOT_VIEW_REFUSAL = "_rt"
# The key of ``SyncReport.errors`` that says why a table got no change feed.
CHANGE_FEED_REFUSAL = "_changes"
# The key of ``SyncReport.errors`` that says why the files only expired Iceberg
# snapshots named were not deleted (``IcebergStore.collect``).
ICEBERG_COLLECTION = "_iceberg"


def publish_logs(
    table: HudiTable,
    published: PublishedManifest,
    as_of: str | None,
    keep: int,
    dry_run: bool,
    fold_processes: int = 0,
    listing: TimelineListing | None = None,
) -> tuple[PublishedManifest, str | None]:
    """A Merge-on-Read table's folded log files beside its manifest, so targets can
    create the snapshot view ``<t>_rt``; or, when a view cannot express the table's
    merge rules, the one-line reason (the read-optimized objects still sync).
    ``fold_processes``: ``hudi_sync.sync.log.fold.processes``; ``listing``: the sync's
    listing of the timeline folder."""
    store = LogParquetStore(table, keep, processes=fold_processes, listing=listing)
    refusal = store.rules_refusal()
    if refusal is not None:
        return published, f"{refusal}: no _rt view; the read-optimized objects are synced"
    try:
        with reporting_storage_failures(table.location):
            logs = store.publish(published.manifest.instant, as_of=as_of, dry_run=dry_run)
    except NullOrderingError as exc:  # Hudi's merge fails on these log records
        return published, f"{table.uri}: {exc}: no _rt view; the read-optimized objects are synced"
    except AmbiguousBaseRowError as exc:  # names the base file
        return published, f"{exc}: no _rt view; the read-optimized objects are synced"
    return replace(published, logs=logs), None


def publish_changes(
    table: HudiTable,
    published: PublishedManifest,
    keep: int,
    dry_run: bool,
    listing: TimelineListing | None = None,
) -> PublishedManifest:
    """A CDC table's change feed beside its manifest (each published commit's changes
    once, ``hudi_sync.manifest.change_feed``), so targets can create ``<t>_changes``.
    ``listing``: the sync's listing of the timeline folder."""
    store = ChangeFeedStore(table, keep, listing=listing)
    with reporting_storage_failures(table.location):
        changes = store.publish(published.manifest.instant, dry_run=dry_run)
    return replace(published, changes=changes)


def publish_iceberg(
    table: HudiTable,
    published: PublishedManifest,
    as_of: str | None,
    keep: int,
    dry_run: bool,
    cleaner_retained: int | None = None,
    listing: TimelineListing | None = None,
    metrics: str = FOOTERS,
) -> PublishedManifest:
    """The snapshot as Iceberg v2 metadata beside its manifest
    (``hudi_sync.manifest.iceberg``), published once for every target that reads it
    (``wants_iceberg``: the Iceberg catalogs, BigQuery's and Snowflake's Iceberg
    tables). ``cleaner_retained``: the writer's ``hoodie.cleaner.commits.retained``, which
    bounds how old a kept Iceberg snapshot may be; ``listing``: the sync's listing of the
    timeline folder; ``metrics``: where new base files' metrics come from
    (``hudi_sync.sync.iceberg.metrics.source``)."""
    retained = cfg.COMMITS_RETAINED.read({}) if cleaner_retained is None else cleaner_retained
    store = IcebergStore(
        table, keep, listing=listing, cleaner_retained=int(retained), metrics=metrics
    )
    with reporting_storage_failures(table.location):
        iceberg = store.publish(published, as_of=as_of, dry_run=dry_run)
    return replace(published, iceberg=iceberg)


def wants_iceberg(target: Target) -> bool:
    """The target reads the snapshot's Iceberg metadata (``publish_iceberg``)."""
    return bool(getattr(target, "wants_iceberg", False))


def built_keys_refusal(table: HudiTable, target: Target) -> str | None:
    """Why ``target`` gets no snapshot view of a table without meta fields (one line),
    or None: its view must build each base row's record key from the key fields and
    its file group from the file's name (``supports_built_keys``)."""
    if table.config.populate_meta_fields or getattr(target, "supports_built_keys", False):
        return None
    return (
        f"{table.uri}: {cfg.POPULATE_META_FIELDS.key}=false: {target.name} cannot build "
        "the record keys its snapshot view merges by: no _rt view; the read-optimized "
        "objects are synced"
    )


def uses_folded_logs(target: Target) -> bool:
    """The target's objects read a Merge-on-Read table's folded logs (the ``_rt``
    view's, ``publish_logs``); a target that reads only the base manifest, or makes its
    own files of the logs (Iceberg's), says ``uses_folded_logs = False`` so a sync to it
    alone folds nothing."""
    return bool(getattr(target, "uses_folded_logs", True))


def supports_delta_manifests(target: Target) -> bool:
    """The target's objects can read a base snapshot plus delta (``delta_manifest``)."""
    return bool(getattr(target, "supports_delta_manifests", False))


def format_refusal(table: HudiTable, target: Target) -> str | None:
    """One line saying why ``target`` cannot read the table's base files, or None."""
    base_format = table.config.base_file_format
    readable = target.base_file_formats
    if base_format in readable:
        return None
    return (
        f"{table.uri}: {target.name} cannot read {base_format} base files "
        f"(it reads {', '.join(sorted(readable))})"
    )


def require_empty_objects_schema(table: HudiTable, as_of: str | None) -> None:
    """Before a table's first completed commit the targets create their objects empty,
    with the columns of ``hoodie.table.create.schema``; without one there are no columns
    to give them. A time-travel sync to before the first commit has no snapshot at all."""
    if as_of is not None:
        raise TimeTravelError(
            f"{table.uri}: no completed commit at or before {as_of}, so no snapshot to sync"
        )
    if not table.config.create_schema:
        raise BadInputError(
            f"{table.uri}: no completed commit yet and no {cfg.CREATE_SCHEMA.key} in "
            ".hoodie/hoodie.properties, so the columns of the empty objects are unknown"
        )


def sync_table(
    table: HudiTable | str,
    targets: Sequence[Target],
    storage_options: Mapping[str, Any] | None = None,
    as_of: str | None = None,
    keep: int = DEFAULT_KEEP,
    force: bool = False,
    dry_run: bool = False,
    continue_on_error: bool = False,
    delta_commits: int = 0,
    fold_processes: int = 0,
    change_feed: str = "auto",
    replace_other_table: bool = False,
    cleaner_retained: int | None = None,
    iceberg_metrics: str = FOOTERS,
) -> SyncReport:
    """Publish the manifest, then sync each target in turn. With ``continue_on_error``
    (the post-commit hook) a failing target is recorded in ``errors`` and the others
    still run; otherwise the first failure raises.

    A target that cannot read the table's base file format is refused before the
    manifest is published or any target is touched: without ``continue_on_error`` the
    sync raises ``UnsupportedTableError``; with it the refusal is recorded and the other
    targets run (nothing is published when every target was refused).

    A table without a completed commit publishes the empty manifest (so its readers
    tell "empty" from "never synced"), and each target creates its objects empty, typed
    by ``hoodie.table.create.schema`` (their marker records ``EMPTY_INSTANT``); without
    that schema the sync is refused before anything is written. The sync after the
    first commit fills the objects in place.

    ``delta_commits`` > 0 publishes delta manifests when every target can read them
    (``supports_delta_manifests``), else full ones. ``fold_processes``: the worker
    processes folding a Merge-on-Read table's new log files
    (``hudi_sync.sync.log.fold.processes``; 0: one per CPU, 1: in this process).
    ``change_feed``: ``hudi_sync.sync.change.feed`` (auto, on, off); a feed that cannot
    be made is recorded like a refused snapshot view (``CHANGE_FEED_REFUSAL``).
    ``replace_other_table`` (``--force`` of ``watch`` and ``backfill``; ``force``
    implies it): replace objects whose marker names another base, which a sync
    otherwise refuses (``OtherTableError``, recorded in ``taken_at``).
    ``cleaner_retained``: the writer's ``hoodie.cleaner.commits.retained``, for the Iceberg
    metadata a target may want (``publish_iceberg``); ``iceberg_metrics``:
    ``hudi_sync.sync.iceberg.metrics.source`` for it."""
    if isinstance(table, str):
        table = HudiTable.open(table, storage_options)
    errors: dict[str, str] = {}
    readers: list[Target] = []
    for target in targets:
        refusal = format_refusal(table, target)
        if refusal is None:
            readers.append(target)
        elif not continue_on_error:
            raise UnsupportedTableError(refusal)
        else:
            errors[target.name] = refusal
    if targets and not readers:
        return SyncReport(table.uri, None, 0, False, (), (), errors)
    if not all(supports_delta_manifests(t) for t in readers):
        delta_commits = 0
    # The timeline folder, listed once for everything this sync reads of the timeline's
    # tail (the manifest's, the folded logs', the change feed's, the targets' schema).
    listing = TimelineListing.of(table.location, table.config)
    published = publish_manifest(
        table,
        as_of=as_of,
        keep=keep,
        dry_run=dry_run,
        delta_commits=delta_commits,
        before_empty=(lambda: require_empty_objects_schema(table, as_of)) if readers else None,
        listing=listing,
    )
    snapshot_refusal = None
    if table.config.is_mor and any(uses_folded_logs(t) for t in readers):
        published, snapshot_refusal = publish_logs(
            table, published, as_of, keep, dry_run, fold_processes, listing
        )
        if snapshot_refusal is not None:
            errors[SNAPSHOT_VIEW_REFUSAL] = snapshot_refusal
    feed_readers = [t for t in readers if getattr(t, "supports_change_feed", False)]
    feed_refusal = None
    if feed_readers and as_of is None and feed_enabled(table, change_feed):
        try:
            published = publish_changes(table, published, keep, dry_run, listing)
        except UnsupportedTableError as exc:
            feed_refusal = f"{exc}: no change feed; the other objects are synced"
            errors[CHANGE_FEED_REFUSAL] = feed_refusal
    if any(wants_iceberg(t) for t in readers):
        published = publish_iceberg(
            table, published, as_of, keep, dry_run, cleaner_retained, listing, iceberg_metrics
        )
    published = replace(published, timeline_listing=listing)
    plans: list[SyncPlan] = []
    results: list[SyncResult] = []
    taken_at: list[str] = []
    for target in readers:
        shown = published
        keys_refusal = built_keys_refusal(table, target) if published.logs else None
        if keys_refusal is not None:
            shown = replace(published, logs=None)  # the read-optimized objects only
            snapshot_refusal = snapshot_refusal or keys_refusal
            errors.setdefault(SNAPSHOT_VIEW_REFUSAL, keys_refusal)
        try:
            plan, result = target.sync(
                table,
                shown,
                as_of=as_of is not None,
                force=force,
                dry_run=dry_run,
                replace_other_table=replace_other_table,
            )
        except Exception as exc:  # the hook reports any failure instead of raising
            if not continue_on_error:
                raise
            if isinstance(exc, OtherTableError):
                taken_at.append(target.name)
            known = exc if isinstance(exc, HudiSyncError) else missing_extra(exc)
            message = str(known) if known is not None else f"{type(exc).__name__}: {exc}"
            errors[target.name] = message
            continue
        plans.append(plan)
        results.append(result)
    iceberg_readers = [t.name for t in readers if wants_iceberg(t)]
    moved_on = not any(name in errors for name in iceberg_readers)
    if published.iceberg is not None and not dry_run and as_of is None and moved_on:
        # Every reader moved on to the new metadata: what only expired snapshots name goes.
        try:
            with reporting_storage_failures(table.location):
                IcebergStore(table, keep, listing=listing).collect()
        except HudiSyncError as exc:
            if not continue_on_error:
                raise
            errors[ICEBERG_COLLECTION] = str(exc)
    if snapshot_refusal is not None and not continue_on_error:
        raise UnsupportedTableError(snapshot_refusal)  # after the read-optimized objects
    if feed_refusal is not None and not continue_on_error:
        raise UnsupportedTableError(feed_refusal)
    return SyncReport(
        table.uri,
        published.manifest.instant,
        published.file_count,
        published.manifest.derived_incrementally,
        tuple(plans),
        tuple(results),
        errors,
        published.changes,
        tuple(taken_at),
        published.iceberg,
    )
