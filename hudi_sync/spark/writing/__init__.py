"""Hudi writes from PySpark: options, keyed rows, the merge engines, Merge-on-Read log
appends, the bucket index and compaction; ``writer.write`` drives them."""
