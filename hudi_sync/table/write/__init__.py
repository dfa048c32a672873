"""The table core's write side: Hudi's commit protocol without Spark.

Timeline writing (:mod:`.timeline`), table creation (:mod:`.create`), the writers' lock
and heartbeats (:mod:`.lock`), rolling back failed writes (:mod:`.rollback`), the
cleaner (:mod:`.cleaner`) and the archiver (:mod:`.archiver`). The read side
(``hudi_sync.table``) never imports it.
"""
