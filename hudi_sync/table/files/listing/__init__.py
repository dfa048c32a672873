"""Where a table's data files come from: a ``FileListing`` (see ``protocol``).

The file-system view computes file slices from whatever listing it is given;
``StorageListing`` lists the storage itself (today's only source).
"""

from hudi_sync.table.files.listing.protocol import FileListing, ListedFiles
from hudi_sync.table.files.listing.storage import StorageListing

__all__ = ["FileListing", "ListedFiles", "StorageListing"]
