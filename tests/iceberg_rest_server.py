"""A small Iceberg REST catalog server for the tests, over pyiceberg's real SQL catalog.

No REST catalog server can run here (the real ones are Java or need a service; the PyPI
packages of Polaris and Lakekeeper are clients), so this stand-in serves the routes of
the REST spec (``open-api/rest-catalog-open-api.yaml``) that a sync and pyiceberg's own
``RestCatalog`` client use, each mapped onto pyiceberg's ``SqlCatalog``: a commit's body
is parsed by pyiceberg's own models (``CommitTableRequest``, the requirements and updates
of ``pyiceberg.table.update``) and applied by ``SqlCatalog.commit_table``, so the
commit rules (requirements, sequence numbers, snapshot refs) are pyiceberg's, not ours.

Test hooks: a bearer token the server requires, a forced status for every request, and
a callback run once before a commit is applied (another writer's commit in between).
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import (
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from pyiceberg.table import CommitTableRequest, Table

SEPARATOR = "\x1f"  # the REST spec's namespace level separator


@dataclass
class ServerState:
    """What a test sets and inspects."""

    catalog: SqlCatalog
    prefix: str
    token: str | None = None
    force_status: int | None = None
    before_commit: Callable[[], None] | None = None
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)
    commits: int = 0
    conflicts: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _table_result(table: Table) -> dict[str, Any]:
    return {
        "metadata-location": table.metadata_location,
        "metadata": json.loads(table.metadata.model_dump_json(by_alias=True, exclude_none=True)),
        "config": {},
    }


class _Handler(BaseHTTPRequestHandler):
    state: ServerState

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests assert on ``state.requests``."""

    def _send(self, status: int, body: Any = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, kind: str, message: str) -> None:
        self._send(status, {"error": {"message": message, "type": kind, "code": status}})

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _route(self, method: str) -> None:
        state = self.state
        parts = urllib.parse.urlsplit(self.path)
        auth = self.headers.get("Authorization")
        state.requests.append((method, self.path, auth))
        if state.force_status is not None:
            self._error(state.force_status, "ServerError", "the server failed on purpose")
            return
        if state.token is not None and auth != f"Bearer {state.token}":
            self._error(401, "NotAuthorizedException", "not authorized")
            return
        if parts.path == "/v1/config" and method == "GET":
            self._send(200, {"defaults": {}, "overrides": {"prefix": state.prefix}})
            return
        under = f"/v1/{state.prefix}/"
        if not parts.path.startswith(under):
            self._error(404, "NoSuchRouteException", f"no route {parts.path}")
            return
        route = [urllib.parse.unquote(s) for s in parts.path[len(under) :].split("/")]
        try:
            self._dispatch(method, route)
        except (NoSuchTableError, NoSuchNamespaceError) as exc:
            self._error(404, type(exc).__name__, str(exc))
        except (TableAlreadyExistsError, NamespaceAlreadyExistsError) as exc:
            self._error(409, type(exc).__name__, str(exc))
        except CommitFailedException as exc:
            state.conflicts += 1
            self._error(409, "CommitFailedException", str(exc))
        except ValueError as exc:
            self._error(400, "BadRequestException", str(exc).splitlines()[0])

    def _dispatch(self, method: str, route: list[str]) -> None:
        catalog = self.state.catalog
        if route == ["namespaces"] and method == "POST":
            body = json.loads(self._body())
            namespace = tuple(body["namespace"])
            catalog.create_namespace(namespace, body.get("properties") or {})
            self._send(200, {"namespace": list(namespace), "properties": {}})
            return
        if len(route) < 2 or route[0] != "namespaces":
            self._error(404, "NoSuchRouteException", "/".join(route))
            return
        namespace = tuple(route[1].split(SEPARATOR))
        rest = route[2:]
        if not rest and method == "GET":
            properties = catalog.load_namespace_properties(namespace)
            self._send(200, {"namespace": list(namespace), "properties": properties})
        elif rest == ["register"] and method == "POST":
            body = json.loads(self._body())
            catalog.load_namespace_properties(namespace)  # 404 when missing
            table = catalog.register_table((*namespace, body["name"]), body["metadata-location"])
            self._send(200, _table_result(table))
        elif len(rest) == 2 and rest[0] == "tables":
            identifier = (*namespace, rest[1])
            if method == "GET":
                self._send(200, _table_result(catalog.load_table(identifier)))
            elif method == "DELETE":
                catalog.drop_table(identifier)
                self._send(204)
            elif method == "POST":
                self._commit(identifier)
            else:
                self._error(405, "MethodNotAllowed", method)
        else:
            self._error(404, "NoSuchRouteException", "/".join(route))

    def _commit(self, identifier: tuple[str, ...]) -> None:
        state = self.state
        request = CommitTableRequest.model_validate_json(self._body())
        table = state.catalog.load_table(identifier)
        hook, state.before_commit = state.before_commit, None
        if hook is not None:
            hook()
        with state.lock:  # SQLite's catalog: one commit at a time
            response = state.catalog.commit_table(table, request.requirements, request.updates)
            state.commits += 1
        self._send(200, json.loads(response.model_dump_json(by_alias=True, exclude_none=True)))

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def do_DELETE(self) -> None:
        self._route("DELETE")


@contextmanager
def rest_catalog_server(
    folder: Path, prefix: str = "lake", token: str | None = None
) -> Iterator[tuple[str, ServerState]]:
    """A server on 127.0.0.1 (a free port) over a SQL catalog in ``folder``: yields its
    base URL and its state."""
    catalog = SqlCatalog(
        "rest_backend", uri=f"sqlite:///{folder / 'rest.db'}", warehouse=f"file://{folder}/wh"
    )
    state = ServerState(catalog, prefix, token)
    handler = type("Handler", (_Handler,), {"state": state})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
