"""Rows as comparable multisets: warehouse query results against hudi-rs reads."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import hudi
import pyarrow as pa


def _plain(value: object) -> str:
    """Decimals by value (BigQuery's NUMERIC has scale 9: 5000.00 comes back 5000.000000000)."""
    if isinstance(value, Decimal):
        return str(value.normalize())
    return str(value)


def canonical(
    table: pa.Table, normalise: Callable[[dict[str, Any]], dict[str, Any]] = lambda row: row
) -> Counter[str]:
    """One JSON string per row (columns sorted); a multiset, since views may repeat rows."""
    names = sorted(table.column_names)
    rows = table.select(names).to_pylist()
    return Counter(json.dumps(normalise(row), sort_keys=True, default=_plain) for row in rows)


def hudi_rs_rows(
    path: str,
    as_of: str | None = None,
    read_optimized: bool = False,
    storage: dict[str, str] | None = None,
) -> pa.Table:
    """hudi-rs's snapshot (read-optimized for MOR: warehouse views read base files only);
    ``storage`` are hudi-rs's object store options (``ObjectStore.object_store_options``)."""
    table = hudi.HudiTable(path, options=storage) if storage else hudi.HudiTable(path)
    options = hudi.HudiReadOptions()
    if as_of is not None:
        options = options.with_as_of_timestamp(as_of)
    if read_optimized:
        options = options.with_hudi_option("hoodie.read.use.read_optimized.mode", "true")
    batches = table.read(options)
    schema = (
        table.get_schema_with_meta_fields()
        if table.hudi_options().get("hoodie.populate.meta.fields", "true") != "false"
        else table.get_schema()
    )
    return pa.Table.from_batches(batches, schema=batches[0].schema if batches else schema)


def same_columns(ours: pa.Table, theirs: pa.Table) -> tuple[pa.Table, pa.Table]:
    """Restrict both to the columns they share, and report any the view lacks."""
    missing = set(theirs.column_names) - set(ours.column_names)
    assert not missing, f"view lacks columns {sorted(missing)}"
    return ours.select(theirs.column_names), theirs
