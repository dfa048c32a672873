"""PySpark writer and reader for Hudi tables, and ``format("hudi")``.

``writing/`` holds the write paths, ``reading/`` the queries; the data source, the
session and the helpers both use sit beside them. ``format("hudi")`` (``HudiDataSource``,
``register``) needs PySpark 4.0+; everything else runs on 3.5 too (``compat``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hudi_sync.spark.compat import has_data_source_api, require_data_source_api
from hudi_sync.spark.reading.reader import read
from hudi_sync.spark.session import local_session, register
from hudi_sync.spark.writing.writer import WriteResult, write, write_arrow

if TYPE_CHECKING:
    from hudi_sync.spark.datasource import HudiDataSource

__all__ = [
    "WriteResult",
    "local_session",
    "read",
    "register",
    "write",
    "write_arrow",
]
if has_data_source_api():  # ``import *`` works on 3.5 too
    __all__ += ["HudiDataSource"]


def __getattr__(name: str) -> Any:
    """``HudiDataSource`` on first use: its module imports ``pyspark.sql.datasource``,
    which PySpark 3.5 lacks (refused there in one line)."""
    if name == "HudiDataSource":
        require_data_source_api()
        from hudi_sync.spark.datasource import HudiDataSource

        return HudiDataSource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
