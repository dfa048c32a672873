"""Confluent wire format: a magic byte 0, a 4-byte schema id, then Avro binary.

The schema comes from a schema registry (``GET /schemas/ids/<id>``, the Confluent
REST API that Karapace, Apicurio's compatibility API and Redpanda also serve), once
per id; records are decoded with fastavro.
"""

from __future__ import annotations

import io
import json
import struct
import urllib.error
import urllib.request
from typing import Any

import fastavro

from hudi_sync.errors import BadInputError

MAGIC = 0


def is_wire_format(raw: bytes) -> bool:
    """Avro in Confluent wire format (JSON never starts with a zero byte)."""
    return len(raw) >= 5 and raw[0] == MAGIC


class SchemaRegistry:
    """Writer schemas by id from a registry's REST API, cached."""

    def __init__(self, url: str | None, timeout_s: float = 10.0) -> None:
        self.url = (url or "").rstrip("/")
        self.timeout_s = timeout_s
        self._schemas: dict[int, tuple[dict[str, Any], Any]] = {}

    def schema(self, schema_id: int) -> tuple[dict[str, Any], Any]:
        """The schema as JSON, and parsed for fastavro."""
        if schema_id not in self._schemas:
            if not self.url:
                raise BadInputError(
                    f"an Avro event needs schema {schema_id}, but no schema registry is set "
                    "(hoodie.streamer.schemaprovider.registry.url)"
                )
            address = f"{self.url}/schemas/ids/{schema_id}"
            try:
                with urllib.request.urlopen(address, timeout=self.timeout_s) as response:
                    body = json.loads(response.read())
            except urllib.error.HTTPError as exc:
                raise BadInputError(
                    f"schema registry {address} answered {exc.code} {exc.reason}"
                ) from None
            except (urllib.error.URLError, OSError, ValueError) as exc:
                raise BadInputError(f"schema registry {address}: {exc}") from None
            writer = json.loads(body["schema"])
            self._schemas[schema_id] = (writer, fastavro.parse_schema(writer))
        return self._schemas[schema_id]

    def decode(self, raw: bytes) -> tuple[Any, dict[str, Any]]:
        """A wire-format record, and its writer schema."""
        (schema_id,) = struct.unpack(">I", raw[1:5])
        writer, parsed = self.schema(schema_id)
        try:
            record = fastavro.schemaless_reader(io.BytesIO(raw[5:]), parsed, None)
        except (EOFError, ValueError, IndexError, UnicodeDecodeError) as exc:
            raise BadInputError(f"not a valid Avro record of schema {schema_id}: {exc}") from None
        return record, writer
