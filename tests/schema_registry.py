"""A schema registry stand-in on 127.0.0.1: the one Confluent REST call the Avro reader
makes, ``GET /schemas/ids/<id>``, optionally behind HTTP basic auth as Confluent's
registry answers with it enabled (401 and ``WWW-Authenticate``).

No real registry runs here (Confluent's needs a JVM build and Kafka-backed storage);
the broker, the events and the table in the tests that use it are real."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class RegistryServer:
    """Serves ``schemas`` by id; with ``credentials`` (user, password) only to requests
    that carry them. ``authorizations`` records each request's header."""

    def __init__(
        self, schemas: Mapping[int, Any], credentials: tuple[str, str] | None = None
    ) -> None:
        expected = (
            "Basic " + base64.b64encode(":".join(credentials).encode()).decode()
            if credentials
            else None
        )
        seen: list[str | None] = []
        self.authorizations = seen

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                given = self.headers.get("Authorization")
                seen.append(given)
                parts = self.path.strip("/").split("/")
                if expected is not None and given != expected:
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="schema-registry"')
                    body = b'{"error_code": 401, "message": "Unauthorized"}'
                elif parts[:2] == ["schemas", "ids"] and int(parts[2]) in schemas:
                    body = json.dumps({"schema": json.dumps(schemas[int(parts[2])])}).encode()
                    self.send_response(200)
                else:
                    body = b'{"error_code": 40403, "message": "Schema not found"}'
                    self.send_response(404)
                self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                """Quiet: the test output is for assertions."""

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
