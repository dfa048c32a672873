"""The Python merge engine: Spark's Python workers merge each file group with pyarrow.

Spark tags each incoming key with the file group that stores it (Hudi's simple
index: one job joins the stored keys of the touched partitions with the incoming keys,
``key_lookup``) and routes new keys into file groups (``file_groups``); then Spark's
Python workers merge each touched file group with pyarrow (``merge.merge_file_group``)
and write it under its Hudi name, after a marker.

Used where Spark cannot open the table itself (object stores without a Hadoop
connector), with CDC logging (each rewritten file group logs its changes), for
Merge-on-Read writes (a stored file group's changes are appended as a log file,
``log_append``, instead of merged), or with ``hudi_sync.write.merge.engine=python``.
The workers open the table from its URI and storage options (plain data), never
assuming the driver's disk, so a cluster needs no Hadoop connector for the table. The
files carry Hudi's key-range footer metadata.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession

from hudi_sync.spark.compat import apply_in_arrow, collect_arrow, from_arrow_schema
from hudi_sync.spark.writing import key_lookup, spark_files
from hudi_sync.spark.writing.cdc_logs import DRIVER_BYTES
from hudi_sync.spark.writing.file_groups import WriteTarget, new_key_buckets, uses_small_files
from hudi_sync.spark.writing.incoming import IncomingRows
from hudi_sync.spark.writing.log_append import AppendSpec, append_log
from hudi_sync.spark.writing.merge import (
    PARTITION_PATH,
    RECORD_KEY,
    cdc_changes,
    merge_file_group,
)
from hudi_sync.spark.writing.spark_merge import FILE_ID, route
from hudi_sync.spark.writing.write_schema import json_schema
from hudi_sync.storage import Location, open_location, read_parquet
from hudi_sync.table.cdc.log import CdcMode, cdc_log_name, encode_cdc_file
from hudi_sync.table.timeline.commit_metadata import WriteStat
from hudi_sync.table.write.rollback import write_marker

# One row per written file (a file group's merged base file, or each of its log files).
_STATS = pa.schema(
    [
        ("partition", pa.string()),
        ("file_id", pa.string()),
        ("path", pa.string()),
        ("prev_commit", pa.string()),
        ("num_writes", pa.int64()),
        ("num_deletes", pa.int64()),
        ("num_update_writes", pa.int64()),
        ("num_inserts", pa.int64()),
        ("file_size", pa.int64()),
        ("prev_base_file", pa.string()),
        ("cdc_path", pa.string()),
        ("cdc_size", pa.int64()),
        ("base_file", pa.string()),
        ("log_files", pa.list_(pa.string())),
        ("log_version", pa.int32()),
    ]
)


def write_file_groups(
    spark: SparkSession,
    target: WriteTarget,
    incoming: IncomingRows,
    cdc_mode: CdcMode | None,
    log_appends: AppendSpec | None = None,
    spark_writes_inserts: bool = False,
) -> list[WriteStat]:
    """Merge the keyed, deduplicated (cached) incoming rows into the file groups they
    touch and write them; returns their write stats. The stored keys are looked up
    once (``key_lookup``). With ``log_appends`` (a Merge-on-Read deltacommit) stored
    file groups get their changes as a new log file instead, and new keys go to new
    file groups only (small files take no inserts: Hudi's index would not find keys
    written to their logs); with ``spark_writes_inserts`` (Spark can open the table)
    Spark's parquet writer writes those new file groups."""
    rows = incoming.rows
    assert rows is not None  # keyed by incoming_rows
    operation = target.options.operation
    if operation in ("upsert", "delete"):
        found = key_lookup.lookup(spark, target, rows, incoming.upserts, incoming.row_counts)
    else:
        found = key_lookup.no_lookup(incoming.upserts)
    try:
        updates = found.updates(rows)
        inserts = found.inserts(rows)
        small_files = uses_small_files(operation) and log_appends is None
        buckets = new_key_buckets(target, found.new_keys, small_files)
        if log_appends is not None and spark_writes_inserts:
            if not buckets:
                return _append_logs(target, found, updates, cdc_mode, log_appends)
            # One new file group with most of the rows: one task reads them all.
            one_task = sum(incoming.row_counts.values()) <= 2 * sum(found.new_keys.values())
            appended = _append_logs(target, found, updates, cdc_mode, log_appends)
            return appended + spark_files.write_new_file_groups(
                target.location, inserts, target.schema, target.instant, buckets, one_task
            )
        routed = route(spark, inserts, buckets) if buckets else None
        parts = [frame for frame in (updates, routed) if frame is not None]
        if not parts:
            return []
        to_write = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
        return _merge_groups(target, to_write, cdc_mode, log_appends)
    finally:
        found.release()


