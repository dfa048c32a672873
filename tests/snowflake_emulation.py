"""fakesnow, plus the two things it cannot do that the Snowflake target relies on.

fakesnow runs Snowflake's SQL on DuckDB behind the real snowflake-connector-python:
databases, schemas, stages (``CREATE STAGE``, ``SHOW STAGES``), views and ``SHOW VIEWS``
run in it unchanged. It cannot:

1. create, refresh or drop external tables. :class:`EmulatedSnowflake` parses each
   ``CREATE EXTERNAL TABLE`` with sqlglot's Snowflake dialect and builds what Snowflake
   would: it looks the stage's URL up in fakesnow, lists the files under
   ``LOCATION`` in the object store (moto S3), keeps those whose path matches
   ``PATTERN``, and loads each row as the variant ``VALUE`` with the file's path
   relative to the stage as ``METADATA$FILENAME`` (parquet rows as objects, CSV lines
   as ``{"c1": ...}``). The external table is then a fakesnow view computing the
   statement's own column expressions over those rows. ``ALTER EXTERNAL TABLE ...
   REFRESH`` lists and loads again; without it, new files stay invisible, as in
   Snowflake.
2. keep comments on views (``SHOW VIEWS`` reports an empty ``comment``). The emulation
   records the COMMENT of each ``CREATE VIEW`` / ``ALTER VIEW ... SET COMMENT`` it passes
   to fakesnow and puts it back into ``SHOW VIEWS`` rows.

fakesnow also fails on object names containing a single quote (its own status messages
embed them unescaped), so such names are checked by parsing, not by running.
Every statement, including the emulated ones, is recorded in ``statements``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import sqlglot
from sqlglot import exp

logging.getLogger("sqlglot").setLevel(logging.ERROR)  # "falling back to a Command"

_STAGE_LOCATION = re.compile(r'^@(?P<stage>(?:"(?:[^"]|"")*"\.?)+)/(?P<path>.*)$')
_REFRESH = re.compile(r"^ALTER EXTERNAL TABLE (?P<name>.+) REFRESH$", re.S)
_DROP_EXTERNAL = re.compile(r"^DROP EXTERNAL TABLE IF EXISTS (?P<name>.+)$", re.S)


def json_value(value: Any) -> Any:
    """A parquet value as Snowflake's parquet reader puts it in ``VALUE``."""
    if isinstance(value, bytes):
        return value.hex().upper()
    if isinstance(value, Decimal | dt.date | dt.datetime | dt.time):
        return str(value)
    if isinstance(value, dict):
        return {k: json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [
            {"key": json_value(v[0]), "value": json_value(v[1])}
            if isinstance(v, tuple)
            else json_value(v)
            for v in value
        ]
    return value


def create_source_table(cursor: Any, name: str) -> None:
    """A table of ``(VALUE, METADATA$FILENAME)`` rows, what an external table exposes."""
    cursor.execute(f'CREATE OR REPLACE TABLE {name} (VALUE VARIANT, "METADATA$FILENAME" VARCHAR)')


def insert_rows(cursor: Any, name: str, rows: list[dict[str, Any]], path: str) -> int:
    """The rows as ``VALUE`` objects of file ``path`` (see ``insert_values``)."""
    insert_values(cursor, name, [value_text(row) for row in rows], [path] * len(rows))
    return len(rows)


def value_text(row: Mapping[str, Any]) -> str:
    """A parquet row as the JSON text of its ``VALUE``."""
    return json.dumps({k: json_value(v) for k, v in row.items()})


def insert_values(cursor: Any, name: str, values: list[str], paths: list[str]) -> None:
    """One INSERT straight into fakesnow's DuckDB, ``VALUE`` parsed by DuckDB's ``json``
    (what fakesnow makes of ``PARSE_JSON``): fakesnow translates each statement with
    sqlglot anew, which cost more than the rows (a second a table's load)."""
    if not values:
        return
    duck = cursor._duck_conn
    rows = pa.table({"value": values, "path": paths})
    duck.register("_emulated_rows", rows)
    try:
        duck.execute(f"INSERT INTO {_duck_name(name)} SELECT json(value), path FROM _emulated_rows")
    finally:
        duck.unregister("_emulated_rows")


def _duck_name(name: str) -> str:
    """A Snowflake table name as fakesnow names it in DuckDB: unquoted parts upper-cased."""
    parts = sqlglot.parse_one(name, read="snowflake", into=exp.Table).parts
    spelled = [p.name if p.args.get("quoted") else p.name.upper() for p in parts]
    return ".".join('"' + p.replace('"', '""') + '"' for p in spelled)


@dataclass
class _ExternalTable:
    table: exp.Table
    select: str  # the column expressions over VALUE and METADATA$FILENAME
    stage: str
    path: str
    pattern: str
    file_type: str


def _name(table: exp.Table) -> tuple[str, ...]:
    return tuple(p.name for p in table.parts)


def _sql(table: exp.Table) -> str:
    return table.sql(dialect="snowflake")


@dataclass
class EmulatedSnowflake:
    """Wraps fakesnow connections; see the module docstring for what it adds."""

    storage_options: Mapping[str, Any]
    statements: list[str] = field(default_factory=list)
    fail_on: str | None = None  # raise a connector error on the first statement matching
    view_comments: dict[tuple[str, ...], str] = field(default_factory=dict)
    external: dict[tuple[str, ...], _ExternalTable] = field(default_factory=dict)
    file_values: dict[tuple[Any, ...], list[str]] = field(default_factory=dict)

    @contextlib.contextmanager
    def patched(self) -> Iterator[None]:
        """fakesnow's patch, with ``snowflake.connector.connect`` going through ``self``
        (restored before fakesnow restores the real one)."""
        import fakesnow
        import snowflake.connector

        with fakesnow.patch():
            fake_connect = snowflake.connector.connect

            def connect(**kwargs: Any) -> _Connection:
                return _Connection(self, fake_connect(**kwargs))

            snowflake.connector.connect = connect
            try:
                yield
            finally:
                snowflake.connector.connect = fake_connect

    # -- statements ----------------------------------------------------------------------
    def execute(self, cursor: Any, sql: str, params: Any) -> list[Any] | None:
        """Run one statement; returns rows to serve instead of fakesnow's, if any."""
        self.statements.append(sql)
        if self.fail_on and re.search(self.fail_on, sql):
            import snowflake.connector.errors

            self.fail_on = None
            raise snowflake.connector.errors.ProgrammingError(
                msg=f"SQL execution error: injected failure in: {sql}"
            )
        if params is not None:  # a query with bound values: never DDL
            cursor.execute(sql, params)
            return None
        refresh = _REFRESH.match(sql.strip())
        if refresh:
            table = sqlglot.parse_one(refresh["name"], read="snowflake", into=exp.Table)
            self._load(cursor, self.external[_name(table)], define=False)
            return [("refreshed",)]
        dropped = _DROP_EXTERNAL.match(sql.strip())
        if dropped:  # the emulated table is a view over a table of its files' rows
            table = sqlglot.parse_one(dropped["name"], read="snowflake", into=exp.Table)
            if self.external.pop(_name(table), None) is not None:
                cursor.execute(f"DROP VIEW IF EXISTS {_sql(table)}")
            return [("dropped",)]
        parsed = sqlglot.parse_one(sql, read="snowflake")
        if isinstance(parsed, exp.Create) and parsed.find(exp.ExternalProperty):
            self._create_external(cursor, parsed)
            return [("created",)]
        cursor.execute(sql, params)
        self._record_view_comment(parsed)
        if isinstance(parsed, exp.Show) and parsed.name.upper() == "VIEWS":
            return self._with_view_comments(cursor)
        return None

    def _record_view_comment(self, parsed: exp.Expr) -> None:
        comment = parsed.find(exp.SchemaCommentProperty)
        table = parsed.find(exp.Table)
        is_view = (isinstance(parsed, exp.Create) and parsed.kind == "VIEW") or (
            isinstance(parsed, exp.Alter) and str(parsed.args.get("kind", "")).upper() == "VIEW"
        )
        if is_view and table is not None:
            self.view_comments[_name(table)] = comment.this.this if comment else ""

    def _with_view_comments(self, cursor: Any) -> list[Any]:
        columns = [d[0].lower() for d in cursor.description]
        rows = []
        for row in cursor.fetchall():
            record = dict(zip(columns, row, strict=True))
            key = (record["database_name"], record["schema_name"], record["name"])
            upper = tuple(k.upper() for k in key)
            comment = next(
                (c for k, c in self.view_comments.items() if tuple(p.upper() for p in k) == upper),
                record["comment"],
            )
            rows.append(tuple(comment if c == "comment" else record[c] for c in columns))
        return rows

    # -- external tables -----------------------------------------------------------------
    def _create_external(self, cursor: Any, parsed: exp.Create) -> None:
        schema = parsed.this
        assert isinstance(schema, exp.Schema), "an external table needs its column list"
        table = schema.this
        select = ", ".join(
            f"{_computed(column)} AS {column.this.sql(dialect='snowflake')}"
            for column in schema.expressions
        )
        location = parsed.find(exp.LocationProperty)
        assert location is not None, "CREATE EXTERNAL TABLE without LOCATION"
        match = _STAGE_LOCATION.match(location.this.name)
        assert match, f"LOCATION {location.this.name!r} is not @stage/path"
        properties = {
            p.name.upper(): p.args["value"]
            for p in parsed.find_all(exp.Property)
            if type(p) is exp.Property
        }
        file_format = parsed.find(exp.FileFormatProperty)
        assert file_format is not None, "CREATE EXTERNAL TABLE without FILE_FORMAT"
        formats = {p.name.upper(): p.args["value"].name for p in file_format.expressions}
        definition = _ExternalTable(
            table=table,
            select=select,
            stage=match["stage"],
            path=match["path"],
            pattern=properties["PATTERN"].name if "PATTERN" in properties else ".*",
            file_type=formats["TYPE"].upper(),
        )
        self.external[_name(table)] = definition
        self._load(cursor, definition)

    def _stage_url(self, cursor: Any, stage: str) -> str:
        parts = _name(sqlglot.parse_one(stage, read="snowflake", into=exp.Table))
        schema = ".".join(f'"{p}"' for p in parts[:-1])
        cursor.execute(f"SHOW STAGES LIKE '{parts[-1]}' IN SCHEMA {schema}")
        columns = [d[0].lower() for d in cursor.description]
        urls = [
            dict(zip(columns, r, strict=True))["url"]
            for r in cursor.fetchall()
            if r[columns.index("name")] == parts[-1]
        ]
        assert urls, f"stage {stage} does not exist"
        return str(urls[0])

    def _values(
        self, fs: Any, path: str, info: Mapping[str, Any], table: _ExternalTable
    ) -> list[str]:
        """A file's rows as ``VALUE`` texts, read once per version (its ETag): each
        refresh loads every file again, most of them unchanged."""
        key = (path, str(info.get("ETag")), info.get("size"), table.file_type)
        if key not in self.file_values:
            with fs.open(path, "rb") as handle:
                if table.file_type == "PARQUET":
                    rows = pq.read_table(handle).to_pylist()
                else:
                    rows = [{"c1": line} for line in handle.read().decode().splitlines()]
            self.file_values[key] = [value_text(row) for row in rows]
        return self.file_values[key]

    def _load(self, cursor: Any, table: _ExternalTable, define: bool = True) -> None:
        """List, filter by PATTERN, load, and (``define``) define the table as a view over
        the rows. A refresh keeps the view: DuckDB binds a view's table by name when it is
        queried, so the view reads the reloaded rows (defining it again cost fakesnow's
        translation of its column expressions, most of a refresh)."""
        url = self._stage_url(cursor, table.stage)
        root = url.rstrip("/") + "/"
        fs, _ = fsspec.core.url_to_fs(root, **self.storage_options)
        files = table.table.copy()
        files.set("this", exp.to_identifier(f"{files.name}__files", quoted=True))
        files_table = _sql(files)
        create_source_table(cursor, files_table)
        root_path = root.split("://", 1)[1]
        values: list[str] = []
        paths: list[str] = []
        for found, info in sorted(fs.find(root + table.path, detail=True).items()):
            relative = found.removeprefix(root_path)
            if not re.search(table.pattern, relative):
                continue
            texts = self._values(fs, found, info, table)
            values += texts
            paths += [relative] * len(texts)
        insert_values(cursor, files_table, values, paths)
        if define:
            cursor.execute(
                f"CREATE OR REPLACE VIEW {_sql(table.table)} AS "
                f"SELECT VALUE, {table.select} FROM {files_table}"
            )


def _computed(column: exp.ColumnDef) -> str:
    constraint = column.find(exp.ComputedColumnConstraint)
    assert constraint is not None, f"column {column.name} has no AS expression"
    return str(constraint.this.sql(dialect="snowflake"))


class _Cursor:
    def __init__(self, emulation: EmulatedSnowflake, cursor: Any) -> None:
        self._emulation = emulation
        self._cursor = cursor
        self._rows: list[Any] | None = None

    @property
    def description(self) -> Any:
        return self._cursor.description

    def execute(self, sql: str, params: Any = None) -> _Cursor:
        self._rows = self._emulation.execute(self._cursor, sql, params)
        return self

    def fetchall(self) -> list[Any]:
        if self._rows is not None:
            rows, self._rows = self._rows, None
            return rows
        return list(self._cursor.fetchall())

    def close(self) -> None:
        self._cursor.close()


class _Connection:
    def __init__(self, emulation: EmulatedSnowflake, connection: Any) -> None:
        self._emulation = emulation
        self._connection = connection

    def cursor(self) -> _Cursor:
        return _Cursor(self._emulation, self._connection.cursor())

    def close(self) -> None:
        self._connection.close()
