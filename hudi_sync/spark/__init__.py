"""PySpark writer and reader for Copy-on-Write Hudi tables."""

from hudi_sync.spark.reader import read
from hudi_sync.spark.session import local_session
from hudi_sync.spark.writer import WriteResult, write

__all__ = ["WriteResult", "local_session", "read", "write"]
