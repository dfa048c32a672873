"""File-system view rules the fixtures do not show on their own, built on copies of
real tables and checked against hudi-rs where it implements the rule."""

from __future__ import annotations

import shutil
from pathlib import Path

from hudi_sync.table import HudiTable
from hudi_sync.table.timeline.instant import parse_instant_file_name
from tests import hudi_oracle


def _rows(table: HudiTable, **kwargs: object) -> list[dict[str, object]]:
    return sorted(
        (s.to_json() for s in table.file_slices(**kwargs)),  # type: ignore[arg-type]
        key=lambda r: (r["partition_path"], r["file_id"]),
    )


def test_failed_and_inflight_writes_are_invisible(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    path: Path = fixture_copy("cow/v6_simplekeygen_nonhivestyle")
    before = _rows(HudiTable.open(str(path)))
    base = next((path / "10").glob("*.parquet"))
    file_id = base.name.split("_")[0]
    # An inflight write rewrote partition 10's file group and created a new one in 40.
    pending = "20250101000000000"
    (path / ".hoodie" / f"{pending}.commit.requested").write_bytes(b"")
    (path / ".hoodie" / f"{pending}.inflight").write_bytes(b"")
    shutil.copy(base, path / "10" / f"{file_id}_0-9-9_{pending}.parquet")
    (path / "40").mkdir()
    shutil.copy(path / "10" / ".hoodie_partition_metadata", path / "40")
    shutil.copy(
        base, path / "40" / f"aaaaaaaa-0000-0000-0000-000000000000-0_0-9-9_{pending}.parquet"
    )
    # A failed write that left no instant file at all.
    shutil.copy(base, path / "10" / f"{file_id}_0-8-8_20241231000000000.parquet")
    table = HudiTable.open(str(path))
    assert _rows(table) == before
    assert _rows(table) == hudi_oracle.slices(str(path))


def test_pending_compaction_slice_merges_into_previous(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    """Java's rule (§4.7 of the format notes): a log written after compaction P was
    scheduled is named with base instant P; until P completes it belongs to the
    previous slice. hudi-rs does not implement pending compaction, so this is checked
    against the rule, not the oracle."""
    path: Path = fixture_copy("mor/parquet/v6_simplekeygen_nonhivestyle")
    table = HudiTable.open(str(path))
    latest = {s.file_id: s for s in table.file_slices()}
    target = next(s for s in latest.values() if s.log_files)
    compaction = "20250201000000000"
    delta = "20250201000000100"
    hoodie = path / ".hoodie"
    (hoodie / f"{compaction}.compaction.requested").write_bytes(b"")
    for suffix in ("deltacommit.requested", "deltacommit.inflight"):
        (hoodie / f"{delta}.{suffix}").write_bytes(b"")
    shutil.copy(hoodie / f"{target.base_instant}.deltacommit", hoodie / f"{delta}.deltacommit")
    partition_dir = path / target.partition_path
    new_log = f".{target.file_id}_{compaction}.log.1_0-1-1"
    shutil.copy(partition_dir / target.log_files[0].name, partition_dir / new_log)

    after = {s.file_id: s for s in HudiTable.open(str(path)).file_slices()}
    merged = after[target.file_id]
    assert merged.base_instant == target.base_instant
    assert [log.name for log in merged.log_files] == [*(x.name for x in target.log_files), new_log]

    # Once the compaction completes, its base file starts a new slice holding the log.
    base_name = f"{target.file_id}_0-1-1_{compaction}.parquet"
    assert target.base_file is not None
    shutil.copy(partition_dir / target.base_file.name, partition_dir / base_name)
    (hoodie / f"{compaction}.compaction.requested").unlink()
    (hoodie / f"{compaction}.commit").write_text("{}")
    compacted = {s.file_id: s for s in HudiTable.open(str(path)).file_slices()}[target.file_id]
    assert compacted.base_instant == compaction
    assert compacted.base_file is not None and compacted.base_file.name == base_name
    assert [log.name for log in compacted.log_files] == [new_log]


def test_replaced_file_groups_disappear_at_the_replace_instant(unpack_table) -> None:  # type: ignore[no-untyped-def]
    from tests.fixture_tables import fixture_tables

    fixture = next(
        t
        for t in fixture_tables()
        if t.name.endswith("cow/v6_simplekeygen_nonhivestyle_overwritetable")
    )
    table = HudiTable.open(str(unpack_table(fixture)))
    replace = table.completed_commits()[-1]
    assert replace.action == "replacecommit"
    replaced = table.timeline.replaced_file_ids()
    before = {
        s.file_id for s in table.file_slices(as_of=table.completed_commits()[-2].requested_time)
    }
    after = {s.file_id for s in table.file_slices()}
    assert {fid for (_, fid) in replaced} <= before
    assert not ({fid for (_, fid) in replaced} & after)


def test_fourteen_digit_instants_compare_as_hudi_pads_them() -> None:
    old = parse_instant_file_name("20240101120000.commit")
    new = parse_instant_file_name("20240101120000500.commit")
    assert old is not None and new is not None
    from hudi_sync.table.timeline.instant import comparable_instant

    # 14-digit instants stand for the whole second (Hudi pads with 999 ms).
    assert comparable_instant(old.requested_time) > comparable_instant(new.requested_time)
    assert parse_instant_file_name("20240101120000.inflight") is not None
    assert parse_instant_file_name("hoodie.properties") is None


def test_rollback_metadata_is_typed(unpack_table) -> None:  # type: ignore[no-untyped-def]
    from tests.fixture_tables import fixture_tables

    fixture = next(t for t in fixture_tables() if t.name.endswith("v6_nonpartitioned_rollback"))
    table = HudiTable.open(str(unpack_table(fixture)))
    rollback = table.timeline.completed(["rollback"])[0]
    meta = table.timeline.rollback_metadata(rollback)
    assert meta.rolled_back_instants == ("20250126040826878",)
    assert any(f.endswith("_20250126040826878.parquet") for f in meta.deleted_files[""])
