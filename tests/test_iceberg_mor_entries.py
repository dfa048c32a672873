"""A Merge-on-Read slice's Iceberg files as the store lists them (``slice_files``): data
file entries of the live rows and position-delete entries, with the partition values of
the slice's partition, their record counts, sizes and exact bounds."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from hudi_sync.manifest.iceberg.data_files import encode_bound
from hudi_sync.manifest.iceberg.mor_files import (
    DATA_FOLDER,
    DELETES_FOLDER,
    FILE_PATH_FIELD_ID,
    POS_FIELD_ID,
    own_file,
    slice_files,
)
from hudi_sync.manifest.iceberg.partitioning import partition_plan
from hudi_sync.manifest.iceberg.schema import iceberg_schema
from hudi_sync.manifest.log_parquet import slice_version_name
from hudi_sync.spark.writing.writer import write_arrow
from hudi_sync.table import HudiTable
from hudi_sync.table.read.snapshot import slice_merge_rules, snapshot_schema
from tests.test_iceberg_mor import _COMPACT, _options, _rows


@pytest.fixture(scope="module")
def two_partitions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Partitions a and b compacted, then logs: updates and a new key in a, a late
    update (which loses) and a delete in b."""
    path = tmp_path_factory.mktemp("ice-entries") / "t"
    write_arrow(_rows(list(range(6)), [10] * 6, "a"), str(path), _options(**_COMPACT))
    write_arrow(_rows(list(range(6, 12)), [10] * 6, "b"), str(path), _options(**_COMPACT))
    write_arrow(_rows([0, 1, 20], [11, 12, 1], "a"), str(path), _options())
    write_arrow(_rows([6], [3], "b"), str(path), _options())
    write_arrow(_rows([7], [0], "b"), str(path), _options("delete"))
    return path


def test_slice_files_are_entries_of_the_slices_partition_with_exact_statistics(
    two_partitions: Path,
) -> None:
    table = HudiTable.open(str(two_partitions))
    slices = table.view.slices_as_of(None)
    arrow = snapshot_schema(table, slices)
    schema = iceberg_schema(arrow, None, table.uri)
    plan = partition_plan(table, schema)
    assert plan.fields == (("p", "string"),)
    with_logs = [s for s in slices if s.log_files]
    rules = slice_merge_rules(table, with_logs)
    made = slice_files(table, with_logs, arrow, schema, plan, rules, None)
    assert len(made) == len(with_logs)
    ids = schema.field_ids()
    pending = sorted(i.requested_time for i in table.timeline.pending)
    live_ids: dict[str, set[int]] = {}
    deleted_positions: dict[str, int] = {}
    for file_slice, files in zip(with_logs, made, strict=True):
        assert files.name == slice_version_name(table.location, file_slice, pending, None)
        partition = (file_slice.partition_path.split("=")[-1],)
        if files.live is not None:
            live = files.live
            assert (live.content, live.partition) == (0, partition)
            relative = own_file(DATA_FOLDER, file_slice, files.name)
            assert live.path == table.location.uri_of(relative)
            assert live.size == (two_partitions / relative).stat().st_size
            rows = pq.read_table(two_partitions / relative)
            assert live.record_count == rows.num_rows
            values = rows.column("id").to_pylist()
            assert live.value_counts[ids["id"]] == len(values)
            assert live.lower_bounds[ids["id"]] == encode_bound("long", min(values))
            assert live.upper_bounds[ids["id"]] == encode_bound("long", max(values))
            live_ids.setdefault(file_slice.partition_path, set()).update(values)
        if files.deletes is not None:
            deletes = files.deletes
            assert (deletes.content, deletes.partition) == (1, partition)
            relative = own_file(DELETES_FOLDER, file_slice, files.name)
            assert deletes.path == table.location.uri_of(relative)
            assert deletes.size == (two_partitions / relative).stat().st_size
            rows = pq.read_table(two_partitions / relative)
            assert deletes.record_count == rows.num_rows
            base_uri = table.location.uri_of(file_slice.relative_base_path or "")
            positions = rows.column("pos").to_pylist()
            assert deletes.lower_bounds[FILE_PATH_FIELD_ID] == base_uri.encode()
            assert deletes.upper_bounds[FILE_PATH_FIELD_ID] == base_uri.encode()
            assert deletes.lower_bounds[POS_FIELD_ID] == encode_bound("long", min(positions))
            assert deletes.upper_bounds[POS_FIELD_ID] == encode_bound("long", max(positions))
            key = file_slice.partition_path
            deleted_positions[key] = deleted_positions.get(key, 0) + len(positions)
    # a: 0 and 1 replaced, 20 new; b: 6's late update loses, 7 deleted.
    assert live_ids == {"a": {0, 1, 20}}
    assert deleted_positions == {"a": 2, "b": 1}
    again = slice_files(table, with_logs, arrow, schema, plan, rules, None)
    assert again == made  # read back from the files: the same entries
