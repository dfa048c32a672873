"""Table core: properties, timeline, archived timeline, file-system view, time travel."""

from hudi_sync.table.filenames import BaseFile, LogFile
from hudi_sync.table.fs_view import FileSlice
from hudi_sync.table.instant import Action, Instant, State
from hudi_sync.table.properties import TableConfig, TableType
from hudi_sync.table.table import HudiTable

__all__ = [
    "Action",
    "BaseFile",
    "FileSlice",
    "HudiTable",
    "Instant",
    "LogFile",
    "State",
    "TableConfig",
    "TableType",
]
