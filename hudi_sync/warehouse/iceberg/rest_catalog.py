"""A client of the Iceberg REST catalog: the table registered once, then each sync
committed as the updates that take the catalog's table to the snapshot published.

A REST catalog keeps its own metadata file per commit: it applies a commit's updates to
the metadata it holds and writes the result itself. So the first sync registers the
metadata file the store published (``POST .../namespaces/{ns}/register``), and each later
sync sends what differs between the catalog's table and the store's new metadata
(``updates``), guarded by two requirements: the table is the one registered
(``assert-table-uuid``) and ``main`` still shows the snapshot this sync read
(``assert-ref-snapshot-id``). Of two writers starting from one snapshot exactly one
commits; the other gets 409 and re-reads (the target decides whether to retry). The
catalog writes its metadata files in the store's metadata folder (``write.metadata.path``),
never among the table's data.

Every request names the catalog in its one-line error; the bearer token reaches only
the ``Authorization`` header (never a message, a plan or a ``repr``). Responses are read
bounded (size, then the metadata's counts) like any file read from storage.
"""

from __future__ import annotations

import importlib.util
import os
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hudi_sync.errors import BadInputError, CorruptTableError, HudiSyncError
from hudi_sync.extras import extra_error
from hudi_sync.manifest.iceberg.metadata import (
    MAIN_BRANCH,
    MAX_METADATA_BYTES,
    MAX_SCHEMAS,
    MAX_SNAPSHOTS,
    MAX_SPECS,
    TableMetadata,
)
from hudi_sync.table.avro.bounded import load_json
from hudi_sync.warehouse.iceberg.sql_catalog import TableId

if TYPE_CHECKING:
    import requests

SCHEMES = ("http://", "https://")
TIMEOUT_SECONDS = 30.0
# Iceberg's table property: where a catalog writes the table's metadata files.
METADATA_PATH_PROPERTY = "write.metadata.path"
MAX_RESPONSE_BYTES = MAX_METADATA_BYTES + 1024 * 1024
MAX_MESSAGE = 200
# Properties this writer owns: removed from the catalog's table when ours lacks them.
_OWN_PROPERTY_PREFIXES = ("hudi.", "hudi-sync.", "schema.name-mapping.")


def is_rest_uri(uri: str) -> bool:
    """Whether a catalog URI names a REST catalog (``http://`` or ``https://``)."""
    return uri.startswith(SCHEMES)


def rest_base(uri: str, option: str) -> str:
    """The base URL of a REST catalog URI, without a trailing ``/``. A URI without a
    host, with credentials (a token goes in its own option, never in a URI that is
    printed), a query or a fragment is refused in one line naming ``option``."""
    parts = urllib.parse.urlsplit(uri)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadInputError(f"{option}={uri!r}: a REST catalog is http(s)://host[:port][/path]")
    if parts.username is not None or parts.password is not None:
        raise BadInputError(
            f"{option}: credentials in the catalog URI are refused (they would be printed); "
            "give a bearer token by catalog.token.file or catalog.token.env"
        )
    if parts.query or parts.fragment or "\x00" in uri:
        raise BadInputError(f"{option}={uri!r}: no query or fragment in a REST catalog URI")
    try:
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError:
        raise BadInputError(f"{option}={uri!r}: not a valid port") from None
    return uri.rstrip("/")


def _usable(token: str) -> bool:
    """A token an HTTP header carries as it is: printable ASCII, no space inside."""
    return bool(token) and token.isascii() and token.isprintable() and " " not in token


def read_token(file: str | None, env: str | None, file_option: str, env_option: str) -> str | None:
    """The bearer token from a file (its content, stripped) or an environment variable;
    None when neither is set. Both set, a missing file or variable, or an empty token is
    one line naming the option (never the token)."""
    if file and env:
        raise BadInputError(f"{file_option} and {env_option} are both set: give one")
    if file:
        try:
            with open(file, "rb") as handle:
                raw = handle.read(64 * 1024 + 1)
        except OSError as exc:
            raise BadInputError(f"{file_option}={file!r}: cannot read ({exc.strerror})") from None
        if len(raw) > 64 * 1024:
            raise BadInputError(f"{file_option}={file!r}: a token file is at most 64 KiB")
        token = raw.decode("utf-8", "replace").strip()
        if not _usable(token):
            raise BadInputError(
                f"{file_option}={file!r}: holds no token (one word of printable ASCII)"
            )
        return token
    if env:
        value = os.environ.get(env)
        if value is None:
            raise BadInputError(f"{env_option}={env!r}: no such environment variable")
        token = value.strip()
        if not _usable(token):
            raise BadInputError(
                f"{env_option}={env!r}: the variable holds no token (one word of printable ASCII)"
            )
        return token
    return None


