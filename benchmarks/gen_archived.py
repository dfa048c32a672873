"""An archived variant of a generated table, as a Hudi writer's table services leave it.

``benchmarks.gen_table`` writes a table whose whole history (30,003 timeline files for
the full preset) is on the active timeline: its failed writes are never rolled back,
and a pending write stops archival. A Hudi writer with default services would have
rolled them back, cleaned (``hoodie.cleaner.commits.retained``, default 10; archival
cannot pass a replacecommit whose replaced file groups were never cleaned) and archived
(``hoodie.keep.min.commits`` / ``hoodie.keep.max.commits``, defaults 20 / 30).

``generate_archived(out_dir, spec)`` does that to a hard-linked copy of the cached
table ``spec`` (generated first if missing) with hudi_sync's own services: each failed
write gets its markers (as the failed Hudi writer would have left them) and is rolled
back (``hudi_sync.table.write.rollback``), then one clean and one archival
(``hudi_sync.table.write.cleaner``, ``hudi_sync.table.write.archiver``, which writes one v6 archive
log file under ``.hoodie/archived/``). Service instants are one second after the newest
instant, so a regeneration is identical. The latest snapshot is unchanged: the table's
``<name>_archived.expected.json`` repeats the source's expected snapshot, and
generation fails unless hudi_sync's latest file slices match it. The copy's
``.hoodie`` folder is then re-created (``compact_folder``: ext4 never shrinks a
directory, and a Hudi writer, archiving as it goes, never had 300,000 files there),
and zero-byte base files (``--empty-base-files``) that take no more hard links get new
empty templates.

``archive_table(root, failed_instants)`` runs the same three services on any copy of a
generated table (``bench_sync`` uses it to time the sync right after an archival).
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.gen_table import (
    EmptyFiles,
    TableSpec,
    disk_usage,
    empty_files_dir,
    generate,
    instant_index,
    instant_time,
    load_manifest,
    snapshot_digest,
)
from hudi_sync.storage import open_location
from hudi_sync.table import HudiTable
from hudi_sync.table.timeline.instant import parse_instant_file_name
from hudi_sync.table.write.archiver import ArchivalPolicy, archive
from hudi_sync.table.write.cleaner import clean
from hudi_sync.table.write.rollback import roll_back, write_marker
from hudi_sync.table.write.timeline import TimelineWriter

ARCHIVED_SUFFIX = "_archived"
ARCHIVED_FORMAT = 1


@dataclass(frozen=True)
class ArchivalSpec:
    """Hudi's default services: ``hoodie.cleaner.commits.retained`` and
    ``hoodie.keep.min.commits`` / ``hoodie.keep.max.commits``."""

    commits_retained: int = 10
    keep_min_commits: int = 20
    keep_max_commits: int = 30

    @property
    def policy(self) -> ArchivalPolicy:
        return ArchivalPolicy(self.keep_min_commits, self.keep_max_commits)


class _NextSecondTimeline(TimelineWriter):
    """Service instants one second after the newest instant (the generator's clock),
    not the wall clock, so a regenerated table is the same table."""

    def new_instant_time(self) -> str:
        times = [
            parsed.requested_time
            for name in self.location.names(self.folder)
            if (parsed := parse_instant_file_name(name)) is not None
        ]
        return instant_time(instant_index(max(times)) + 1)


@dataclass(frozen=True)
class ArchivalResult:
    """What ``archive_table`` did."""

    rollbacks: tuple[str, ...]
    clean: str | None
    archived: tuple[str, ...]
    seconds: float


def archive_table(
    root: Path, failed_instants: list[str], ignored_files: list[str], spec: ArchivalSpec
) -> ArchivalResult:
    """Roll back the failed writes of the generated table at ``root`` (whose data files
    are ``ignored_files``, paths relative to ``root``), clean, then archive."""
    started = time.perf_counter()
    spec.policy.check(spec.commits_retained)
    location = open_location(str(root))
    timeline = _NextSecondTimeline(location, location.join(".hoodie"), 6)
    rollbacks = []
    for instant in failed_instants:
        for relative in ignored_files:
            if relative.endswith(f"_{instant}.parquet"):
                partition, _, name = relative.rpartition("/")
                write_marker(location, instant, partition, name)
        rollbacks.append(roll_back(location, timeline, instant, "commit"))
    clean_instant = clean(HudiTable.open(str(root)), timeline, spec.commits_retained)
    archived = archive(HudiTable.open(str(root)), spec.policy)
    return ArchivalResult(
        tuple(rollbacks), clean_instant, tuple(archived), time.perf_counter() - started
    )


def compact_folder(folder: Path) -> None:
    """Re-create ``folder`` with its entries: ext4 never shrinks a directory, so after
    archival moved ~all of a generated timeline's files out (300,003 of them for
    ``full10x``) ``.hoodie`` would stay a 20 MB directory that every timeline listing
    scans. A Hudi writer archives as it goes, so its active timeline never grew that
    large: the generated table should not carry the artefact either."""
    fresh = folder.with_name(f"{folder.name}.compacting")
    fresh.mkdir()
    for name in os.listdir(folder):
        os.rename(folder / name, fresh / name)
    folder.rmdir()
    os.rename(fresh, folder)


def archived_name(spec: TableSpec) -> str:
    return f"{spec.name}{ARCHIVED_SUFFIX}"


def archived_manifest_path(out_dir: Path, spec: TableSpec) -> Path:
    return out_dir / f"{archived_name(spec)}.expected.json"


def link_tree(source: Path, target: Path) -> int:
    """Copy a table as hard links (services only delete files or write new ones).

    A zero-byte base file (``--empty-base-files``) whose inode takes no more links
    (``EMLINK``) becomes a link to a new empty template in ``<target>.empty``."""
    empty: EmptyFiles | None = None
    count = 0
    for directory, _dirnames, filenames in os.walk(source):
        destination = target / os.path.relpath(directory, source)
        destination.mkdir(parents=True, exist_ok=True)
        for name in filenames:
            src, dst = os.path.join(directory, name), destination / name
            try:
                os.link(src, dst)
            except OSError as exc:
                if exc.errno != errno.EMLINK or os.path.getsize(src) != 0:
                    raise
                empty = empty or EmptyFiles(empty_files_dir(target))
                empty.create(dst)
            count += 1
    return count


def latest_slices_digest(root: Path) -> tuple[int, str]:
    """hudi_sync's latest snapshot of ``root``: slice count and ``snapshot_digest``."""
    slices = HudiTable.open(str(root)).file_slices()
    lines = [
        f"{s.partition_path}\t{s.file_id}\t{s.base_file.name if s.base_file else ''}"
        for s in slices
    ]
    return len(lines), snapshot_digest(lines)


