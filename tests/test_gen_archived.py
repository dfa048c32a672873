"""The benchmark's archived table variant (``benchmarks.gen_archived``): a real archived
v6 table with the source table's data, which syncs to DuckDB as hudi-rs reads it."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from benchmarks.gen_archived import ArchivalSpec, archived_name, generate_archived
from benchmarks.gen_table import TableSpec, append_upsert, load_manifest
from hudi_sync.sync.job import sync_table
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.duckdb import DuckDBTarget
from tests import hudi_oracle
from tests.warehouse_rows import canonical, hudi_rs_rows, same_columns

# 250 completed writes: 6 inserts, 243 upserts with a replacecommit 218 upserts in (so
# archival has to pass it, which only the clean allows); 2 failed writes.
SPEC = TableSpec(commits=250, partitions=3, file_groups=60, insert_commits=6, name="arch")


def _view_rows(database: Path) -> pa.Table:
    with duckdb.connect(str(database)) as con:
        return con.sql('SELECT * FROM "t"').to_arrow_table()


def test_archived_variant_is_archived_and_keeps_the_snapshot(tmp_path: Path) -> None:
    manifest = generate_archived(tmp_path, SPEC)
    root = tmp_path / archived_name(SPEC)
    source = load_manifest(tmp_path, SPEC)
    assert source is not None
    table = HudiTable.open(str(root))
    active = table.timeline.completed_writes
    everything = [i for i in table.instants(include_archived=True) if i.is_completed]
    # keep.max=30 exceeded: archived down to keep.min=20, the rest under .hoodie/archived.
    assert len(active) == ArchivalSpec().keep_min_commits
    assert manifest["archived_instants"] == SPEC.commits - len(active)
    assert [i.action for i in everything].count("replacecommit") == 1
    assert len([i for i in everything if i.action in ("commit", "replacecommit")]) == 250
    assert table.timeline.replaced_file_ids() == {}  # the replacecommit is archived
    assert (root / ".hoodie" / "archived" / ".commits_.archive.1_1-0-1").is_file()
    assert not table.timeline.pending
    assert [i.action for i in table.timeline.instants if i.action != "commit"] == [
        "rollback",
        "rollback",
        "clean",
    ]
    for relative in source["ignored_base_files"]:  # the failed writes' files: rolled back
        assert not (root / relative).exists() and (tmp_path / SPEC.name / relative).exists()
    # Same data as the unarchived table, by hudi-rs and by hudi_sync.
    theirs = hudi_oracle.slices(str(root))
    assert theirs == hudi_oracle.slices(str(tmp_path / SPEC.name))
    assert len(theirs) == SPEC.file_groups
    ours = sorted(
        (s.partition_path, s.file_id, s.base_file.name if s.base_file else None)
        for s in table.file_slices()
    )
    assert ours == [(r["partition_path"], r["file_id"], r["base_file"]) for r in theirs]


@pytest.mark.parametrize("delta_commits", [0, 3], ids=["full", "delta"])
def test_archived_variant_syncs_to_hudi_rs_rows(tmp_path: Path, delta_commits: int) -> None:
    generate_archived(tmp_path, SPEC)
    root = tmp_path / archived_name(SPEC)
    database = tmp_path / "w.duckdb"

    def sync_and_compare() -> bool:
        target = DuckDBTarget(str(database), "t")
        report = sync_table(str(root), [target], delta_commits=delta_commits)
        assert not report.errors
        view = _view_rows(database)
        ours, theirs = same_columns(view, hudi_rs_rows(str(root)))
        assert theirs.num_rows == SPEC.file_groups
        assert canonical(ours) == canonical(theirs)
        files = {s["base_file"] for s in hudi_oracle.slices(str(root))}
        assert set(ours.column("_hoodie_file_name").to_pylist()) == files
        return report.incremental

    sync_and_compare()
    append_upsert(root, 3)
    # The rollbacks and the clean came after the first sync's instant: a re-base.
    assert not sync_and_compare()
    append_upsert(root, 3)
    assert sync_and_compare()
