"""``spark.read.format("hudi")`` and ``spark.readStream.format("hudi")``: a PySpark 4
Python Data Source over the table core.

The driver plans (file slices, or CDC splits) with the table core; Spark's Python
workers read each planned piece through the table's storage (fsspec), so no Hadoop
connector is needed, small pieces a few to a task. Options are Hudi's:

- batch: ``hoodie.datasource.query.type`` (snapshot, read_optimized, incremental),
  ``as.of.instant``, ``hoodie.datasource.read.begin.instanttime`` / ``end.instanttime``,
  ``hoodie.datasource.query.incremental.format`` (latest_state, cdc);
- streaming: ``hoodie.datasource.query.incremental.format`` (latest_state, as in
  Hudi, or cdc) and ``hoodie.datasource.streaming.startOffset`` (earliest, latest or an
  instant; ``0``/``000`` mean earliest). Offsets are instants; a micro-batch covers the
  commits in ``(start, end]`` on the axis the query selects by (completion time for
  latest_state on table versions 8+, else requested time), and ``end`` never passes a
  write that could still complete inside the batch, so no commit is skipped or delayed;
- ``storage.<key>=<value>``: fsspec storage options (dotted keys nest, as the CLI's
  ``-o KEY=VALUE``), the same as ``hudi_sync.spark.read``'s.

Writes go through ``hudi_sync.spark.write(df, path, options)``: the writer runs its own
Spark jobs (tagging join, grouped merge) and commits on the driver, which a Data
Source writer (per-partition Python code, no session) cannot do.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.types import StructType

from hudi_sync import config as cfg
from hudi_sync.errors import BadInputError
from hudi_sync.spark.arrow_columns import align
from hudi_sync.spark.compat import batch_schema, from_arrow_schema
from hudi_sync.spark.reading.reader import (
    BEGIN,
    END,
    QUERY_TYPE,
    empty_schema,
    incremental_format,
    plan_files,
    split_options,
)
from hudi_sync.storage import Location, open_location, read_parquet
from hudi_sync.table import HudiTable
from hudi_sync.table.cdc.plan import plan_changes
from hudi_sync.table.cdc.read import CHANGE_SCHEMA, read_split
from hudi_sync.table.cdc.splits import ChangeSplit
from hudi_sync.table.config.schema import META_FIELDS
from hudi_sync.table.files.fs_view import CommittedInstants, FileSlice
from hudi_sync.table.read.slice_reader import read_file_slice
from hudi_sync.table.read.snapshot import snapshot_schema
from hudi_sync.table.records.merge import MergeRules
from hudi_sync.table.timeline.instant import comparable_instant

START_OFFSET = cfg.START_OFFSET.key


@dataclass(frozen=True)
class _Source:
    """What a read needs from the options: where the table is and how to open it."""

    uri: str
    storage_options: Mapping[str, Any]

    @classmethod
    def of(cls, options: Mapping[str, str]) -> _Source:
        uri = options.get("path")
        if not uri:
            raise BadInputError('format("hudi") needs the table path: .load(PATH)')
        return cls(uri, split_options(options)[1])

    def table(self) -> HudiTable:
        return HudiTable.open(self.uri, self.storage_options)

    def location(self) -> Location:
        return open_location(self.uri, self.storage_options)


@dataclass(frozen=True)
class _FilePart(InputPartition):
    """One base file to read; ``commits`` keeps only rows of those commits (incremental)."""

    relative_path: str
    commits: tuple[str, ...] | None = None


@dataclass(frozen=True)
class _SlicePart(InputPartition):
    """One Merge-on-Read slice with log files, merged as of ``as_of``; ``commits`` as
    for ``_FilePart``."""

    file_slice: FileSlice
    rules: MergeRules
    committed: CommittedInstants
    as_of: str | None
    commits: tuple[str, ...] | None = None


@dataclass(frozen=True)
class _ChangePart(InputPartition):
    split: str  # ChangeSplit JSON


@dataclass(frozen=True)
class _Group(InputPartition):
    """Small parts one Spark task reads in turn: each task of a Python Data Source costs
    a round trip to a Python worker, more than reading a small part."""

    parts: tuple[InputPartition, ...]


# Parts are grouped up to about this many bytes a task (by the listing's sizes or the
# write stats); a part of unknown size is a task of its own.
GROUP_BYTES = 16 * 1024 * 1024


def _grouped(sized: list[tuple[InputPartition, int | None]]) -> list[InputPartition]:
    """The parts in order, consecutive small ones grouped up to ``GROUP_BYTES``."""
    groups: list[list[InputPartition]] = []
    filled = GROUP_BYTES  # the last group's bytes: full before the first part
    for part, size in sized:
        if size is None or filled + size > GROUP_BYTES:
            groups.append([])
            filled = 0
        groups[-1].append(part)
        filled = GROUP_BYTES if size is None else filled + size
    return [group[0] if len(group) == 1 else _Group(tuple(group)) for group in groups]


def _table_schema(table: HudiTable) -> pa.Schema:
    """The latest snapshot's schema (``snapshot_schema``: the newest base file's
    columns, plus columns written to log files only)."""
    slices = table.file_slices()
    if not any(s.relative_base_path for s in slices):
        return empty_schema(table)
    return snapshot_schema(table, slices)


def _is_cdc(options: Mapping[str, str]) -> bool:
    """A CDC query: ``incremental.format=cdc`` with the query type incremental or not
    given (Spark asks a source for its schema before it says batch or stream)."""
    query = cfg.QUERY_TYPE.read(options) if cfg.QUERY_TYPE.given(options) else "incremental"
    return query == "incremental" and incremental_format(options) == "cdc"


def _read_part(
    location: Location, schema: pa.Schema, part: InputPartition, output: pa.Schema
) -> Iterator[Any]:
    """The rows of ``part`` (read as the table's ``schema``) as batches of ``output``,
    the Arrow schema Spark takes for the declared one."""
    if isinstance(part, _Group):
        for each in part.parts:
            yield from _read_part(location, schema, each, output)
        return
    if isinstance(part, _ChangePart):
        yield from align(
            read_split(location, ChangeSplit.from_json(part.split)), output
        ).to_batches()
        return
    if isinstance(part, _SlicePart):
        table = read_file_slice(
            location,
            part.file_slice,
            part.rules,
            part.committed,
            part.as_of,
            schema,
            in_file_order=False,
        )
    else:
        assert isinstance(part, _FilePart)
        with location.fs.open(location.join(part.relative_path), "rb") as handle:
            table = read_parquet(handle)
    if part.commits is not None:
        keep = pc.is_in(table.column(META_FIELDS[0]), value_set=pa.array(part.commits))
        table = table.filter(keep)
    yield from align(table, output).to_batches()


class HudiDataSource(DataSource):
    """``format("hudi")``: Hudi tables through hudi_sync's table core."""

    @classmethod
    def name(cls) -> str:
        return "hudi"

    def schema(self) -> StructType:
        return from_arrow_schema(self._arrow_schema())

    def _arrow_schema(self) -> pa.Schema:
        if _is_cdc(self.options):
            return CHANGE_SCHEMA
        return _table_schema(_Source.of(self.options).table())

    def reader(self, schema: StructType) -> DataSourceReader:
        return _BatchReader(dict(self.options), self._arrow_schema(), batch_schema(schema))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        options = {**self.options, QUERY_TYPE: "incremental"}
        arrow_schema = (
            CHANGE_SCHEMA if _is_cdc(options) else _table_schema(_Source.of(options).table())
        )
        return _StreamReader(options, arrow_schema, batch_schema(schema))


def _plan(
    table: HudiTable, options: Mapping[str, str], begin: str | None, end: str | None
) -> list[InputPartition]:
    """The pieces of a query: CDC splits, or base files (with commit filters), small
    ones grouped (``_grouped``)."""
    if _is_cdc(options):
        plan = plan_changes(table, begin, end)
        return _grouped([(_ChangePart(split.to_json()), split.read_bytes) for split in plan.splits])
    query = {**options, BEGIN: begin} if begin is not None else dict(options)
    if end is not None:
        query[END] = end
    files = plan_files(table, query)
    parts: list[tuple[InputPartition, int | None]] = []
    for s in files.slices:
        if s.log_files and files.rules is not None:
            committed = table.view.committed_instants
            part = _SlicePart(s, files.rules, committed, files.as_of, files.commits)
            parts.append((part, s.listed_bytes))
        elif s.relative_base_path and s.base_file:
            parts.append((_FilePart(s.relative_base_path, files.commits), s.base_file.size or None))
    return _grouped(parts)


class _BatchReader(DataSourceReader):
    def __init__(self, options: dict[str, str], schema: pa.Schema, output: pa.Schema) -> None:
        self.options = options
        self.arrow_schema = schema
        self.output = output

    def partitions(self) -> list[InputPartition]:
        source = _Source.of(self.options)
        query = cfg.QUERY_TYPE.read(self.options)
        begin = cfg.BEGIN.text(self.options)  # instants are parsed by the table, as given
        if (query == "incremental" or _is_cdc(self.options)) and begin is None:
            raise BadInputError(f"{QUERY_TYPE}=incremental needs {BEGIN}")
        return _plan(source.table(), self.options, begin, cfg.END.text(self.options))

    def read(self, partition: InputPartition) -> Iterator[Any]:
        location = _Source.of(self.options).location()
        yield from _read_part(location, self.arrow_schema, partition, self.output)


def _newest_safe_end(table: HudiTable, cdc: bool) -> str | None:
    """The newest point a micro-batch may end at, on the axis its query selects by.

    A latest_state query on a layout-2 timeline selects by completion time: the newest
    completion time is safe, since a write still running completes later and so falls in
    a later batch. Otherwise (layout 1, and CDC, which selects by requested time) a write
    still running with an earlier instant could complete later, so the end stays before
    the first pending write."""
    timeline = table.timeline
    if not cdc and table.view.ranges_by_completion:
        positions = [table.view.range_position(i) for i in timeline.completed_writes]
        return max(positions, default=None)
    pending = [comparable_instant(i.requested_time) for i in timeline.pending if i.is_write]
    limit = min(pending) if pending else None
    safe = [
        i.requested_time
        for i in timeline.completed_writes
        if limit is None or comparable_instant(i.requested_time) < limit
    ]
    return safe[-1] if safe else None


class _StreamReader(DataSourceStreamReader):
    """Micro-batches of commits: offsets ``{"instant": T}``, each batch ``(start, end]``."""

    def __init__(self, options: dict[str, str], schema: pa.Schema, output: pa.Schema) -> None:
        self.options = options
        self.arrow_schema = schema
        self.output = output

    def initialOffset(self) -> dict[str, str]:
        start = str(cfg.START_OFFSET.text(self.options)).strip()  # an instant, or a word
        if start.lower() == "latest":
            return self.latestOffset()
        begin, _ = _Source.of(self.options).table().incremental_range(start)
        return {"instant": begin or "0"}

    def latestOffset(self) -> dict[str, str]:
        table = _Source.of(self.options).table()
        return {"instant": _newest_safe_end(table, _is_cdc(self.options)) or "0"}

    def partitions(self, start: dict[str, str], end: dict[str, str]) -> list[InputPartition]:
        begin, stop = start["instant"], end["instant"]
        if stop == "0" or comparable_instant(stop) <= comparable_instant(begin):
            return []
        return _plan(_Source.of(self.options).table(), self.options, begin, stop)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        location = _Source.of(self.options).location()
        yield from _read_part(location, self.arrow_schema, partition, self.output)

    def commit(self, end: dict[str, str]) -> None:
        """Nothing to acknowledge: the table keeps every commit until cleaned."""


__all__ = ["HudiDataSource"]
