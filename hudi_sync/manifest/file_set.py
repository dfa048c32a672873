"""A snapshot's base files as one Arrow array of relative paths.

A manifest of 100,000 files read back, changed by one commit and written again as
Python dicts and strings costs a Python object per file several times over; as Arrow
arrays the previous list is read, the changed file groups dropped (``pyarrow.compute``),
the new files added and both lists written with Arrow's CSV writer. The previous lists
are sorted (checked when read), so the few changes are spliced into them at positions
found by binary search, one copy, rather than sorting 100,000 strings again; the sorted
names come from the previous ``files.csv`` the same way. It is a read-only
``Mapping`` of ``(partition, file id) -> file name`` for the code that wants one; that
dict is built only when asked for.
"""

from __future__ import annotations

import bisect
import io
from collections.abc import Iterator, Mapping
from functools import cached_property

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from hudi_sync.arrow_numpy import string_array, string_scalar
from hudi_sync.errors import CorruptTableError

FileKey = tuple[str, str]  # (partition, file id)
# RE2 (Arrow, which has no look-ahead): a manifest line is ``[<partition>/]<Hudi base file
# name>``, each folder neither ``.`` nor ``..`` nor empty, no control character (what
# ``safe_paths`` lets a manifest list; a backslash is a character like any other there).
_CHAR = r"[^/\x00-\x1f\x7f]"  # of a folder: not "/" or a control character
_NOT_DOT = r"[^/.\x00-\x1f\x7f]"
_FOLDER = rf"(?:{_NOT_DOT}{_CHAR}*|\.{_NOT_DOT}{_CHAR}*|\.\.{_CHAR}+)"
_NAME_PART = r"[^/_\x00-\x1f\x7f]+"  # of a base file name: not "_" either
_LISTED_PATH = rf"^(?:{_FOLDER}/)*{_NAME_PART}_{_NAME_PART}_[0-9]+\.[A-Za-z]+$"


def relative_path(partition: str, name: str) -> str:
    return f"{partition}/{name}" if partition else name


class FileSet(Mapping[FileKey, str]):
    """Relative paths (``<partition>/<file name>``) of a snapshot's base files."""

    def __init__(
        self,
        paths: pa.Array | pa.ChunkedArray,
        is_sorted: bool = False,
        names: pa.Array | None = None,
    ) -> None:
        """``is_sorted``: ``paths`` is known to be in sorted order. ``names``: the paths'
        file names, sorted (the previous ``files.csv``), when known to match them."""
        self.paths = paths.combine_chunks() if isinstance(paths, pa.ChunkedArray) else paths
        self.is_sorted = is_sorted
        self.names = names if names is not None and len(names) == len(self.paths) else None

    @classmethod
    def of(cls, files: Mapping[FileKey, str]) -> FileSet:
        if isinstance(files, FileSet):
            return files
        return cls(string_array([relative_path(p, n) for (p, _), n in files.items()]))

    @classmethod
    def read_lines(cls, data: bytes, prefix: str, where: str) -> FileSet:
        """A list of ``prefix``-ed URIs, one a line (``uris.csv``)."""
        if not data:
            return cls(string_array([]))
        lines = read_column(data)
        if not pc.all(pc.starts_with(lines, prefix)).as_py():
            raise ValueError(f"{where}: a line is not under {prefix}")
        paths = pc.utf8_slice_codeunits(lines, len(prefix.encode()))
        check_listed_paths(paths, where)
        return cls(paths, is_sorted=is_sorted(paths))

    def with_names(self, data: bytes) -> FileSet:
        """This set with its sorted file names read from ``data`` (the same snapshot's
        ``files.csv``, written with ``uris.csv`` and immutable), kept only when they are
        as many as the paths and sorted (else ignored: the names are then derived from
        the paths when written)."""
        if not data:
            return self
        try:
            names = read_column(data)
        except pa.ArrowException:
            return self
        if len(names) != len(self.paths) or not is_sorted(names):
            return self
        return FileSet(self.paths, self.is_sorted, names)

    def apply(self, changes: Mapping[FileKey, str]) -> FileSet:
        """The set with each changed file group's file replaced by the new one (dropped
        when the new name is empty). A path is in a changed group when it starts with
        ``<partition>/<file id>_``: one slice and set lookup per key length, no regex."""
        if not changes:
            return self
        by_length: dict[int, list[str]] = {}
        for partition, file_id in changes:
            prefix = relative_path(partition, file_id) + "_"
            by_length.setdefault(len(prefix), []).append(prefix)
        changed: pa.Array | None = None
        for length, prefixes in by_length.items():
            heads = pc.utf8_slice_codeunits(self.paths, 0, length)
            hits = pc.is_in(heads, value_set=string_array(prefixes))
            changed = hits if changed is None else pc.or_(changed, hits)
        assert changed is not None
        added = sorted(relative_path(p, n) for (p, _), n in changes.items() if n)
        if not self.is_sorted:
            kept = self.paths.filter(pc.invert(changed))
            return FileSet(pa.concat_arrays([kept, string_array(added)]))
        # Sorted: splice the few changes in (one copy), sorted still; no sort.
        removed = pc.indices_nonzero(changed).to_pylist()
        names = None
        if self.names is not None:
            gone = self._names_of(self.paths.filter(changed))
            at = pc.indices_nonzero(pc.is_in(self.names, value_set=gone)).to_pylist()
            if len(at) == len(removed):  # else a name repeats: derive them when written
                names = splice(self.names, at, sorted(p.rpartition("/")[2] for p in added))
        return FileSet(splice(self.paths, removed, added), True, names)

    def sorted_paths(self) -> pa.Array:
        if self.is_sorted:
            return self.paths
        return self.paths.take(pc.sort_indices(self.paths))

    @staticmethod
    def _names_of(paths: pa.Array) -> pa.Array:
        """The file names of ``paths`` (each after its last ``/``), in the same order."""
        parts = pc.split_pattern(paths, "/", max_splits=1, reverse=True)
        # Each list's last item, at its end offset less one: shifted by one leading item.
        shifted = pa.concat_arrays([string_array([""]), pc.list_flatten(parts)])
        return shifted.take(parts.offsets[1:])

    def sorted_names(self) -> pa.Array:
        """The file names (the paths after their last ``/``), sorted."""
        if self.names is not None:
            return self.names
        names = self._names_of(self.paths)
        return names.take(pc.sort_indices(names))

    def depths(self) -> list[int]:
        """The partition folder depths the paths use."""
        return sorted(pc.unique(pc.count_substring(self.paths, "/")).to_pylist())

    @cached_property
    def _dict(self) -> dict[FileKey, str]:
        files: dict[FileKey, str] = {}
        for path in self.paths.to_pylist():
            partition, _, name = path.rpartition("/")
            files[(partition, name[: name.find("_")])] = name
        return files

    def __getitem__(self, key: FileKey) -> str:
        return self._dict[key]

    def __iter__(self) -> Iterator[FileKey]:
        return iter(self._dict)

    def __len__(self) -> int:
        return len(self.paths)


