"""Record keys and partition paths: the key generators' rules, timestamp-based key generation
and partition-path encoding."""
