"""What every warehouse target shares: object names, the sync marker, plans and results."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hudi_sync.errors import BadInputError
from hudi_sync.manifest.log_parquet import FILE_ID_COLUMN, SOURCE_COLUMN
from hudi_sync.table.instant import comparable_instant
from hudi_sync.table.record_merge import (
    BASE_ROW_COLUMN,
    DELETED_COLUMN,
    LOG_WINS_COLUMN,
    SEQNO_FIELD,
    arrow_kind,
    null_ordering_refusal,
)

if TYPE_CHECKING:
    from hudi_sync.manifest.snapshot import PublishedLogs
    from hudi_sync.table import HudiTable

MARKER_PREFIX = "hudi_sync"
# The instant a marker records for objects created empty, before the table's first
# completed commit: it sorts before every real instant, so the sync after the first
# commit updates the objects in place (never "skip-older"), and a rerun is a no-op.
EMPTY_INSTANT = "0"
_MARKER = re.compile(r"hudi_sync instant=(?P<instant>\d+) base=(?P<base>\S+) mode=(?P<mode>\S+)")
# What a marker's base keeps as it is: printable ASCII but the space, ``%`` (the escape),
# and the quotes, backslash and ``*`` that would end a literal or comment around it.
_BASE_KEPT = frozenset(chr(c) for c in range(0x21, 0x7F)) - set("%\"'\\`*")


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


@dataclass(frozen=True)
class SyncMarker:
    """Recorded on the warehouse objects: the instant they show, the table base and mode."""

    instant: str
    base: str
    mode: str

    @classmethod
    def of(cls, instant: str | None, base: str, mode: str) -> SyncMarker:
        """The marker of a sync to ``instant`` (``None``: the table's empty snapshot)."""
        return cls(instant or EMPTY_INSTANT, base, mode)

    @property
    def is_empty(self) -> bool:
        """The objects were created empty, before the table's first commit."""
        return self.instant == EMPTY_INSTANT

    def render(self) -> str:
        """The marker's text; the base percent-encoded (UTF-8) where it holds a space or
        another character that would end or break the marker, so it reads back whole."""
        base = urllib.parse.quote(self.base, safe="".join(sorted(_BASE_KEPT)))
        return f"{MARKER_PREFIX} instant={self.instant} base={base} mode={self.mode}"

    def same_objects(self, other: SyncMarker | None) -> bool:
        """Same table base and mode: the objects can be updated in place."""
        return other is not None and (self.base, self.mode) == (other.base, other.mode)

    @classmethod
    def parse(cls, text: str | None) -> SyncMarker | None:
        match = _MARKER.search(text or "")
        if match is None:
            return None
        return cls(match["instant"], urllib.parse.unquote(match["base"]), match["mode"])


class OtherTableError(BadInputError):
    """The objects a sync would replace show another table: their marker names another
    base (two tables given one warehouse name, or a table moved to a new path)."""


def refuse_other_table(
    target: str, objects: dict[str, SyncMarker | None], wanted: SyncMarker, replace: bool
) -> None:
    """Raise ``OtherTableError`` (one line naming both bases) when an object a sync of
    ``wanted`` would replace carries the marker of another base, unless ``replace``
    (``--force``): a name never silently passes from one table to another."""
    if replace:
        return
    for name, marker in objects.items():
        if marker is not None and marker.base != wanted.base:
            raise OtherTableError(
                f"{target}: {name} shows the table at {marker.base!r}, not {wanted.base!r}: "
                "another table's objects under this name (give the tables distinct names, "
                "or use --force to replace them)"
            )


@dataclass(frozen=True)
class SyncPlan:
    """What a sync will do: statements or API calls, in order, for ``--dry-run``."""

    target: str
    action: str  # "create", "update", "recreate", "restored", "noop", "skip-older"
    steps: list[str] = field(default_factory=list)
    reason: str = ""

    def result(
        self, instant: str | None, objects: tuple[str, ...], dry_run: bool = False
    ) -> SyncResult:
        """The result of this plan: applied, or only printed (``dry-run``)."""
        action = "dry-run" if dry_run else self.action
        return SyncResult(self.target, instant, action, objects, self.reason)


def restore_reason(
    table: HudiTable, view: str, current: SyncMarker | None, wanted: SyncMarker
) -> str | None:
    """Why the objects follow the table back from the newer instant they show to
    ``wanted``: that instant is no completed write of the table's timeline any more, and
    a completed restore or rollback on it lists the instant as undone. None otherwise
    (not older, other objects, or a backwards move nothing explains: another table at
    the same path, a folder copied back, commit files removed by hand)."""
    if current is None or current.is_empty or not current.same_objects(wanted):
        return None
    if comparable_instant(current.instant) <= comparable_instant(wanted.instant):
        return None
    timeline = table.timeline
    if any(i.requested_time == current.instant for i in timeline.completed_writes):
        return None  # still a commit: this sync is the one behind
    undone_by = timeline.undone_by(current.instant)
    if undone_by is None:
        return None
    shown = "the empty table" if wanted.is_empty else wanted.instant
    return (
        f"{view} showed {current.instant}, which {undone_by.action} "
        f"{undone_by.requested_time} undid: moved back to {shown}"
    )


def settled_plan(
    target: str,
    view: str,
    current: SyncMarker | None,
    wanted: SyncMarker,
    force: bool,
    unchanged: bool = True,
    restored: str | None = None,
) -> SyncPlan | None:
    """The plan when the objects stay as they are: the view already shows ``wanted``
    (and its definitions are ``unchanged``), or the same objects show a newer instant,
    which a sync never moves back from without ``force`` unless a restore or rollback
    undid it (``restored``: ``restore_reason``). None when they must change."""
    if force or current is None:
        return None
    if current == wanted and unchanged:
        shown = "the empty table (no commit yet)" if wanted.is_empty else wanted.instant
        return SyncPlan(target, "noop", [], f"{view} already shows {shown}")
    newer = comparable_instant(current.instant) > comparable_instant(wanted.instant)
    if current.same_objects(wanted) and newer and restored is None:
        reason = f"{view} shows newer {current.instant}; use --force"
        return SyncPlan(target, "skip-older", [], reason)
    return None


def offline_note(why: str, needs: str) -> str:
    """The one line an offline dry run's plan carries (``SyncPlan.reason``)."""
    return (
        f"(offline: {why}) existing objects were NOT compared: this is a first sync's "
        f"plan; a real run needs {needs}"
    )


def changing_plan(target: str, action: str, steps: list[str], restored: str | None) -> SyncPlan:
    """The plan of a sync that changes the objects; one that follows a restore or
    rollback back (``restore_reason``) is ``restored`` and says why."""
    if restored is not None:
        return SyncPlan(target, "restored", steps, restored)
    return SyncPlan(target, action, steps)


@dataclass(frozen=True)
class SyncResult:
    target: str
    instant: str | None
    action: str
    objects: tuple[str, ...] = ()
    reason: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "target": self.target,
            "instant": self.instant,
            "action": self.action,
            "objects": list(self.objects),
            "reason": self.reason,
        }


