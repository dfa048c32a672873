"""What an Iceberg publication wrote, and where it lives: its own module, so the
manifest's dataclasses and the targets can name them without importing the store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Where a table's Iceberg metadata lives, relative to the table (the store's layout).
ICEBERG_FOLDER = ".hoodie/manifest/iceberg"
METADATA_FOLDER = f"{ICEBERG_FOLDER}/metadata"


@dataclass(frozen=True)
class PublishedIceberg:
    """What a publication wrote (or, in a dry run, would write)."""

    instant: str | None
    metadata_location: str  # absolute URI of the metadata file
    snapshot_id: int | None
    partition_reason: str | None  # why the spec is unpartitioned, if it is
    data_files: int = 0
    delete_files: int = 0
    manifests_written: int = 0
    manifests_reused: int = 0
    snapshots_expired: int = 0
    full_listing: bool = True
    dry_run: bool = False

    def summary(self) -> dict[str, Any]:
        """The ``iceberg`` part of a sync's ``--json`` report."""
        return {
            "instant": self.instant,
            "metadata_location": self.metadata_location,
            "snapshot_id": self.snapshot_id,
            "partition_reason": self.partition_reason,
            "data_files": self.data_files,
            "delete_files": self.delete_files,
            "manifests_written": self.manifests_written,
            "manifests_reused": self.manifests_reused,
            "snapshots_expired": self.snapshots_expired,
            "full_listing": self.full_listing,
            "dry_run": self.dry_run,
        }
