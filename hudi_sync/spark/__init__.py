"""PySpark writer and reader for Hudi tables, and ``format("hudi")``.

``writing/`` holds the write paths, ``reading/`` the queries; the data source, the
session and the helpers both use sit beside them. ``format("hudi")`` (``HudiDataSource``,
``register``) needs PySpark 4.0+; everything else runs on 3.5 too (``compat``)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hudi_sync.spark.compat import has_data_source_api, require_data_source_api

if TYPE_CHECKING:
    from hudi_sync.spark.datasource import HudiDataSource
    from hudi_sync.spark.reading.reader import read
    from hudi_sync.spark.session import local_session, register
    from hudi_sync.spark.writing.writer import WriteResult, write, write_arrow

# Each name's module, imported on first use: a Python worker that unpickles a reader's
# function (or plans a ``format("hudi")`` query) then imports the reading side only,
# not the writer's modules.
_LAZY = {
    "read": "hudi_sync.spark.reading.reader",
    "local_session": "hudi_sync.spark.session",
    "register": "hudi_sync.spark.session",
    "WriteResult": "hudi_sync.spark.writing.writer",
    "write": "hudi_sync.spark.writing.writer",
    "write_arrow": "hudi_sync.spark.writing.writer",
}

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
    """The public names on first use (``_LAZY``); ``HudiDataSource``'s module imports
    ``pyspark.sql.datasource``, which PySpark 3.5 lacks (refused there in one line)."""
    if name == "HudiDataSource":
        require_data_source_api()
        from hudi_sync.spark.datasource import HudiDataSource

        return HudiDataSource
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
