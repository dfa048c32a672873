"""A table's configuration: ``hoodie.properties`` (``properties``) and its Avro schema and meta
fields (``schema``)."""
