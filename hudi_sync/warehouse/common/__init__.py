"""What every warehouse target shares: object names, the sync marker, plans and results,
the snapshot view's query, the declared schema, and the quoting of names and values."""

from hudi_sync.warehouse.common.marker import (
    EMPTY_INSTANT,
    MARKER_PREFIX,
    OtherTableError,
    SyncMarker,
    refuse_other_table,
)
from hudi_sync.warehouse.common.names import ObjectNames
from hudi_sync.warehouse.common.plan import (
    SyncPlan,
    SyncResult,
    changing_plan,
    objects_settled,
    offline_note,
    restore_reason,
    retired_feed,
    settled_plan,
)
from hudi_sync.warehouse.common.schema import declared_schema
from hudi_sync.warehouse.common.snapshot_view import (
    SnapshotQuery,
    ordering_at_least,
    ordering_kind,
    snapshot_query,
)

__all__ = [
    "EMPTY_INSTANT",
    "MARKER_PREFIX",
    "ObjectNames",
    "OtherTableError",
    "SnapshotQuery",
    "SyncMarker",
    "SyncPlan",
    "SyncResult",
    "changing_plan",
    "declared_schema",
    "objects_settled",
    "offline_note",
    "ordering_at_least",
    "ordering_kind",
    "refuse_other_table",
    "restore_reason",
    "retired_feed",
    "settled_plan",
    "snapshot_query",
]
