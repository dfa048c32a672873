"""The Spark merge engine as the driver runs it: profile, route, pick a plan, write, stats.

The driver profiles the incoming keys against the stored ones, routes new keys into
file groups (``file_groups``), picks which of ``spark_merge``'s two plans merges them
(``merged_in_place`` when no key comes twice, no new key goes to a small file and the
incoming rows fit a broadcast, ``MERGE_BROADCAST_BYTES`` or Spark's threshold, else
``merged_rows``), writes them, adds a CDC table's logs (``cdc_logs``), and turns the
written files' footers and the profile into write stats (no counting job). The Spark
jobs themselves are ``spark_merge``'s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from hudi_sync.spark.writing import spark_files, spark_merge
from hudi_sync.spark.writing.cdc_logs import DRIVER_BYTES, images_of, write_cdc_logs
from hudi_sync.spark.writing.file_groups import WriteTarget, new_key_buckets, uses_small_files
from hudi_sync.spark.writing.incoming import IncomingRows
from hudi_sync.spark.writing.merge import DELETE_FLAG, PARTITION_PATH, RECORD_KEY
from hudi_sync.spark.writing.spark_merge import Bucket
from hudi_sync.spark.writing.write_schema import json_schema
from hudi_sync.table.cdc.log import CdcMode
from hudi_sync.table.timeline.commit_metadata import WriteStat
from hudi_sync.table.write.rollback import write_marker

# The incoming rows of the stored partitions are broadcast to the tasks that stream the
# stored files (``merged_in_place``) up to this estimated size even where Spark's own
# threshold (10 MB by default) is lower: on wide rows 10 MB is a few ten thousand rows,
# and the other plan shuffles every stored row twice.
MERGE_BROADCAST_BYTES = 64 << 20
_SIZE_UNITS = {"b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def write_file_groups(
    spark: SparkSession,
    target: WriteTarget,
    incoming: IncomingRows,
    cdc_mode: CdcMode | None = None,
) -> list[WriteStat]:
    """The merge as Spark's own jobs (``spark_merge``): profile the incoming keys
    against the stored ones, route new keys, then merge and write, in place when the
    profile allows it; with ``cdc_mode``, then the rewritten groups' CDC logs
    (``cdc_logs``). Returns the written file groups' stats."""
    return _SparkMergePlan(spark, target, incoming, cdc_mode).write()


