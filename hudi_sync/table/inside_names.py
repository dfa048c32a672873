"""Names read from a table's storage (metadata-table records, commit metadata, the
manifests' own lists) checked to stay inside the table before anything joins them to a
path.

What leaves a folder is an absolute path or a ``.``, ``..`` or empty segment, and, for a
file name, a ``/``. Those are refused here with ``storage.contained_relative``'s one-line
message naming the file the name came from. A control character or a backslash is a
character like any other on every store hudi_sync reads: Hudi writes them in partition
values (without ``hoodie.datasource.write.partitionpath.urlencode``), so decoding keeps
them, and the manifests refuse what a line cannot carry as unsupported
(``manifest.safe_paths``), as they did before these checks.
"""

from __future__ import annotations

from hudi_sync.storage import contained_file, contained_relative

_LEAVING_SEGMENTS = ("", ".", "..")


def check_relative(relative: str, where: str) -> str:
    """``relative`` (a path below the table's base, or below a store's folder), when
    it stays there."""
    if (
        not isinstance(relative, str)
        or relative.startswith("/")
        or any(segment in _LEAVING_SEGMENTS for segment in relative.split("/"))
    ):
        contained_relative(relative, where)  # raises, naming where
    return relative


def check_partition(partition: str, where: str) -> str:
    """A partition path (``""``: the table's root)."""
    return partition if partition == "" else check_relative(partition, where)


def check_file_name(name: str, where: str) -> str:
    """A file name: one segment of its partition."""
    if not isinstance(name, str) or "/" in name or name in _LEAVING_SEGMENTS:
        contained_file("", name, where)  # raises, naming where
    return name
