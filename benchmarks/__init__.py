"""Benchmarks for hudi_sync (run as modules: ``python -m benchmarks.bench_table_core``)."""
