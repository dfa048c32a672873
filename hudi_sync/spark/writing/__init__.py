"""Hudi writes from PySpark: options, keyed rows, the merge engines, Merge-on-Read log
appends, the bucket index and compaction; ``writer.write`` drives them."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    """``write`` (``writer.write``), imported when first asked for: the package's modules
    import each other, the writer imports them all."""
    if name == "write":
        from hudi_sync.spark.writing.writer import write

        return write
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
