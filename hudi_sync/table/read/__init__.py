"""Reading rows: one file slice merged (``slice_reader``) and a table's snapshot
(``snapshot``)."""