@dataclass(frozen=True)
class SnapshotQuery:
    """How one warehouse spells the parts of the snapshot view's query (``<t>_rt`` of a
    Merge-on-Read table, see ``snapshot_query``)."""

    quote: Callable[[str], str]  # an identifier, quoted
    literal: Callable[[str], str]  # a string literal, quoted
    file_id_of: Callable[[str], str]  # the file id in a (quoted) base file name column
    base_columns: str  # the view's select list over the base rows ``b``
    log_columns: str  # the same columns over the folded log rows ``l``
    is_nan: Callable[[str], str]  # a float expression is NaN
    fail: Callable[[str], str]  # fails the query with a (string expression) message
    union: str = "UNION ALL"


def ordering_kind(logs: PublishedLogs) -> str | None:
    """The class of the ordering column's values (``record_merge.arrow_kind``), which
    decides how the view compares them; None without an ordering field."""
    field = logs.ordering_field
    if field is None or field not in logs.schema.names:
        return None
    return arrow_kind(logs.schema.field(field).type)


def snapshot_query(
    spelling: SnapshotQuery,
    ro: str,
    log_history: str,
    log_manifest: str,
    ordering: str | None,
    kind: str | None = None,
    base_rows: str | None = None,
) -> str:
    """The snapshot view's query: each base row of the read-optimized view ``ro`` that
    no folded log version (``log_history`` rows listed in ``log_manifest``) replaces,
    then each log version that is no delete and replaces its base row or has none.
    Rows meet by partition, file group and record key: a bucket index gives file
    groups the same id in every partition. A key with several base rows meets only the
    first (as Hudi's reader merges), which its log row names by commit seqno
    (``record_merge.mark_first_base_rows``). A log version replaces the base row when
    it always wins, else when its ``ordering`` value (of class ``kind``) is at least
    the base row's as Hudi compares them (``ordering_at_least``). ``base_rows``: the
    query of the base rows with their record key, partition path and file group
    (``FILE_ID_COLUMN``) when ``ro``'s meta fields do not hold them (a table without
    meta fields: the target builds them from the key fields and the file name)."""
    q = spelling.quote
    key, file_id = q("_hoodie_record_key"), q(FILE_ID_COLUMN)
    partition = q("_hoodie_partition_path")
    on = f"l.{partition} = b.{partition} AND l.{file_id} = b.{file_id} AND l.{key} = b.{key}"
    first = f"l.{q(BASE_ROW_COLUMN)}"
    on += f" AND ({first} IS NULL OR {first} = b.{q(SEQNO_FIELD)})"
    wins = f"l.{q(LOG_WINS_COLUMN)}"
    if ordering is not None:
        at_least = ordering_at_least(spelling, ordering, kind, f"l.{key}")
        wins = f"(CASE WHEN {wins} THEN TRUE ELSE {at_least} END)"
    base = base_rows or (
        f"SELECT *, {spelling.file_id_of(q('_hoodie_file_name'))} AS {file_id} FROM {ro}"
    )
    logs = (
        f"SELECT * FROM {log_history} WHERE {q(SOURCE_COLUMN)} IN "
        f"(SELECT {q('filename')} FROM {log_manifest})"
    )
    return (
        f"WITH b AS ({base}), l AS ({logs}) "
        f"SELECT {spelling.base_columns} FROM b LEFT JOIN l ON {on} "
        f"WHERE CASE WHEN l.{key} IS NULL THEN TRUE ELSE NOT {wins} END "
        f"{spelling.union} SELECT {spelling.log_columns} FROM l LEFT JOIN b ON {on} "
        f"WHERE NOT l.{q(DELETED_COLUMN)} AND CASE WHEN b.{key} IS NULL THEN TRUE ELSE {wins} END"
    )