def is_sorted(values: pa.Array) -> bool:
    """Whether ``values`` are in ascending (byte, i.e. code point) order."""
    if len(values) < 2:
        return True
    return bool(pc.all(pc.less_equal(values[:-1], values[1:])).as_py())


def splice(values: pa.Array, remove: list[int], insert: list[str]) -> pa.Array:
    """Sorted ``values`` without the items at the ascending positions ``remove`` and
    with the sorted strings ``insert`` merged in, in order: a binary search per
    inserted string (Arrow and Python strings both order by code point) and one
    concatenation of the runs in between, instead of sorting every value again."""
    if not remove and not insert:
        return values

    class _View:  # the values as Python strings, converted only where the search looks
        def __len__(self) -> int:
            return len(values)

        def __getitem__(self, i: int) -> str:
            return str(values[i].as_py())

    view = _View()
    points: list[int] = []
    lo = 0
    for item in insert:
        lo = bisect.bisect_left(view, item, lo)
        points.append(lo)
    pieces: list[pa.Array] = []
    position = i = j = 0
    while i < len(insert) or j < len(remove):
        if j == len(remove) or (i < len(insert) and points[i] <= remove[j]):
            pieces.append(values.slice(position, points[i] - position))
            pieces.append(string_array([insert[i]]))
            position = points[i]
            i += 1
        else:
            pieces.append(values.slice(position, remove[j] - position))
            position = remove[j] + 1
            j += 1
    pieces.append(values.slice(position))
    return pa.concat_arrays([p for p in pieces if len(p)] or [values.slice(0, 0)])


def read_column(data: bytes) -> pa.Array:
    """Lines of ``data`` as one string array: no quoting, no header, and a tab for the
    field delimiter, which no manifest line holds (``safe_paths``), so a comma or quote
    in a partition folder is read as it is."""
    return (
        pacsv.read_csv(
            io.BytesIO(data),
            pacsv.ReadOptions(column_names=["v"]),
            pacsv.ParseOptions(delimiter="\t", quote_char=False, escape_char=False),
            pacsv.ConvertOptions(column_types={"v": pa.string()}),
        )
        .column("v")
        .combine_chunks()
    )


def check_listed_paths(paths: pa.Array, where: str) -> None:
    """Refuse a manifest read back whose relative paths leave the table or are not a
    Hudi base file's (``CorruptTableError`` naming ``where``, the list): the manifest
    derived from it is published, and each warehouse reads the files it lists.
    One vectorised pattern: a million paths take about half what the write side's
    ``safe_paths.check_paths`` takes."""
    bad = pc.invert(pc.match_substring_regex(paths, _LISTED_PATH))
    if pc.any(bad).as_py():
        first = paths.filter(bad)[0].as_py()
        raise CorruptTableError(
            f"{where}: {first!r} is not a base file inside the table (a '.', '..' or empty "
            "folder, a control character, or not a Hudi base file name)"
        )


def lines_bytes(values: pa.Array, prefix: str = "") -> bytes:
    """``values`` (each after ``prefix``) one a line, as they are. The values were
    checked (``safe_paths.check_paths``) to hold no line break: a value holding one is
    refused here too, rather than written as two lines."""
    if not len(values):
        return b""
    if pc.any(pc.match_substring_regex(values, r"[\n\r]")).as_py():
        raise ValueError("a manifest value holds a line break")
    lines = pc.binary_join_element_wise(
        string_scalar(prefix), values, string_scalar("\n"), string_scalar("")
    )
    offsets = memoryview(lines.buffers()[1]).cast("i")
    start, end = offsets[lines.offset], offsets[lines.offset + len(lines)]
    data: bytes = lines.buffers()[2].to_pybytes()
    return data[start:end]
