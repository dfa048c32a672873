"""Iceberg's SQL catalog on SQLite, as pyiceberg's ``SqlCatalog`` and Java's
``JdbcCatalog`` keep it, written with the standard library's ``sqlite3``.

A catalog is two tables: ``iceberg_tables`` (one row per table: its catalog, namespace
and name, the metadata file it shows and the one before) and
``iceberg_namespace_properties`` (a namespace exists while it has a property row or a
table). A commit is one ``UPDATE`` whose ``WHERE`` asserts the metadata location the
writer read, so of two writers starting from one location exactly one moves it; the
other sees 0 rows changed. Every name and location reaches SQL as a bound parameter.

The DDL is pyiceberg 0.12's (its "v1" schema, with ``iceberg_type``); a catalog made by
an older pyiceberg or by Java (no ``iceberg_type`` column) is used as it is.
"""

from __future__ import annotations

import os
import sqlite3
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass

from hudi_sync.errors import BadInputError, HudiSyncError

SCHEME = "sqlite:///"
TABLE_TYPE = "TABLE"  # ``iceberg_type`` of a table row (views are ``VIEW``)
# pyiceberg's minimal namespace property: a namespace with no table exists through it.
NAMESPACE_EXISTS = ("exists", "true")
BUSY_TIMEOUT_SECONDS = 30.0

TABLES_DDL = """CREATE TABLE IF NOT EXISTS iceberg_tables (
    catalog_name VARCHAR(255) NOT NULL,
    table_namespace VARCHAR(255) NOT NULL,
    table_name VARCHAR(255) NOT NULL,
    metadata_location VARCHAR(1000),
    previous_metadata_location VARCHAR(1000),
    iceberg_type VARCHAR(5),
    PRIMARY KEY (catalog_name, table_namespace, table_name)
)"""
NAMESPACES_DDL = """CREATE TABLE IF NOT EXISTS iceberg_namespace_properties (
    catalog_name VARCHAR(255) NOT NULL,
    namespace VARCHAR(255) NOT NULL,
    property_key VARCHAR(255) NOT NULL,
    property_value VARCHAR(1000) NOT NULL,
    PRIMARY KEY (catalog_name, namespace, property_key)
)"""
_TABLE_COLUMNS = (
    "catalog_name",
    "table_namespace",
    "table_name",
    "metadata_location",
    "previous_metadata_location",
)
_NAMESPACE_COLUMNS = ("catalog_name", "namespace", "property_key", "property_value")
_MOVE = (
    "UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ? "
    "WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? "
    "AND metadata_location = ?"
)


class CatalogConflictError(HudiSyncError):
    """Another writer moved the table's metadata location between our read and our
    commit, to metadata that is not older than ours: this sync's commit is refused."""


def catalog_path(uri: str, option: str) -> str:
    """The SQLite file of a catalog URI as SQLAlchemy (pyiceberg's ``SqlCatalog``) reads
    it: ``sqlite:///relative/path`` or ``sqlite:////absolute/path``. Any other scheme, an
    in-memory database or query parameters are refused in one line naming ``option``."""
    if not uri.startswith(SCHEME):
        scheme = uri.partition("://")[0] if "://" in uri else uri
        raise BadInputError(
            f"{option}={uri!r}: a catalog is a REST catalog (http(s)://...) or a SQLite "
            f"catalog (sqlite:///<path>), not {scheme!r}"
        )
    path = uri[len(SCHEME) :]
    if not path or path == ":memory:" or "?" in path or "\x00" in path:
        raise BadInputError(
            f"{option}={uri!r}: a catalog is a SQLite file named after sqlite:/// "
            "(no in-memory database, no query parameters)"
        )
    return path


