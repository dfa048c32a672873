"""What a target's objects are, read without writing: ``hudi-sync verify`` compares it
with the table (``hudi_sync.sync.verify``) and each target reads its own (``inspect``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from hudi_sync.warehouse.common.marker import SyncMarker
from hudi_sync.warehouse.common.names import ObjectNames

Columns = tuple[tuple[str, str], ...]  # (name, type as the warehouse spells it), in order


@dataclass(frozen=True)
class ObjectState:
    """One warehouse object as it is: its declared columns (name and type as the
    warehouse shows them) and its marker (None when its comment or description carries
    none)."""

    name: str
    columns: Columns
    marker: SyncMarker | None
    # Whether the warehouse keeps a marker on this object (Snowflake's external tables
    # carry none: the view's comment is the marker); an object that should and has none
    # was made by hand, or its marker removed.
    marked: bool = True


@dataclass(frozen=True)
class TargetState:
    """A target's objects for one table, as read from the warehouse.

    ``names``: the objects a sync of the table makes there (``made``: which of them,
    when the target decides rather than the table's type: one table in BigQuery's
    manifest-file mode); ``base``: the table base its markers name; ``objects``: those
    that exist, by name; ``marker``: the marker of the object a sync updates last (the
    snapshot view of a Merge-on-Read table, else the view).

    ``manifest_files``: the base file names the manifest object lists (``manifest_object``,
    default ``names.manifest``), or None with ``manifest_error`` saying why they could not
    be read (both None where the target does not tell them: a delta manifest).

    ``partition_columns``: the partition columns ``partitioned`` declares where the
    warehouse declares them, and ``wanted_partitions`` those a sync declares (None where
    it has no such notion: the partition fields are then expected among the history's
    columns)."""

    names: ObjectNames
    base: str
    objects: Mapping[str, ObjectState] = field(default_factory=dict)
    marker: SyncMarker | None = None
    manifest_files: frozenset[str] | None = None
    manifest_error: str | None = None
    made: tuple[str, ...] | None = None
    manifest_object: str | None = None
    partitioned: str | None = None
    partition_columns: tuple[str, ...] | None = None
    wanted_partitions: tuple[str, ...] | None = None
