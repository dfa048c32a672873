"""The one way a name or a value enters generated SQL: an identifier or a string literal,
quoted by its dialect's rules (DuckDB, GoogleSQL for BigQuery, Snowflake).

Table names, column names, ordering fields, partition names, URIs and markers are all
attacker-controllable text (they come from a table's storage or its data), so no
statement is ever built or edited by pasting such text: each goes through one of these
functions, whatever it holds (quotes, backticks, backslashes, ``$$``, ``--``, ``/*``).
Text no quoting can carry (a NUL byte; a control character in a GoogleSQL identifier)
is refused in one line.
"""

from __future__ import annotations

import re

from hudi_sync.errors import BadInputError

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# GoogleSQL string literals: these control characters have an escape; others are refused.
_GOOGLESQL_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _refuse_nul(text: str, what: str) -> None:
    if "\x00" in text:
        raise BadInputError(f"{what} {text!r} has a NUL byte, which SQL text cannot hold")


def duckdb_identifier(name: str) -> str:
    """A DuckDB identifier: double-quoted, embedded double quotes doubled."""
    _refuse_nul(name, "SQL identifier")
    return '"' + name.replace('"', '""') + '"'


def duckdb_literal(text: str) -> str:
    """A DuckDB string literal: single-quoted, embedded single quotes doubled (a
    backslash is an ordinary character in DuckDB's standard strings)."""
    _refuse_nul(text, "SQL string")
    return "'" + text.replace("'", "''") + "'"


def snowflake_identifier(name: str) -> str:
    """A Snowflake identifier: double-quoted, embedded double quotes doubled (a quoted
    identifier has no other escape)."""
    _refuse_nul(name, "Snowflake identifier")
    return '"' + name.replace('"', '""') + '"'


def snowflake_literal(text: str) -> str:
    """A Snowflake string literal: single quotes doubled and backslashes escaped, since
    Snowflake's single-quoted strings process backslash escape sequences."""
    _refuse_nul(text, "Snowflake string")
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def bigquery_identifier(name: str) -> str:
    """A GoogleSQL quoted identifier (or dotted path): backtick-quoted, with a backtick or
    backslash escaped by a backslash (quoted identifiers take string literals' escape
    sequences). A control character (a newline...) is refused: no table or column name
    of BigQuery's holds one."""
    if not name or _CONTROL.search(name):
        raise BadInputError(
            f"BigQuery identifier {name!r} is empty or has a control character (newline...)"
        )
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"


def bigquery_literal(text: str) -> str:
    """A GoogleSQL string literal: single-quoted, a quote, backslash, newline, return or
    tab escaped by a backslash; another control character is refused."""
    bad = _CONTROL.search(text.translate({ord(c): None for c in "\n\r\t"}))
    if bad:
        raise BadInputError(f"BigQuery string {text!r} has a control character {bad[0]!r}")
    return "'" + "".join(_GOOGLESQL_ESCAPES.get(c, c) for c in text) + "'"
