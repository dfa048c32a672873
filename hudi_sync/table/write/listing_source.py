"""Names in a table's file listing are read from storage (the metadata table's ``files``
partition, or the folders themselves): before a write or service joins them into paths,
each must name a file inside the table, else one line naming where they came from."""

from __future__ import annotations

from hudi_sync.storage import contained_file
from hudi_sync.table.files.fs_view import FileSystemView
from hudi_sync.table.metadata_table.listing import MetadataTableListing


def listing_source(view: FileSystemView) -> str:
    """The metadata table's ``files`` partition when it lists ``view``'s files, else the
    table's own folders."""
    if isinstance(view.listing, MetadataTableListing):
        return view.location.uri_of(".hoodie/metadata/files")
    return view.location.uri


def check_listed_names(view: FileSystemView) -> None:
    """Refuse (``CorruptTableError``) a listing of ``view`` with a partition or file name
    that leads out of the table, before anything is read, written or deleted by it."""
    source = listing_source(view)
    for partition, files in view.partitions.items():
        names = [f.name for f in files.base_files]
        names += [f.name for f in (*files.log_files, *files.cdc_files)]
        for name in names:
            contained_file(partition, name, source)
