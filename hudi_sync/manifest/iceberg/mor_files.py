"""Merge-on-Read file slices as Iceberg v2 files: live log rows and position deletes.

An Iceberg reader knows nothing of Hudi's log files. So that it reads a MOR table's
merged snapshot (what ``_rt`` shows), each file slice version with log files becomes
up to two Parquet files beside the Iceberg metadata, computed by the table core's
merge (``read_slice_deltas``), under ``.hoodie/manifest/iceberg/``:

- ``data/<partition path>/<name>`` — the slice's rows that come from its logs (the
  table's columns only; none when no log row is live), an Iceberg data file;
- ``deletes/<partition path>/<name>`` — the positions of the base file's rows the logs
  replace or delete, an Iceberg position-delete file (``file_path`` = the base file's
  absolute URI, ``pos``; sorted), applied to the base file's data file.

``<name>`` is the slice version's name as the folded logs name it
(``slice_version_name``): a slice whose logs change gets new files, an unchanged one
keeps them. Each file is written once, under a temporary name moved into place
(``Location.write_files``), and reused by every later publication. Each of the two
records in its key-value metadata how many rows the other holds, so a slice whose
write was killed between its two files is told from a complete one and written again;
a slice whose two files would both be empty writes none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from hudi_sync.errors import CorruptTableError, UnsupportedTableError, first_line
from hudi_sync.manifest.iceberg.published import ICEBERG_FOLDER
from hudi_sync.manifest.log_parquet import slice_version_name
from hudi_sync.storage import Location, contained_file
from hudi_sync.table import HudiTable
from hudi_sync.table.files.fs_view import FileSlice
from hudi_sync.table.read.slice_reader import SliceDelta, read_slice_deltas
from hudi_sync.table.read.snapshot import snapshot_schema
from hudi_sync.table.records.merge import MergeRules

if TYPE_CHECKING:
    from hudi_sync.manifest.iceberg.data_files import DataFile
    from hudi_sync.manifest.iceberg.partitioning import PartitionPlan
    from hudi_sync.manifest.iceberg.schema import IcebergSchema

# Under ICEBERG_FOLDER, each with a folder per partition path.
DATA_FOLDER = "data"
DELETES_FOLDER = "deletes"
# Iceberg's reserved field ids of a position-delete file's columns (spec, "Reserved
# Field IDs"), which readers find the columns by.
FILE_PATH_FIELD_ID = 2147483546
POS_FIELD_ID = 2147483545
POSITION_DELETE_SCHEMA = pa.schema(
    [
        pa.field("file_path", pa.string(), False, {"PARQUET:field_id": str(FILE_PATH_FIELD_ID)}),
        pa.field("pos", pa.int64(), False, {"PARQUET:field_id": str(POS_FIELD_ID)}),
    ]
)
# Key-value metadata of both files: how many rows the slice's live file and its
# position-delete file hold (0: that file is not written).
LIVE_ROWS_KEY = b"hudi_sync.iceberg.live-rows"
DELETED_ROWS_KEY = b"hudi_sync.iceberg.deleted-rows"
# Slices whose files are written together (one flush of the disk for the batch).
_BATCH_SLICES = 256
# Up to this many files are looked up one by one, more by a listing of their folder.
_PROBED_NAMES = 64
_ARROW_ERRORS = (pa.ArrowException, OSError, ValueError, TypeError, OverflowError)


@dataclass(frozen=True)
class WrittenFile:
    """One file of a slice version: its absolute URI, size in bytes and rows."""

    uri: str
    size: int
    rows: pa.Table


@dataclass(frozen=True)
class WrittenSlice:
    """A slice version's files (``write_slice_files``): its name, its partition path and
    base file's URI (None without one), its live rows' file and its position-delete
    file (None: nothing to hold)."""

    name: str
    partition_path: str
    base_uri: str | None
    live: WrittenFile | None
    deletes: WrittenFile | None


@dataclass(frozen=True)
class SliceFiles:
    """A slice version's Iceberg data file of live log rows and position-delete file
    (None: none), as the store lists them in its manifests."""

    name: str
    live: DataFile | None
    deletes: DataFile | None


def slice_files(
    table: HudiTable,
    slices: Sequence[FileSlice],
    arrow: pa.Schema,
    schema: IcebergSchema,
    plan: PartitionPlan,
    rules: MergeRules,
    as_of: str | None,
) -> list[SliceFiles]:
    """The Iceberg files of each of ``slices`` that has log files, in order: written
    once (``write_slice_files``), reused when present. ``arrow``: the snapshot's Arrow
    schema (``snapshot_schema`` of all its slices), which the rows are read with and
    ``schema`` was made from. Raises UnsupportedTableError when a slice's partition
    path does not parse under ``plan``."""
    from hudi_sync.manifest.iceberg.data_files import arrow_data_file

    written = write_slice_files(table, slices, rules, as_of, arrow)
    found: list[SliceFiles] = []
    for files in written:
        partition = plan.values(files.partition_path) if plan.fields else ()
        if partition is None:
            raise UnsupportedTableError(
                f"{table.location.uri_of(files.partition_path)}: partition path "
                f"{files.partition_path!r} does not parse under the Iceberg partition spec"
            )
        live = deletes = None
        if files.live is not None:
            live = arrow_data_file(
                files.live.rows, files.live.uri, files.live.size, schema, partition, 0
            )
        if files.deletes is not None:
            deletes = arrow_data_file(
                files.deletes.rows, files.deletes.uri, files.deletes.size, schema, partition, 1
            )
        found.append(SliceFiles(files.name, live, deletes))
    return found


def write_slice_files(
    table: HudiTable,
    slices: Sequence[FileSlice],
    rules: MergeRules,
    as_of: str | None,
    arrow: pa.Schema | None = None,
) -> list[WrittenSlice]:
    """The files of each of ``slices`` that has log files, in order: read back when a
    complete set of them is present (module docstring), else computed by
    ``read_slice_deltas`` and written, in batches (one flush of the disk each).
    ``as_of``: a time-travel publication (blocks of later writes are left out, and the
    files are named apart). ``arrow``: the schema rows are read with, by default
    ``snapshot_schema`` of ``slices``."""
    with_logs = [s for s in slices if s.log_files]
    if not with_logs:
        return []
    location = table.location
    read_schema = arrow if arrow is not None else snapshot_schema(table, with_logs)
    pending = sorted(i.requested_time for i in table.timeline.pending)
    committed = table.view.committed_instants
    names = [slice_version_name(location, s, pending, as_of) for s in with_logs]
    present = {
        folder: _existing(
            location,
            folder,
            [own_file(folder, s, n) for s, n in zip(with_logs, names, strict=True)],
        )
        for folder in (DATA_FOLDER, DELETES_FOLDER)
    }
    results: list[WrittenSlice | None] = []
    missing: list[tuple[int, FileSlice, str]] = []
    for file_slice, name in zip(with_logs, names, strict=True):
        results.append(_present(table, file_slice, name, present))
        if results[-1] is None:
            missing.append((len(results) - 1, file_slice, name))
    for first in range(0, len(missing), _BATCH_SLICES):
        batch = missing[first : first + _BATCH_SLICES]
        deltas = read_slice_deltas(
            location, [s for _, s, _ in batch], rules, committed, read_schema, as_of
        )
        outputs: list[tuple[str, bytes]] = []
        for (index, file_slice, name), delta in zip(batch, deltas, strict=True):
            results[index], written = _slice_outputs(location, file_slice, name, delta)
            outputs.extend(written)
        _publish(location, outputs)
    return [files for files in results if files is not None]


def own_file(folder: str, file_slice: FileSlice, name: str) -> str:
    """The path, relative to the table, of the slice version ``name``'s file in
    ``folder`` (``DATA_FOLDER`` or ``DELETES_FOLDER``): in the folder of the slice's
    partition path, which is checked to stay inside (it was read from storage)."""
    source = f"file group {file_slice.file_id}"
    return f"{ICEBERG_FOLDER}/{folder}/{contained_file(file_slice.partition_path, name, source)}"


def base_file_uri(location: Location, file_slice: FileSlice) -> str | None:
    """The absolute URI of the slice's base file, as the data manifest names it and a
    position delete against it must (None without a base file)."""
    if file_slice.base_file is None:
        return None
    source = location.uri_of(file_slice.partition_path)
    relative = contained_file(file_slice.partition_path, file_slice.base_file.name, source)
    return location.uri_of(relative)


def position_deletes(base_uri: str, positions: pa.Array) -> pa.Table:
    """A position-delete file's rows: ``positions`` (ascending) of the file at
    ``base_uri``, sorted by file path then position as the spec asks."""
    paths = pa.array([base_uri] * len(positions), pa.string())
    ordered = positions.cast(pa.int64()).sort()
    return pa.Table.from_arrays([paths, ordered], schema=POSITION_DELETE_SCHEMA)


def _slice_outputs(
    location: Location, file_slice: FileSlice, name: str, delta: SliceDelta
) -> tuple[WrittenSlice, list[tuple[str, bytes]]]:
    """The slice's files and the ``(path, bytes)`` to write."""
    base_uri = base_file_uri(location, file_slice)
    live_rows = delta.live_rows.num_rows
    deleted = len(delta.deleted_positions)
    counts = {LIVE_ROWS_KEY: str(live_rows).encode(), DELETED_ROWS_KEY: str(deleted).encode()}
    outputs: list[tuple[str, bytes]] = []
    live = deletes = None
    if live_rows:
        data = _parquet(delta.live_rows, counts, [])
        relative = own_file(DATA_FOLDER, file_slice, name)
        outputs.append((location.join(relative), data))
        live = WrittenFile(location.uri_of(relative), len(data), delta.live_rows)
    if deleted:
        if base_uri is None:  # read_slice_delta gives no positions without a base file
            raise AssertionError(f"{name}: deleted positions of a slice without base file")
        rows = position_deletes(base_uri, delta.deleted_positions)
        data = _parquet(rows, counts, ["file_path"])
        relative = own_file(DELETES_FOLDER, file_slice, name)
        outputs.append((location.join(relative), data))
        deletes = WrittenFile(location.uri_of(relative), len(data), rows)
    files = WrittenSlice(name, file_slice.partition_path, base_uri, live, deletes)
    return files, outputs


