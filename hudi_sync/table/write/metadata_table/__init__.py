"""The metadata table's write side: HFile writing, the records a data write adds, the index
partitions' upkeep, and the metadata table's own services (compaction, clean, archival)."""
