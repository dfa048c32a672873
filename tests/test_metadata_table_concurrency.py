"""Writers that overlap the metadata table's creation (or deletion).

Hudi 1.x initialises the metadata table of a version 8+ table while other writes are in
flight (their files left out of the listing) and relies on each of them writing its
own deltacommit when it completes: its writer decides at completion, from the table's
``hoodie.table.metadata.partitions`` read then, whether the table has a metadata table.
hudi_sync's writers decide there too, under the table lock.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hudi_sync.errors import BadInputError
from hudi_sync.table import HudiTable
from hudi_sync.table.read.snapshot import read_snapshot
from hudi_sync.table.write.commit import WriteTransaction
from tests.fixture_tables import set_properties
from tests.metadata_checks import assert_files_partition, listed_files, rows_by_key
from tests.test_metadata_table_services import _readers_agree, _rows_of, _write, mdt_files
from tests.test_metadata_table_write import upsert_one

MDT = ".hoodie/metadata"


def _write_during(spark, path: Path, rows: list[dict[str, Any]], other: Any) -> Any:  # type: ignore[no-untyped-def]
    """Write ``rows``; once its data files are written (its instant inflight), run
    ``other`` (another write) before it completes."""
    original = WriteTransaction.write_partition_metadata
    ran: list[str] = []

    def partitions(transaction: WriteTransaction, names: set[str]) -> None:
        original(transaction, names)
        if not ran:
            ran.append(transaction.instant)
            other()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(WriteTransaction, "write_partition_metadata", partitions)
        result = _write(spark, path, rows)
    assert ran == [result.instant]
    return result


def test_a_write_in_flight_while_another_creates_the_metadata_table_is_recorded_in_it(  # type: ignore[no-untyped-def]
    spark, tmp_path
) -> None:
    path = tmp_path / "t"
    _write(spark, path, _rows_of(range(3), "v"))
    assert not (path / MDT).exists()

    def create() -> None:
        _write(spark, path, _rows_of(range(3, 5), "c"), **{"hoodie.metadata.enable": "true"})

    slow = _write_during(spark, path, _rows_of(range(5, 8), "s"), create)
    assert HudiTable.open(str(path)).config.metadata_partitions == ("files",)
    # The write that began before the metadata table existed has its deltacommit there.
    mdt_timeline = path / MDT / ".hoodie/timeline"
    assert list(mdt_timeline.glob(f"{slow.instant}_*.deltacommit"))
    expected = {i: "v" if i < 3 else "c" if i < 5 else "s" for i in range(8)}
    _readers_agree(path, {i: f"{name}{i}" for i, name in expected.items()})
    assert mdt_files(path) == listed_files(path)


def test_a_write_in_flight_while_another_deletes_the_metadata_table_writes_none(  # type: ignore[no-untyped-def]
    spark, tmp_path
) -> None:
    path = tmp_path / "t"
    _write(spark, path, _rows_of(range(3), "v"), **{"hoodie.metadata.enable": "true"})

    def delete() -> None:
        _write(spark, path, _rows_of(range(3, 5), "d"), **{"hoodie.metadata.enable": "false"})

    _write_during(spark, path, _rows_of(range(5, 8), "s"), delete)
    assert HudiTable.open(str(path)).config.metadata_partitions == ()
    # No half metadata table (log files without a table) is left behind.
    assert not (path / MDT).exists()
    expected = {i: "v" if i < 3 else "d" if i < 5 else "s" for i in range(8)}
    _readers_agree(path, {i: f"{name}{i}" for i, name in expected.items()})


INFLIGHT = "hoodie.table.metadata.partitions.inflight"


def _being_built(path: Path, partition: str) -> None:
    """As Hudi's asynchronous indexer schedules ``partition``: listed as inflight (its
    file groups already there), not yet as built."""
    built = HudiTable.open(str(path)).config.metadata_partitions
    set_properties(
        path,
        {
            "hoodie.table.metadata.partitions": ",".join(p for p in built if p != partition),
            INFLIGHT: partition,
        },
    )


def _timeline_and_files(path: Path) -> tuple[list[str], list[str]]:
    names = sorted(p.name for p in (path / ".hoodie/timeline").iterdir() if p.is_file())
    data = [p for p in path.rglob("*") if p.is_file() and ".hoodie" not in p.parts]
    files = sorted(str(p.relative_to(path)) for p in data)
    return names, files


def test_a_write_is_refused_while_hudis_indexer_builds_a_partition(  # type: ignore[no-untyped-def]
    spark, fixture_copy
) -> None:
    path = fixture_copy("cow/v9_txns_simple_meta")
    _being_built(path, "record_index")
    before = _timeline_and_files(path)
    with pytest.raises(BadInputError) as refused:
        upsert_one(spark, str(path), "refused")
    message = str(refused.value)
    assert "\n" not in message
    assert "record_index is being built" in message and f"{INFLIGHT}=record_index" in message
    assert _timeline_and_files(path) == before


def test_a_write_in_flight_when_the_indexer_starts_is_refused_and_rolled_back(  # type: ignore[no-untyped-def]
    spark, fixture_copy
) -> None:
    path = fixture_copy("cow/v9_txns_simple_meta")
    model = rows_by_key(read_snapshot(HudiTable.open(str(path))), "txn_id")
    original = WriteTransaction.write_partition_metadata

    def partitions(transaction: WriteTransaction, names: set[str]) -> None:
        original(transaction, names)
        _being_built(path, "record_index")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(WriteTransaction, "write_partition_metadata", partitions)
        with pytest.raises(BadInputError, match=f"{INFLIGHT}=record_index"):
            upsert_one(spark, str(path), "refused")
    table = HudiTable.open(str(path))
    assert not table.timeline.pending
    assert rows_by_key(read_snapshot(table), "txn_id") == model
    assert_files_partition(path, None)
