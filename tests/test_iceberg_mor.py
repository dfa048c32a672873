"""Merge-on-Read slices as Iceberg v2 files: live log rows plus position deletes.

``read_slice_delta`` splits a slice's merged snapshot into the base rows it keeps and the
rows its logs make live; the base rows without its deleted positions, plus its live rows,
must be ``read_file_slice``'s rows, on every MOR fixture at every instant and on tables
our writer makes (event-time ordering where a late log record loses, ties, a key updated
twice, deletes, a delete then a re-insert, commit-time ordering, log-only slices, a table
without meta fields). ``write_slice_files`` writes them once as Parquet an Iceberg reader
applies: pyiceberg's own scan of base file + position deletes + live rows gives the
snapshot; a second publication writes nothing; a killed one leaves no file under a final
name and is completed by the next.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_sync import config as cfg
from hudi_sync.errors import CorruptTableError
from hudi_sync.manifest.iceberg import mor_files
from hudi_sync.manifest.iceberg.mor_files import (
    DATA_FOLDER,
    DELETED_ROWS_KEY,
    DELETES_FOLDER,
    FILE_PATH_FIELD_ID,
    ICEBERG_FOLDER,
    LIVE_ROWS_KEY,
    POS_FIELD_ID,
    WrittenSlice,
    own_file,
    position_deletes,
    write_slice_files,
)
from hudi_sync.manifest.log_parquet import LogParquetStore, slice_version_name
from hudi_sync.spark.writing.writer import write_arrow
from hudi_sync.table import HudiTable
from hudi_sync.table.files.fs_view import FileSlice
from hudi_sync.table.keys.record_keys import record_keys
from hudi_sync.table.read.slice_reader import (
    SliceDelta,
    align,
    read_file_slice,
    read_slice_delta,
    read_slice_deltas,
)
from hudi_sync.table.read.snapshot import read_snapshot, slice_merge_rules, snapshot_schema
from hudi_sync.table.records.merge import MergeRules
from tests.fixture_tables import fixture_tables
from tests.test_mor_read import (
    MODEL,
    NO_META,
    V8,
    _add_log,
    _base_sf,
    _delete_block,
    _set_property,
    _trip,
    _trip_block,
    add_no_meta_log,
    no_meta_blocks,
)
from tests.warehouse_rows import canonical

MOR_TABLES = [t for t in fixture_tables() if "/mor/" in t.name]
KEY = "_hoodie_record_key"


# -- the invariant -----------------------------------------------------------------------


def _keys(rows: pa.Table, rules: MergeRules, where: str) -> list[str]:
    if rules.key_fields:
        return [str(k) for k in record_keys(rows, rules.key_fields, where).to_pylist()]
    return [str(k) for k in rows.column(KEY).to_pylist()]


def _log_keys(
    table: HudiTable, file_slice: FileSlice, rules: MergeRules, as_of: str | None
) -> set[str]:
    """The keys the slice's applied log records name (data and delete), read apart from
    the merge: what a live row or a deleted base row must belong to."""
    from hudi_sync.table.read.slice_reader import read_folded_log

    schema = snapshot_schema(table, [file_slice])
    folded = read_folded_log(
        table.location, file_slice, rules, table.view.is_committed, schema, as_of
    )
    return {str(k) for k in folded.column(KEY).to_pylist()}


def _checked_deltas(table: HudiTable, as_of: str | None) -> list[tuple[FileSlice, SliceDelta]]:
    """Every slice's delta at ``as_of``, each checked against ``read_file_slice``: the
    base file's rows without the deleted positions, plus the live rows, are the slice's
    rows (as multisets); positions are ascending and in range, a live row and a deleted
    base row both belong to keys the logs name, and a slice without logs or base file
    changes nothing of its base file / has every row live."""
    slices = table.view.slices_as_of(as_of)
    rules = slice_merge_rules(table, slices)
    schema = snapshot_schema(table, slices)
    committed = table.view.is_committed
    found = []
    for file_slice in slices:
        delta = read_slice_delta(table.location, file_slice, rules, committed, schema, as_of)
        expected = read_file_slice(table.location, file_slice, rules, committed, as_of, schema)
        assert delta.live_rows.schema == schema.remove_metadata()
        positions = delta.deleted_positions.to_numpy(zero_copy_only=False)
        assert delta.deleted_positions.type == pa.int64()
        assert np.all(np.diff(positions) > 0)
        base = None
        if file_slice.relative_base_path is not None:
            raw = pq.read_table(table.location.join(file_slice.relative_base_path))
            base = align(raw, schema, file_slice.relative_base_path)
            assert delta.base_rows == base.num_rows
            assert positions.size == 0 or 0 <= positions[0] <= positions[-1] < base.num_rows
            kept = np.ones(base.num_rows, dtype=bool)
            kept[positions] = False
            parts = [base.filter(pa.array(kept)), delta.live_rows]
        else:
            assert delta.base_rows == 0 and positions.size == 0
            parts = [delta.live_rows]
        assert canonical(pa.concat_tables(parts)) == canonical(expected), file_slice.file_id
        if not file_slice.log_files:
            assert delta.live_rows.num_rows == 0 and positions.size == 0
        elif delta.live_rows.num_rows or positions.size:
            logged = _log_keys(table, file_slice, rules, as_of)
            where = file_slice.file_id
            assert set(_keys(delta.live_rows, rules, where)) <= logged
            if base is not None and positions.size:
                gone = base.take(pa.array(positions, pa.int64()))
                assert set(_keys(gone, rules, where)) <= logged
        found.append((file_slice, delta))
    return found


@pytest.fixture(params=MOR_TABLES, ids=[t.id for t in MOR_TABLES])
def mor_path(request: pytest.FixtureRequest, unpack_table: Any) -> Path:
    path: Path = unpack_table(request.param)
    return path


def _instants(table: HudiTable) -> list[str | None]:
    return [None, *(i.requested_time for i in table.completed_commits())]


def test_every_fixture_slice_is_its_base_rows_minus_deletes_plus_live_rows(
    mor_path: Path,
) -> None:
    """At every instant; and the batched read (blocks of all slices decoded together)
    gives each slice's delta as reading it alone."""
    table = HudiTable.open(str(mor_path))
    for as_of in _instants(table):
        alone = _checked_deltas(table, as_of)
        slices = [s for s, _ in alone]
        rules = slice_merge_rules(table, slices)
        schema = snapshot_schema(table, slices)
        committed = table.view.is_committed
        batched = read_slice_deltas(table.location, slices, rules, committed, schema, as_of)
        for (_, one), together in zip(alone, batched, strict=True):
            assert together.live_rows.equals(one.live_rows)
            assert together.deleted_positions.equals(one.deleted_positions)
            assert together.base_rows == one.base_rows


