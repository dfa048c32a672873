"""Hudi's metadata table (``.hoodie/metadata``): its HFiles, records, reads and writes."""
