"""The active timeline of a table: its instants and their metadata."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from functools import cached_property
from typing import Any, TypeVar

from hudi_sync.errors import CorruptTableError
from hudi_sync.storage import Location
from hudi_sync.table.config.properties import TableConfig
from hudi_sync.table.timeline.commit_metadata import (
    CleanMetadata,
    CommitMetadata,
    RollbackMetadata,
    decode_instant_record,
    parse_commit_metadata,
)
from hudi_sync.table.timeline.instant import (
    Action,
    Instant,
    State,
    comparable_instant,
    latest_instants,
)
from hudi_sync.table.timeline.listing import Listing, TimelineListing

_T = TypeVar("_T")


def format_instant(moment: dt.datetime) -> str:
    """``yyyyMMddHHmmssSSS`` of a datetime (already in the table's timeline zone)."""
    return moment.strftime("%Y%m%d%H%M%S") + f"{moment.microsecond // 1000:03d}"


def timeline_zone(config: TableConfig) -> dt.tzinfo | None:
    """The zone instants are written in: UTC, or the machine's local zone (Hudi's LOCAL)."""
    return dt.UTC if config.timeline_timezone == "UTC" else None


def _modification_instant(info: dict[str, Any], zone: dt.tzinfo | None) -> str | None:
    """A file's modification time as an instant, which Hudi uses as the completion
    time of instants whose file name does not carry one (layout 1)."""
    raw = info.get("mtime", info.get("LastModified", info.get("updated")))
    if raw is None:
        return None
    if isinstance(raw, int | float):
        moment = dt.datetime.fromtimestamp(float(raw), tz=dt.UTC)
    elif isinstance(raw, dt.datetime):
        moment = raw if raw.tzinfo else raw.replace(tzinfo=dt.UTC)
    else:
        try:
            moment = dt.datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
        except ValueError:
            return None
    return format_instant(moment.astimezone(zone))


def undone_by_record(record: Mapping[str, Any]) -> frozenset[str]:
    """The instants a rollback or restore record names as undone. Hudi's
    ``HoodieRollbackMetadata`` lists them in ``commitsRollback`` (and, with their
    actions, ``instantsRollback``); ``HoodieRestoreMetadata`` in ``instantsToRollback``,
    ``restoreInstantInfo`` and the rollback metadata of each (``hoodieRestoreMetadata``,
    instant -> rollbacks). Any one of them is enough."""
    undone: set[str] = set()

    def add(names: Any) -> None:
        for name in names or ():
            if isinstance(name, str):
                undone.add(name)
            elif isinstance(name, Mapping) and isinstance(name.get("commitTime"), str):
                undone.add(name["commitTime"])

    add(record.get("commitsRollback"))
    add(record.get("instantsRollback"))
    add(record.get("instantsToRollback"))
    add(record.get("restoreInstantInfo"))
    for rollbacks in (record.get("hoodieRestoreMetadata") or {}).values():
        for rollback in rollbacks or ():
            if isinstance(rollback, Mapping):
                undone |= undone_by_record(rollback)
    return frozenset(undone)


def read_instant_record(data: bytes, where: str, reader: Callable[[dict[str, Any]], _T]) -> _T:
    """``reader`` applied to an instant file's record (clean, rollback, restore); a record
    of another shape than the reader expects (a list where a map belongs) is one
    CorruptTableError naming the file."""
    record = decode_instant_record(data, where)
    try:
        return reader(record)
    except (AttributeError, TypeError, ValueError, KeyError) as exc:
        raise CorruptTableError(
            f"{where}: instant metadata has an unexpected shape ({exc})"
        ) from None


class Timeline:
    """The instants of a table's active timeline, one entry per instant (its latest state)."""

    def __init__(
        self,
        location: Location,
        config: TableConfig,
        since: str | None = None,
        also: Sequence[str] = (),
        listing: TimelineListing | None = None,
    ) -> None:
        """``since``: keep only the instants requested at or after it (a tail of the
        timeline), and those requested at one of ``also``, so a reader that needs only
        the recent instants (and a few known older ones) never parses the names of the
        thousands before them. ``listing``: the folder's listing to read (one a sync
        shares among its timelines, ``TimelineListing``); by default a new one."""
        self.location = location
        self.config = config
        self.since = since
        self.also = tuple(also)
        self.listing = listing or TimelineListing.of(location, config)
        self.folder = self.listing.folder
        self._metadata_cache = self.listing.metadata

    def tail(self, since: str, also: Sequence[str] = ()) -> Timeline:
        """The instants requested at or after ``since`` (and at ``also``), read from
        this timeline's listing: no new listing of the folder."""
        return Timeline(self.location, self.config, since, also, self.listing)

    def including(self, requested_times: Iterable[str]) -> Timeline:
        """This timeline holding the instants requested at ``requested_times`` too: itself
        when it is the whole timeline or holds them, else the same tail that also keeps
        them (from the same listing), sharing the commit metadata parsed so far."""
        if self.since is None:
            return self
        known = {i.requested_time for i in self.instants}
        missing = sorted(set(requested_times) - known)
        if not missing:
            return self
        return self.tail(self.since, (*self.also, *missing))

    # -- listing -------------------------------------------------------------------------
    @cached_property
    def _listing(self) -> Listing:
        """``file name -> fsspec info`` of the timeline folder's files (of the tail only,
        with ``since``; files that are not instants, e.g. ``hoodie.properties``, always)."""
        if self.since is None:
            return self.listing.files
        return self.listing.tail(self.since, self.also)

    @cached_property
    def instants(self) -> tuple[Instant, ...]:
        """Every instant of the active timeline in its latest state, by requested time.

        Layout-1 file names carry no completion time; see ``with_completion_times``."""
        return tuple(latest_instants(self._listing))

    def with_completion_times(self) -> list[Instant]:
        """``instants``, completed ones given a completion time: the file name's
        (layout 2), else the completed file's modification time, as Hudi shows it."""
        zone = timeline_zone(self.config)
        return [
            replace(i, completion_time=self._completion_from_mtime(i.file_name, zone))
            if i.is_completed and i.completion_time is None
            else i
            for i in self.instants
        ]

    def _completion_from_mtime(self, name: str, zone: dt.tzinfo | None) -> str | None:
        info = self._listing.get(name) or self.location.fs.info(f"{self.folder}/{name}")
        return _modification_instant(info, zone)

    def completed(self, actions: Iterable[str] | None = None) -> list[Instant]:
        wanted = frozenset(actions) if actions is not None else None
        return [
            i for i in self.instants if i.is_completed and (wanted is None or i.action in wanted)
        ]

    @cached_property
    def completed_writes(self) -> tuple[Instant, ...]:
        """Completed commits, deltacommits and replacecommits: the instants that publish data."""
        return tuple(i for i in self.instants if i.is_completed and i.is_write)

    @cached_property
    def pending(self) -> tuple[Instant, ...]:
        return tuple(i for i in self.instants if not i.is_completed)

    def latest_completed_write(self) -> Instant | None:
        writes = self.completed_writes
        return writes[-1] if writes else None

    def snapshot_write(self, as_of: str | None = None) -> Instant | None:
        """The completed write a snapshot at ``as_of`` (requested time; latest when
        ``None``) is read at: the newest one at or before it, ``None`` before the first.

        Its commit metadata is parsed (once, cached), as Hudi does when it builds a view
        and as a sync needs for the schema, so a corrupt newest commit is reported here,
        before anything is built on the snapshot it publishes."""
        writes = self.completed_writes
        found: Instant | None = None
        if as_of is None:
            found = writes[-1] if writes else None
        else:
            limit = comparable_instant(as_of)
            for instant in writes:  # in requested-time order
                if comparable_instant(instant.requested_time) > limit:
                    break
                found = instant
        if found is not None:
            self.commit_metadata(found)
        return found

    def read_bytes(self, instant: Instant) -> bytes:
        return self.read_file(instant.file_name)

    def read_file(self, name: str) -> bytes:
        """Contents of a timeline file by name."""
        try:
            data = self.location.fs.cat_file(f"{self.folder}/{name}")
        except FileNotFoundError:
            raise CorruptTableError(
                f"{self.location.uri}: timeline file {name} disappeared while reading"
            ) from None
        return bytes(data)

    def find_file(self, requested_time: str, suffix: str) -> str | None:
        """Name of ``<requested_time>.<suffix>`` if the timeline has it."""
        name = f"{requested_time}.{suffix}"
        return name if name in self.file_names else None

    @cached_property
    def file_names(self) -> frozenset[str]:
        return frozenset(self._listing)

    def _where(self, instant: Instant) -> str:
        return (
            f"{self.location.uri}: {instant.action} instant {instant.requested_time}: "
            f"timeline file {instant.file_name}"
        )

    def commit_metadata(self, instant: Instant) -> CommitMetadata:
        """Metadata of a completed (or inflight) commit, deltacommit or replacecommit."""
        key = instant.file_name
        cached = self._metadata_cache.get(key)
        if cached is None:
            cached = parse_commit_metadata(self.read_bytes(instant), self._where(instant))
            self._metadata_cache[key] = cached
        return cached

    def clean_metadata(self, instant: Instant) -> CleanMetadata:
        data = self.read_bytes(instant)
        if not data:
            return CleanMetadata(None, {})
        return read_instant_record(data, self._where(instant), CleanMetadata.from_record)

    def rollback_metadata(self, instant: Instant) -> RollbackMetadata:
        data = self.read_bytes(instant)
        if not data:
            return RollbackMetadata((), {})
        return read_instant_record(data, self._where(instant), RollbackMetadata.from_record)

    def undone_instants(self, instant: Instant) -> frozenset[str]:
        """The instants a completed rollback or restore undid, as its Avro metadata lists
        them (``undone_by_record``); none for an empty file."""
        data = self.read_bytes(instant)
        if not data:
            return frozenset()
        return read_instant_record(data, self._where(instant), undone_by_record)

    def undone_by(self, requested_time: str) -> Instant | None:
        """The completed rollback or restore (requested after ``requested_time``) that
        lists it among the instants it undid, None when none does: what explains a
        published instant that left the timeline. Only rollbacks and restores are read."""
        since = comparable_instant(requested_time)
        for candidate in reversed(self.completed([Action.ROLLBACK, Action.RESTORE])):
            if comparable_instant(candidate.requested_time) <= since:
                break
            if requested_time in self.undone_instants(candidate):
                return candidate
        return None

    def latest_clean(self) -> Instant | None:
        cleans = self.completed([Action.CLEAN])
        return cleans[-1] if cleans else None

    def replaced_file_ids(self, up_to: str | None = None) -> dict[tuple[str, str], str]:
        """``(partition, file id) -> replace instant`` of every completed replacecommit at
        or before ``up_to`` (requested time)."""
        replaced: dict[tuple[str, str], str] = {}
        limit = comparable_instant(up_to) if up_to is not None else None
        for instant in self.completed([Action.REPLACE_COMMIT]):
            if limit is not None and comparable_instant(instant.requested_time) > limit:
                continue
            meta = self.commit_metadata(instant)
            for partition, ids in meta.partition_to_replace_file_ids.items():
                for file_id in ids:
                    replaced[(partition, file_id)] = instant.requested_time
        return replaced


__all__ = ["Instant", "State", "Timeline", "format_instant", "undone_by_record"]
