"""How DuckDB reads a table's files: a path as a glob that matches only itself, a file as
a ``read_csv`` source read whole lines a row, the globs over the partition folders, the
column that names each row's file, and the local paths no glob can match."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from hudi_sync.errors import BadInputError
from hudi_sync.manifest.file_set import FileSet
from hudi_sync.manifest.snapshot import PublishedManifest
from hudi_sync.table import HudiTable
from hudi_sync.warehouse.common.quoting import duckdb_literal as quote_literal

SOURCE_FILE_COLUMN = "__hudi_sync_source_file"

# What DuckDB's glob and fsspec's (object stores) read as pattern syntax in a path.
_GLOB_CHARACTERS = frozenset("*?[]{}")


def glob_literal(path: str) -> str:
    """``path`` as a glob that matches only itself: every glob character in a class of
    its own (``t*`` is ``t[*]``). ``read_parquet`` and ``read_csv`` glob every path they
    are given, and neither DuckDB's glob nor fsspec's takes a backslash escape; both
    read a one-character class as that character."""
    if _GLOB_CHARACTERS.isdisjoint(path):
        return path  # the common case, at once: a change feed lists thousands of files
    return "".join(f"[{c}]" if c in _GLOB_CHARACTERS else c for c in path)


# A manifest list read one whole line a row: its lines hold no tab or line break
# (``hudi_sync.manifest.safe_paths``), and a comma or quote in a partition folder is
# part of the path, not a delimiter or quotation.
WHOLE_LINES = "delim = '\\t', quote = '', escape = ''"


def refuse_backslashes(table: HudiTable, published: PublishedManifest) -> None:
    """DuckDB's glob over local files matches no path holding a backslash, escaped or
    not: such a table would read no file, and such a partition folder would silently
    drop its rows from the history. Refused, naming the path (object stores are globbed
    by fsspec, which reads a backslash as itself)."""
    if not table.location.is_local:
        return
    if "\\" in table.uri:
        raise BadInputError(f"{table.uri}: DuckDB cannot read a local table whose path holds '\\'")
    if published.delta is not None:
        changed = sorted(p for p, _ in published.delta.manifest.changes)
        paths = pa.array(changed, type=pa.string())
    else:
        paths = FileSet.of(published.manifest.files).paths
    found = paths.filter(pc.match_substring(paths, "\\"))
    if len(found):
        raise BadInputError(
            f"{table.uri}: DuckDB cannot read '{found[0].as_py()}': a local path holding "
            "'\\' matches no glob"
        )


def source_literal(uri: str) -> str:
    """One file's URI as a ``read_csv`` source: a literal that globs to that file alone."""
    return quote_literal(glob_literal(uri))


def partition_globs(base_uri: str, depths: Sequence[int]) -> list[str]:
    """Globs over every partition folder depth the snapshot uses, each level ``[!.]*`` so
    ``.hoodie`` and other hidden folders never match; the base is matched literally."""
    base = glob_literal(base_uri.rstrip("/"))
    return ["/".join([base, *(["[!.]*"] * depth), "[!.]*.parquet"]) for depth in depths]