def test_the_fixtures_exercise_deleted_positions_and_live_rows(unpack_table: Any) -> None:
    """The invariant above means something: fixture logs replace and delete base rows
    and add live rows (a delta that kept every base row, or deleted all, would fail)."""
    deleted = live = kept_with_logs = 0
    for fixture in MOR_TABLES:
        table = HudiTable.open(str(unpack_table(fixture)))
        for as_of in _instants(table):
            slices = table.view.slices_as_of(as_of)
            rules = slice_merge_rules(table, slices)
            schema = snapshot_schema(table, slices)
            for file_slice in slices:
                if not file_slice.log_files or file_slice.base_file is None:
                    continue
                delta = read_slice_delta(
                    table.location, file_slice, rules, table.view.is_committed, schema, as_of
                )
                deleted += len(delta.deleted_positions)
                live += delta.live_rows.num_rows
                kept_with_logs += delta.base_rows - len(delta.deleted_positions)
    assert deleted >= 3 and live >= 3 and kept_with_logs >= 3


# -- tables our writer makes -------------------------------------------------------------


def _options(operation: str = "upsert", **extra: object) -> dict[str, object]:
    options: dict[str, object] = {
        "hoodie.table.name": "ice",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.index.type": "BUCKET",
        "hoodie.bucket.index.num.buckets": 2,
        "hoodie.datasource.write.operation": operation,
    }
    options.update(extra)
    return options


