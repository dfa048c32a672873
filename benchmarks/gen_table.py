"""Generate a large, valid Apache Hudi Copy-on-Write table for benchmarks.

The table is table version 6 (timeline layout 1) with hive-style partitions
``part=00000``.. and tiny one-row parquet base files. It is written from the format
facts in ``shared/docs/hudi-format.md`` (§1-§4, §8) and imports nothing from
``hudi_sync``, so it can check hudi_sync's reader rather than mirror it.

Timeline (``commits`` completed writes plus ``failed_writes`` pending ones, instants
one second apart from 2024-01-01T00:00:00Z):

* ``insert_commits`` INSERT commits create the ``file_groups`` file groups, spread
  round-robin over the partitions;
* the remaining commits are UPSERTs, each rewriting ``updates_per_commit`` random file
  groups (a new base file of the same file id, ``prevCommit`` set), so there are more
  base files on disk than slices in the latest snapshot;
* one INSERT_OVERWRITE replacecommit (at 90 % of the upserts) replaces
  ``replaced_groups`` file groups by as many new ones, so the snapshot still holds
  exactly ``file_groups`` slices;
* ``failed_writes`` failed writes (the last one is the newest instant) leave only
  ``.commit.requested`` (and ``.inflight`` for all but the last) plus base files: a new
  version of an existing group and a new group, both of which readers must ignore.

Each base file's bytes are written by pyarrow into memory, then to disk: about
0.1 ms per file, measured, so exact per-file content (meta columns naming the file,
commit and key) costs seconds; hardlinking one template would be faster still but
make the meta columns wrong. The expected snapshot (count and a SHA-256 of the sorted
``partition\\tfile id\\tbase file`` lines) goes to ``<name>.expected.json`` next to the
table. Run ``python -m benchmarks.gen_table OUT_DIR [--preset small|full|full10x]``
(``full10x``: the full table ten times larger in every dimension, 1,000,000 file
groups, 100,000 commits, 10,000 partitions, for ``bench_scale``; with
``--empty-base-files`` about two minutes and 1,450,003 base files, 300,003 timeline
files).

``--empty-base-files`` (``TableSpec.empty_base_files``) is for benchmarks that only
list file names (manifests of a million files): every base file is then a zero-byte
file, a hard link to one of a few empty templates in ``<name>.empty/`` next to the
table (creating an inode costs 60-180 us on this machine's ext4, a link about 11 us).
Names, timeline and commit metadata are the same as in a parquet table; only the
base files' bytes are missing, so such a table must not be read by a query engine.

``append_upsert(table)`` adds one more completed UPSERT to a generated table (used by
``bench_sync``): a new base file version of the file groups the latest completed
commit wrote, written like the generator's upserts (requested, inflight, base files,
then the completed ``.commit``).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import errno
import hashlib
import io
import json
import os
import random
import sys
import time
import uuid
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

META_COLUMNS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)
PARQUET_SCHEMA = pa.schema(
    [pa.field(name, pa.string()) for name in META_COLUMNS]
    + [pa.field("id", pa.string()), pa.field("ts", pa.int64()), pa.field("part", pa.string())]
)
START = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
MANIFEST_SUFFIX = ".expected.json"
MANIFEST_FORMAT = 1


@dataclass(frozen=True)
class TableSpec:
    """Sizes and shape of a generated table."""

    commits: int = 10_000  # completed writes: inserts + upserts + 1 replacecommit
    partitions: int = 1_000
    file_groups: int = 100_000  # = file slices of the latest snapshot
    insert_commits: int = 1_000
    updates_per_commit: int = 5
    replaced_groups: int = 4
    failed_writes: int = 2
    seed: int = 20240101
    name: str = "bench_cow"
    empty_base_files: bool = False  # zero-byte base files: for listing benchmarks only

    def validate(self) -> None:
        """Raise ``ValueError`` for sizes the commit pattern cannot honour."""
        problems = []
        if self.partitions < 1 or self.partitions > 100_000:
            problems.append("partitions must be in 1..100000 (5-digit partition values)")
        if not 1 <= self.insert_commits <= self.commits - 1:
            problems.append("need 1 <= insert_commits <= commits - 1 (one replacecommit)")
        if self.file_groups < max(self.partitions, self.insert_commits):
            problems.append("file_groups must be >= partitions and >= insert_commits")
        if not 1 <= self.replaced_groups <= self.file_groups // 2:
            problems.append("replaced_groups must be in 1..file_groups/2")
        spare = self.file_groups - self.replaced_groups - self.failed_writes
        if not 0 <= self.updates_per_commit <= spare:
            problems.append("updates_per_commit too large for file_groups")
        if self.failed_writes < 0:
            problems.append("failed_writes must be >= 0")
        if problems:
            raise ValueError("; ".join(problems))


PRESETS: dict[str, TableSpec] = {
    "small": TableSpec(
        commits=200, partitions=20, file_groups=2_000, insert_commits=20, name="bench_cow_small"
    ),
    "full": TableSpec(),
    # The full table ten times larger in every dimension (file groups, commits, insert
    # commits, partitions: still 100 file groups a partition): ``bench_scale``.
    "full10x": TableSpec(
        commits=100_000,
        partitions=10_000,
        file_groups=1_000_000,
        insert_commits=10_000,
        name="bench_cow_10x",
    ),
}


@dataclass(slots=True)
class _Group:
    """A file group and its latest committed base file."""

    file_id: str
    partition: str
    key: str
    instant: str = ""
    base_name: str = ""


def instant_time(index: int) -> str:
    """17-digit instant of the ``index``-th timeline entry (one second apart)."""
    moment = START + dt.timedelta(seconds=index)
    return moment.strftime("%Y%m%d%H%M%S") + f"{moment.microsecond // 1000:03d}"


def partition_path(index: int) -> str:
    return f"part={index:05d}"


class EmptyFiles:
    """Creates zero-byte files as hard links to a few empty templates in ``directory``.

    A template takes links until the file system refuses (``EMLINK``: 65,000 on ext4),
    then a new one is made. Files that cannot be linked (another file system) are
    created empty instead. With ``content`` the templates (and such files) hold those
    bytes instead of none.
    """

    def __init__(self, directory: Path, content: bytes = b"") -> None:
        self.directory = directory
        self.content = content  # the templates' bytes (``bench_scale``: a parquet file)
        self.template: Path | None = None

    def _new_template(self) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        template = self.directory / f"empty-{uuid.uuid4().hex}"
        template.write_bytes(self.content)
        self.template = template
        return template

    def create(self, path: Path) -> None:
        template = self.template or self._new_template()
        try:
            os.link(template, path)
        except OSError as exc:
            if exc.errno != errno.EMLINK:
                path.write_bytes(self.content)
                return
            os.link(self._new_template(), path)


def empty_files_dir(root: Path) -> Path:
    """Where the empty templates of the table at ``root`` live (next to it)."""
    return root.parent / f"{root.name}.empty"


def table_checksum(database: str, name: str) -> int:
    """Hudi's ``hoodie.table.checksum``: unsigned CRC32 of ``"<db>.<name>"``."""
    return zlib.crc32(f"{database}.{name}".encode()) & 0xFFFFFFFF


