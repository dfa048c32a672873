"""Hudi queries from PySpark: snapshot, time travel, incremental and CDC reads, and the
Merge-on-Read slices merged in Python workers."""
