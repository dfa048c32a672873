"""``hudi-sync backfill``: find every Hudi table under a root and sync each one."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from hudi_sync import config as cfg
from hudi_sync.storage import open_location
from hudi_sync.sync.hook import run_post_commit_hook
from hudi_sync.sync.job import SyncReport
from hudi_sync.sync.names import NameClaims

PROPERTIES = ".hoodie/hoodie.properties"


def discover_tables(
    root: str, storage_options: Mapping[str, Any] | None = None, max_depth: int = 6
) -> list[str]:
    """URIs of the Hudi tables under ``root`` (a folder with ``.hoodie/hoodie.properties``);
    a table's own folders are not searched further, hidden folders never."""
    location = open_location(root, storage_options)
    fs = location.fs

    def visit(path: str, relative: str, depth: int) -> Iterator[str]:
        if fs.exists(f"{path}/{PROPERTIES}"):
            yield relative
            return
        if depth >= max_depth:
            return
        for entry in sorted(fs.ls(path, detail=True), key=lambda e: str(e["name"])):
            name = str(entry["name"]).rstrip("/").rsplit("/", 1)[-1]
            if entry["type"] == "directory" and not name.startswith((".", "_")):
                yield from visit(f"{path}/{name}", f"{relative}/{name}".strip("/"), depth + 1)

    return [location.uri_of(relative) for relative in visit(location.path.rstrip("/"), "", 0)]


def path_under_root(root_uri: str, table_uri: str) -> str:
    """A discovered table's path under its root (the root's own name when the root is
    the table)."""
    relative = table_uri[len(root_uri.rstrip("/")) :].strip("/")
    return relative or table_uri.rstrip("/").rsplit("/", 1)[-1]


def warehouse_name(root_uri: str, table_uri: str) -> str:
    """The warehouse name of a discovered table: its path under the root, ``/`` → ``_``,
    anything but letters, digits and ``_`` replaced (so every target accepts it)."""
    return re.sub(r"\W", "_", path_under_root(root_uri, table_uri))


def discovered_table_options(
    root_uri: str, table_uri: str, options: Mapping[str, Any]
) -> dict[str, Any]:
    """The hook options of a table found under a root: its warehouse name set for every
    target that takes one (``backfill`` and ``watch --root`` name tables alike)."""
    name = warehouse_name(root_uri, table_uri)
    names = (
        cfg.DUCKDB_TABLE,
        cfg.BIGQUERY_TABLE_NAME,
        cfg.SNOWFLAKE_TABLE_NAME,
        cfg.ICEBERG_TABLE,
    )
    return {**options, **{option.key: name for option in names}}


# The ``SyncReport.errors`` key of a table refused a name another table of the run holds.
NAME_TAKEN = "name"


def sync_discovered(
    claims: NameClaims,
    root_uri: str,
    uri: str,
    options: Mapping[str, Any],
    storage_options: Mapping[str, Any] | None,
    replace_other_table: bool,
) -> SyncReport:
    """Sync one table found under a root, unless another table of this run holds its
    warehouse name (refused, naming both). A table the warehouse refused because the
    objects show another table (``SyncReport.taken_at``) does not take the name."""
    name = warehouse_name(root_uri, uri)
    refusal = claims.refusal(uri, name)
    if refusal is not None:
        return SyncReport.failed(uri, NAME_TAKEN, refusal)
    table_options = discovered_table_options(root_uri, uri, options)
    report = run_post_commit_hook(uri, table_options, storage_options, replace_other_table)
    if not report.taken_at:
        claims.claim(uri, name)
    return report


def backfill(
    root: str,
    options: Mapping[str, Any],
    storage_options: Mapping[str, Any] | None = None,
    on_table: Callable[[str, SyncReport], None] = lambda uri, report: None,
    replace_other_table: bool = False,
    *,
    on_start: Callable[[str], None] = lambda uri: None,
    tables: Sequence[str] | None = None,
) -> list[tuple[str, SyncReport]]:
    """Sync every table under ``root``; each gets a warehouse name from its path. Two
    tables with one name: the first to sync holds it, the other is refused (naming
    both); objects another table's sync made are replaced only with
    ``replace_other_table`` (``--force``). ``on_start`` gets each table as its sync
    begins and ``on_table`` its report as it ends (a caller streams progress from them);
    ``tables``: the tables ``discover_tables`` found already, not listed again."""
    location = open_location(root, storage_options)
    reports = []
    claims = NameClaims()
    for uri in discover_tables(root, storage_options) if tables is None else tables:
        on_start(uri)
        report = sync_discovered(
            claims, location.uri, uri, options, storage_options, replace_other_table
        )
        on_table(uri, report)
        reports.append((uri, report))
    return reports
