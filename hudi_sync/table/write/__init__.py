"""The table core's write side: Hudi's commit protocol without Spark.

One write's way from a requested to a completed instant (``commit``), built on
timeline writing (``timeline``), table creation (``create``), the writers' lock
and heartbeats (``lock``), rolling back failed writes (``rollback``), the
cleaner (``cleaner``) and the archiver (``archiver``); the metadata table's write side
(``metadata_table``) keeps a v8+ table's metadata table current. The read side never
imports it.
"""