class _SparkMergePlan:
    """One write's Spark merge; it reads each stored base file's footer once (the
    profile, the in-place check and the stats all ask)."""

    def __init__(
        self,
        spark: SparkSession,
        target: WriteTarget,
        incoming: IncomingRows,
        cdc_mode: CdcMode | None,
    ) -> None:
        assert incoming.rows is not None  # only delete_partition has no rows
        self.spark = spark
        self.cdc_mode = cdc_mode
        self.target = target
        self.location = target.location
        self.incoming = incoming
        self.rows: DataFrame = incoming.rows
        self._stored_files: dict[str, spark_files.StoredFile] = {}  # path -> its footer's facts

    def write(self) -> list[WriteStat]:
        target, location, incoming = self.target, self.location, self.incoming
        snapshot, instant, schema = target.snapshot, target.instant, target.schema
        operation, ordering = target.options.operation, target.ordering
        rows = self.rows
        if operation == "delete":
            # A delete writes none of its rows' data columns: only its keys are read
            # (the merge's missing columns are typed nulls), not broadcast or shuffled.
            keys = (PARTITION_PATH, RECORD_KEY, DELETE_FLAG, spark_merge.SEQUENCE)
            rows = rows.select(*[c for c in rows.columns if c in keys])
        tagging = operation in ("upsert", "delete")
        stored_files: dict[str, list[str]] = {}
        for (partition, _), name in sorted(snapshot.items()):
            if partition in target.partitions:
                path = location.join(partition, name)
                stored_files.setdefault(partition, []).append(path)
        every_stored = [path for paths in stored_files.values() for path in paths]
        found = (
            spark_merge.profile(
                self.spark,
                location,
                rows,
                stored_files,
                ordering,
                self._fits_broadcast(
                    sum(incoming.row_counts.get(p, 0) for p in stored_files), every_stored
                ),
                incoming.counted,
                self._file_schema(every_stored),
            )
            if tagging
            else None
        )
        counts = found.new_keys if found else incoming.upserts
        buckets = new_key_buckets(target, counts, uses_small_files(operation))
        profiles = found.groups if found else {}
        touched = set(profiles) | {(b.partition, b.file_id) for b in buckets}
        rewritten = {k: snapshot[k] for k in sorted(touched) if k in snapshot}
        groups = {file_id: partition for partition, file_id in touched}
        if not groups:
            return []
        for file_id, partition in groups.items():
            name = spark_files.base_file_name(file_id, instant)
            write_marker(location, instant, partition, name)
        new_groups = sum(1 for k in touched if k not in snapshot)
        whole_files = 0
        in_place = found is not None and self._merges_in_place(found, rewritten, buckets)
        rewritten_schema = self._file_schema(self._paths(rewritten))
        if found is not None and in_place:
            merged, inserts = spark_merge.merged_in_place(
                self.spark,
                location,
                rows,
                schema,
                rewritten,
                ordering,
                instant,
                found.new_keys,
                rewritten_schema,
            )
            routed = spark_merge.route(self.spark, inserts, buckets)
            all_incoming = sum(incoming.row_counts.values())
            if new_groups == 1 and all_incoming <= 2 * sum(found.new_keys.values()):
                # One new file group, and its rows are most of the incoming ones: one
                # task reads them all, cheaper than shuffling them to one task.
                routed = routed.coalesce(1)
            else:
                routed = spark_merge.by_file_group(routed, new_groups)
            to_write = routed.unionByName(merged)  # the insert task, often the largest, first
            whole_files = 1 + max(location.size(path) for path in self._paths(rewritten))
        else:
            if found and found.duplicates:
                rows = spark_merge.deduplicated(rows, ordering)
            merged = spark_merge.merged_rows(
                self.spark,
                location,
                rows,
                schema,
                rewritten,
                ordering,
                tagging,
                instant,
                rewritten_schema,
            )
            to_write = spark_merge.by_file_group(
                spark_merge.route(self.spark, merged, buckets), len(groups)
            )
        published = spark_files.write_file_groups(
            location, to_write, schema, instant, groups, whole_files
        )
        logs = self._cdc_logs(rows, rewritten, buckets, tagging, in_place, profiles)
        return self._stats(touched, rewritten, published, profiles, logs)

    def _cdc_logs(
        self,
        rows: DataFrame,
        rewritten: Mapping[tuple[str, str], str],
        buckets: Sequence[Bucket],
        tagging: bool,
        broadcast: bool,
        profiles: Mapping[tuple[str, str], spark_merge.GroupProfile],
    ) -> dict[str, tuple[str, int]]:
        """With CDC logging, each rewritten group's CDC log (file id -> path, size): a
        second job over the changed keys only. New file groups get none (readers infer
        their inserts from the base file), as in Hudi."""
        if self.cdc_mode is None or not rewritten:
            return {}
        target = self.target
        changes = spark_merge.changed_rows(
            self.spark,
            self.location,
            rows,
            target.schema,
            rewritten,
            target.ordering,
            tagging,
            [b for b in buckets if (b.partition, b.file_id) in rewritten],
            images_of(self.cdc_mode),
            broadcast,
            self._file_schema(self._paths(rewritten)),
        )
        data_schema = json.loads(json_schema(target.schema, target.options.table_name))
        return write_cdc_logs(
            changes,
            self.location,
            self.cdc_mode,
            target.schema,
            data_schema,
            target.instant,
            collect_on_driver=self._changes_are_few(profiles, rewritten, buckets),
        )

    def _changes_are_few(
        self,
        profiles: Mapping[tuple[str, str], spark_merge.GroupProfile],
        rewritten: Mapping[tuple[str, str], str],
        buckets: Sequence[Bucket],
    ) -> bool:
        """Whether the profile counts the changes below ``cdc_logs.DRIVER_BYTES`` (each
        change estimated at two stored rows: its images). Inserts into stored (small)
        file groups are not counted by the profile: those go to the workers."""
        if any((b.partition, b.file_id) in rewritten for b in buckets) or not profiles:
            return False
        changed = sum(p.updates + p.deletes for p in profiles.values())
        row_bytes = max(self._stored_file(path).row_bytes for path in self._paths(rewritten))
        return 2 * changed * row_bytes <= DRIVER_BYTES

    def _stats(
        self,
        touched: set[tuple[str, str]],
        rewritten: Mapping[tuple[str, str], str],
        published: Mapping[str, tuple[str, int, int]],
        profiles: Mapping[tuple[str, str], spark_merge.GroupProfile],
        logs: Mapping[str, tuple[str, int]],
    ) -> list[WriteStat]:
        """Each written file group's stat, from its footer and the profile; a stored
        group whose rows all got deleted keeps an empty file."""
        location, instant, schema = self.location, self.target.instant, self.target.schema
        stats = []
        for partition, file_id in sorted(touched):
            stored = rewritten.get((partition, file_id))
            if file_id in published:
                relative, num_rows, size = published[file_id]
            elif stored is not None:  # every row deleted: the group keeps an empty file
                name = spark_files.base_file_name(file_id, instant)
                relative, num_rows = f"{partition}/{name}".lstrip("/"), 0
                size = spark_files.write_empty(location, schema, relative)
            else:
                continue  # a new group no key hashed to
            stored_count = self._stored_file(location.join(partition, stored)).rows if stored else 0
            stats.append(
                spark_files.write_stat(
                    partition,
                    file_id,
                    relative,
                    num_rows,
                    size,
                    stored,
                    stored_count,
                    profiles.get((partition, file_id)),
                    dict([logs[file_id]]) if file_id in logs else {},
                )
            )
        return stats

    def _merges_in_place(
        self,
        found: spark_merge.Profile,
        rewritten: Mapping[tuple[str, str], str],
        buckets: Sequence[Bucket],
    ) -> bool:
        """Whether ``merged_in_place`` can merge: no key comes twice, no new key goes to a
        stored (small) file, and the incoming rows of the stored partitions fit a
        broadcast (``_fits_broadcast``)."""
        if found.duplicates or not rewritten:
            return False
        if any((b.partition, b.file_id) in self.target.snapshot for b in buckets):
            return False
        stored_partitions = {p for p, _ in rewritten}
        incoming = sum(n for p, n in found.keys.items() if p in stored_partitions)
        return self._fits_broadcast(incoming, self._paths(rewritten))

    def _paths(self, groups: Mapping[tuple[str, str], str]) -> list[str]:
        """The path of each file group's base file."""
        return [self.location.join(partition, name) for (partition, _), name in groups.items()]

    def _stored_file(self, path: str) -> spark_files.StoredFile:
        """A stored base file's footer facts, read once per write."""
        if path not in self._stored_files:
            self._stored_files[path] = spark_files.stored_file(self.location, path)
        return self._stored_files[path]

    def _file_schema(self, paths: Sequence[str]) -> StructType | None:
        """The Spark schema to read the stored files ``paths`` with, from their footers
        (``spark_merge.read_schema``): Spark infers none, which is a job a read."""
        stored = [self._stored_file(path).schema for path in paths]
        return spark_merge.read_schema(self.target.schema, stored)

    def _fits_broadcast(self, incoming: int, stored: Sequence[str]) -> bool:
        """Whether ``incoming`` rows fit a broadcast, each estimated at the largest
        uncompressed row of the ``stored`` files (paths; their footers) they meet: Spark's
        threshold, but at least ``MERGE_BROADCAST_BYTES`` (Hudi's merge handle holds a
        file group's incoming records in memory likewise). A threshold of -1 (broadcasts
        off) is kept."""
        threshold = broadcast_limit(self.spark)
        if threshold <= 0 or not stored:
            return False
        row_bytes = max(self._stored_file(path).row_bytes for path in stored)
        return incoming * row_bytes <= threshold


def broadcast_limit(spark: SparkSession) -> int:
    """The most bytes a write broadcasts to meet stored rows: Spark's threshold, but at
    least ``MERGE_BROADCAST_BYTES``; 0 when broadcasts are off (a threshold of -1)."""
    threshold = _size_setting(
        spark.conf.get("spark.sql.autoBroadcastJoinThreshold", "10MB") or "10MB"
    )
    return max(threshold, MERGE_BROADCAST_BYTES) if threshold > 0 else 0


def _size_setting(value: str) -> int:
    """A Spark byte-size setting (``10MB``, ``10485760``, ``-1``) in bytes."""
    text = value.strip().lower().removesuffix("b") or "0"
    unit = _SIZE_UNITS.get(text[-1], 1)
    number = text[:-1] if text[-1] in _SIZE_UNITS else text
    return int(float(number) * unit)