@dataclass(frozen=True)
class TableId:
    """A table of a catalog: the three key columns of its ``iceberg_tables`` row."""

    catalog: str
    namespace: str
    name: str

    def __post_init__(self) -> None:
        for what, value in (("catalog", self.catalog), ("namespace", self.namespace)):
            if not value or "\x00" in value:
                raise BadInputError(f"Iceberg {what} name {value!r} is empty or has a NUL byte")
        if not self.name or "\x00" in self.name:
            raise BadInputError(f"Iceberg table name {self.name!r} is empty or has a NUL byte")

    def __str__(self) -> str:
        return f"{self.namespace}.{self.name}"

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.catalog, self.namespace, self.name)


def sql_literal(value: str | None) -> str:
    """A value as a SQL literal, for the statements a dry run prints (never executed:
    the executed statements bind their values)."""
    return "NULL" if value is None else "'" + value.replace("'", "''") + "'"


def _shown(statement: str, values: tuple[str | None, ...]) -> str:
    parts = statement.split("?")
    if len(parts) != len(values) + 1:  # pragma: no cover - the statements are ours
        raise AssertionError(statement)
    shown = parts[0]
    for value, rest in zip(values, parts[1:], strict=True):
        shown += sql_literal(value) + rest
    return shown


class SqlCatalog:
    """A SQLite file holding Iceberg catalog tables; ``uri`` is its ``sqlite:///`` URI."""

    def __init__(self, uri: str, option: str = "catalog URI") -> None:
        self.uri = uri
        self.path = catalog_path(uri, option)

    def _connect(self, mode: str) -> sqlite3.Connection:
        """A connection in SQLite's ``mode``: ``ro`` (a read, a dry run: never creates the
        file), ``rw`` (a move: the file must exist) or ``rwc`` (a registration)."""
        path = os.path.abspath(self.path)
        if mode == "rwc" and not os.path.isdir(os.path.dirname(path)):
            raise BadInputError(f"Iceberg catalog {self.uri}: no folder {os.path.dirname(path)}")
        return sqlite3.connect(
            f"file:{urllib.parse.quote(path)}?mode={mode}",
            uri=True,
            timeout=BUSY_TIMEOUT_SECONDS,
            isolation_level=None,  # autocommit: each transaction is begun explicitly
        )

    @contextmanager
    def _connection(self, mode: str) -> Iterator[sqlite3.Connection]:
        try:
            with closing(self._connect(mode)) as con:
                yield con
        except sqlite3.DatabaseError as exc:
            raise HudiSyncError(f"Iceberg catalog {self.uri}: {exc}") from None

    def _columns(self, con: sqlite3.Connection, table: str) -> set[str]:
        return {str(row[1]) for row in con.execute(f"PRAGMA table_info({table})")}

    def _check_schema(self, con: sqlite3.Connection) -> bool:
        """Whether ``iceberg_tables`` has ``iceberg_type`` (pyiceberg's v1 schema); a
        catalog whose tables lack a column the catalog needs is refused in one line."""
        tables = self._columns(con, "iceberg_tables")
        namespaces = self._columns(con, "iceberg_namespace_properties")
        for table, have, need in (
            ("iceberg_tables", tables, _TABLE_COLUMNS),
            ("iceberg_namespace_properties", namespaces, _NAMESPACE_COLUMNS),
        ):
            missing = [c for c in need if c not in have]
            if missing:
                raise BadInputError(
                    f"Iceberg catalog {self.uri}: table {table} has no column "
                    f"{', '.join(missing)}: not an Iceberg SQL catalog"
                )
        return "iceberg_type" in tables

    def _exists(self) -> bool:
        return os.path.isfile(self.path)

    def current(self, table: TableId) -> str | None:
        """The metadata location the catalog shows for ``table``, or None when it is not
        registered (or the catalog file or its tables do not exist yet)."""
        if not self._exists():
            return None
        with self._connection("ro") as con:
            if not self._columns(con, "iceberg_tables"):
                return None
            return self._current(con, table, self._check_schema(con))

    def _current(self, con: sqlite3.Connection, table: TableId, typed: bool) -> str | None:
        query = (
            "SELECT metadata_location FROM iceberg_tables "
            "WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?"
        )
        if typed:
            query += " AND (iceberg_type = ? OR iceberg_type IS NULL)"
        row = con.execute(query, (*table.key, TABLE_TYPE) if typed else table.key).fetchone()
        return None if row is None else (str(row[0]) if row[0] is not None else "")

    def register_steps(self, table: TableId, location: str) -> list[str]:
        """The statements ``register`` runs, as a dry run prints them."""
        return [
            _shown(
                "INSERT OR IGNORE INTO iceberg_namespace_properties (catalog_name, namespace, "
                "property_key, property_value) VALUES (?, ?, ?, ?)",
                (table.catalog, table.namespace, *NAMESPACE_EXISTS),
            ),
            _shown(
                "INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, "
                "metadata_location, previous_metadata_location, iceberg_type) "
                "VALUES (?, ?, ?, ?, NULL, ?)",
                (*table.key, location, TABLE_TYPE),
            ),
        ]

    def move_steps(self, table: TableId, expected: str, location: str) -> list[str]:
        """The statement ``move`` runs, as a dry run prints it."""
        return [_shown(_MOVE, (location, expected, *table.key, expected))]

    def register(self, table: TableId, location: str) -> bool:
        """Register ``table`` at ``location`` (creating the catalog's tables and the
        namespace when missing), in one transaction. False when a row of that name
        exists already (another writer registered it first, or a view holds it)."""
        with self._connection("rwc") as con:
            con.execute(TABLES_DDL)
            con.execute(NAMESPACES_DDL)
            typed = self._check_schema(con)
            con.execute("BEGIN IMMEDIATE")
            try:
                con.execute(
                    "INSERT OR IGNORE INTO iceberg_namespace_properties (catalog_name, "
                    "namespace, property_key, property_value) VALUES (?, ?, ?, ?)",
                    (table.catalog, table.namespace, *NAMESPACE_EXISTS),
                )
                if typed:
                    con.execute(
                        "INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, "
                        "metadata_location, previous_metadata_location, iceberg_type) "
                        "VALUES (?, ?, ?, ?, NULL, ?)",
                        (*table.key, location, TABLE_TYPE),
                    )
                else:
                    con.execute(
                        "INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, "
                        "metadata_location, previous_metadata_location) VALUES (?, ?, ?, ?, NULL)",
                        (*table.key, location),
                    )
            except sqlite3.IntegrityError:
                con.execute("ROLLBACK")
                return False
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")
            return True

    def move(self, table: TableId, expected: str, location: str) -> bool:
        """Move ``table`` from ``expected`` to ``location`` in one ``UPDATE`` whose
        ``WHERE`` asserts ``expected``; False when another writer moved it first."""
        with self._connection("rw") as con:
            typed = self._check_schema(con)
            statement = _MOVE + (" AND (iceberg_type = ? OR iceberg_type IS NULL)" if typed else "")
            values = (location, expected, *table.key, expected)
            cursor = con.execute(statement, (*values, TABLE_TYPE) if typed else values)
            return cursor.rowcount == 1

    def commit(
        self,
        table: TableId,
        expected: str | None,
        location: str,
        replaceable: Callable[[str], bool],
    ) -> None:
        """Bring ``table`` from ``expected`` (None: not registered) to ``location``. A
        lost race is re-read once: when the other writer's location is ``replaceable``
        (its metadata is older than ours) the move is retried from it, else refused in
        one line (``CatalogConflictError``)."""
        done = (
            self.register(table, location)
            if expected is None
            else self.move(table, expected, location)
        )
        if done:
            return
        other = self.current(table)
        if other == location:
            return  # another sync of the same snapshot committed it
        if other is not None and replaceable(other) and self.move(table, other, location):
            return
        shown = "a row that is not a table (a view?)" if other is None else repr(other)
        raise CatalogConflictError(
            f"Iceberg catalog {self.uri}: {table} was moved by another writer to {shown} "
            f"while this sync committed {location!r}: not replaced (it is not older)"
        )
