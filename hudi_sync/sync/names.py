"""Which discovered table holds each warehouse name in one run of ``backfill`` or
``watch --root``.

A table's warehouse name comes from its path (``sales-eu`` and ``sales_eu`` both give
``sales_eu``; ``a`` and ``a_history`` give overlapping objects), so two tables can ask
for one name. The first to sync holds it; the others are refused, each poll the same
way, naming the holder, so neither replaces the other's objects. Names are compared
without case: DuckDB's identifiers ignore it.
"""

from __future__ import annotations

from hudi_sync.warehouse.common import ObjectNames


def shown(uri: str) -> str:
    """A path as one line: quoted when it holds a control character."""
    return uri if uri.isprintable() else repr(uri)


def object_names(name: str) -> frozenset[str]:
    """Every object a table named ``name`` may have (case-folded): its view, the
    read-optimized and snapshot views of Merge-on-Read, their manifests and histories,
    the change feed."""
    every = ObjectNames.for_table(name, merge_on_read=True, change_feed=True).all()
    return frozenset(n.casefold() for n in (name, *every))


class NameClaims:
    """The warehouse names held in this run, by the table that holds each."""

    def __init__(self) -> None:
        self._holders: dict[str, tuple[str, str]] = {}  # object → (table URI, its name)

    def refusal(self, uri: str, name: str) -> str | None:
        """Why the table at ``uri`` may not sync under ``name`` (one line naming both
        tables), or None when no other table of this run holds any of its objects."""
        for object_name in sorted(object_names(name)):
            holder = self._holders.get(object_name)
            if holder is not None and holder[0] != uri:
                other, other_name = holder
                return (
                    f"{shown(uri)}: warehouse name {name} is taken in this run by "
                    f"{shown(other)} (named {other_name}): two tables, one name; "
                    "rename one of them"
                )
        return None

    def claim(self, uri: str, name: str) -> None:
        """``uri`` holds ``name`` (and its objects) for the rest of the run."""
        for object_name in object_names(name):
            self._holders.setdefault(object_name, (uri, name))
