"""Debezium ingestion (RFC-39): change events from Kafka into a Hudi table.

Layers, each using only the ones before it: ``types`` (Connect types to Arrow),
``registry`` (Avro in Confluent wire format), ``events`` (a message to a
change event), ``batch`` (events to one row per key, in log order),
``state`` (checkpoint and tombstones in the commits), ``kafka_source``
(batches from Kafka), ``ingest`` (the loop that commits through the Spark writer).
"""
