"""``format("hudi")`` plans small pieces a few to a Spark task: each task of a Python
Data Source costs a round trip to a Python worker, more than reading a small file or
CDC split. Planned here without Spark (the reads themselves are compared with
``read()``'s in tests/test_incremental_begin_and_streams.py and
tests/test_spark_read_objectstores.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hudi_sync.spark import datasource
from hudi_sync.spark.datasource import HudiDataSource
from hudi_sync.table import HudiTable
from hudi_sync.table.cdc.plan import plan_changes
from tests.fixture_tables import fixture_tables
from tests.test_cdc import CDC_READ, _with_cdc_enabled

BEGIN = "hoodie.datasource.read.begin.instanttime"
pytestmark = pytest.mark.spark4  # format("hudi"): the Python Data Source API


def _parts(options: dict[str, str]) -> list[Any]:
    source = HudiDataSource(options)
    return list(source.reader(source.schema()).partitions())


def _flat(parts: list[Any]) -> list[Any]:
    return [p for part in parts for p in getattr(part, "parts", (part,))]


def test_small_cdc_splits_share_a_task_until_the_group_is_full(  # type: ignore[no-untyped-def]
    unpack_table, tmp_path: Path, monkeypatch
) -> None:
    (fixture,) = [t for t in fixture_tables() if t.name.endswith("mor/avro/v9_txns_simple_meta")]
    path = str(_with_cdc_enabled(unpack_table(fixture), tmp_path / "v9"))
    splits = [s.to_json() for s in plan_changes(HudiTable.open(path), "earliest").splits]
    assert len(splits) > 2
    options = {"path": path, **CDC_READ, BEGIN: "earliest"}
    together = _parts(options)
    assert len(together) == 1  # a small table: one task
    assert [p.split for p in _flat(together)] == splits  # every split, once, in order
    monkeypatch.setattr(datasource, "GROUP_BYTES", 0)  # every split its own task
    alone = _parts(options)
    assert [p.split for p in alone] == splits


@pytest.mark.parametrize("query", ["snapshot", "read_optimized"])
def test_small_files_and_slices_share_a_task(unpack_table, query: str) -> None:  # type: ignore[no-untyped-def]
    (fixture,) = [t for t in fixture_tables() if t.name.endswith("mor/avro/v8_trips_8i3u1d")]
    path = str(unpack_table(fixture))
    table = HudiTable.open(path)
    slices = table.view.slices_as_of(None, query == "read_optimized")
    assert len(slices) > 1
    parts = _parts({"path": path, "hoodie.datasource.query.type": query})
    assert len(parts) == 1
    read = sorted(
        getattr(p, "relative_path", None) or p.file_slice.relative_base_path for p in _flat(parts)
    )
    assert read == sorted(str(s.relative_base_path) for s in slices)
