"""PySpark writer and reader for Hudi tables, and ``format("hudi")``.

``writing/`` holds the write paths, ``reading/`` the queries; the data source, the
session and the helpers both use sit beside them."""

from hudi_sync.spark.datasource import HudiDataSource, register
from hudi_sync.spark.reading.reader import read
from hudi_sync.spark.session import local_session
from hudi_sync.spark.writing.writer import WriteResult, write, write_arrow

__all__ = [
    "HudiDataSource",
    "WriteResult",
    "local_session",
    "read",
    "register",
    "write",
    "write_arrow",
]
