"""The table core's write side: Hudi's commit protocol without Spark.

One write's way from a requested to a completed instant (:mod:`.commit`), built on
timeline writing (:mod:`.timeline`), table creation (:mod:`.create`), the writers' lock
and heartbeats (:mod:`.lock`), rolling back failed writes (:mod:`.rollback`), the
cleaner (:mod:`.cleaner`) and the archiver (:mod:`.archiver`). The read side
(``hudi_sync.table``) never imports it.
"""
