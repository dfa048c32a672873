"""The ``hudi-sync`` command line."""
