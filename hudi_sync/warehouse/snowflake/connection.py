"""What the Snowflake target uses of a DB-API connection, and one SQL statement of a sync
(its text, and the text shown with secrets masked)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol


class Cursor(Protocol):
    """The part of a DB-API cursor the target uses."""

    description: Any

    def execute(self, command: str, params: Any = None) -> Any: ...

    def fetchall(self) -> Sequence[Any]: ...

    def close(self) -> Any: ...


class Connection(Protocol):
    def cursor(self) -> Any: ...

    def close(self) -> Any: ...


@dataclass(frozen=True)
class Statement:
    """One SQL statement of a sync; ``shown`` is its text with secrets masked."""

    sql: str
    shown: str
    what: str  # "create stage X", "refresh X", ... for error messages
