"""Avro decoding with bounds (a hostile file gets one line) and Avro↔Arrow conversion: the
codecs every other room reads Hudi's files with."""