def _append_logs(
    target: WriteTarget,
    found: key_lookup.KeyLookup,
    updates: DataFrame | None,
    cdc_mode: CdcMode | None,
    spec: AppendSpec,
) -> list[WriteStat]:
    """Each stored file group's updates and deletes appended as a log file: by the
    driver when they are few (``DRIVER_BYTES`` at the stored files' row size), with no
    Python workers to start, else by one Python worker per file group."""
    if updates is None:
        return []
    if found.matched_rows * found.row_bytes > DRIVER_BYTES:
        return _merge_groups(target, updates, cdc_mode, spec)
    rows = collect_arrow(updates)
    order = pc.sort_indices(rows, [(PARTITION_PATH, "ascending"), (FILE_ID, "ascending")])
    rows = rows.take(order)
    # The sorted rows' runs of one (partition, file id) each.
    pairs = list(
        zip(rows.column(PARTITION_PATH).to_pylist(), rows.column(FILE_ID).to_pylist(), strict=True)
    )
    starts = [i for i in range(len(pairs)) if i == 0 or pairs[i] != pairs[i - 1]]
    stats: list[WriteStat] = []
    for number, start in enumerate(starts):
        end = starts[number + 1] if number + 1 < len(starts) else len(pairs)
        partition, file_id = pairs[start]
        group = rows.slice(start, end - start)
        stored = target.snapshot[(partition, file_id)]
        token = f"{number}-0-0"  # one per file group: its seqnos stay apart
        appended = append_log(target.location, spec, group, partition, file_id, stored, token)
        stats += [log.stat(partition, file_id) for log in appended]
    return stats


def _merge_groups(
    target: WriteTarget, rows: DataFrame, cdc_mode: CdcMode | None, log_appends: AppendSpec | None
) -> list[WriteStat]:
    """Each file group's rows (tagged or routed) merged by one Python worker."""
    merge = group_merger(target, cdc_mode, log_appends)

    def one_group(rows: pa.Table) -> pa.Table:  # one parameter: Spark passes the rows alone
        return merge(rows)

    collected = apply_in_arrow(
        rows, (PARTITION_PATH, FILE_ID), one_group, from_arrow_schema(_STATS)
    )
    return [write_stat(r) for r in collected.collect()]


def write_stat(r: Any) -> WriteStat:
    """A row of ``_STATS`` (a Spark ``Row`` or a dict) as the commit's ``WriteStat``."""
    return WriteStat(
        partition_path=r["partition"],
        file_id=r["file_id"],
        path=r["path"],
        prev_commit=r["prev_commit"],
        num_writes=r["num_writes"],
        num_deletes=r["num_deletes"],
        num_updates=r["num_update_writes"],
        num_inserts=r["num_inserts"],
        total_write_bytes=r["file_size"],
        file_size=r["file_size"],
        prev_base_file=r["prev_base_file"],
        cdc_stats={r["cdc_path"]: r["cdc_size"]} if r["cdc_path"] else {},
        base_file=r["base_file"],
        log_files=tuple(r["log_files"] or ()),
        log_version=r["log_version"],
    )


def _read_parquet(location: Location, path: str, columns: list[str] | None = None) -> pa.Table:
    if location.is_local:
        return pq.read_table(path, columns=columns)  # Arrow's own file: no Python calls
    with location.fs.open(path, "rb") as handle:
        return cast(pa.Table, read_parquet(handle, columns))


def group_merger(
    target: WriteTarget, cdc_mode: CdcMode | None, log_appends: AppendSpec | None
) -> Callable[..., pa.Table]:
    """The function that merges (or, with ``log_appends``, appends to) one touched file
    group: ``merge(rows, task=None)`` returns its rows of ``_STATS``. Spark's Python
    workers call it with their task; the driver's Arrow engine with a task triple of its
    own, one a file group, so write tokens and sequence numbers stay apart."""
    schema = target.schema
    return _group_merger(
        target.location.uri,
        dict(target.location.storage_options),
        target.instant,
        schema,
        target.ordering,
        {f"{p}\0{f}": name for (p, f), name in target.snapshot.items()},
        cdc_mode,
        json.loads(json_schema(schema, target.options.table_name)) if cdc_mode else {},
        log_appends,
    )


