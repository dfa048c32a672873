"""Every writer path keeps the metadata table current (issue 39, item 4).

hudi-rs lists v8+ tables through the metadata table's ``files`` partition, so a file a
path writes without a metadata record is invisible to it: after each path's write,
hudi-rs reads the same rows as the table core and a model, and the ``files``
partition's merged records equal a direct listing of the committed files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from hudi_sync.spark.writer import write_arrow
from hudi_sync.table import HudiTable
from hudi_sync.table.snapshot_read import read_snapshot
from tests.test_metadata_table_write import listed_files, mdt_files
from tests.warehouse_rows import hudi_rs_rows

DATA = ("id", "p", "name", "ts")


def _rows(source: pa.Table) -> dict[Any, dict[str, Any]]:
    return {r["id"]: {c: r[c] for c in DATA} for r in source.to_pylist()}


def assert_current(path: Path, model: dict[Any, dict[str, Any]], hudi_rs: bool = True) -> None:
    """hudi-rs (listing through the metadata table) and the table core read the model,
    and the ``files`` partition records exactly the files a listing finds."""
    table = HudiTable.open(str(path))
    assert table.config.metadata_partitions, "the table has no metadata table"
    assert _rows(read_snapshot(table)) == model
    if hudi_rs:
        assert _rows(hudi_rs_rows(str(path))) == model
    partitions, files = mdt_files(path)
    assert files == listed_files(path)
    assert partitions == sorted(files)


def test_bucket_index_upserts_append_logs_the_metadata_table_records(tmp_path: Path) -> None:
    from tests.test_bucket_index import options

    """The first write makes log-only file groups, which hudi-rs 0.5 skips when it lists
    through the metadata table (its ``file_groups_from_files_partition_records`` keeps
    only groups with a base file): an inline compaction then gives them base files."""
    path = tmp_path / "bucket"
    settings = {"hoodie.metadata.enable": "true"}
    first = [{"id": i, "p": "a" if i % 2 else "b", "name": f"n{i}", "ts": 1} for i in range(6)]
    write_arrow(pa.Table.from_pylist(first), str(path), options(9, **settings))
    model = {r["id"]: r for r in first}
    assert_current(path, model, hudi_rs=False)
    compacting = {**settings, "hoodie.compact.inline": "true"}
    compacting["hoodie.compact.inline.max.delta.commits"] = "1"
    again = [dict(model[5], name="v1", ts=2)]
    result = write_arrow(pa.Table.from_pylist(again), str(path), options(9, **compacting))
    assert result.compactions
    model[5] = again[0]
    assert_current(path, model)
    for step in (2, 3):
        changed = [dict(model[i], name=f"v{step}", ts=step) for i in range(step)]
        write_arrow(pa.Table.from_pylist(changed), str(path), options(9, **settings))
        model.update({r["id"]: r for r in changed})
        assert_current(path, model)
    logs = [f for files in listed_files(path).values() for f in files if ".log." in f]
    assert len(logs) >= 3  # the upserts appended to log files


def test_compact_through_the_cli_keeps_the_metadata_table_current(tmp_path: Path) -> None:
    """``hudi-sync compact`` on a Merge-on-Read table with a metadata table: the
    compaction's base files are recorded (hudi-rs, which skips log-only groups listed
    through the metadata table, reads every row only through them)."""
    from typer.testing import CliRunner

    from hudi_sync.cli.app import app
    from tests.test_bucket_index import options

    path = tmp_path / "mor"
    settings = {"hoodie.metadata.enable": "true"}
    first = [{"id": i, "p": "a" if i % 2 else "b", "name": f"n{i}", "ts": 1} for i in range(6)]
    write_arrow(pa.Table.from_pylist(first), str(path), options(9, **settings))
    changed = [dict(first[1], name="v2", ts=2)]
    write_arrow(pa.Table.from_pylist(changed), str(path), options(9, **settings))
    model = {r["id"]: r for r in [*first, *changed]}
    assert_current(path, model, hudi_rs=False)
    result = CliRunner().invoke(app, ["compact", str(path), "--json"])
    assert result.exit_code == 0, result.output
    table = HudiTable.open(str(path))
    assert [i.action for i in table.timeline.completed_writes][-1] == "commit"
    assert all(s.base_file is not None and not s.log_files for s in table.file_slices())
    assert_current(path, model)
