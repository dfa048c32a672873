"""Two independent Iceberg readers of what ``sync iceberg`` publishes, as Arrow tables.

- pyiceberg: ``StaticTable.from_metadata`` and its scan, which applies position deletes
  and the name mapping itself;
- Polars with its native planner plugin (``polars-iceberg``; ``POLARS_ICEBERG_PLANNER=
  plugin`` makes a missing or refusing plugin an error rather than a fall back to
  pyiceberg): its own metadata, manifest and delete handling and its own Parquet reader,
  so nothing of pyiceberg's read path is shared.

daft 0.7 was the issue's suggestion for the second reader; it cannot read Hudi's files:
its scan requires Parquet field ids and does not apply ``schema.name-mapping.default``,
and Hudi's files carry none.
"""

from __future__ import annotations

import os

import pyarrow as pa

PLANNER = "POLARS_ICEBERG_PLANNER"


def pyiceberg_rows(metadata_location: str, snapshot_id: int | None = None) -> pa.Table:
    """The rows pyiceberg reads at the current snapshot (or ``snapshot_id``)."""
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(metadata_location)
    return table.scan(snapshot_id=snapshot_id).to_arrow()


def polars_rows(metadata_location: str, snapshot_id: int | None = None) -> pa.Table:
    """The rows Polars reads, planned by its native plugin, at the current snapshot
    (or ``snapshot_id``)."""
    import polars as pl

    before = os.environ.get(PLANNER)
    os.environ[PLANNER] = "plugin"
    try:
        frame = pl.scan_iceberg(metadata_location, snapshot_id=snapshot_id).collect()
    finally:
        if before is None:
            os.environ.pop(PLANNER, None)
        else:
            os.environ[PLANNER] = before
    return frame.to_arrow()