# The store's manifest lists: ``snap-<id>.avro``, ``asof<instant>-snap-<id>.avro``.
_LIST_NAME = re.compile(r"(?:asof\d{1,20}-)?snap-(\d{1,19})\.avro")


def published_by_us(snapshot: CatalogSnapshot, metadata_folder: str) -> bool:
    """A snapshot the store published: its manifest list is in the table's metadata
    folder, named as the store names them after the snapshot's id, and its summary
    carries ``hudi.instant``. (Another writer committing through the catalog writes its
    manifest lists in the same folder, ``write.metadata.path``, under names of its own.)"""
    prefix = metadata_folder + "/"
    match = _LIST_NAME.fullmatch(snapshot.manifest_list[len(prefix) :])
    return (
        snapshot.manifest_list.startswith(prefix)
        and match is not None
        and int(match.group(1)) == snapshot.snapshot_id
        and snapshot.instant is not None
    )


class RestConflictError(HudiSyncError):
    """The catalog refused a commit because a requirement failed (HTTP 409): another
    writer committed between this sync's read and its commit."""


@dataclass(frozen=True)
class CatalogSnapshot:
    """A snapshot of the catalog's table: what tells ours from another writer's."""

    snapshot_id: int
    sequence: int
    manifest_list: str
    instant: str | None  # ``hudi.instant`` of its summary


@dataclass(frozen=True)
class CatalogTable:
    """The catalog's table as loaded: its metadata file and what a commit asserts and
    compares."""

    metadata_location: str
    uuid: str
    main: int | None  # the snapshot ``main`` shows
    last_sequence: int
    snapshots: dict[int, CatalogSnapshot]
    schema_ids: frozenset[int]
    current_schema_id: int
    spec_ids: frozenset[int]
    default_spec_id: int
    properties: dict[str, str]

    @property
    def main_snapshot(self) -> CatalogSnapshot | None:
        return None if self.main is None else self.snapshots.get(self.main)


def requirements(catalog: CatalogTable) -> list[dict[str, Any]]:
    """What a commit asserts: the registered table, ``main`` where this sync read it."""
    return [
        {"type": "assert-table-uuid", "uuid": catalog.uuid},
        {"type": "assert-ref-snapshot-id", "ref": MAIN_BRANCH, "snapshot-id": catalog.main},
    ]


def updates(
    catalog: CatalogTable, ours: TableMetadata, metadata_folder: str
) -> list[dict[str, Any]]:
    """The updates that take the catalog's table to ``ours``: schemas and specs it lacks
    (then the current ones), our snapshots newer than its last sequence number, ``main``
    moved to our current snapshot, the snapshots of ours our metadata no longer has
    (expired by our publication; another writer's, on other refs, are left) removed, and
    the properties that differ (the name mapping, and ``write.metadata.path`` =
    ``metadata_folder``). A snapshot of ours the catalog lacks but cannot take (its
    sequence number not above the catalog's last) is refused in one line: the catalog's
    table went past it."""
    result: list[dict[str, Any]] = []
    added_schemas = [s for s in ours.schemas if s.schema_id not in catalog.schema_ids]
    for schema in sorted(added_schemas, key=lambda s: s.schema_id):
        result.append({"action": "add-schema", "schema": schema.to_json()})
    if ours.current_schema_id != catalog.current_schema_id:
        result.append({"action": "set-current-schema", "schema-id": ours.current_schema_id})
    added_specs = [s for s in ours.specs if int(s["spec-id"]) not in catalog.spec_ids]
    for spec in sorted(added_specs, key=lambda s: int(s["spec-id"])):
        result.append({"action": "add-spec", "spec": spec})
    if ours.default_spec_id != catalog.default_spec_id:
        result.append({"action": "set-default-spec", "spec-id": ours.default_spec_id})
    ours_ids = {s.snapshot_id for s in ours.snapshots}
    for snapshot in sorted(ours.snapshots, key=lambda s: s.sequence):
        if snapshot.snapshot_id in catalog.snapshots:
            continue
        if snapshot.sequence <= catalog.last_sequence:
            if snapshot.snapshot_id != ours.current_snapshot_id:
                continue  # an older snapshot of ours the catalog never had: not needed
            raise HudiSyncError(
                f"snapshot {snapshot.snapshot_id} (sequence {snapshot.sequence}) is not above "
                f"the catalog's last sequence number {catalog.last_sequence}"
            )
        result.append({"action": "add-snapshot", "snapshot": snapshot.to_json()})
    if ours.current_snapshot_id is not None and ours.current_snapshot_id != catalog.main:
        result.append(
            {
                "action": "set-snapshot-ref",
                "ref-name": MAIN_BRANCH,
                "type": "branch",
                "snapshot-id": ours.current_snapshot_id,
            }
        )
    gone = sorted(
        i
        for i, snapshot in catalog.snapshots.items()
        if i not in ours_ids and published_by_us(snapshot, metadata_folder)
    )
    if gone:
        result.append({"action": "remove-snapshots", "snapshot-ids": gone})
    wanted = {**ours.properties, METADATA_PATH_PROPERTY: metadata_folder}
    changed = {k: v for k, v in wanted.items() if catalog.properties.get(k) != v}
    if changed:
        result.append({"action": "set-properties", "updates": changed})
    stale = sorted(
        k for k in catalog.properties if k.startswith(_OWN_PROPERTY_PREFIXES) and k not in wanted
    )
    if stale:
        result.append({"action": "remove-properties", "removals": stale})
    return result


