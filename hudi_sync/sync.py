"""The sync core: publish a table's manifest, then bring each warehouse target to it.

The CLI, the post-commit hook and the watcher all call ``sync_table``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from hudi_sync.errors import HudiSyncError
from hudi_sync.manifest import DEFAULT_KEEP, ManifestStore, PublishedManifest
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.common import SyncPlan, SyncResult


class Target(Protocol):
    """A warehouse target: plans and applies the objects for a published manifest."""

    @property
    def name(self) -> str:
        """``kind:location``, e.g. ``duckdb:/path/db.duckdb`` (used in reports)."""
        ...

    def sync(
        self,
        table: HudiTable,
        published: PublishedManifest,
        as_of: bool = False,
        force: bool = False,
        dry_run: bool = False,
    ) -> tuple[SyncPlan, SyncResult]: ...


@dataclass(frozen=True)
class SyncReport:
    table: str
    instant: str | None
    manifest_files: int
    incremental: bool
    plans: tuple[SyncPlan, ...]
    results: tuple[SyncResult, ...]
    errors: Mapping[str, str] = field(default_factory=dict)

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
        return {
            "errors": dict(self.errors),
            "table": self.table,
            "instant": self.instant,
            "manifest_files": self.manifest_files,
            "incremental": self.incremental,
            "results": [r.to_json() for r in self.results],
            "plans": [
                {"target": p.target, "action": p.action, "steps": p.steps} for p in self.plans
            ],
        }


def publish_manifest(
    table: HudiTable, as_of: str | None = None, keep: int = DEFAULT_KEEP, dry_run: bool = False
) -> PublishedManifest:
    """Build and (unless ``dry_run``) publish the table's manifest."""
    store = ManifestStore(table, keep=keep)
    manifest = store.build(as_of=as_of)
    if dry_run or manifest.instant is None:
        files_uri, uris_uri = store.snapshot_uris(manifest.instant or "none")
        return PublishedManifest(manifest, files_uri, uris_uri)
    return store.publish(manifest, make_latest=as_of is None)


def sync_table(
    table: HudiTable | str,
    targets: Sequence[Target],
    storage_options: Mapping[str, Any] | None = None,
    as_of: str | None = None,
    keep: int = DEFAULT_KEEP,
    force: bool = False,
    dry_run: bool = False,
    continue_on_error: bool = False,
) -> SyncReport:
    """Publish the manifest, then sync each target in turn. With ``continue_on_error``
    (the post-commit hook) a failing target is recorded in ``errors`` and the others
    still run; otherwise the first failure raises."""
    if isinstance(table, str):
        table = HudiTable.open(table, storage_options)
    published = publish_manifest(table, as_of=as_of, keep=keep, dry_run=dry_run)
    plans: list[SyncPlan] = []
    results: list[SyncResult] = []
    errors: dict[str, str] = {}
    if published.manifest.instant is not None:
        for target in targets:
            try:
                plan, result = target.sync(
                    table, published, as_of=as_of is not None, force=force, dry_run=dry_run
                )
            except Exception as exc:  # the hook reports any failure instead of raising
                if not continue_on_error:
                    raise
                message = (
                    str(exc) if isinstance(exc, HudiSyncError) else f"{type(exc).__name__}: {exc}"
                )
                errors[target.name] = message
                continue
            plans.append(plan)
            results.append(result)
    return SyncReport(
        table.uri,
        published.manifest.instant,
        len(published.manifest.files),
        published.manifest.derived_incrementally,
        tuple(plans),
        tuple(results),
        errors,
    )
