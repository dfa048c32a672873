"""Null values in a secondary index of index version 1 (table version 8).

Hudi 1.0 indexes only rows whose source field is not null (its secondary key generator
skips a null value); index version 2 (Hudi 1.1) keeps nulls under its null marker. A v8
write of a null value leaves the index without an entry for the row, and an update to
null drops the row's old entry.
"""

from __future__ import annotations

from hudi_sync.spark import read, write
from hudi_sync.table import HudiTable
from hudi_sync.table.metadata_table import index_keys
from hudi_sync.table.metadata_table.reader import MetadataTableReader
from hudi_sync.table.read.snapshot import read_snapshot
from tests.frames import rows_frame
from tests.metadata_checks import index_definitions, rows_by_key, write_options

INDEX = "secondary_index_rider_idx"


def _entries(path: object) -> dict[str, str]:
    """The live entries of the rider index: record key -> secondary key."""
    reader = MetadataTableReader.of(HudiTable.open(str(path)))
    out = {}
    for key in reader.read_partition(INDEX):
        prefix = index_keys.secondary_key_prefix(key)
        out[key[len(prefix) :]] = prefix[:-1]
    return out


def test_v8_null_values_have_no_secondary_index_entries(  # type: ignore[no-untyped-def]
    spark, fixture_copy
) -> None:
    path = fixture_copy("mor/avro/v8_trips_8i3u1d")
    (index,) = index_definitions(path).secondary_indexes
    assert (index.name, index.version) == (INDEX, 1)
    table = HudiTable.open(str(path))
    model = rows_by_key(read_snapshot(table), "uuid")
    columns = list(next(iter(model.values())))
    schema = read(spark, str(path)).select(*columns).schema
    before = _entries(path)
    updated = min(model)
    assert before[updated] == model[updated]["rider"]
    rows = [
        dict(model[updated], rider=None, ts=model[updated]["ts"] + 1),
        dict(model[updated], uuid="riderless", rider=None),
    ]
    frame = rows_frame(spark, rows, schema)
    write(frame, str(path), write_options(table, "upsert"))
    snapshot = rows_by_key(read_snapshot(HudiTable.open(str(path))), "uuid")
    assert snapshot["riderless"]["rider"] is None and snapshot[updated]["rider"] is None
    after = _entries(path)
    assert "riderless" not in after and updated not in after
    assert after == {k: v for k, v in before.items() if k != updated}
