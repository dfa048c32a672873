"""The timeline: instants, the active and archived timelines, commit metadata (JSON and Avro),
time travel."""