def _parquet(rows: pa.Table, counts: dict[bytes, bytes], dictionary: list[str]) -> bytes:
    """A file's rows as Parquet bytes, ``counts`` in its key-value metadata. No column
    statistics: Arrow's leave NaN out, and a reader pruning by them would skip a NaN;
    the Iceberg manifest carries the file's bounds. Dictionaries only for
    ``dictionary``'s columns (a delete file's one repeated path): a slice's few live
    rows gain nothing from a dictionary page per column, which costs a third of the
    encoding."""
    sink = pa.BufferOutputStream()
    table = rows.replace_schema_metadata({**(rows.schema.metadata or {}), **counts})
    pq.write_table(table, sink, write_statistics=False, use_dictionary=dictionary or False)
    return bytes(sink.getvalue())


def _publish(location: Location, files: list[tuple[str, bytes]]) -> None:
    """Write ``files`` together, each under a temporary name moved into place."""
    if not files:
        return
    for folder in sorted({path.rsplit("/", 1)[0] for path, _ in files}):
        location.ensure_folder(folder)
    location.write_files(files)


def _existing(location: Location, folder: str, relatives: Sequence[str]) -> set[str]:
    """Which of ``relatives`` (``own_file`` paths in ``folder``) are files: a stat of
    each when they are few (a sync after one commit asks for its changed slices only,
    whatever the table's size), else one listing of the folder."""
    if len(relatives) <= _PROBED_NAMES:
        return {r for r in relatives if location.fs.exists(location.join(r))}
    prefix = f"{ICEBERG_FOLDER}/{folder}/"
    listed = {prefix + f for f in location.files_under(location.join(ICEBERG_FOLDER, folder))}
    return {r for r in relatives if r in listed}


