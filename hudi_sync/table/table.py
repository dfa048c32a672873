"""``HudiTable``: the entry point of the table core."""

from __future__ import annotations

import errno
import re
from collections.abc import Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

from hudi_sync import config as cfg
from hudi_sync.errors import (
    BadInputError,
    CorruptTableError,
    TableNotFoundError,
    TimeTravelError,
    UnsupportedTableError,
)
from hudi_sync.storage import Location, open_location, reporting_storage_failures
from hudi_sync.table.config.properties import TableConfig, decode_properties
from hudi_sync.table.files.fs_view import FileSlice, FileSystemView
from hudi_sync.table.metadata_table.listing import (
    MetadataTableListing,
    lists_through_metadata_table,
)
from hudi_sync.table.timeline.active import Timeline, timeline_zone
from hudi_sync.table.timeline.archived import read_archived_instants
from hudi_sync.table.timeline.commit_metadata import decode_instant_record
from hudi_sync.table.timeline.instant import Action, Instant, comparable_instant
from hudi_sync.table.timeline.time_travel import to_begin_bound, to_instant_time

if TYPE_CHECKING:
    from hudi_sync.table.config.schema import PartitionField

# Hudi's base file formats (HoodieFileFormat without HOODIE_LOG), each named by its file
# extension in upper case: ".parquet", ".orc", ".hfile", ".lance". Listing and time travel
# do not read base files, so every one of them opens; warehouse targets declare which
# formats they can read (see ``hudi_sync.sync.job``).
SUPPORTED_BASE_FORMATS = ("PARQUET", "ORC", "HFILE", "LANCE")
# Control characters and the line and paragraph separators: a base path holding one
# would split the manifest's lines (and a marker or an event line) where it stands.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class HudiTable:
    """A Hudi table opened by URI: its configuration, timeline and file slices.

    It lists the table's files once and keeps the listing; open a new ``HudiTable``
    to see later commits.
    """

    def __init__(self, location: Location, config: TableConfig) -> None:
        self.location = location
        self.config = config
        self.timeline = Timeline(location, config)
        # Hudi 1.x lists a v8+ table through its metadata table's ``files`` partition.
        listing = (
            MetadataTableListing(location, self.timeline)
            if lists_through_metadata_table(location, config)
            else None
        )
        self.view = FileSystemView(location, config, self.timeline, listing=listing)

    @classmethod
    def open(cls, uri: str, storage_options: Mapping[str, Any] | None = None) -> HudiTable:
        location = open_location(uri, storage_options)
        if _CONTROL.search(location.uri) or _CONTROL.search(location.path):
            raise BadInputError(
                f"{location.uri!r}: a table's base path cannot hold a control character "
                "(newline, tab...): its manifest lines would split"
            )
        properties = location.join(".hoodie", cfg.PROPERTIES_FILE)
        where = f"{location.uri}/.hoodie/hoodie.properties"
        properties_not_found = ".hoodie/hoodie.properties not found"
        try:
            with reporting_storage_failures(location):
                data = location.fs.cat_file(properties)
        except (FileNotFoundError, NotADirectoryError):
            bucket = _missing_bucket(location)
            missing = f"bucket {bucket} does not exist" if bucket else properties_not_found
            raise TableNotFoundError(f"{location.uri} is not a Hudi table: {missing}") from None
        except IsADirectoryError:
            raise CorruptTableError(f"{where}: is a directory, not a properties file") from None
        except OSError as exc:
            if not isinstance(exc, PermissionError) and exc.errno != errno.ELOOP:
                raise  # e.g. a network error: retrying may help
            raise BadInputError(f"{where}: cannot be read ({exc.strerror or exc})") from None
        text = decode_properties(bytes(data), where)
        config = TableConfig.parse(text, where)
        if config.base_file_format not in SUPPORTED_BASE_FORMATS:
            raise UnsupportedTableError(
                f"{location.uri}: unknown base file format {config.base_file_format} "
                f"({cfg.BASE_FILE_FORMAT.key} is one of {', '.join(SUPPORTED_BASE_FORMATS)})"
            )
        return cls(location, config)

    @property
    def uri(self) -> str:
        return self.location.uri

    # -- timeline ------------------------------------------------------------------------
    def instants(self, include_archived: bool = False) -> list[Instant]:
        """Active-timeline instants (all states); with ``include_archived``, archived
        completed instants first."""
        active = self.timeline.with_completion_times()
        if not include_archived:
            return active
        seen = {i.requested_time for i in active}
        archived = [i for i in self.archived_instants() if i.requested_time not in seen]
        merged = archived + active
        merged.sort(key=lambda i: comparable_instant(i.requested_time))
        return merged

    def archived_instants(self) -> list[Instant]:
        """The archived timeline's completed instants (none when nothing was archived)."""
        return read_archived_instants(self.location, self.config)

    def completed_commits(self) -> list[Instant]:
        """Completed commits, deltacommits and replacecommits (time-travel targets)."""
        return list(self.timeline.completed_writes)

    def latest_instant(self) -> str | None:
        latest = self.timeline.latest_completed_write()
        return latest.requested_time if latest else None

    # -- time travel ---------------------------------------------------------------------
    def resolve_as_of(self, value: str) -> str:
        """Map a time-travel value to an instant time, enforcing Hudi's rules: it must be
        before the first pending write, and not before the last clean's retained commit."""
        instant_time = to_instant_time(value, timeline_zone(self.config))
        key = comparable_instant(instant_time)
        first_pending = self._first_pending_write()
        if first_pending is not None and key >= comparable_instant(first_pending.requested_time):
            raise TimeTravelError(
                f"{self.uri}: time-travel instant {instant_time} must be earlier than the "
                f"first incomplete commit {first_pending.requested_time} ({first_pending.action})"
            )
        clean = self.timeline.latest_clean()
        if clean is not None:
            retained = self.timeline.clean_metadata(clean).earliest_commit_to_retain
            if not retained and self.timeline.completed_writes:
                retained = self.timeline.completed_writes[0].requested_time
            if retained and key < comparable_instant(retained):
                raise TimeTravelError(
                    f"{self.uri}: time-travel instant {instant_time} was cleaned up: the "
                    f"cleaner retains commits from {retained} on"
                )
        return instant_time

    def _first_pending_write(self) -> Instant | None:
        """The first pending instant that blocks time travel in Hudi: a commit,
        deltacommit or non-clustering replacecommit (compaction, clustering, clean,
        rollback and indexing do not)."""
        for pending in self.timeline.pending:
            if pending.action in (Action.COMMIT, Action.DELTA_COMMIT):
                return pending
            if pending.action == Action.REPLACE_COMMIT and not self._is_clustering(pending):
                return pending
        return None

    def _is_clustering(self, instant: Instant) -> bool:
        """A layout-1 pending replacecommit is clustering when its plan says so."""
        requested = self.timeline.find_file(instant.requested_time, f"{instant.action}.requested")
        if requested is None:
            return False
        data = self.timeline.read_file(requested)
        if not data:
            return False
        record = decode_instant_record(data, f"{self.uri}: {requested}")
        return str(record.get("operationType") or "").upper() == "CLUSTER"

    def as_of_commit(self, value: str) -> str | None:
        """The latest completed commit at or before a time-travel value (None before the
        first commit)."""
        key = comparable_instant(self.resolve_as_of(value))
        found = None
        for instant in self.timeline.completed_writes:
            if comparable_instant(instant.requested_time) <= key:
                found = instant.requested_time
        return found

    # -- file slices ---------------------------------------------------------------------
    def file_slices(
        self, as_of: str | None = None, read_optimized: bool = False
    ) -> list[FileSlice]:
        """Slices of the latest snapshot, or of the snapshot as of a time-travel value."""
        if as_of is None:
            return self.view.slices_as_of(None, read_optimized)
        instant_time = self.resolve_as_of(as_of)
        return self.view.slices_as_of(instant_time, read_optimized)

    def incremental_range(
        self, begin: str | None, end: str | None = None
    ) -> tuple[str | None, str | None]:
        """An incremental query's ``(begin, end]`` as instant times; ``None`` leaves that
        side open (``earliest``, ``0`` or ``000`` for begin, nothing for end)."""
        zone = timeline_zone(self.config)
        end_time = to_instant_time(end, zone) if end and end.strip() else None
        return to_begin_bound(begin, zone), end_time

    def commits_between(self, begin: str | None, end: str | None = None) -> list[Instant]:
        """Completed writes in ``(begin, end]`` (an incremental query's commits)."""
        return self.view.instants_in_range(*self.incremental_range(begin, end))

    def changed_file_slices(self, begin: str | None, end: str | None = None) -> list[FileSlice]:
        """Slices written by commits in ``(begin, end]`` (an incremental query's files)."""
        return self.view.slices_changed_between(*self.incremental_range(begin, end))

    # -- schema --------------------------------------------------------------------------
    @cached_property
    def declared_avro_schema(self) -> dict[str, Any] | None:
        """The latest commit's schema, else ``hoodie.table.create.schema``; None when the
        table declares neither (only its files then tell its columns)."""
        from hudi_sync.table.config.schema import parse_avro_schema

        for instant in reversed(self.timeline.completed_writes):
            schema = self.timeline.commit_metadata(instant).schema
            if schema:
                return parse_avro_schema(schema, f"{self.uri}: {instant.file_name}")
        if self.config.create_schema:
            return parse_avro_schema(
                self.config.create_schema, f"{self.uri}: {cfg.CREATE_SCHEMA.key}"
            )
        return None

    @cached_property
    def avro_schema(self) -> dict[str, Any]:
        """The declared schema (``declared_avro_schema``), else a parquet footer (other
        base formats' files are never read for it)."""
        # Imported here: listing a table needs no pyarrow (~50 MB of memory).
        from hudi_sync.table.config.schema import schema_from_parquet_footer

        if self.declared_avro_schema is not None:
            return self.declared_avro_schema
        if self.config.base_file_format != "PARQUET":
            raise UnsupportedTableError(
                f"{self.uri}: no schema in commit metadata or {cfg.CREATE_SCHEMA.key}, "
                f"and {self.config.base_file_format} base files are not read for one"
            )
        for file_slice in self.file_slices():
            if file_slice.relative_base_path:
                return schema_from_parquet_footer(
                    self.location.fs, self.location.join(file_slice.relative_base_path)
                )
        raise CorruptTableError(f"{self.uri}: no schema in commits, properties or base files")

    @property
    def partition_fields(self) -> list[PartitionField]:
        from hudi_sync.table.config.schema import partition_fields
        from hudi_sync.table.keys.partition_paths import stored_kinds

        config = self.config
        kinds = stored_kinds(cfg.PARTITION_FIELDS.read(config.raw))
        return partition_fields(
            self.avro_schema, config.partition_fields, config.key_generator, kinds
        )


def _missing_bucket(location: Location) -> str | None:
    """The bucket of an object store location when it does not exist (asked only once a
    table is not found; a store that will not say counts as existing)."""
    try:
        return location.missing_bucket()
    except Exception:  # no permission to ask, or the store failed: say nothing more
        return None
