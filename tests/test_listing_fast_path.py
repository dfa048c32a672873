"""The latest-snapshot listing's fast paths give exactly what the full rules give.

``FileSystemView.slices_as_of`` takes each partition without data log files straight
from its names (only the chosen base files become objects), and ``Timeline.instants``
parses the timeline's names in one pass (``latest_instants``). A view whose partitions
were already classified into files takes the full rules for every partition, so the
two are compared on every fixture table and on odd names the fast paths must hand to
the full rules.
"""

from __future__ import annotations

import dataclasses
import pickle
import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from hudi_sync.errors import CorruptTableError
from hudi_sync.table import FileSlice, HudiTable
from hudi_sync.table.timeline.instant import _latest_instants_slowly, latest_instants
from tests.fixture_tables import fixture_tables


def _full_rules(path: Path, **kwargs: Any) -> list[FileSlice]:
    table = HudiTable.open(str(path))
    assert table.view.partitions is not None  # classified first: the full rules throughout
    return table.file_slices(**kwargs)


def _fast(path: Path, **kwargs: Any) -> list[FileSlice]:
    return HudiTable.open(str(path)).file_slices(**kwargs)


def _outcome(listing: Any, path: Path, **kwargs: Any) -> Any:
    try:
        return listing(path, **kwargs)
    except Exception as exc:  # the same failure counts as the same outcome
        return (type(exc), str(exc))


@pytest.mark.parametrize("fixture", fixture_tables(), ids=lambda t: t.name)
def test_fast_path_equals_full_rules_on_fixture_tables(unpack_table, fixture) -> None:  # type: ignore[no-untyped-def]
    path: Path = unpack_table(fixture)
    commits = [i.requested_time for i in HudiTable.open(str(path)).completed_commits()]
    for as_of in [None, *commits]:
        for read_optimized in (False, True):
            kwargs = {"as_of": as_of, "read_optimized": read_optimized}
            assert _outcome(_fast, path, **kwargs) == _outcome(_full_rules, path, **kwargs)


