"""Hudi 1.1's partitioned record index (``indexOptions.isPartitioned=true``).

Its file groups are per data partition (a key is unique only within its partition) and
Hudi adds file groups as partitions appear; hudi_sync routes record index keys over one
global set of file groups, so a write that would update it is refused in one line,
before anything is written, and goes through once the option drops the partition.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hudi_sync.errors import BadInputError
from hudi_sync.table import HudiTable
from tests.test_metadata_record_index_write import upsert_new_key

INDEX_JSON = ".hoodie/.index_defs/index.json"


def _partitioned(path: Path) -> None:
    """The fixture's record index declared partitioned, as Hudi 1.1 writes it."""
    where = path / INDEX_JSON
    definitions = json.loads(where.read_text())
    definitions["indexDefinitions"]["record_index"]["indexOptions"] = {"isPartitioned": "true"}
    where.write_text(json.dumps(definitions, indent=2))


def _state(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())


def test_a_write_to_a_table_with_a_partitioned_record_index_is_refused(  # type: ignore[no-untyped-def]
    spark, fixture_copy
) -> None:
    path = fixture_copy("cow/v9_txns_simple_meta")
    assert "record_index" in HudiTable.open(str(path)).config.metadata_partitions
    _partitioned(path)
    before = _state(path)
    with pytest.raises(BadInputError) as refused:
        upsert_new_key(spark, str(path), "NEW")
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"{path}/{INDEX_JSON}: record_index is Hudi's partitioned")
    assert "hoodie.metadata.record.index.enable=false" in message
    # Refused before anything was touched.
    assert _state(path) == before
    assert not HudiTable.open(str(path)).timeline.pending
