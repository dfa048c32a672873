"""Change data capture: the CDC log's modes and files (``log``), the readable range of the CDC
query (``readable_range``), and the query itself."""
