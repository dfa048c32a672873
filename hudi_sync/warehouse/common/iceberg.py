"""What the warehouse targets share about the snapshot published as Iceberg metadata: the
option's modes, the published metadata file (checked to be the table's own), the marker of
``<t>_iceberg``, and one plan made of the manifest objects' and the Iceberg table's.

A warehouse reads ``<t>_iceberg`` through the metadata file the sync published
(``hudi_sync.manifest.iceberg``; ``PublishedManifest.iceberg``), re-pointed each sync.
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Any

from hudi_sync.errors import BadInputError, HudiSyncError
from hudi_sync.manifest.iceberg.published import METADATA_FOLDER
from hudi_sync.warehouse.common.plan import SyncPlan

if TYPE_CHECKING:
    from hudi_sync.manifest.iceberg.published import PublishedIceberg
    from hudi_sync.manifest.snapshot import PublishedManifest
    from hudi_sync.table import HudiTable

OFF = "off"
BESIDE = "beside"
ONLY = "only"
MODES = (OFF, BESIDE, ONLY)
# The marker mode of ``<t>_iceberg`` (the manifest objects' is ``view`` or ``manifest``).
MARKER_MODE = "iceberg"


class IcebergModes:
    """What a target with a ``<t>_iceberg`` mode (``off``, ``beside``, ``only``; its
    ``config.iceberg``) tells the sync: BigQuery's and Snowflake's."""

    config: Any

    @property
    def supports_change_feed(self) -> bool:
        """A CDC table gets ``<t>_changes`` over its change feed
        (``hudi_sync.manifest.change_feed``; the objects are the target package's
        ``change_feed``), unless ``<t>_iceberg`` is the only object."""
        return bool(self.config.iceberg != ONLY)

    @property
    def wants_iceberg(self) -> bool:
        """The sync publishes the snapshot as Iceberg metadata for ``<t>_iceberg``
        (``PublishedManifest.iceberg``)."""
        return bool(self.config.iceberg != OFF)


def published_iceberg(target: str, published: PublishedManifest) -> PublishedIceberg:
    """The Iceberg metadata the sync published for this snapshot (``wants_iceberg``);
    one line naming ``target`` when the sync published none."""
    if published.iceberg is None:
        raise HudiSyncError(
            f"{target}: the snapshot {published.manifest.instant} was synced without its "
            "Iceberg metadata (the sync publishes it when a target wants_iceberg)"
        )
    return published.iceberg


def metadata_path(table: HudiTable, published: PublishedManifest, target: str) -> str | None:
    """The published metadata file's path relative to ``table`` (under
    ``.hoodie/manifest/iceberg/metadata/``), or None before the table's first commit (no
    snapshot to show). A snapshot synced without its Iceberg metadata, or metadata of
    another instant or outside the table, is refused in one line."""
    instant = published.manifest.instant
    if published.iceberg is None and instant is None:
        return None
    iceberg = published_iceberg(target, published)
    if str(iceberg.instant) != str(instant):
        raise HudiSyncError(
            f"{target}: the Iceberg metadata published shows {iceberg.instant}, "
            f"not the synced snapshot {instant}"
        )
    location = str(iceberg.metadata_location)
    root = table.uri.rstrip("/") + "/"
    relative = location[len(root) :] if location.startswith(root) else ""
    if (
        not relative.startswith(METADATA_FOLDER + "/")
        or posixpath.normpath(relative) != relative
        or not relative.endswith(".metadata.json")
    ):
        raise BadInputError(
            f"{target}: Iceberg metadata {location!r} is not a metadata file under "
            f"{root}{METADATA_FOLDER}/"
        )
    return relative


def joined_plan(target: str, main: SyncPlan, iceberg: SyncPlan) -> SyncPlan:
    """One plan of the manifest objects' (``main``, first) and ``<t>_iceberg``'s steps: its
    action is the first that changes anything, else the one that is not ``noop`` (a
    ``skip-older`` is said), its reason both reasons."""
    if main.steps or iceberg.steps:
        changing = main if main.steps else iceberg
    else:
        changing = iceberg if main.action == "noop" else main
    reason = "; ".join(r for r in (main.reason, iceberg.reason) if r)
    return SyncPlan(target, changing.action, [*main.steps, *iceberg.steps], reason)
