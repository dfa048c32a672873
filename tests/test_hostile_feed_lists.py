"""The change feed's and the log fold's own lists name only their own files (issue 49,
item 3).

A sync reads back the lists it wrote under ``.hoodie/manifest/`` (``changes/`` and
``logs/``): the previous snapshot's ``files.csv`` (the change files kept), the writes
pending then (``pending.csv``), each file group's folded log (``groups.csv``), and the
lists of dropped snapshots, whose files it deletes. Someone who can write the table's
storage can write these lists: a ``../`` line would have a sync delete any file the
process may delete, or publish a foreign file as the table's changes. Each line must be
a name the store writes, below its folder; else the list is refused in one line naming
it, before anything is deleted or published.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from hudi_sync.errors import CorruptTableError
from hudi_sync.manifest.change_feed import CHANGES_FOLDER
from hudi_sync.manifest.delta import DELTA_FOLDER, DELTA_POINTER
from hudi_sync.manifest.log_parquet import GROUPS, LOG_FOLDER
from hudi_sync.manifest.snapshot import MANIFEST_FOLDER, POINTER
from hudi_sync.sync.job import sync_table
from hudi_sync.warehouse.duckdb import DuckDBTarget
from tests.fixture_tables import fixture_tables

COW = "sample_table/cow/v6_simplekeygen_nonhivestyle"  # commits 20240418172802262, ...4498
FIRST = "20240418172802262"
MOR = "quickstart_trips_table/mor/avro/v6_trips_8i1u"
# From ``changes/`` (or ``logs/parquet/``) up to the folder holding the table: ``lake/``.
UP_FROM_CHANGES = "../../../../"
UP_FROM_FOLDED = "../../../../../"


def _table(unpack_table: Any, tmp_path: Path, fixture: str) -> tuple[Path, Path]:
    """A copy of ``fixture`` in ``lake/``, and a file beside it no sync may touch."""
    (found,) = [t for t in fixture_tables() if t.name == fixture]
    table = tmp_path / "lake" / "table"
    shutil.copytree(unpack_table(found), table)
    victim = tmp_path / "lake" / "victim.parquet"
    victim.write_bytes(b"another table's file")
    return table, victim


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _sync(table: Path, tmp_path: Path, **options: Any) -> Any:
    options.setdefault("change_feed", "on")
    return sync_table(str(table), [DuckDBTarget(str(tmp_path / "w.duckdb"), "t")], **options)


def _assert_refused(refused: pytest.ExceptionInfo[CorruptTableError], listed: Path) -> None:
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"{listed}: "), message


def test_a_dropped_feed_list_never_deletes_a_file_outside_the_feed(
    unpack_table: Any, tmp_path: Path
) -> None:
    """The previous list (at the first commit) makes the sync an incremental one, which
    deletes what the lists it drops (``keep=1``) named: one names the victim."""
    table, victim = _table(unpack_table, tmp_path, COW)
    snapshots = table / CHANGES_FOLDER / "snapshots"
    hostile = _write(
        snapshots / f"{int(FIRST) - 1}" / "files.csv", f"{UP_FROM_CHANGES}victim.parquet\n"
    )
    kept = f"commit_date=2024-04-18/commit_time={FIRST}/changes-0123456789ab.parquet"
    _write(snapshots / FIRST / "files.csv", kept + "\n")
    with pytest.raises(CorruptTableError) as refused:
        _sync(table, tmp_path, keep=1)
    _assert_refused(refused, hostile)
    assert victim.read_bytes() == b"another table's file"
    assert hostile.exists()  # nothing pruned


@pytest.mark.parametrize(
    "line",
    [
        f"commit_date=2024-04-18/commit_time={FIRST}/../../{UP_FROM_CHANGES}victim.parquet",
        f"{UP_FROM_CHANGES}victim.parquet",
        "/etc/passwd",
        f"commit_date=2024-04-18/commit_time={FIRST}/other.parquet",
    ],
    ids=["inside-a-commit-folder", "up", "absolute", "not-a-change-file"],
)
def test_a_kept_feed_list_never_publishes_a_foreign_file(
    unpack_table: Any, tmp_path: Path, line: str
) -> None:
    """The previous list's lines are the change files the new snapshot keeps: the
    warehouse's ``t_changes`` would read the victim as the first commit's changes."""
    table, _ = _table(unpack_table, tmp_path, COW)
    listed = _write(table / CHANGES_FOLDER / "snapshots" / FIRST / "files.csv", line + "\n")
    with pytest.raises(CorruptTableError) as refused:
        _sync(table, tmp_path)
    _assert_refused(refused, listed)
    assert not (tmp_path / "w.duckdb").exists()


def test_a_pending_list_holds_instants_only(unpack_table: Any, tmp_path: Path) -> None:
    table, _ = _table(unpack_table, tmp_path, COW)
    folder = table / CHANGES_FOLDER / "snapshots" / FIRST
    _write(folder / "files.csv", "")
    pending = _write(folder / "pending.csv", f"{UP_FROM_CHANGES}victim.parquet\n")
    with pytest.raises(CorruptTableError) as refused:
        _sync(table, tmp_path)
    _assert_refused(refused, pending)


@pytest.mark.parametrize(
    "row",
    [
        "{partition},{file_id},{up}victim.parquet",
        "../{partition},{file_id},{name}",
        "{partition},{file_id},x/../{name}",
    ],
    ids=["name-up", "partition-up", "name-with-folder"],
)
def test_a_groups_list_never_publishes_a_foreign_file(
    unpack_table: Any, tmp_path: Path, row: str
) -> None:
    """A rerun publishes the groups list's folded logs as they are (the slices have not
    changed): a row naming the victim would put it in the ``_rt`` view."""
    table, victim = _table(unpack_table, tmp_path, MOR)
    report = _sync(table, tmp_path, change_feed="off")
    assert report.ok, report.errors
    (groups,) = (table / LOG_FOLDER / "snapshots").glob(f"*/{GROUPS}")
    partition, file_id, name = groups.read_text().splitlines()[0].split(",")
    forged = row.format(partition=partition, file_id=file_id, name=name, up=UP_FROM_FOLDED)
    groups.write_text(forged + "\n" + groups.read_text())
    with pytest.raises(CorruptTableError) as refused:
        _sync(table, tmp_path, change_feed="off")
    _assert_refused(refused, groups)
    assert victim.read_bytes() == b"another table's file"


def test_a_dropped_fold_list_names_only_folded_logs(unpack_table: Any, tmp_path: Path) -> None:
    table, _ = _table(unpack_table, tmp_path, MOR)
    hostile = _write(
        table / LOG_FOLDER / "snapshots" / "1" / "files.csv", f"{UP_FROM_FOLDED}victim.parquet\n"
    )
    with pytest.raises(CorruptTableError) as refused:
        _sync(table, tmp_path, change_feed="off")
    _assert_refused(refused, hostile)


def test_the_lists_a_sync_writes_read_back(unpack_table: Any, tmp_path: Path) -> None:
    """Nothing the stores write is refused: a second sync (rerun) of each store's table,
    after a first one, keeps every list and file."""
    for fixture in (COW, MOR):
        folder = tmp_path / fixture.replace("/", "_")  # a warehouse of its own: one name
        table, _ = _table(unpack_table, folder, fixture)
        assert _sync(table, folder, keep=1).ok
        written = sorted(p for p in (table / ".hoodie/manifest").rglob("*") if p.is_file())
        assert _sync(table, folder, keep=1).ok
        assert sorted(p for p in (table / ".hoodie/manifest").rglob("*") if p.is_file()) == written


# -- the base file manifests (``.hoodie/manifest/``), read back to derive the next one ----
LATEST = "20240418172804498"


def _synced(unpack_table: Any, tmp_path: Path, **options: Any) -> tuple[Path, Path]:
    table, victim = _table(unpack_table, tmp_path, COW)
    assert _sync(table, tmp_path, change_feed="off", **options).ok
    return table, victim


@pytest.mark.parametrize(
    "path",
    [
        "../victim_0-1-2_20240418172804498.parquet",
        "30/../../victim_0-1-2_20240418172804498.parquet",
        "30//x_0-1-2_20240418172804498.parquet",
        "30/x.parquet",
    ],
)
def test_a_manifest_read_back_lists_only_base_files_inside_the_table(
    unpack_table: Any, tmp_path: Path, path: str
) -> None:
    """Every line of the previous ``uris.csv`` is in the next manifest (a rerun
    publishes it again): a ``../`` line would publish the victim as the table's."""
    table, _ = _synced(unpack_table, tmp_path)
    uris = table / MANIFEST_FOLDER / "snapshots" / LATEST / "uris.csv"
    uris.write_text(uris.read_text() + f"{table}/{path}\n")
    with pytest.raises(CorruptTableError) as refused:
        _sync(table, tmp_path, change_feed="off")
    message = str(refused.value)
    assert "\n" not in message and f"{MANIFEST_FOLDER}/snapshots/{LATEST}/uris.csv" in message
    assert repr(path) in message


