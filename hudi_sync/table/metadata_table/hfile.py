"""HFile, the format of the metadata table's base files and HFILE_DATA log blocks: the API
the metadata table code uses (``read_hfile``, ``write_hfile``, ``HFileReader``)."""

from hudi_sync.table.metadata_table.hfile_reader import HFileContent, HFileReader, read_hfile

__all__ = ["HFileContent", "HFileReader", "read_hfile"]