def data_avro_schema(name: str) -> dict[str, Any]:
    """Avro schema of the data columns (no meta fields), as commits record it."""
    return {
        "type": "record",
        "name": f"{name}_record",
        "namespace": f"hoodie.{name}",
        "fields": [
            {"name": "id", "type": ["null", "string"], "default": None},
            {"name": "ts", "type": ["null", "long"], "default": None},
            {"name": "part", "type": ["null", "string"], "default": None},
        ],
    }


def _opt(avro_type: Any) -> list[Any]:
    return ["null", avro_type]


def _string() -> dict[str, str]:
    return {"type": "string", "avro.java.string": "String"}


def _string_map(values: Any) -> dict[str, Any]:
    return {"type": "map", "values": values, "avro.java.string": "String"}


def _requested_replace_schema() -> dict[str, Any]:
    """``HoodieRequestedReplaceMetadata`` as Hudi 0.14/0.15 embeds it in v6 tables."""
    ns = "org.apache.hudi.avro.model"
    version = {"name": "version", "type": ["int", "null"], "default": 1}
    extra = {"name": "extraMetadata", "type": _opt(_string_map(_string())), "default": None}
    slice_info = {
        "type": "record",
        "name": "HoodieSliceInfo",
        "namespace": ns,
        "fields": [
            {"name": "dataFilePath", "type": _opt(_string()), "default": None},
            {
                "name": "deltaFilePaths",
                "type": _opt({"type": "array", "items": _string()}),
                "default": None,
            },
            {"name": "fileId", "type": _opt(_string())},
            {"name": "partitionPath", "type": _opt(_string()), "default": None},
            {"name": "bootstrapFilePath", "type": _opt(_string()), "default": None},
            version,
        ],
    }
    group = {
        "type": "record",
        "name": "HoodieClusteringGroup",
        "namespace": ns,
        "fields": [
            {
                "name": "slices",
                "type": _opt({"type": "array", "items": slice_info}),
                "default": None,
            },
            {"name": "metrics", "type": _opt(_string_map("double")), "default": None},
            {"name": "numOutputFileGroups", "type": ["int", "null"], "default": 1},
            extra,
            version,
        ],
    }
    strategy = {
        "type": "record",
        "name": "HoodieClusteringStrategy",
        "namespace": ns,
        "fields": [
            {"name": "strategyClassName", "type": _opt(_string()), "default": None},
            {"name": "strategyParams", "type": _opt(_string_map(_string())), "default": None},
            version,
        ],
    }
    plan = {
        "type": "record",
        "name": "HoodieClusteringPlan",
        "namespace": ns,
        "fields": [
            {
                "name": "inputGroups",
                "type": _opt({"type": "array", "items": group}),
                "default": None,
            },
            {"name": "strategy", "type": _opt(strategy), "default": None},
            extra,
            version,
            {"name": "preserveHoodieMetadata", "type": ["null", "boolean"], "default": None},
        ],
    }
    return {
        "type": "record",
        "name": "HoodieRequestedReplaceMetadata",
        "namespace": ns,
        "fields": [
            {"name": "operationType", "type": _opt(_string()), "default": None},
            {"name": "clusteringPlan", "type": _opt(plan), "default": None},
            extra,
            version,
        ],
    }