@pytest.mark.parametrize(("pointer", "delta_commits"), [(POINTER, 0), (DELTA_POINTER, 2)])
def test_a_pointer_names_an_instant_folder_only(
    unpack_table: Any, tmp_path: Path, pointer: str, delta_commits: int
) -> None:
    """``latest.json`` and ``delta.json`` name the snapshot (and delta) to read back by
    its instant: a ``../`` would read another table's lists as this table's."""
    table, _ = _synced(unpack_table, tmp_path, delta_commits=delta_commits)
    file = table / MANIFEST_FOLDER / pointer
    content = json.loads(file.read_text())
    content["instant"] = f"../../../other/.hoodie/manifest/snapshots/{LATEST}"
    file.write_text(json.dumps(content))
    with pytest.raises(CorruptTableError) as refused:
        _sync(table, tmp_path, change_feed="off", delta_commits=delta_commits)
    message = str(refused.value)
    assert "\n" not in message and f"{MANIFEST_FOLDER}/{pointer}: " in message


@pytest.mark.parametrize(
    "row",
    [
        "../30/{file_id},{name}",
        "30/{file_id},../../victim_0-1-2_1.parquet",
        "30/{file_id},a/{name}",
    ],
)
def test_a_delta_file_read_back_names_only_files_inside_the_table(
    unpack_table: Any, tmp_path: Path, row: str
) -> None:
    """The previous delta's rows are the next one's (it is cumulative)."""
    table, _ = _synced(unpack_table, tmp_path, delta_commits=2)
    (delta,) = (table / MANIFEST_FOLDER / DELTA_FOLDER).glob("*.csv")
    name = next((table / "30").glob("*.parquet")).name
    delta.write_text(row.format(file_id=name.split("_")[0], name=name) + "\n")
    with pytest.raises(CorruptTableError) as refused:
        _sync(table, tmp_path, change_feed="off", delta_commits=2)
    message = str(refused.value)
    assert "\n" not in message and f"{DELTA_FOLDER}/{delta.name}: " in message
