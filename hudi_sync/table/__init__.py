"""Table core: one room per concept, each using only the rooms before it.

``avro`` (codecs) → ``config`` (properties, schema) → ``keys`` → ``records`` (log files,
merges) → ``timeline`` → ``files`` (file slices, the file-system view) → ``metadata_table``
(read side) → ``table`` (``HudiTable``) → ``read`` (slices, snapshots) → ``cdc`` → ``write``
(the commit protocol and the metadata table's write side).
"""

from hudi_sync.table.config.properties import TableConfig, TableType
from hudi_sync.table.files.filenames import BaseFile, LogFile
from hudi_sync.table.files.fs_view import FileSlice
from hudi_sync.table.table import HudiTable
from hudi_sync.table.timeline.instant import Action, Instant, State

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