def _rows(ids: list[int], ts: list[int], partition: str = "a") -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "p": pa.array([partition] * len(ids)),
            "v": pa.array([f"v{i}-{t}" for i, t in zip(ids, ts, strict=True)]),
            "ts": pa.array(ts, pa.int64()),
        }
    )


# Compacted right away: the first write's rows are base files.
_COMPACT = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "1"}


def _write_history(path: Path, **extra: object) -> list[str]:
    """Base rows ids 0-9 (ts 10), then logs: ids 0-2 newer (ts 20), 3 and 4 late (ts 5),
    5 a tie (ts 10), 10 new; id 0 updated again (ts 30); 6 and 7 deleted; 7 inserted
    again (ts 40). Returns the deltacommits' instants."""
    write_arrow(_rows(list(range(10)), [10] * 10), str(path), _options(**_COMPACT, **extra))
    write_arrow(
        _rows([0, 1, 2, 3, 4, 5, 10], [20, 20, 20, 5, 5, 10, 1]), str(path), _options(**extra)
    )
    write_arrow(_rows([0], [30]), str(path), _options(**extra))
    write_arrow(_rows([6, 7], [0, 0]), str(path), _options("delete", **extra))
    write_arrow(_rows([7], [40]), str(path), _options(**extra))
    table = HudiTable.open(str(path))
    return [i.requested_time for i in table.timeline.completed_writes if i.action == "deltacommit"]


def _by_id(
    deltas: list[tuple[FileSlice, SliceDelta]], path: Path
) -> tuple[set[int], dict[int, int]]:
    """The ids of the deleted base rows and each live row's id -> ts, over all slices."""
    deleted: set[int] = set()
    live: dict[int, int] = {}
    for file_slice, delta in deltas:
        if file_slice.relative_base_path is not None and len(delta.deleted_positions):
            base = pq.read_table(path / file_slice.relative_base_path, columns=["id"])
            deleted.update(base.column("id").take(delta.deleted_positions).to_pylist())
        for row in delta.live_rows.select(["id", "ts"]).to_pylist():
            assert row["id"] not in live
            live[row["id"]] = row["ts"]
    return deleted, live


