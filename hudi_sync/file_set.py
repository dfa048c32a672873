"""A snapshot's base files as one Arrow array of relative paths.

A manifest of 100,000 files read back, changed by one commit and written again as
Python dicts and strings costs a Python object per file several times over; as Arrow
arrays the previous list is read, the changed file groups dropped (``pyarrow.compute``),
the new files appended and both lists written with Arrow's CSV writer. It is a read-only
``Mapping`` of ``(partition, file id) -> file name`` for the code that wants one; that
dict is built only when asked for.
"""

from __future__ import annotations

import array
import io
from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

FileKey = tuple[str, str]  # (partition, file id)


def relative_path(partition: str, name: str) -> str:
    return f"{partition}/{name}" if partition else name


def string_array(values: Sequence[str]) -> pa.Array:
    """An Arrow string array built from its buffers: ``pa.array`` (and ``pa.scalar``) on
    Python objects import pandas to look for its types, a fixed cost of a few hundred
    milliseconds per sync that would dwarf a small table's whole sync."""
    encoded = [v.encode() for v in values]
    offsets = array.array("i", [0])
    end = 0
    for item in encoded:
        end += len(item)
        offsets.append(end)
    buffers = [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(encoded))]
    return pa.Array.from_buffers(pa.string(), len(encoded), buffers)


class FileSet(Mapping[FileKey, str]):
    """Relative paths (``<partition>/<file name>``) of a snapshot's base files."""

    def __init__(self, paths: pa.Array | pa.ChunkedArray) -> None:
        self.paths = paths.combine_chunks() if isinstance(paths, pa.ChunkedArray) else paths

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
        lines = pacsv.read_csv(
            io.BytesIO(data),
            pacsv.ReadOptions(column_names=["uri"]),
            pacsv.ParseOptions(quote_char=False, escape_char=False),
            pacsv.ConvertOptions(column_types={"uri": pa.string()}),
        ).column("uri")
        if not pc.all(pc.starts_with(lines, prefix)).as_py():
            raise ValueError(f"{where}: a line is not under {prefix}")
        return cls(pc.utf8_slice_codeunits(lines, len(prefix.encode())))

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
        kept = self.paths.filter(pc.invert(changed))
        added = string_array([relative_path(p, n) for (p, _), n in changes.items() if n])
        return FileSet(pa.concat_arrays([kept, added]))

    def sorted_paths(self) -> pa.Array:
        return self.paths.take(pc.sort_indices(self.paths))

    def sorted_names(self) -> pa.Array:
        """The file names (the paths after their last ``/``), sorted."""
        parts = pc.split_pattern(self.paths, "/", max_splits=1, reverse=True)
        # Each list's last item, at its end offset less one: shifted by one leading item.
        shifted = pa.concat_arrays([string_array([""]), pc.list_flatten(parts)])
        names = shifted.take(parts.offsets[1:])
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


def lines_bytes(values: pa.Array, prefix: str = "") -> bytes:
    """``values`` (each after ``prefix``) one a line, written by Arrow's CSV writer."""
    out = io.BytesIO()
    try:
        pacsv.write_csv(
            pa.Table.from_arrays([values], names=["v"]),
            out,
            pacsv.WriteOptions(include_header=False, quoting_style="none"),
        )
    except pa.ArrowInvalid:  # a value with a quote, comma or line break: plain lines
        out = io.BytesIO("".join(f"{v}\n" for v in values.to_pylist()).encode())
    data = out.getvalue()
    if not prefix or not data:
        return data
    head = prefix.encode()
    return head + data[:-1].replace(b"\n", b"\n" + head) + b"\n"
