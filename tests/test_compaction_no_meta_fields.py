"""Compaction of a Merge-on-Read table written without meta fields
(``hoodie.populate.meta.fields=false``): its log records are keyed as its key generator
keys them, as a snapshot read keys them (``record_keys``), and the new base files hold
the meta columns null, with no key range in the footer, as Hudi's writer leaves them
when it does not populate them. It was refused ("log data record has no
_hoodie_record_key")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from typer.testing import CliRunner

from hudi_sync.cli.app import app
from hudi_sync.table import HudiTable
from hudi_sync.table.config.schema import META_FIELDS
from hudi_sync.table.read.snapshot import read_snapshot
from tests.test_mor_read import NO_META, _no_meta_rows, add_no_meta_log, no_meta_blocks
from tests.warehouse_rows import hudi_rs_rows


def test_a_table_without_meta_fields_is_compacted_as_it_reads(fixture_copy: Any) -> None:
    path: Path = fixture_copy(NO_META)
    add_no_meta_log(path, no_meta_blocks())
    expected = _no_meta_rows(read_snapshot(HudiTable.open(str(path))))

    result = CliRunner().invoke(app, ["compact", str(path), "--json"])
    assert result.exit_code == 0, result.output
    (instant,) = json.loads(result.stdout)["compactions"].split(",")

    table = HudiTable.open(str(path))
    commit = table.timeline.completed_writes[-1]
    assert commit.requested_time == instant
    # byteField=10 held ids 1 and 3; its log updated 1, inserted 7 and 8, deleted 7 and 3.
    (stat,) = table.timeline.commit_metadata(commit).write_stats
    counts = (stat.num_writes, stat.num_updates, stat.num_inserts, stat.num_deletes)
    assert counts == (2, 1, 1, 2)
    slices = table.view.slices_as_of(None)
    assert not any(s.log_files for s in slices)
    assert _no_meta_rows(read_snapshot(table)) == expected
    assert _no_meta_rows(hudi_rs_rows(str(path))) == expected  # base files only now
    (compacted,) = [s for s in slices if s.base_instant == instant]
    assert compacted.relative_base_path is not None
    written = pq.ParquetFile(path / compacted.relative_base_path)
    rows = written.read()
    assert rows.column_names[: len(META_FIELDS)] == list(META_FIELDS)
    assert all(rows.column(f).null_count == rows.num_rows for f in META_FIELDS)
    assert b"hoodie_min_record_key" not in (written.metadata.metadata or {})
