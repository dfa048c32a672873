"""Hudi's metadata table (``.hoodie/metadata``): its HFile format, records, reader and writer."""
