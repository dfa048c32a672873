"""Log files and the records in them: the log block format, log records in Arrow, and the
record and vector merges that fold them onto base rows."""
