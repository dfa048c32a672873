"""Hudi's commit protocol for one write, without Spark: requested, inflight, completed.

A write's instant goes from requested to completed, or to a rollback:

1. ``start`` (under the table lock): roll back failed writes (pending instants whose
   writer is gone), take a new instant and write ``<instant>.<action>.requested``.
2. ``inflight``: mark the instant inflight and keep a heartbeat while the data files are
   written (each announced by a marker first, see ``rollback``). A write that fails
   inside it is rolled back at once; one that dies is rolled back by the next writer.
3. ``complete`` (under the lock): fail with ``WriteConflictError`` if a commit completed
   since the write read its snapshot touched the same file groups; drop files of retried
   tasks the stats do not report; publish the completed instant, last and whole, with a
   conditional create (an instant another writer completed is a conflict too).
4. ``clean_and_archive`` (under the lock): the post-commit table services.

The data files themselves, and the snapshot they were computed from, are the caller's
(the Spark writer, ``hudi_sync.spark.writing.writer``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from hudi_sync.errors import HudiSyncError, WriteConflictError, WriteError, first_line
from hudi_sync.storage import Location
from hudi_sync.table.table import HudiTable
from hudi_sync.table.timeline.commit_metadata import WriteStat
from hudi_sync.table.timeline.instant import Action, comparable_instant
from hudi_sync.table.write.archiver import ArchivalPolicy, archive
from hudi_sync.table.write.cleaner import clean
from hudi_sync.table.write.create import partition_metadata_text
from hudi_sync.table.write.lock import Heartbeat, TableLock, remove_heartbeat, writer_is_gone
from hudi_sync.table.write.metadata_table.keepers import data_timeline_writer
from hudi_sync.table.write.metadata_table.services import MetadataServicesSettings
from hudi_sync.table.write.rollback import files_written_by, marker_folder, roll_back
from hudi_sync.table.write.timeline import CommitRecord

# What a pending instant of one of these actions may be: a failed write to roll back.
_WRITE_ACTIONS = (Action.COMMIT, Action.REPLACE_COMMIT, Action.DELTA_COMMIT)


@dataclass(frozen=True)
class CommitSettings:
    """The write options the commit protocol follows (by Hudi's names)."""

    lock_wait_ms: int  # hoodie.write.lock.wait_time_ms
    lock_expire_minutes: int  # hoodie.write.lock.filesystem.expire (0: never)
    heartbeat_interval_ms: int  # hoodie.client.heartbeat.interval_in_ms
    heartbeat_misses: int  # hoodie.client.heartbeat.tolerable.misses
    auto_clean: bool  # hoodie.clean.automatic
    commits_retained: int  # hoodie.cleaner.commits.retained
    auto_archive: bool  # hoodie.archive.automatic
    archival: ArchivalPolicy  # hoodie.keep.min.commits / hoodie.keep.max.commits
    # the metadata table's own services (hoodie.metadata.compact.max.delta.commits...)
    metadata_services: MetadataServicesSettings = field(default_factory=MetadataServicesSettings)
    # hoodie.datasource.compaction.async.enable: pending compactions are left to the
    # asynchronous service (a write neither finishes them first nor conflicts with them)
    async_compaction: bool = False


def table_lock(location: Location, settings: CommitSettings) -> TableLock:
    """The table's lock, waited for and expiring as the write options say."""
    return TableLock(
        location,
        location.join(".hoodie"),
        wait_ms=settings.lock_wait_ms,
        expire_minutes=settings.lock_expire_minutes,
    )


class WriteTransaction:
    """One write's instant on the timeline of ``table`` (as the write read it: its
    pending instants are the failed writes to roll back, its completed ones what the
    conflict check starts from). ``operation`` is Hudi's operation type (``UPSERT``)."""

    def __init__(
        self, table: HudiTable, action: str, operation: str, settings: CommitSettings
    ) -> None:
        self.started_from = table
        self.location = table.location
        self.base = table.location.uri
        self.action = action
        self.operation = operation
        self.settings = settings
        self.hoodie = self.location.join(".hoodie")
        version = table.config.version
        folder = self.hoodie if version == 6 else f"{self.hoodie}/timeline"
        # Keeps the metadata table current when the table has one.
        self.timeline = data_timeline_writer(
            self.location,
            folder,
            version,
            table.config.raw,
            table.config.metadata_partitions,
            services=settings.metadata_services,
        )
        self.lock = self._new_lock()
        self._instant: str | None = None
        self._instant_taken = False  # another writer completed this write's instant
        self._written: list[str] = []  # this write's files, when its instant was taken

    @property
    def instant(self) -> str:
        """The write's instant (taken by ``start``)."""
        if self._instant is None:
            raise RuntimeError("the write has no instant yet: call start() first")
        return self._instant

    def start(self) -> list[str]:
        """Under the lock: roll back failed writes, then take a new instant and request
        it. Returns the rolled-back instants."""
        with self.lock:
            rolled_back = self._roll_back_failed_writes()
            instant = self.timeline.new_instant_time()
            try:
                self.timeline.request(instant, self.action, self.operation)
            except FileExistsError:
                raise WriteConflictError(
                    f"{self.base}: instant {instant} is already on the timeline (another "
                    "writer took it); retry the write"
                ) from None
        self._instant = instant
        return rolled_back

    @contextlib.contextmanager
    def inflight(self) -> Iterator[None]:
        """The instant inflight, with a heartbeat, while the body writes the data files
        and completes the instant. A failure inside rolls the write back at once (an
        error that is not hudi_sync's own becomes a ``WriteError``); after success the
        markers go."""
        instant = self.instant
        try:
            heartbeat = Heartbeat(
                self.location, self.hoodie, instant, self.settings.heartbeat_interval_ms
            )
            with heartbeat:
                self.timeline.mark_inflight(instant, self.action, self.operation)
                yield
        except BaseException as exc:
            self._abort(exc)
            raise
        self.location.remove_tree(marker_folder(self.location, instant))

    def write_partition_metadata(self, partitions: set[str]) -> None:
        """``.hoodie_partition_metadata`` in each partition that has none yet."""
        for partition in partitions:
            path = self.location.join(partition, ".hoodie_partition_metadata")
            if not self.location.fs.exists(path):
                depth = len([p for p in partition.split("/") if p])
                text = partition_metadata_text(self.instant, depth)
                self.location.write_file(path, text.encode())

    def complete(self, commit: CommitRecord) -> None:
        """Under the lock: check for conflicts, discard unreported files, publish."""
        with self.lock:
            self._check_conflicts(commit)
            self._discard_unreported_files(commit.stats)
            self._publish(commit)

    def clean_and_archive(self) -> tuple[str | None, list[str]]:
        """The post-commit services, as configured, under the lock: the clean instant
        (``None`` when nothing was cleaned) and the archived instants."""
        clean_instant: str | None = None
        archived: list[str] = []
        settings = self.settings
        if settings.auto_clean or settings.auto_archive:
            with self.lock:
                if settings.auto_clean:
                    clean_instant = clean(self._open(), self.timeline, settings.commits_retained)
                if settings.auto_archive:
                    archived = archive(self._open(), settings.archival)
        return clean_instant, archived

    # -- steps ---------------------------------------------------------------------------
    def _new_lock(self) -> TableLock:
        return table_lock(self.location, self.settings)

    def _open(self) -> HudiTable:
        """The table as it is now (later commits included)."""
        return HudiTable.open(self.base, self.location.storage_options)

    def _roll_back_failed_writes(self) -> list[str]:
        rolled_back = []
        for pending in self.started_from.timeline.pending:
            if pending.action not in _WRITE_ACTIONS:
                continue
            if writer_is_gone(
                self.location,
                self.hoodie,
                pending.requested_time,
                self.settings.heartbeat_interval_ms,
                self.settings.heartbeat_misses,
            ):
                roll_back(self.location, self.timeline, pending.requested_time, pending.action)
                remove_heartbeat(self.location, self.hoodie, pending.requested_time)
                rolled_back.append(pending.requested_time)
        return rolled_back

    def _check_conflicts(self, commit: CommitRecord) -> None:
        """Optimistic concurrency: commits completed since this write read the snapshot
        must not have touched the file groups it rewrote or replaced."""
        ours = {(s.partition_path, s.file_id) for s in commit.stats if s.prev_commit}
        ours |= {(p, f) for p, ids in commit.replaced_file_ids.items() for f in ids}
        seen = {i.requested_time for i in self.started_from.timeline.completed_writes}
        fresh = self._open().timeline
        for instant in fresh.completed_writes:
            if instant.requested_time in seen:
                continue
            metadata = fresh.commit_metadata(instant)
            if self._after_compaction(instant.requested_time, metadata.compacted):
                continue
            theirs = {(s.partition_path, s.file_id) for s in metadata.write_stats}
            theirs |= {
                (p, f) for p, ids in metadata.partition_to_replace_file_ids.items() for f in ids
            }
            overlap = ours & theirs
            if overlap:
                partition, file_id = sorted(overlap)[0]
                raise WriteConflictError(
                    f"{self.base}: write {self.instant} conflicts with commit "
                    f"{instant.requested_time}, which changed {len(overlap)} of the same file "
                    f"groups (e.g. {partition}/{file_id}); retry the write"
                )

    def _after_compaction(self, requested: str, compacted: bool) -> bool:
        """With asynchronous compaction, a compaction scheduled before this deltacommit
        started does not conflict with it (Hudi's rule): the deltacommit's log files
        belong to the slice the compaction creates (named for it on version 6, completed
        after it on 8 and later)."""
        return (
            compacted
            and self.settings.async_compaction
            and self.action == Action.DELTA_COMMIT
            and comparable_instant(requested) < comparable_instant(self.instant)
        )

    def _discard_unreported_files(self, stats: Sequence[WriteStat]) -> None:
        """Files of retried Spark task attempts: announced by a marker, not in the stats."""
        reported = {s.path for s in stats} | {p for s in stats for p in s.cdc_stats}
        for partition, names in files_written_by(self.location, self.instant).items():
            for name in names:
                relative = f"{partition}/{name}" if partition else name
                if relative not in reported:
                    self.location.remove(self.location.join(relative))

    def _publish(self, commit: CommitRecord) -> None:
        """Publish the completed instant: the single point where the write appears."""
        try:
            self.timeline.complete(self.instant, self.action, commit)
        except FileExistsError:
            self._instant_taken = True
            self._written = [p for s in commit.stats for p in (s.path, *s.cdc_stats)]
            raise WriteConflictError(
                f"{self.base}: instant {self.instant} was completed by another writer; this "
                "write's files were discarded, retry the write"
            ) from None

    def _abort(self, exc: BaseException) -> None:
        """Roll back this write now (the next writer would otherwise do it)."""
        if self._instant_taken:
            # The instant's timeline files are another writer's now: only this write's
            # own data files go.
            with contextlib.suppress(OSError):
                for relative in self._written:
                    self.location.remove(self.location.join(relative))
                self.location.remove_tree(marker_folder(self.location, self.instant))
            return
        with (
            contextlib.suppress(Exception),
            self._new_lock(),
        ):
            roll_back(self.location, self.timeline, self.instant, self.action)
        if not isinstance(exc, HudiSyncError | KeyboardInterrupt | SystemExit):
            raise WriteError(
                f"{self.base}: write {self.instant} failed and was rolled back: {first_line(exc)}"
            ) from exc