def ordering_at_least(spelling: SnapshotQuery, ordering: str, kind: str | None, key: str) -> str:
    """Whether the log row ``l``'s ordering value is at least the base row ``b``'s, as
    Hudi's ``compareTo`` answers: a null value is int 0, so in an int column it is 0,
    and a null against a non-null value of another class fails the query (one line
    naming the column and ``key``), as Hudi's merge fails; floats and doubles compare as
    ``Double.compareTo`` (NaN above all and equal to itself, -0.0 below 0.0)."""
    column = spelling.quote(ordering)
    log, base = f"l.{column}", f"b.{column}"
    if kind == "int":
        return f"COALESCE({log}, 0) >= COALESCE({base}, 0)"
    if kind in ("float", "double"):
        nan = spelling.is_nan
        # ATAN2(x, -1) is negative for -0.0 and positive for 0.0: the sign of a zero.
        compared = (
            f"CASE WHEN {nan(log)} THEN TRUE WHEN {nan(base)} THEN FALSE "
            f"WHEN {log} = {base} THEN NOT (ATAN2({log}, -1.0) < 0 AND ATAN2({base}, -1.0) > 0) "
            f"ELSE {log} > {base} END"
        )
    else:
        compared = f"{log} >= {base}"
    message = spelling.literal(null_ordering_refusal(ordering, kind) + "; record key ")
    return (
        f"CASE WHEN {log} IS NULL AND {base} IS NULL THEN TRUE "
        f"WHEN {log} IS NULL OR {base} IS NULL THEN {spelling.fail(f'{message} || {key}')} "
        f"ELSE {compared} END"
    )


def declared_schema(table: HudiTable, instant: str | None) -> dict[str, Any] | None:
    """``table.declared_avro_schema`` (the newest write's schema, else
    ``hoodie.table.create.schema``; None when the table declares none), read from the
    timeline's tail at the synced snapshot's ``instant`` when a write there has it: a
    sync after one commit does not parse the whole active timeline (thousands of
    instants on a large table) for it."""
    from hudi_sync.manifest.snapshot import timeline_tail
    from hudi_sync.table.schema import parse_avro_schema

    if instant is not None and "declared_avro_schema" not in vars(table):
        tail = timeline_tail(table, instant, ())
        for write in reversed(tail.completed_writes):
            schema = tail.commit_metadata(write).schema
            if schema:
                return parse_avro_schema(schema, f"{table.uri}: {write.file_name}")
    return table.declared_avro_schema
