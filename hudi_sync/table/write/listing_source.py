"""Where the names in a table's file listing came from, for the one-line error that
refuses a listed name leading out of the table (``Location.file_inside``)."""

from __future__ import annotations

from hudi_sync.table import HudiTable
from hudi_sync.table.metadata_table.listing import MetadataTableListing


def listing_source(table: HudiTable) -> str:
    """The metadata table's ``files`` partition when it lists ``table``'s files, else
    the table's own folders."""
    if isinstance(table.view.listing, MetadataTableListing):
        return table.location.uri_of(".hoodie/metadata/files")
    return table.uri