def _group_merger(
    base: str,
    storage_options: Mapping[str, Any],
    instant: str,
    schema: pa.Schema,
    ordering: str | None,
    stored_names: Mapping[str, str],
    cdc_mode: CdcMode | None,
    data_schema: Mapping[str, Any],
    log_appends: AppendSpec | None,
) -> Callable[..., pa.Table]:
    """The function run for each touched file group. It opens the table from its URI
    and storage options (plain data: it runs on any executor), never assuming the
    driver's disk."""

    def merge(rows: pa.Table, task: tuple[int, int, int] | None = None) -> pa.Table:
        location = open_location(base, storage_options)
        partition = rows.column(PARTITION_PATH)[0].as_py()
        file_id = rows.column(FILE_ID)[0].as_py()
        stored = stored_names.get(f"{partition}\0{file_id}")
        folder = location.join(partition)
        old = _read_parquet(location, f"{folder}/{stored}") if stored else None
        if task is None:
            from pyspark import TaskContext

            context = TaskContext.get()
            task = (
                (context.partitionId(), context.stageId(), context.attemptNumber())
                if context
                else (0, 0, 0)
            )
        token = f"{task[0]}-{task[1]}-{task[2]}"
        if log_appends is not None and stored:
            appended = append_log(location, log_appends, rows, partition, file_id, stored, token)
            return pa.concat_tables(
                _log_stats_row(log.stat(partition, file_id)) for log in appended
            )
        name = f"{file_id}_{token}_{instant}.parquet"
        result = merge_file_group(
            old,
            rows,
            schema,
            instant=instant,
            file_name=name,
            seqno_prefix=f"{instant}_{task[0]}",
            ordering_field=ordering,
        )
        table = result.table
        keys = table.column(RECORD_KEY)
        if table.num_rows:
            bounds = pc.min_max(keys)
            table = table.replace_schema_metadata(
                {
                    "hoodie_min_record_key": bounds["min"].as_py(),
                    "hoodie_max_record_key": bounds["max"].as_py(),
                }
            )
        write_marker(location, instant, partition, name)
        path = f"{folder}/{name}"
        if location.is_local:
            os.makedirs(folder, exist_ok=True)
            pq.write_table(table, path)
            file_size = os.path.getsize(path)
        else:
            # An object is published in one PUT: readers never see part of it.
            sink = pa.BufferOutputStream()
            pq.write_table(table, sink)
            data = sink.getvalue().to_pybytes()
            location.write_file(path, data)
            file_size = len(data)
        relative = f"{partition}/{name}" if partition else name
        prev_commit = stored.rsplit("_", 1)[1].split(".")[0] if stored else None
        # CDC: a rewritten file group logs its changes; a new one needs no log (readers
        # infer BASE_FILE_INSERT), as in Hudi.
        cdc_path, cdc_size = None, None
        changes = cdc_changes(result) if cdc_mode is not None and stored else None
        if changes is not None and len(changes):
            assert cdc_mode is not None
            cdc_name = cdc_log_name(file_id, instant, f"{task[0]}-{task[1]}-{task[2]}")
            data = encode_cdc_file(cdc_mode, data_schema, instant, changes)
            write_marker(location, instant, partition, cdc_name)
            location.write_file(f"{folder}/{cdc_name}", data)
            cdc_path = f"{partition}/{cdc_name}" if partition else cdc_name
            cdc_size = len(data)
        return _stats_row(
            partition,
            file_id,
            relative,
            prev_commit=prev_commit,
            num_writes=table.num_rows,
            num_deletes=result.num_deletes,
            num_update_writes=result.num_updates,
            num_inserts=result.num_inserts,
            file_size=file_size,
            prev_base_file=stored,
            cdc_path=cdc_path,
            cdc_size=cdc_size,
        )

    return merge


def _log_stats_row(stat: WriteStat) -> pa.Table:
    """A log append's stat (``LogAppend.stat``) as a row of ``_STATS``."""
    return _stats_row(
        stat.partition_path,
        stat.file_id,
        stat.path,
        prev_commit=stat.prev_commit,
        num_writes=stat.num_writes,
        num_deletes=stat.num_deletes,
        num_update_writes=stat.num_updates,
        num_inserts=stat.num_inserts,
        file_size=stat.file_size,
        base_file=stat.base_file,
        log_files=list(stat.log_files),
        log_version=stat.log_version,
    )


def _stats_row(partition: str, file_id: str, path: str, **values: Any) -> pa.Table:
    """One written file's stats, a row of ``_STATS`` (counts 0, other values null
    when absent)."""
    row = {"partition": partition, "file_id": file_id, "path": path, **values}
    for field in _STATS:
        if field.name.startswith("num_"):
            row.setdefault(field.name, 0)
    return pa.Table.from_pylist([row], schema=_STATS)