def _jackson(value: Any) -> bytes:
    """JSON the way Hudi's Jackson writer pretty-prints commit metadata."""
    return json.dumps(value, indent=2, separators=(",", " : ")).encode()


def _write_stat(group: _Group, relative: str, prev_commit: str | None, size: int) -> dict[str, Any]:
    update = prev_commit is not None
    return {
        "fileId": group.file_id,
        "path": relative,
        "cdcStats": None,
        "prevCommit": prev_commit if update else "null",
        "numWrites": 1,
        "numDeletes": 0,
        "numUpdateWrites": 1 if update else 0,
        "numInserts": 0 if update else 1,
        "totalWriteBytes": size,
        "totalWriteErrors": 0,
        "tempPath": None,
        "partitionPath": group.partition,
        "totalLogRecords": 0,
        "totalLogFilesCompacted": 0,
        "totalLogSizeCompacted": 0,
        "totalUpdatedRecordsCompacted": 0,
        "totalLogBlocks": 0,
        "totalCorruptLogBlock": 0,
        "totalRollbackBlocks": 0,
        "fileSizeInBytes": size,
        "minEventTime": None,
        "maxEventTime": None,
        "runtimeStats": None,
    }


def base_file_bytes(
    partition: str, key: str, name: str, commit_time: str, token: str, ts: int
) -> bytes:
    """A one-row parquet base file whose meta columns name this file, commit and key."""
    row = {
        "_hoodie_commit_time": [commit_time],
        "_hoodie_commit_seqno": [f"{commit_time}_{token.split('-', 1)[0]}_0"],
        "_hoodie_record_key": [key],
        "_hoodie_partition_path": [partition],
        "_hoodie_file_name": [name],
        "id": [key],
        "ts": [ts],
        "part": [partition.split("=", 1)[1]],
    }
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pydict(row, schema=PARQUET_SCHEMA), sink, compression="NONE")
    return sink.getvalue()