def generate_archived(
    out_dir: Path, spec: TableSpec, services: ArchivalSpec = ArchivalSpec()
) -> dict[str, Any]:
    """Write ``out_dir/<spec.name>_archived`` and its manifest; return the manifest."""
    started = time.perf_counter()
    source = load_manifest(out_dir, spec) or generate(out_dir, spec)
    root = out_dir / archived_name(spec)
    if root.exists():
        raise FileExistsError(f"{root} exists; remove it or use another directory")
    link_tree(out_dir / spec.name, root)
    result = archive_table(
        root, list(source["failed_instants"]), list(source["ignored_base_files"]), services
    )
    compact_folder(root / ".hoodie")
    slices, digest = latest_slices_digest(root)
    expected = (source["expected_latest_slices"], source["expected_slices_sha256"])
    if (slices, digest) != expected:
        raise RuntimeError(f"{root}: the archived table's latest snapshot differs from {spec.name}")
    usage = disk_usage(root)
    hoodie = root / ".hoodie"
    manifest = {
        key: source[key]
        for key in (
            "expected_latest_slices",
            "expected_slices_sha256",
            "completed_commits",
            "latest_completed_instant",
            "partitions",
        )
    } | {
        "format": ARCHIVED_FORMAT,
        "spec": dataclasses.asdict(spec),
        "services": dataclasses.asdict(services),
        "table_path": str(root),
        "rollback_instants": list(result.rollbacks),
        "clean_instant": result.clean,
        "archived_instants": len(result.archived),
        "archive_files": sorted(os.listdir(hoodie / "archived")),
        "timeline_files": sum(1 for e in os.scandir(hoodie) if e.is_file()),
        "base_files": sum(1 for p in root.glob("part=*/*.parquet")),
        "services_seconds": round(result.seconds, 3),
        "generation_seconds": round(time.perf_counter() - started, 3),
        "disk": usage,
    }
    archived_manifest_path(out_dir, spec).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def load_archived(
    out_dir: Path, spec: TableSpec, services: ArchivalSpec = ArchivalSpec()
) -> dict[str, Any] | None:
    """The manifest of an already archived variant of ``spec``, else ``None``."""
    path = archived_manifest_path(out_dir, spec)
    if not path.is_file():
        return None
    manifest: dict[str, Any] = json.loads(path.read_text())
    if (
        manifest.get("format") != ARCHIVED_FORMAT
        or manifest.get("spec") != dataclasses.asdict(spec)
        or manifest.get("services") != dataclasses.asdict(services)
    ):
        return None
    if not (out_dir / archived_name(spec) / ".hoodie" / "hoodie.properties").is_file():
        return None
    return manifest
