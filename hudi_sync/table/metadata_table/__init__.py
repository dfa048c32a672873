"""Hudi's metadata table (``.hoodie/metadata``), read side: its HFile format and reader,
its records and how they merge, index keys and column stats, and listing a data table
through it. The write side is ``hudi_sync.table.write.metadata_table``."""
