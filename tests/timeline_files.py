"""Writers for timeline files the fixtures lack (clean, archived instants), for tests.

They write the documented on-disk formats (Avro object-container instants, Hudi log
blocks, LSM history parquet) with minimal schemas that use Hudi's field names; the
readers decode with the writer schema each file carries, as Hudi's do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hudi_sync.table.write.archiver import add_lsm_history_layer, append_archive_log
from hudi_sync.table.write.timeline import CLEAN_SCHEMA, avro_bytes


def write_clean(
    timeline_dir: Path, instant: str, earliest_to_retain: str, completed_name: str | None = None
) -> None:
    record = {
        "startCleanTime": instant,
        "timeTakenInMillis": 1,
        "totalFilesDeleted": 0,
        "earliestCommitToRetain": earliest_to_retain,
        "partitionMetadata": {},
        "version": 2,
    }
    (timeline_dir / f"{instant}.clean.requested").write_bytes(b"")
    (timeline_dir / f"{instant}.clean.inflight").write_bytes(b"")
    (timeline_dir / (completed_name or f"{instant}.clean")).write_bytes(
        avro_bytes(CLEAN_SCHEMA, record)
    )


def write_v1_archive(archive_dir: Path, entries: list[tuple[str, str, str]]) -> Path:
    """An archive log file with one Avro block of (commitTime, action, state) entries."""
    records = [
        {"commitTime": t, "actionType": a, "version": 1, "actionState": s} for t, a, s in entries
    ]
    return Path(append_archive_log(str(archive_dir), records))


def write_lsm_history(history_dir: Path, rows: list[dict[str, Any]]) -> None:
    """One level-0 parquet file of completed instants plus ``manifest_<v>`` and ``_version_``."""
    add_lsm_history_layer(str(history_dir), [{"plan": None, "version": 1, **r} for r in rows])


class HeldBackCommits:
    """Completed commits taken off a table's timeline, to be put back one at a time:
    a table that gains commits while a test watches (files stay on disk; without their
    timeline files the commits are invisible, as a writer's are before completion)."""

    def __init__(self, table_path: Path, keep: int) -> None:
        from hudi_sync.table import HudiTable

        table = HudiTable.open(str(table_path))
        self.timeline = table_path / ".hoodie"
        if (self.timeline / "timeline").is_dir():
            self.timeline = self.timeline / "timeline"
        self.commits = [i.requested_time for i in table.completed_commits()]
        self.store = table_path.parent / f"{table_path.name}.held-back"
        self.store.mkdir()
        later = set(self.commits[keep:])
        for file in sorted(self.timeline.iterdir()):
            if file.is_file() and file.name.split(".")[0].split("_")[0] in later:
                file.rename(self.store / file.name)

    @property
    def remaining(self) -> list[str]:
        return sorted({f.name.split(".")[0].split("_")[0] for f in self.store.iterdir()})

    def complete_next(self) -> str | None:
        """Put the oldest held-back commit back (requested, inflight, completed order)."""
        remaining = self.remaining
        if not remaining:
            return None
        files = sorted(f for f in self.store.iterdir() if f.name.startswith(remaining[0]))
        order = {"requested": 0, "inflight": 1}
        for file in sorted(files, key=lambda f: order.get(f.name.rsplit(".", 1)[-1], 2)):
            file.rename(self.timeline / file.name)
        return remaining[0]

    def complete_all(self) -> list[str]:
        """Put every held-back commit back, oldest first; return their instants."""
        completed = []
        while (instant := self.complete_next()) is not None:
            completed.append(instant)
        return completed
