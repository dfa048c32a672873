"""The sync marker recorded on the warehouse objects (the instant they show, the table
base and mode), and the refusal to replace objects another table's marker names."""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass

from hudi_sync.errors import BadInputError

MARKER_PREFIX = "hudi_sync"
# The instant a marker records for objects created empty, before the table's first
# completed commit: it sorts before every real instant, so the sync after the first
# commit updates the objects in place (never "skip-older"), and a rerun is a no-op.
EMPTY_INSTANT = "0"
_MARKER = re.compile(r"hudi_sync instant=(?P<instant>\d+) base=(?P<base>\S+) mode=(?P<mode>\S+)")
# What a marker's base keeps as it is: printable ASCII but the space, ``%`` (the escape),
# and the quotes, backslash and ``*`` that would end a literal or comment around it.
_BASE_KEPT = frozenset(chr(c) for c in range(0x21, 0x7F)) - set("%\"'\\`*")


@dataclass(frozen=True)
class SyncMarker:
    """Recorded on the warehouse objects: the instant they show, the table base and mode."""

    instant: str
    base: str
    mode: str

    @classmethod
    def of(cls, instant: str | None, base: str, mode: str) -> SyncMarker:
        """The marker of a sync to ``instant`` (``None``: the table's empty snapshot)."""
        return cls(instant or EMPTY_INSTANT, base, mode)

    @property
    def is_empty(self) -> bool:
        """The objects were created empty, before the table's first commit."""
        return self.instant == EMPTY_INSTANT

    def render(self) -> str:
        """The marker's text; the base percent-encoded (UTF-8) where it holds a space or
        another character that would end or break the marker, so it reads back whole."""
        base = urllib.parse.quote(self.base, safe="".join(sorted(_BASE_KEPT)))
        return f"{MARKER_PREFIX} instant={self.instant} base={base} mode={self.mode}"

    def same_objects(self, other: SyncMarker | None) -> bool:
        """Same table base and mode: the objects can be updated in place."""
        return other is not None and (self.base, self.mode) == (other.base, other.mode)

    @classmethod
    def parse(cls, text: str | None) -> SyncMarker | None:
        match = _MARKER.search(text or "")
        if match is None:
            return None
        return cls(match["instant"], urllib.parse.unquote(match["base"]), match["mode"])


class OtherTableError(BadInputError):
    """The objects a sync would replace show another table: their marker names another
    base (two tables given one warehouse name, or a table moved to a new path)."""


def refuse_other_table(
    target: str, objects: dict[str, SyncMarker | None], wanted: SyncMarker, replace: bool
) -> None:
    """Raise ``OtherTableError`` (one line naming both bases) when an object a sync of
    ``wanted`` would replace carries the marker of another base, unless ``replace``
    (``--force``): a name never silently passes from one table to another."""
    if replace:
        return
    for name, marker in objects.items():
        if marker is not None and marker.base != wanted.base:
            raise OtherTableError(
                f"{target}: {name} shows the table at {marker.base!r}, not {wanted.base!r}: "
                "another table's objects under this name (give the tables distinct names, "
                "or use --force to replace them)"
            )
