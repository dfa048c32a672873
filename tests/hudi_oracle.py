"""hudi-rs (the ``hudi`` package) as the independent oracle: its answers in our shapes."""

from __future__ import annotations

from typing import Any

import hudi


def slices(
    table_path: str, as_of: str | None = None, storage: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    table = _open(table_path, storage)
    options = hudi.HudiReadOptions()
    if as_of is not None:
        options = options.with_as_of_timestamp(as_of)
    return _shape(table.get_file_slices(options))


def incremental_slices(table_path: str, begin: str, end: str) -> list[dict[str, Any]]:
    table = _open(table_path, None)
    options = (
        hudi.HudiReadOptions()
        .with_query_type(hudi.HudiQueryType.Incremental)
        .with_start_timestamp(begin)
        .with_end_timestamp(end)
    )
    return _shape(table.get_file_slices(options))


def completed_instants(table_path: str) -> list[tuple[str, str]]:
    timeline = _open(table_path, None).get_timeline()
    instants = (
        timeline.get_completed_commits()
        + timeline.get_completed_deltacommits()
        + timeline.get_completed_replacecommits()
    )
    return sorted((i.timestamp, i.action) for i in instants)


def _open(table_path: str, storage: dict[str, str] | None) -> Any:
    if storage:
        return hudi.HudiTableBuilder.from_base_uri(table_path).with_storage_options(storage).build()
    return hudi.HudiTable(table_path)


def _shape(file_slices: Any) -> list[dict[str, Any]]:
    rows = [
        {
            "partition_path": s.partition_path,
            "file_id": s.file_id,
            "base_file": s.base_file_name or None,
            "log_files": list(s.log_file_names),
        }
        for s in file_slices
    ]
    return sorted(rows, key=lambda r: (r["partition_path"], r["file_id"]))