def describe(update: Mapping[str, Any]) -> str:
    """An update as a plan prints it: its action and what it names."""
    action = str(update.get("action"))
    if action == "add-schema":
        return f"add-schema {update['schema']['schema-id']}"
    if action == "set-current-schema":
        return f"set-current-schema {update['schema-id']}"
    if action == "add-spec":
        return f"add-spec {update['spec']['spec-id']}"
    if action == "set-default-spec":
        return f"set-default-spec {update['spec-id']}"
    if action == "add-snapshot":
        snapshot = update["snapshot"]
        instant = snapshot.get("summary", {}).get("hudi.instant", "")
        return f"add-snapshot {snapshot['snapshot-id']} (hudi.instant {instant})"
    if action == "set-snapshot-ref":
        return f"set-snapshot-ref {update['ref-name']} -> {update['snapshot-id']}"
    if action == "remove-snapshots":
        return "remove-snapshots " + ",".join(str(i) for i in update["snapshot-ids"])
    if action == "set-properties":
        return "set-properties " + ",".join(sorted(update["updates"]))
    if action == "remove-properties":
        return "remove-properties " + ",".join(update["removals"])
    return action


class RestCatalog:
    """An Iceberg REST catalog at ``uri`` (``http(s)://``), optionally with a bearer
    token; ``warehouse`` is sent to ``/v1/config`` (the catalog's name, which servers
    that host several catalogs select by)."""

    def __init__(
        self,
        uri: str,
        option: str = "catalog URI",
        token: str | None = None,
        warehouse: str | None = None,
        timeout: float = TIMEOUT_SECONDS,
    ) -> None:
        self.uri = uri
        self.base = rest_base(uri, option)
        self.warehouse = warehouse
        self.timeout = timeout
        self.__token = token
        self._prefix: str | None = None
        self._session: requests.Session | None = None
        if importlib.util.find_spec("requests") is None:  # before the sync publishes anything
            raise extra_error("requests", "iceberg")

    def __repr__(self) -> str:
        return f"RestCatalog({self.uri!r})"

    # -- HTTP --------------------------------------------------------------------------
    def _requests(self) -> requests.Session:
        if self._session is None:
            try:
                import requests
            except ModuleNotFoundError:
                raise extra_error("requests", "iceberg") from None
            session = requests.Session()
            session.headers["Accept"] = "application/json"
            session.headers["X-Client-Version"] = "hudi-sync"
            if self.__token is not None:
                session.headers["Authorization"] = f"Bearer {self.__token}"
            self._session = session
        return self._session

    def _url(self, *parts: str, query: Mapping[str, str] | None = None) -> str:
        """The URL of a route: each segment quoted whole (a namespace or table name with
        ``/`` stays one segment), the prefix as the catalog gave it (``a/b`` is two)."""
        quoted = [urllib.parse.quote(p, safe="") for p in parts]
        if parts and self._prefix and parts[0] == self._prefix:
            quoted[0] = urllib.parse.quote(self._prefix, safe="/")
        url = f"{self.base}/v1/{'/'.join(quoted)}"
        return url + ("?" + urllib.parse.urlencode(query) if query else "")

    def _call(
        self,
        method: str,
        parts: Sequence[str],
        body: Any = None,
        ok: tuple[int, ...] = (200,),
        allowed: tuple[int, ...] = (),
        query: Mapping[str, str] | None = None,
    ) -> tuple[int, Any]:
        """One request: ``(status, JSON body or None)`` for a status in ``ok`` or
        ``allowed``; any other status, a failed connection or a body past the bound is
        one line naming the catalog, the request and the status."""
        session = self._requests()
        import requests

        url = self._url(*parts, query=query)
        shown = f"{method} /v1/{'/'.join(parts)}"
        try:
            response = session.request(
                method, url, json=body, timeout=self.timeout, stream=True, allow_redirects=False
            )
        except requests.RequestException as exc:
            reason = type(exc).__name__
            raise HudiSyncError(
                f"Iceberg REST catalog {self.uri}: {shown} failed ({reason}): is it reachable?"
            ) from None
        with response:
            content = b""
            for chunk in response.iter_content(1024 * 1024):
                content += chunk
                if len(content) > MAX_RESPONSE_BYTES:
                    raise HudiSyncError(
                        f"Iceberg REST catalog {self.uri}: {shown} answered more than "
                        f"{MAX_RESPONSE_BYTES} bytes"
                    )
        status = response.status_code
        if status not in ok and status not in allowed:
            raise HudiSyncError(
                f"Iceberg REST catalog {self.uri}: {shown} answered HTTP {status}"
                + self._message(content)
            )
        if status == 204 or not content.strip():
            return status, None
        if status not in ok:
            return status, None
        where = f"Iceberg REST catalog {self.uri}: {shown}"
        return status, load_json(content, where, "response")

    def _message(self, content: bytes) -> str:
        """The catalog's own error message (``error.message``), first line, bounded."""
        try:
            doc = load_json(content[:65536], "response", "error")
        except CorruptTableError:
            return ""
        error = doc.get("error") if isinstance(doc, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        if not isinstance(message, str) or not message.strip():
            return ""
        line = message.strip().splitlines()[0][:MAX_MESSAGE]
        if self.__token:
            line = line.replace(self.__token, "***")
        return f": {line}"

    @property
    def prefix(self) -> str:
        """The path prefix ``/v1/config`` gives (``overrides.prefix``), read once."""
        if self._prefix is None:
            query = {"warehouse": self.warehouse} if self.warehouse else None
            _, doc = self._call("GET", ["config"], query=query)
            prefix = ""
            if isinstance(doc, dict):
                for part in ("defaults", "overrides"):
                    section = doc.get(part)
                    if isinstance(section, dict) and isinstance(section.get("prefix"), str):
                        prefix = section["prefix"]
            prefix = prefix.strip("/")
            bad = len(prefix) > 1024 or any(
                s in ("", ".", "..") or any(c in s for c in "?#\x00") for s in prefix.split("/")
            )
            if prefix and bad:
                raise HudiSyncError(
                    f"Iceberg REST catalog {self.uri}: /v1/config gave a bad prefix"
                )
            self._prefix = prefix
        return self._prefix

    def _path(self, *parts: str) -> list[str]:
        """A route's segments under ``/v1/{prefix}`` (each segment quoted by ``_url``)."""
        return [*([self.prefix] if self.prefix else []), *parts]

    def table_route(self, table: TableId) -> str:
        """The table's route, as plans print it."""
        path = "/".join(self._path("namespaces", table.namespace, "tables", table.name))
        return f"{self.base}/v1/{path}"

    # -- the catalog's operations -------------------------------------------------------
    def load(self, table: TableId) -> CatalogTable | None:
        """The table as the catalog holds it, or None when it does not exist."""
        status, doc = self._call(
            "GET", self._path("namespaces", table.namespace, "tables", table.name), allowed=(404,)
        )
        if status == 404:
            return None
        return self._table(doc, f"GET {table}")

    def ensure_namespace(self, table: TableId) -> None:
        """Create the table's namespace when it does not exist (a concurrent creation,
        409, is as good)."""
        status, _ = self._call("GET", self._path("namespaces", table.namespace), allowed=(404,))
        if status == 404:
            self._call(
                "POST",
                self._path("namespaces"),
                {"namespace": [table.namespace], "properties": {}},
                allowed=(409,),
            )

    def register(self, table: TableId, metadata_location: str) -> CatalogTable | None:
        """Register ``table`` at ``metadata_location`` (its namespace created when
        missing); None when a table of that name exists already (409)."""
        self.ensure_namespace(table)
        status, doc = self._call(
            "POST",
            self._path("namespaces", table.namespace, "register"),
            {"name": table.name, "metadata-location": metadata_location},
            allowed=(409,),
        )
        return None if status == 409 else self._table(doc, f"register {table}")

    def commit(
        self, table: TableId, asserted: list[dict[str, Any]], changes: list[dict[str, Any]]
    ) -> CatalogTable:
        """Commit ``changes`` under ``asserted``; ``RestConflictError`` when the catalog
        refuses a requirement (409)."""
        body = {
            "identifier": {"namespace": [table.namespace], "name": table.name},
            "requirements": asserted,
            "updates": changes,
        }
        status, doc = self._call(
            "POST",
            self._path("namespaces", table.namespace, "tables", table.name),
            body,
            allowed=(409,),
        )
        if status == 409:
            raise RestConflictError(
                f"Iceberg REST catalog {self.uri}: {table} changed since this sync read it"
            )
        return self._table(doc, f"commit {table}")

    def drop(self, table: TableId) -> None:
        """Drop the catalog's entry of ``table`` (its files are left: never purged)."""
        self._call(
            "DELETE",
            self._path("namespaces", table.namespace, "tables", table.name),
            ok=(200, 204),
            allowed=(404,),
            query={"purgeRequested": "false"},
        )

    # -- reading the catalog's answers ---------------------------------------------------
    def _table(self, doc: Any, what: str) -> CatalogTable:
        """A ``LoadTableResult`` or ``CommitTableResponse`` read strictly for what the
        commits need; anything else is one line naming the catalog."""
        where = f"Iceberg REST catalog {self.uri}: {what}"

        def fail(reason: str) -> HudiSyncError:
            return HudiSyncError(f"{where}: {reason}")

        def integer(value: Any, name: str) -> int:
            if not isinstance(value, int) or isinstance(value, bool):
                raise fail(f"no integer {name}")
            return value

        if not isinstance(doc, dict) or not isinstance(doc.get("metadata"), dict):
            raise fail("the answer has no table metadata")
        location = doc.get("metadata-location")
        if not isinstance(location, str) or not location:
            raise fail("the answer has no metadata-location")
        metadata = doc["metadata"]
        if metadata.get("format-version") != 2:
            raise fail(f"table format-version {metadata.get('format-version')!r}, not 2")
        table_uuid = metadata.get("table-uuid")
        if not isinstance(table_uuid, str):
            raise fail("no table-uuid")
        raw_snapshots = metadata.get("snapshots") or []
        if not isinstance(raw_snapshots, list) or len(raw_snapshots) > MAX_SNAPSHOTS:
            raise fail("snapshots is not a list (or too long)")
        snapshots: dict[int, CatalogSnapshot] = {}
        for raw in raw_snapshots:
            if not isinstance(raw, dict):
                raise fail("a snapshot is not an object")
            summary = raw.get("summary")
            instant = summary.get("hudi.instant") if isinstance(summary, dict) else None
            snapshot_id = integer(raw.get("snapshot-id"), "snapshot-id")
            snapshots[snapshot_id] = CatalogSnapshot(
                snapshot_id,
                integer(raw.get("sequence-number", 0), "sequence-number"),
                str(raw.get("manifest-list", "")),
                instant if isinstance(instant, str) else None,
            )
        refs = metadata.get("refs")
        main: int | None = None
        if isinstance(refs, dict) and isinstance(refs.get(MAIN_BRANCH), dict):
            main = integer(refs[MAIN_BRANCH].get("snapshot-id"), "refs.main.snapshot-id")
        elif refs is None or refs == {}:
            current = metadata.get("current-snapshot-id")
            main = None if current in (None, -1) else integer(current, "current-snapshot-id")
        if main is not None and main not in snapshots:
            raise fail(f"main names snapshot {main}, which it does not hold")
        schemas = metadata.get("schemas") or []
        specs = metadata.get("partition-specs") or []
        if not isinstance(schemas, list) or not isinstance(specs, list):
            raise fail("schemas or partition-specs is not a list")
        if len(schemas) > MAX_SCHEMAS or len(specs) > MAX_SPECS:
            raise fail("too many schemas or partition specs")
        properties = metadata.get("properties") or {}
        if not isinstance(properties, dict) or not all(
            isinstance(v, str) for v in properties.values()
        ):
            raise fail("properties is not a map of text")
        return CatalogTable(
            metadata_location=location,
            uuid=table_uuid,
            main=main,
            last_sequence=integer(metadata.get("last-sequence-number", 0), "last-sequence-number"),
            snapshots=snapshots,
            schema_ids=frozenset(
                integer(s.get("schema-id") if isinstance(s, dict) else None, "schema-id")
                for s in schemas
            ),
            current_schema_id=integer(metadata.get("current-schema-id"), "current-schema-id"),
            spec_ids=frozenset(
                integer(s.get("spec-id") if isinstance(s, dict) else None, "spec-id") for s in specs
            ),
            default_spec_id=integer(metadata.get("default-spec-id"), "default-spec-id"),
            properties=dict(properties),
        )