def _present(
    table: HudiTable, file_slice: FileSlice, name: str, present: dict[str, set[str]]
) -> WrittenSlice | None:
    """The slice version's files when a complete set of them is present (each names the
    other's row count: a count above 0 whose file is missing means a write was killed
    between them), else None: they are computed and written again. ``present``: the
    files found in each folder (``_existing``)."""
    location = table.location
    found: dict[str, tuple[WrittenFile, tuple[int, int]] | None] = {}
    for folder in (DATA_FOLDER, DELETES_FOLDER):
        relative = own_file(folder, file_slice, name)
        found[folder] = None
        if relative in present[folder]:
            found[folder] = _read_written(location, relative, folder == DELETES_FOLDER)
    live, deletes = found[DATA_FOLDER], found[DELETES_FOLDER]
    known = live if live is not None else deletes
    if known is None:
        return None
    live_rows, deleted_rows = known[1]
    if (live_rows > 0) != (live is not None) or (deleted_rows > 0) != (deletes is not None):
        return None
    base_uri = base_file_uri(location, file_slice)
    if deletes is not None:
        paths = set(deletes[0].rows.column("file_path").to_pylist())
        if paths != {base_uri}:
            raise CorruptTableError(
                f"{deletes[0].uri}: position deletes name {sorted(map(str, paths))[:1]}, "
                f"not the slice's base file {base_uri}"
            )
    for written, count in ((live, live_rows), (deletes, deleted_rows)):
        if written is not None and written[0].rows.num_rows != count:
            raise CorruptTableError(
                f"{written[0].uri}: holds {written[0].rows.num_rows} rows, its slice's files "
                f"say {count}"
            )
    return WrittenSlice(
        name,
        file_slice.partition_path,
        base_uri,
        live[0] if live is not None else None,
        deletes[0] if deletes is not None else None,
    )


def _read_written(
    location: Location, relative: str, is_deletes: bool
) -> tuple[WrittenFile, tuple[int, int]] | None:
    """One of our files (``own_file``) read back whole (a slice's few rows): the file
    and the two row counts it records; None when it vanished since the listing. A file
    that is not ours is a one-line CorruptTableError."""
    uri = location.uri_of(relative)
    try:
        data = location.read_file(location.join(relative))
    except FileNotFoundError:
        return None
    try:
        parquet = pq.ParquetFile(pa.BufferReader(data))
        metadata = parquet.schema_arrow.metadata or {}
        counts = (int(metadata[LIVE_ROWS_KEY]), int(metadata[DELETED_ROWS_KEY]))
        rows = parquet.read()
    except KeyError:
        raise CorruptTableError(f"{uri}: not a file of hudi_sync's Iceberg MOR files") from None
    except _ARROW_ERRORS as exc:
        raise CorruptTableError(f"{uri}: cannot read Parquet: {first_line(exc)}") from None
    if min(counts) < 0:
        raise CorruptTableError(f"{uri}: negative row counts in its metadata")
    if is_deletes and not rows.schema.remove_metadata().equals(
        POSITION_DELETE_SCHEMA.remove_metadata()
    ):
        raise CorruptTableError(f"{uri}: not a position-delete file (file_path, pos)")
    return WrittenFile(uri, len(data), rows.replace_schema_metadata(None)), counts