def test_fast_slices_are_ordinary_file_slices(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    path: Path = fixture_copy("cow/v6_simplekeygen_nonhivestyle")
    slices = _fast(path)
    assert slices and slices == _full_rules(path)
    rebuilt = [
        FileSlice(s.partition_path, s.file_id, s.base_instant, s.base_file, s.log_files)
        for s in slices
    ]
    assert slices == rebuilt
    assert [hash(s) for s in slices] == [hash(s) for s in rebuilt]
    assert [repr(s) for s in slices] == [repr(s) for s in rebuilt]
    assert [dataclasses.asdict(s) for s in slices] == [dataclasses.asdict(s) for s in rebuilt]
    assert pickle.loads(pickle.dumps(slices)) == slices
    assert dataclasses.replace(slices[0], file_id="x").file_id == "x"
    assert type(slices[0].base_file) is type(rebuilt[0].base_file)
    with pytest.raises(dataclasses.FrozenInstanceError):
        slices[0].file_id = "x"  # type: ignore[misc]


def _base_file(path: Path) -> Path:
    return next(p for p in sorted(path.rglob("*.parquet")) if ".hoodie" not in p.parts)


def test_odd_names_in_a_partition(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    """Instants older than the active timeline count as committed (archived), so these
    files are visible without commit files of their own."""
    path: Path = fixture_copy("cow/v6_simplekeygen_nonhivestyle")
    base = _base_file(path)
    folder = base.parent
    before = _fast(path)
    # One group at two spellings of one instant (14 and 17 digits): the full rules'
    # listing order decides, so the fast path hands the partition over.
    tie, dup = "tie00000-0000-0000-0000-000000000000-0", "dup00000-0000-0000-0000-000000000000-0"
    shutil.copy(base, folder / f"{tie}_0-1-1_20000101000000.parquet")
    shutil.copy(base, folder / f"{tie}_0-2-2_20000101000000999.parquet")
    # One group written twice at one instant (a retried task): one of them wins.
    for token in ("0-3-3", "0-4-4"):
        shutil.copy(base, folder / f"{dup}_{token}_20000101000000000.parquet")
    # Not base files: a base-format partition metafile, a hidden parquet file, checksums,
    # and other files.
    for name in (
        ".hoodie_partition_metadata.parquet",
        ".hidden_0-1-1_20000101000000000.parquet",
        ".x_0-1-1_20000101000000000.parquet.crc",
        "notes.txt",
        "x_0-1-1_20000101000000000.orc",
    ):
        shutil.copy(base, folder / name)
    after = _fast(path)
    assert after == _full_rules(path)
    assert len(after) == len(before) + 2
    assert {s.file_id for s in after} - {s.file_id for s in before} == {tie, dup}


def test_a_malformed_base_file_name_fails_alike(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    path: Path = fixture_copy("cow/v6_simplekeygen_nonhivestyle")
    base = _base_file(path)
    shutil.copy(base, base.parent / "not_a_base_file_name.parquet")
    with pytest.raises(CorruptTableError) as fast:
        _fast(path)
    with pytest.raises(CorruptTableError) as full:
        _full_rules(path)
    assert str(fast.value) == str(full.value)
    assert "not_a_base_file_name.parquet" in str(fast.value)


def test_a_data_log_file_takes_the_full_rules(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    path: Path = fixture_copy("mor/parquet/v6_simplekeygen_nonhivestyle")
    slices = _fast(path)
    assert any(s.log_files for s in slices)
    assert slices == _full_rules(path)
    assert _fast(path, read_optimized=True) == _full_rules(path, read_optimized=True)


TIMELINE_NAMES = [
    "20240101000000000.commit.requested",
    "20240101000000000.inflight",
    "20240101000000000.commit",
    "20240101000001000.deltacommit.requested",
    "20240101000001000.deltacommit.inflight",
    "20240101000002.replacecommit.requested",
    "20240101000002.replacecommit.inflight",
    "20240101000002.replacecommit",
    "20240101000002999.clean.requested",
    "20240101000003000_20240101000004000.commit",
    "20240101000003000.commit.requested",
    "20240101000005000.compaction.requested",
    "20240101000006000_20240101000007000.inflight",  # a commit's inflight: no completion
    "20240101000008000.rollback",
    "hoodie.properties",
    "archived",
    "20240101.short",  # not an instant at all
]


@pytest.mark.parametrize("seed", range(5))
def test_latest_instants_equals_name_by_name_parsing(seed: int) -> None:
    names = list(TIMELINE_NAMES)
    random.Random(seed).shuffle(names)
    fast = latest_instants(names)
    assert fast == _latest_instants_slowly(names)
    assert [i.file_name for i in fast] == [i.file_name for i in _latest_instants_slowly(names)]


@pytest.mark.parametrize(
    "odd",
    [
        "20240101000009000.unknownaction",
        "20240101000009000_20240101000010000.commit.requested",
        "20240101000009000.inflight.requested",
    ],
)
def test_latest_instants_reports_odd_names_alike(odd: str) -> None:
    names = [*TIMELINE_NAMES, odd]
    with pytest.raises(CorruptTableError) as fast:
        latest_instants(names)
    with pytest.raises(CorruptTableError) as slow:
        _latest_instants_slowly(names)
    assert str(fast.value) == str(slow.value)


def _instants_outcome(parse: Any, names: list[str]) -> Any:
    try:
        return parse(names)
    except CorruptTableError as exc:
        return str(exc)


@pytest.mark.parametrize(
    "odd",
    [
        "20240101000009000.commit\nx",  # a newline in a name
        "20240101000009000.commit\n",
        "20240101000009000_x.commit",  # not an instant: ignored
        "2024010100000९000.commit",  # a non-ASCII digit
        "",
    ],
)
def test_latest_instants_on_names_the_fast_parse_hands_over(odd: str) -> None:
    names = [*TIMELINE_NAMES, odd]
    fast = _instants_outcome(latest_instants, names)
    assert fast == _instants_outcome(_latest_instants_slowly, names)


def _tracked(thing: object) -> bool:
    """Whether ``thing`` is in one of the collector's generations (not frozen)."""
    import gc

    return any(candidate is thing for candidate in gc.get_objects())


def test_the_garbage_collector_is_left_as_found(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    import gc

    path: Path = fixture_copy("cow/v6_simplekeygen_nonhivestyle")
    assert gc.isenabled()
    _fast(path)
    assert gc.isenabled()
    gc.disable()
    try:
        _fast(path)
        assert not gc.isenabled()
    finally:
        gc.enable()
    # Someone else's frozen objects stay frozen, and the listing's result is not frozen
    # with them. Counting frozen objects would not tell: frozen objects freed meanwhile
    # (by any thread) lower the count. The objects themselves are asked: frozen ones are
    # in no generation that gc.get_objects lists.
    frozen = [object()]
    gc.freeze()
    try:
        assert not _tracked(frozen)
        listed = _fast(path)
        assert not _tracked(frozen), "the listing unfroze objects it did not freeze"
        assert _tracked(listed), "the listing froze its result"
        assert gc.isenabled()
    finally:
        gc.unfreeze()
    assert _tracked(frozen)
    del frozen
    with pytest.raises(CorruptTableError):  # and after a failure
        shutil.copy(_base_file(path), _base_file(path).parent / "bad.parquet")
        _fast(path)
    assert gc.isenabled()
