"""An in-memory model of a Copy-on-Write table, the reference for the writer's tests."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

COLUMNS = ("id", "p", "name", "ts")


@dataclass
class TableModel:
    """Rows by key: what any reader must see after each commit (Hudi's rules)."""

    rows: dict[int, dict[str, Any]] = field(default_factory=dict)
    has_extra: bool = False

    def upsert(self, batch: Iterable[dict[str, Any]], instant: str) -> None:
        # Within a batch: highest ordering value per key, ties to the later row.
        chosen: dict[int, dict[str, Any]] = {}
        for row in batch:
            current = chosen.get(row["id"])
            if current is None or row["ts"] >= current["ts"]:
                chosen[row["id"]] = row
        for key, row in chosen.items():
            stored = self.rows.get(key)
            if stored is None or row["ts"] >= stored["ts"]:
                self.rows[key] = {**row, "_hoodie_commit_time": instant}

    def insert(self, batch: Iterable[dict[str, Any]], instant: str) -> None:
        for row in batch:
            assert row["id"] not in self.rows, "the model inserts new keys only"
            self.rows[row["id"]] = {**row, "_hoodie_commit_time": instant}

    def delete(self, keys: Iterable[int]) -> None:
        for key in keys:
            self.rows.pop(key, None)

    def overwrite_partitions(self, batch: list[dict[str, Any]], instant: str) -> None:
        partitions = {row["p"] for row in batch}
        self.rows = {k: r for k, r in self.rows.items() if r["p"] not in partitions}
        self.upsert(batch, instant)

    def delete_partition(self, partition: str) -> None:
        self.rows = {k: r for k, r in self.rows.items() if r["p"] != partition}

    def snapshot(self) -> list[tuple[Any, ...]]:
        columns = (*COLUMNS, "extra") if self.has_extra else COLUMNS
        return sorted(
            tuple(row.get(c) for c in (*columns, "_hoodie_commit_time"))
            for row in self.rows.values()
        )

    def copy(self) -> TableModel:
        return TableModel({k: dict(v) for k, v in self.rows.items()}, self.has_extra)


def table_rows(table: pa.Table, with_extra: bool) -> list[tuple[Any, ...]]:
    """A read result in the model's shape (``extra`` null when the file predates it)."""
    columns = (*COLUMNS, "extra") if with_extra else COLUMNS
    data = table.to_pylist()
    return sorted(tuple(row.get(c) for c in (*columns, "_hoodie_commit_time")) for row in data)
