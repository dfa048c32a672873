"""Debezium ingestion (RFC-39): change events from Kafka into a Hudi table.

Layers, each using only the ones before it: :mod:`.types` (Connect types to Arrow),
:mod:`.registry` (Avro in Confluent wire format), :mod:`.events` (a message to a
change event), :mod:`.batch` (events to one row per key, in log order),
:mod:`.state` (checkpoint and tombstones in the commits), :mod:`.kafka_source`
(batches from Kafka), :mod:`.ingest` (the loop that commits through the Spark writer).
"""