class _TableWriter:
    """Writes one table: timeline files, partition metadata and base files."""

    def __init__(self, root: Path, spec: TableSpec) -> None:
        self.root = root
        self.spec = spec
        self.empty_files = EmptyFiles(empty_files_dir(root)) if spec.empty_base_files else None
        self.hoodie = root / ".hoodie"
        self.rng = random.Random(spec.seed)
        self.schema_json = json.dumps(data_avro_schema(spec.name), separators=(",", ":"))
        self.base_files = 0
        self.timeline_files = 0
        self.created_partitions: set[str] = set()

    def new_file_id(self) -> str:
        return f"{uuid.UUID(int=self.rng.getrandbits(128), version=4)}-0"

    def write_skeleton(self) -> None:
        """``.hoodie/hoodie.properties`` and the empty ``archived`` folder."""
        (self.hoodie / "archived").mkdir(parents=True)
        name = self.spec.name
        properties = {
            "hoodie.table.name": name,
            "hoodie.database.name": "default",
            "hoodie.table.type": "COPY_ON_WRITE",
            "hoodie.table.version": "6",
            "hoodie.timeline.layout.version": "1",
            "hoodie.table.recordkey.fields": "id",
            "hoodie.table.precombine.field": "ts",
            "hoodie.table.partition.fields": "part",
            "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
            "hoodie.datasource.write.hive_style_partitioning": "true",
            "hoodie.datasource.write.partitionpath.urlencode": "false",
            "hoodie.datasource.write.drop.partition.columns": "false",
            "hoodie.table.base.file.format": "PARQUET",
            "hoodie.table.timeline.timezone": "UTC",
            "hoodie.archivelog.folder": "archived",
            "hoodie.table.checksum": str(table_checksum("default", name)),
        }
        lines = ["#Properties saved by benchmarks.gen_table", f"#{START.isoformat()}"]
        lines += [f"{key}={value}" for key, value in properties.items()]
        (self.hoodie / "hoodie.properties").write_text("\n".join(lines) + "\n")

    def timeline_file(self, name: str, data: bytes = b"") -> None:
        (self.hoodie / name).write_bytes(data)
        self.timeline_files += 1

    def ensure_partition(self, partition: str, commit_time: str) -> None:
        """Create a partition directory with its ``.hoodie_partition_metadata``."""
        if partition in self.created_partitions:
            return
        directory = self.root / partition
        directory.mkdir()
        text = (
            f"#partition metadata\n#{START.isoformat()}\n"
            f"commitTime={commit_time}\npartitionDepth=1\n"
        )
        (directory / ".hoodie_partition_metadata").write_text(text)
        self.created_partitions.add(partition)

    def write_base_file(
        self, group: _Group, commit_time: str, token: str, ts: int
    ) -> tuple[str, int]:
        """Write a one-row parquet base file of ``group`` (a zero-byte one with
        ``empty_base_files``); returns (relative path, size)."""
        name = f"{group.file_id}_{token}_{commit_time}.parquet"
        relative = f"{group.partition}/{name}"
        self.base_files += 1
        if self.spec.empty_base_files:
            if self.empty_files is not None:
                self.empty_files.create(self.root / relative)
            else:
                (self.root / relative).write_bytes(b"")
            return relative, 0
        data = base_file_bytes(group.partition, group.key, name, commit_time, token, ts)
        (self.root / relative).write_bytes(data)
        return relative, len(data)

    def write_files(
        self, index: int, writes: list[tuple[_Group, bool]]
    ) -> dict[str, list[dict[str, Any]]]:
        """Write a base file per ``(group, is_update)``; advance the groups; return the
        commit's ``partitionToWriteStats``."""
        commit_time = instant_time(index)
        ts = int((START + dt.timedelta(seconds=index)).timestamp() * 1000)
        stats: dict[str, list[dict[str, Any]]] = {}
        for task, (group, is_update) in enumerate(writes):
            self.ensure_partition(group.partition, commit_time)
            token = f"{task}-{index + 1}-{index * 7 + task + 1}"
            relative, size = self.write_base_file(group, commit_time, token, ts)
            prev = group.instant if is_update else None
            stats.setdefault(group.partition, []).append(_write_stat(group, relative, prev, size))
            group.instant = commit_time
            group.base_name = relative.rsplit("/", 1)[1]
        return stats

    def commit_metadata(
        self, stats: dict[str, list[dict[str, Any]]], operation: str
    ) -> dict[str, Any]:
        return {
            "partitionToWriteStats": stats,
            "compacted": False,
            "extraMetadata": {"schema": self.schema_json},
            "operationType": operation,
        }

    @staticmethod
    def inflight_metadata(operation: str) -> dict[str, Any]:
        return {
            "partitionToWriteStats": {},
            "compacted": False,
            "extraMetadata": {},
            "operationType": operation,
        }


