"""PySpark writer and reader for Copy-on-Write Hudi tables, and ``format("hudi")``."""

from hudi_sync.spark.datasource import HudiDataSource, register
from hudi_sync.spark.reader import read
from hudi_sync.spark.session import local_session
from hudi_sync.spark.writer import WriteResult, write

__all__ = ["HudiDataSource", "WriteResult", "local_session", "read", "register", "write"]