@pytest.fixture(scope="module")
def event_time_table(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    path = tmp_path_factory.mktemp("ice-event") / "t"
    return path, _write_history(path)


def test_event_time_logs_replace_delete_and_lose_as_the_merge_decides(
    event_time_table: tuple[Path, list[str]],
) -> None:
    path, _ = event_time_table
    table = HudiTable.open(str(path))
    deltas = _checked_deltas(table, None)
    assert all(s.base_file is not None and s.log_files for s, _ in deltas if s.log_files)
    deleted, live = _by_id(deltas, path)
    # 3 and 4 (late) keep their base rows; 5 (a tie) goes to the later write.
    assert deleted == {0, 1, 2, 5, 6, 7}
    assert live == {0: 30, 1: 20, 2: 20, 5: 10, 7: 40, 10: 1}


def test_an_older_instant_has_its_own_delta(event_time_table: tuple[Path, list[str]]) -> None:
    """As of the first update (before the second update, the deletes and the
    re-insert), through the same merge."""
    path, deltacommits = event_time_table
    table = HudiTable.open(str(path))
    first_update = deltacommits[1]  # the first deltacommit was compacted
    deltas = _checked_deltas(table, first_update)
    deleted, live = _by_id(deltas, path)
    assert deleted == {0, 1, 2, 5}
    assert live == {0: 20, 1: 20, 2: 20, 5: 10, 10: 1}


def test_commit_time_ordering_lets_late_records_win(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _write_history(path, **{"hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"})
    table = HudiTable.open(str(path))
    deleted, live = _by_id(_checked_deltas(table, None), path)
    assert deleted == {0, 1, 2, 3, 4, 5, 6, 7}
    assert live == {0: 30, 1: 20, 2: 20, 3: 5, 4: 5, 5: 10, 7: 40, 10: 1}


def test_upserts_only_take_the_columnar_merge_and_agree(tmp_path: Path) -> None:
    """Logs of data records only (the columnar merge's shape), two partitions."""
    path = tmp_path / "t"
    write_arrow(_rows(list(range(8)), [10] * 8, "a"), str(path), _options(**_COMPACT))
    write_arrow(_rows(list(range(8, 12)), [10] * 4, "b"), str(path), _options(**_COMPACT))
    write_arrow(_rows([1, 2, 3], [11, 9, 10], "a"), str(path), _options())
    write_arrow(_rows([8, 20], [12, 1], "b"), str(path), _options())
    table = HudiTable.open(str(path))
    deleted, live = _by_id(_checked_deltas(table, None), path)
    assert deleted == {1, 3, 8}
    assert live == {1: 11, 3: 10, 8: 12, 20: 1}


def test_a_slice_of_log_files_only_is_all_live_rows(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_arrow(_rows([1, 2, 3], [10, 10, 10]), str(path), _options())
    write_arrow(_rows([2, 4], [5, 1]), str(path), _options())
    write_arrow(_rows([3], [0]), str(path), _options("delete"))
    table = HudiTable.open(str(path))
    deltas = _checked_deltas(table, None)
    assert deltas and all(s.base_file is None for s, _ in deltas)
    assert all(d.base_rows == 0 and not len(d.deleted_positions) for _, d in deltas)
    assert _by_id(deltas, path) == (set(), {1: 10, 2: 10, 4: 1})


@pytest.mark.parametrize(
    ("payload", "expected_live"),
    [
        ("OverwriteWithLatestAvroPayload", {1: "Alice-late", 8: "Heidi-2"}),
        ("DefaultHoodieRecordPayload", {1: "Alice-2", 8: "Heidi-2"}),
    ],
)
def test_a_table_without_meta_fields_keys_its_positions_by_the_key_generator(
    fixture_copy: Any, payload: str, expected_live: dict[int, str]
) -> None:
    """Hand-written log blocks of a table without meta fields (upserts of a base key and
    a new one, a late event, deletes of a new and a base key, a delete then re-insert):
    keys are built from the key fields on both sides of the merge. Commit time: the
    late event wins; event time (on longField): the greater value folded first wins."""
    path: Path = fixture_copy(NO_META)
    _set_property(path, cfg.PAYLOAD_CLASS.key, MODEL + payload)
    add_no_meta_log(path, no_meta_blocks())
    table = HudiTable.open(str(path))
    deltas = _checked_deltas(table, None)
    assert not any(c.startswith("_hoodie") for _, d in deltas for c in d.live_rows.column_names)
    deleted: set[int] = set()
    live: dict[int, str] = {}
    for file_slice, delta in deltas:
        if file_slice.relative_base_path and len(delta.deleted_positions):
            base = pq.read_table(path / file_slice.relative_base_path, columns=["id"])
            deleted.update(base.column("id").take(delta.deleted_positions).to_pylist())
        live.update({r["id"]: r["name"] for r in delta.live_rows.to_pylist()})
    assert deleted == {1, 3}
    assert live == expected_live


@pytest.mark.parametrize("mode", ["EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"])
def test_delete_blocks_with_ordering_values_delete_or_lose_as_the_merge_decides(
    fixture_copy: Any, mode: str
) -> None:
    """Hand-written blocks in a version 8 fixture's file group: a late event, a newer
    event then a delete whose ordering value is below it, an insert deleted by commit
    time and inserted again. Event time: the late event and the late delete lose (the
    late key's base row stays); commit time: the last write wins."""
    path: Path = fixture_copy(V8.fixture)
    _set_property(path, cfg.RECORD_MERGE_MODE.key, mode)
    base = _base_sf(path)
    late, updated, *_ = sorted(base)
    blocks = (
        _trip_block([_trip(late, base[late][0] - 1000, 111.0)])
        + _trip_block([_trip(updated, base[updated][0] + 1, 222.0)])
        + _delete_block(V8.block_instant, [(updated, ("Long", base[updated][0]))])
        + _trip_block([_trip("new-key", 5, 5.0)])
        + _delete_block(V8.block_instant, [("new-key", ("Int", 0))])
        + _trip_block([_trip("new-key", 1, 1.0)])
    )
    _add_log(path, blocks)
    table = HudiTable.open(str(path))
    deltas = [(s, d) for s, d in _checked_deltas(table, None) if s.file_id == V8.file_id]
    ((file_slice, delta),) = deltas
    assert file_slice.relative_base_path is not None
    keys = pq.read_table(path / file_slice.relative_base_path, columns=[KEY]).column(KEY)
    deleted = set(keys.take(delta.deleted_positions).to_pylist())
    live = {r[KEY]: r["fare"] for r in delta.live_rows.to_pylist()}
    if mode == "EVENT_TIME_ORDERING":
        assert (deleted, live) == ({updated}, {updated: 222.0, "new-key": 1.0})
    else:
        assert (deleted, live) == ({late, updated}, {late: 111.0, "new-key": 1.0})


# -- the files ------------------------------------------------------------------------


def _published(path: Path) -> dict[str, tuple[int, int]]:
    """Every file under the Iceberg MOR folders (temporaries too): inode and mtime."""
    found = {}
    for folder in (DATA_FOLDER, DELETES_FOLDER):
        root = path / ICEBERG_FOLDER / folder
        for item in sorted(root.glob("**/*")) if root.exists() else []:
            if item.is_file():
                stat = item.stat()
                found[str(item.relative_to(root.parent))] = (stat.st_ino, stat.st_mtime_ns)
    return found


def _write(path: Path, as_of: str | None = None) -> list[WrittenSlice]:
    table = HudiTable.open(str(path))
    slices = table.view.slices_as_of(as_of)
    return write_slice_files(table, slices, slice_merge_rules(table, slices), as_of)


def test_files_hold_live_rows_and_sorted_position_deletes_with_iceberg_field_ids(
    event_time_table: tuple[Path, list[str]],
) -> None:
    path, _ = event_time_table
    table = HudiTable.open(str(path))
    slices = table.view.slices_as_of(None)
    schema = snapshot_schema(table, slices)
    written = _write(path)
    assert len(written) == len([s for s in slices if s.log_files])
    pending = sorted(i.requested_time for i in table.timeline.pending)
    by_name = {w.name: w for w in written}
    for file_slice in (s for s in slices if s.log_files):
        name = slice_version_name(table.location, file_slice, pending, None)
        files = by_name[name]
        assert files.base_uri == table.location.uri_of(file_slice.relative_base_path or "")
        live_file = own_file(DATA_FOLDER, file_slice, name)
        deletes_file = own_file(DELETES_FOLDER, file_slice, name)
        assert live_file == f".hoodie/manifest/iceberg/data/{file_slice.partition_path}/{name}"
        if files.live is not None:
            live = pq.read_table(path / live_file)
            assert live.schema.remove_metadata() == schema.remove_metadata()  # table columns only
            assert files.live.uri == table.location.uri_of(live_file)
            assert files.live.size == (path / live_file).stat().st_size
        if files.deletes is not None:
            assert files.deletes.uri == table.location.uri_of(deletes_file)
            parquet = pq.ParquetFile(path / deletes_file)
            assert parquet.schema_arrow.names == ["file_path", "pos"]
            # The Parquet schema's own field ids (what readers without Arrow see).
            assert str(parquet.schema).splitlines()[2:4] == [
                f"  required binary field_id={FILE_PATH_FIELD_ID} file_path (String);",
                f"  required int64 field_id={POS_FIELD_ID} pos;",
            ]
            assert [f.nullable for f in parquet.schema_arrow] == [False, False]
            rows = parquet.read().to_pylist()
            assert rows == sorted(rows, key=lambda r: (r["file_path"], r["pos"]))
            assert {r["file_path"] for r in rows} == {files.base_uri}
            assert files.deletes.size == (path / deletes_file).stat().st_size
    assert any(w.deletes is not None for w in written)
    assert any(w.live is not None for w in written)


def test_the_folded_logs_and_the_iceberg_files_share_a_slice_versions_name(
    event_time_table: tuple[Path, list[str]],
) -> None:
    path, _ = event_time_table
    table = HudiTable.open(str(path))
    instant = table.timeline.latest_completed_write()
    assert instant is not None
    store = LogParquetStore(table, keep=5, processes=1)
    published = store.publish(instant.requested_time, dry_run=True)
    assert set(published.names) == {w.name for w in _write(path)}
    # A time-travel publication is named apart, as its folded logs are.
    first_update = [
        i.requested_time for i in table.timeline.completed_writes if i.action == "deltacommit"
    ][1]
    travelled = store.publish(first_update, as_of=first_update, dry_run=True)
    older = {w.name for w in _write(path, first_update)}
    assert older == set(travelled.names)
    assert not older & set(published.names)


def _pyiceberg_rows(path: Path, written: list[WrittenSlice]) -> pa.Table:
    """The table read by pyiceberg's own scan (``ArrowScan``): every base file as a data
    file with the position-delete files that name it, and the live rows' files; columns
    resolved through a name mapping (Hudi's files carry no field ids)."""
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import (
        ArrowScan,
        PyArrowFileIO,
        _ConvertToIcebergWithoutIDs,
        visit_pyarrow,
    )
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
    from pyiceberg.schema import assign_fresh_schema_ids
    from pyiceberg.table import FileScanTask
    from pyiceberg.table.metadata import new_table_metadata
    from pyiceberg.table.name_mapping import create_mapping_from_schema
    from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
    from pyiceberg.typedef import Record

    table = HudiTable.open(str(path))
    slices = table.view.slices_as_of(None)
    arrow = snapshot_schema(table, slices)
    schema = assign_fresh_schema_ids(visit_pyarrow(arrow, _ConvertToIcebergWithoutIDs()))
    mapping = create_mapping_from_schema(schema).model_dump_json()
    metadata = new_table_metadata(
        schema,
        UNPARTITIONED_PARTITION_SPEC,
        UNSORTED_SORT_ORDER,
        str(path),
        {"schema.name-mapping.default": mapping},
    )

    def data_file(uri: str, rows: int, content: DataFileContent) -> DataFile:
        found = DataFile.from_args(
            content=content,
            file_path=uri,
            file_format=FileFormat.PARQUET,
            partition=Record(),
            record_count=rows,
            file_size_in_bytes=os.path.getsize(uri),
        )
        found.spec_id = 0  # what a manifest read sets
        return found

    deletes = {w.base_uri: w.deletes for w in written if w.deletes is not None}
    tasks = []
    for file_slice in slices:
        if file_slice.relative_base_path is None:
            continue
        uri = table.location.uri_of(file_slice.relative_base_path)
        count = pq.ParquetFile(uri).metadata.num_rows
        found = deletes.get(uri)
        delete_files = set()
        if found is not None:
            rows = found.rows.num_rows
            delete_files.add(data_file(found.uri, rows, DataFileContent.POSITION_DELETES))
        tasks.append(FileScanTask(data_file(uri, count, DataFileContent.DATA), delete_files))
    for files in written:
        if files.live is not None:
            live = data_file(files.live.uri, files.live.rows.num_rows, DataFileContent.DATA)
            tasks.append(FileScanTask(live))
    scan = ArrowScan(metadata, PyArrowFileIO(), schema, AlwaysTrue())
    return scan.to_table(tasks)


def test_pyiceberg_applies_the_files_to_the_base_files_as_the_snapshot(
    event_time_table: tuple[Path, list[str]],
) -> None:
    path, _ = event_time_table
    written = _write(path)
    ours = read_snapshot(HudiTable.open(str(path)))
    theirs = _pyiceberg_rows(path, written)
    assert theirs.num_rows == ours.num_rows
    assert canonical(theirs) == canonical(ours)
    # Without the delete files pyiceberg would show replaced and deleted rows as well.
    assert sum(len(w.deletes.rows) for w in written if w.deletes is not None) == 6


@pytest.mark.parametrize("probed", [64, 0])
def test_a_second_publication_writes_nothing_and_reads_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, probed: int
) -> None:
    """Present files found by a stat each (few slices), or by listing the folders."""
    monkeypatch.setattr(mor_files, "_PROBED_NAMES", probed)
    path = tmp_path / "t"
    _write_history(path)
    first = _write(path)
    before = _published(path)
    assert before and not any(".tmp-" in name for name in before)
    again = _write(path)
    assert _published(path) == before
    assert again == first


# One bucket: one slice.
_ONE_SLICE = {"hoodie.bucket.index.num.buckets": 1}


def test_damaged_files_are_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _write_history(path, **_ONE_SLICE)
    (files,) = _write(path)
    assert files.deletes is not None and files.live is not None
    deletes_file = Path(files.deletes.uri)
    deletes_file.write_bytes(b"PAR1 not parquet")
    with pytest.raises(CorruptTableError, match=r"deletes/.*cannot read Parquet") as caught:
        _write(path)
    assert "\n" not in str(caught.value)
    other = pq.ParquetWriter  # a Parquet file that is not one of ours
    with other(deletes_file, pa.schema([("x", pa.int64())])) as writer:
        writer.write_table(pa.table({"x": [1]}))
    with pytest.raises(CorruptTableError, match="not a file of hudi_sync's Iceberg MOR files"):
        _write(path)
    # One of ours in form, naming another data file: never applied to the base file.
    hostile = position_deletes(f"{files.base_uri}/../other.parquet", pa.array([0, 1]))
    counts = {LIVE_ROWS_KEY: str(len(files.live.rows)).encode(), DELETED_ROWS_KEY: b"2"}
    pq.write_table(hostile.replace_schema_metadata(counts), deletes_file)
    with pytest.raises(CorruptTableError, match="not the slice's base file") as caught:
        _write(path)
    assert "\n" not in str(caught.value)


# A child process that runs ``write_slice_files`` and kills itself (SIGKILL, no cleanup)
# at its ``n``-th rename of a written temporary file into place.
_KILLED_WRITE = """
import os, signal, sys
from hudi_sync.table import HudiTable
from hudi_sync.table.read.snapshot import slice_merge_rules
from hudi_sync.manifest.iceberg.mor_files import write_slice_files
path, n = sys.argv[1], int(sys.argv[2])
renames = 0
real_replace = os.replace
def replace(source, target):
    global renames
    renames += 1
    if renames == n:
        os.kill(os.getpid(), signal.SIGKILL)
    return real_replace(source, target)
os.replace = replace
table = HudiTable.open(path)
slices = table.view.slices_as_of(None)
write_slice_files(table, slices, slice_merge_rules(table, slices), None)
"""


@pytest.mark.parametrize("killed_at", [1, 2])
def test_a_killed_write_leaves_no_file_under_its_final_name_and_is_redone(
    tmp_path: Path, killed_at: int
) -> None:
    """Killed before its first file moves into place: only temporaries; killed between
    the slice's two files: the one in place says the other is missing, so the next
    publication writes both again, as an undisturbed one does."""
    path = tmp_path / "t"
    _write_history(path, **_ONE_SLICE)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    child = subprocess.run(
        [sys.executable, "-c", _KILLED_WRITE, str(path), str(killed_at)], env=env
    )
    assert child.returncode == -9
    left = _published(path)
    final = [name for name in left if ".tmp-" not in name.rsplit("/", 1)[-1]]
    assert len(final) == killed_at - 1
    assert any(".tmp-" in name for name in left)
    redone = _write(path)
    (files,) = redone
    assert files.live is not None and files.deletes is not None
    for written in (files.live, files.deletes):
        assert pq.read_table(written.uri).equals(written.rows)
    assert canonical(_pyiceberg_rows(path, redone)) == canonical(
        read_snapshot(HudiTable.open(str(path)))
    )
    assert Counter(n.split("/")[0] for n in _published(path) if ".tmp-" not in n) == {
        "data": 1,
        "deletes": 1,
    }


@pytest.mark.parametrize("partition", ["../outside", "a/../../outside", "/abs", "a//b"])
def test_a_partition_path_read_from_storage_stays_inside_the_iceberg_folder(
    partition: str,
) -> None:
    hostile = FileSlice(partition, "group-1", "20240101000000000", None)
    with pytest.raises(CorruptTableError, match="does not stay inside its table"):
        own_file(DATA_FOLDER, hostile, "group-1_20240101000000000_0.parquet")
    assert own_file(DELETES_FOLDER, FileSlice("p=1/q=2", "g", "1", None), "n.parquet") == (
        f"{ICEBERG_FOLDER}/{DELETES_FOLDER}/p=1/q=2/n.parquet"
    )