def _plan(spec: TableSpec) -> list[str]:
    """Kinds of the timeline's instants in order: insert, upsert, replace, failed."""
    upserts = spec.commits - spec.insert_commits - 1
    body = ["upsert"] * upserts
    body.insert(upserts * 9 // 10, "replace")
    for j in range(spec.failed_writes):
        body.insert(len(body) * (j + 1) // spec.failed_writes, "failed")
    return ["insert"] * spec.insert_commits + body


def manifest_path(out_dir: Path, spec: TableSpec) -> Path:
    return out_dir / f"{spec.name}{MANIFEST_SUFFIX}"


def snapshot_digest(lines: list[str]) -> str:
    """SHA-256 of sorted ``partition\\tfile id\\tbase file`` lines."""
    return hashlib.sha256("\n".join(sorted(lines)).encode()).hexdigest()


def disk_usage(root: Path) -> dict[str, int]:
    """Files, directories, apparent bytes and allocated bytes under ``root``."""
    files = dirs = apparent = allocated = 0
    for directory, dirnames, filenames in os.walk(root):
        dirs += len(dirnames)
        for name in filenames:
            st = os.lstat(os.path.join(directory, name))
            files += 1
            apparent += st.st_size
            allocated += st.st_blocks * 512
        allocated += os.lstat(directory).st_blocks * 512
    return {"files": files, "dirs": dirs, "apparent_bytes": apparent, "allocated_bytes": allocated}


def generate(out_dir: Path, spec: TableSpec, *, verbose: bool = True) -> dict[str, Any]:
    """Write the table ``out_dir/<spec.name>`` and its manifest; return the manifest."""
    spec.validate()
    started = time.perf_counter()
    root = out_dir / spec.name
    if root.exists():
        raise FileExistsError(f"{root} exists; remove it or use another directory")
    out_dir.mkdir(parents=True, exist_ok=True)
    writer = _TableWriter(root, spec)
    writer.write_skeleton()
    rng = writer.rng

    groups: dict[str, _Group] = {}  # live file groups (the expected snapshot)
    updatable: list[_Group] = []  # groups later commits may rewrite
    serial = 0

    def new_group(partition_index: int) -> _Group:
        nonlocal serial
        group = _Group(writer.new_file_id(), partition_path(partition_index), f"key-{serial:09d}")
        serial += 1
        return group

    kinds = _plan(spec)
    completed = inserts = 0
    latest_completed = ""
    replaced: dict[str, list[str]] = {}
    ignored_files: list[str] = []
    replace_instant = ""
    failed_instants: list[str] = []
    for index, kind in enumerate(kinds):
        commit_time = instant_time(index)
        if kind == "insert":
            lo = inserts * spec.file_groups // spec.insert_commits
            hi = (inserts + 1) * spec.file_groups // spec.insert_commits
            fresh = [new_group(g % spec.partitions) for g in range(lo, hi)]
            inserts += 1
            writes = [(g, False) for g in fresh]
            operation = "INSERT"
        elif kind == "upsert":
            writes = [(g, True) for g in rng.sample(updatable, spec.updates_per_commit)]
            operation = "UPSERT"
            fresh = []
        elif kind == "replace":
            replace_instant = commit_time
            old = rng.sample(updatable, spec.replaced_groups)
            fresh = [new_group(int(g.partition.split("=")[1])) for g in old]
            for group in old:
                updatable.remove(group)
                del groups[group.file_id]
                replaced.setdefault(group.partition, []).append(group.file_id)
            writer.timeline_file(f"{commit_time}.replacecommit.requested", _requested_replace())
            inflight = writer.inflight_metadata("INSERT_OVERWRITE")
            writer.timeline_file(f"{commit_time}.replacecommit.inflight", _jackson(inflight))
            stats = writer.write_files(index, [(g, False) for g in fresh])
            meta = writer.commit_metadata(stats, "INSERT_OVERWRITE")
            meta["partitionToReplaceFileIds"] = replaced
            writer.timeline_file(f"{commit_time}.replacecommit", _jackson(meta))
            for group in fresh:
                groups[group.file_id] = group
                updatable.append(group)
            completed += 1
            latest_completed = commit_time
            continue
        else:  # failed: a new version of an existing group and a new group, never completed
            failed_instants.append(commit_time)
            writer.timeline_file(f"{commit_time}.commit.requested")
            if len(failed_instants) < spec.failed_writes:
                inflight = writer.inflight_metadata("UPSERT")
                writer.timeline_file(f"{commit_time}.inflight", _jackson(inflight))
            victim = rng.choice(updatable)
            updatable.remove(victim)  # keep the failed file the newest one of its group
            ghost = _Group(victim.file_id, victim.partition, victim.key, victim.instant)
            orphan = new_group(rng.randrange(spec.partitions))
            writer.write_files(index, [(ghost, True), (orphan, False)])
            ignored_files += [f"{g.partition}/{g.base_name}" for g in (ghost, orphan)]
            continue
        writer.timeline_file(f"{commit_time}.commit.requested")
        inflight = writer.inflight_metadata(operation)
        writer.timeline_file(f"{commit_time}.inflight", _jackson(inflight))
        stats = writer.write_files(index, writes)
        meta = writer.commit_metadata(stats, operation)
        writer.timeline_file(f"{commit_time}.commit", _jackson(meta))
        for group in fresh:
            groups[group.file_id] = group
            updatable.append(group)
        completed += 1
        latest_completed = commit_time
        if verbose and completed % 1000 == 0:
            print(
                f"  {completed}/{spec.commits} commits, {writer.base_files} base files, "
                f"{time.perf_counter() - started:.1f}s",
                file=sys.stderr,
            )

    lines = [f"{g.partition}\t{g.file_id}\t{g.base_name}" for g in groups.values()]
    generation_seconds = time.perf_counter() - started
    manifest = {
        "format": MANIFEST_FORMAT,
        "spec": dataclasses.asdict(spec),
        "table_path": str(root),
        "expected_latest_slices": len(groups),
        "expected_slices_sha256": snapshot_digest(lines),
        "completed_commits": completed,
        "timeline_instants": len(kinds),
        "first_instant": instant_time(0),
        "latest_instant": instant_time(len(kinds) - 1),
        "latest_completed_instant": latest_completed,
        "replace_instant": replace_instant,
        "replaced_file_ids": replaced,
        "failed_instants": failed_instants,
        "ignored_base_files": ignored_files,
        "partitions": len(writer.created_partitions),
        "base_files": writer.base_files,
        "timeline_files": writer.timeline_files,
        "generation_seconds": round(generation_seconds, 3),
        "disk": disk_usage(root),
    }
    manifest_path(out_dir, spec).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _requested_replace() -> bytes:
    """Avro container bytes of an INSERT_OVERWRITE ``HoodieRequestedReplaceMetadata``."""
    record: dict[str, Any] = {
        "operationType": "INSERT_OVERWRITE",
        "clusteringPlan": None,
        "extraMetadata": {},
        "version": 1,
    }
    sink = io.BytesIO()
    fastavro.writer(sink, fastavro.parse_schema(_requested_replace_schema()), [record])
    return sink.getvalue()


def load_manifest(out_dir: Path, spec: TableSpec) -> dict[str, Any] | None:
    """The manifest of an already generated table with this spec, else ``None``."""
    path = manifest_path(out_dir, spec)
    if not path.is_file():
        return None
    manifest: dict[str, Any] = json.loads(path.read_text())
    if manifest.get("format") != MANIFEST_FORMAT:
        return None
    # Manifests written before a TableSpec field existed hold its default value.
    stored = dataclasses.asdict(TableSpec()) | dict(manifest.get("spec") or {})
    if stored != dataclasses.asdict(spec):
        return None
    if not (out_dir / spec.name / ".hoodie" / "hoodie.properties").is_file():
        return None
    return manifest


@dataclass(frozen=True)
class AppendedCommit:
    """One commit added by ``append_upsert``."""

    instant: str
    commit_file: Path
    # (partition, file id, previous base file, new base file) per rewritten group
    changes: tuple[tuple[str, str, str, str], ...]


def instant_index(instant: str) -> int:
    """Inverse of ``instant_time`` (whole seconds after ``START``)."""
    moment = dt.datetime.strptime(instant[:14], "%Y%m%d%H%M%S").replace(tzinfo=dt.UTC)
    return int((moment - START).total_seconds())


def append_upsert(root: Path, updates: int = 5) -> AppendedCommit:
    """Add one completed UPSERT to the generated table at ``root``.

    It rewrites up to ``updates`` of the file groups the latest completed commit wrote
    (their newest committed versions, so ``prevCommit`` is that commit), at the instant
    one second after the newest one on the timeline, with the same file names, write
    stats and timeline files as the generator's upserts. A table of zero-byte base
    files gets zero-byte new versions; otherwise the record key is read back from the
    previous version, as a copy-on-write upsert would.
    """
    hoodie = root / ".hoodie"
    names = os.listdir(hoodie)
    instants = [n.split(".", 1)[0] for n in names if n[:17].isdigit() and n[17:18] == "."]
    completed = [n for n in names if n[:17].isdigit() and n[17:] in (".commit", ".replacecommit")]
    if not completed:
        raise ValueError(f"{root}: no completed commit to build on")
    latest = max(completed)
    previous = json.loads((hoodie / latest).read_bytes())
    stats = [
        stat
        for partition_stats in previous["partitionToWriteStats"].values()
        for stat in partition_stats
    ]
    stats.sort(key=lambda stat: (stat["partitionPath"], stat["fileId"]))
    chosen = stats[: max(0, updates)]
    table_name = ""
    for line in (hoodie / "hoodie.properties").read_text().splitlines():
        if line.startswith("hoodie.table.name="):
            table_name = line.split("=", 1)[1]
    index = instant_index(max(instants)) + 1
    commit_time = instant_time(index)
    empty = any(os.path.getsize(root / stat["path"]) == 0 for stat in chosen)
    spec = TableSpec(name=table_name, empty_base_files=empty)
    writer = _TableWriter(root, spec)
    writer.empty_files = None  # a handful of files: plain empty files, no templates
    writes: list[tuple[_Group, bool]] = []
    for stat in chosen:
        key = ""
        if not empty:
            column = pq.read_table(root / stat["path"], columns=["_hoodie_record_key"])
            key = str(column.column(0)[0])
        writer.created_partitions.add(stat["partitionPath"])
        group = _Group(stat["fileId"], stat["partitionPath"], key, latest.split(".", 1)[0])
        group.base_name = stat["path"].rsplit("/", 1)[1]
        writes.append((group, True))
    old_names = [g.base_name for g, _ in writes]
    writer.timeline_file(f"{commit_time}.commit.requested")
    writer.timeline_file(f"{commit_time}.inflight", _jackson(writer.inflight_metadata("UPSERT")))
    meta = writer.commit_metadata(writer.write_files(index, writes), "UPSERT")
    writer.timeline_file(f"{commit_time}.commit", _jackson(meta))
    changes = tuple(
        (g.partition, g.file_id, old, g.base_name)
        for (g, _), old in zip(writes, old_names, strict=True)
    )
    return AppendedCommit(commit_time, hoodie / f"{commit_time}.commit", changes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path, help="directory to write the table into")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="small")
    parser.add_argument(
        "--empty-base-files",
        action="store_true",
        dest="empty_base_files",
        help="zero-byte base files (hard links to empty templates): listing benchmarks only",
    )
    for field in ("commits", "partitions", "file_groups", "insert_commits", "updates_per_commit"):
        parser.add_argument(f"--{field.replace('_', '-')}", type=int, dest=field)
    args = parser.parse_args(argv)
    overrides = {k: v for k, v in vars(args).items() if k in TableSpec.__annotations__ and v}
    spec = dataclasses.replace(PRESETS[args.preset], **overrides)
    manifest = generate(args.out_dir, spec)
    summary = {k: v for k, v in manifest.items() if k not in ("ignored_base_files",)}
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
