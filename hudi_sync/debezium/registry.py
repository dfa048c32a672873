"""Confluent wire format: a magic byte 0, a 4-byte schema id, then Avro binary.

The schema comes from a schema registry (``GET /schemas/ids/<id>``, the Confluent
REST API that Karapace, Apicurio's compatibility API and Redpanda also serve), once
per id; records are decoded with fastavro. A registry that requires HTTP basic auth
gets ``user:password`` from Confluent's ``basic.auth.user.info`` or from the URL
(``http://user:password@host:port``), as Confluent's clients and Hudi's
``SchemaRegistryProvider`` take them; neither ever appears in a message.
"""

from __future__ import annotations

import base64
import io
import json
import struct
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import fastavro

from hudi_sync import config as cfg
from hudi_sync.debezium.masking import MASK, scrub
from hudi_sync.errors import BadInputError

MAGIC = 0


def is_wire_format(raw: bytes) -> bool:
    """Avro in Confluent wire format (JSON never starts with a zero byte)."""
    return len(raw) >= 5 and raw[0] == MAGIC


class RegistryError(BadInputError):
    """The registry cannot serve any schema (refused credentials, unreachable, failing):
    a setting or service at fault, not an event, so no event is skipped for it."""


class SchemaRegistry:
    """Writer schemas by id from a registry's REST API, cached."""

    def __init__(
        self, url: str | None, timeout_s: float = 10.0, user_info: str | None = None
    ) -> None:
        address, url_user_info = _split_credentials((url or "").rstrip("/"))
        self.url = address  # without credentials: safe to show
        self.timeout_s = timeout_s
        credentials = user_info if user_info is not None else url_user_info
        self._secrets = {credentials, credentials.partition(":")[2]} if credentials else set()
        self._authorization = (
            "Basic " + base64.b64encode(credentials.encode()).decode() if credentials else None
        )
        self._schemas: dict[int, tuple[dict[str, Any], Any]] = {}

    def __repr__(self) -> str:
        auth = f", user_info='{MASK}'" if self._authorization else ""
        return f"SchemaRegistry(url={self.url!r}{auth})"

    def schema(self, schema_id: int) -> tuple[dict[str, Any], Any]:
        """The schema as JSON, and parsed for fastavro."""
        if schema_id not in self._schemas:
            if not self.url:
                raise BadInputError(
                    f"an Avro event needs schema {schema_id}, but no schema registry is set "
                    f"({cfg.REGISTRY_URL.key})"
                )
            body = self._get(f"{self.url}/schemas/ids/{schema_id}")
            try:
                writer = json.loads(body["schema"])
            except (KeyError, TypeError, ValueError):
                raise RegistryError(
                    f"schema registry {self.url} answered schema {schema_id} without a "
                    "'schema' field"
                ) from None
            self._schemas[schema_id] = (writer, fastavro.parse_schema(writer))
        return self._schemas[schema_id]

    def _get(self, address: str) -> Any:
        request = urllib.request.Request(address)
        if self._authorization:
            request.add_header("Authorization", self._authorization)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            message = f"schema registry {address} answered {exc.code} {exc.reason}"
            if exc.code == 404:  # this event's schema id: the event is at fault
                raise BadInputError(message) from None
            if exc.code in (401, 403):
                given = "the credentials given" if self._authorization else "no credentials"
                message += (
                    f" with {given} ({cfg.REGISTRY_USER_INFO.key}, or user:password@ in "
                    f"{cfg.REGISTRY_URL.key})"
                )
            raise RegistryError(scrub(message, self._secrets)) from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise RegistryError(scrub(f"schema registry {address}: {exc}", self._secrets)) from None

    def decode(self, raw: bytes) -> tuple[Any, dict[str, Any]]:
        """A wire-format record, and its writer schema."""
        (schema_id,) = struct.unpack(">I", raw[1:5])
        writer, parsed = self.schema(schema_id)
        try:
            record = fastavro.schemaless_reader(io.BytesIO(raw[5:]), parsed, None)
        except (EOFError, ValueError, IndexError, UnicodeDecodeError) as exc:
            raise BadInputError(f"not a valid Avro record of schema {schema_id}: {exc}") from None
        return record, writer


def _split_credentials(url: str) -> tuple[str, str | None]:
    """``http://user:pass@host:port/path`` -> (``http://host:port/path``, ``user:pass``),
    percent-escapes in the user and password decoded."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    credentials = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}"
    return urllib.parse.urlunsplit(parts._replace(netloc=host)), credentials
