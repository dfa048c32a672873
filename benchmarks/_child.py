"""One measured listing in a fresh interpreter (started by ``bench_table_core``).

``python -m benchmarks._child {ours|hudi-rs|scandir} TABLE OUT_TSV [PROFILE_OUT]`` imports
the reader, then times only opening the table and listing its latest file slices (for
``scandir``, the physical floor: only reading the names of the same folders). It writes
the slices as sorted ``partition\\tfile id\\tbase file`` lines to ``OUT_TSV`` (``scandir``:
``\\t\\tname``, one per file name) and
prints one JSON line: wall and CPU seconds, slice count, and peak RSS in KiB (from
``VmHWM``, see ``peak_rss_kib``) after imports and after the listing. With
``PROFILE_OUT`` the listing runs under cProfile and the stats are dumped there.
"""

from __future__ import annotations

import cProfile
import json
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

Row = tuple[str, str, str]
# A reader: (open + list, slice -> row). Only the first is timed.
Reader = tuple[Callable[[str], list[Any]], Callable[[Any], Row]]


def _ours() -> Reader:
    from hudi_sync.table import HudiTable

    def listing(path: str) -> list[Any]:
        return HudiTable.open(path).file_slices()

    def row(s: Any) -> Row:
        return (s.partition_path, s.file_id, s.base_file.name if s.base_file else "")

    return listing, row


def _hudi_rs() -> Reader:
    import hudi

    def listing(path: str) -> list[Any]:
        return hudi.HudiTable(path).get_file_slices()

    def row(s: Any) -> Row:
        return (s.partition_path, s.file_id, s.base_file_name or "")

    return listing, row


def _scandir() -> Reader:
    """The physical floor: a plain ``os.scandir`` walk of the folders a listing must
    read (``.hoodie``, then the table tree without dot folders: every partition),
    collecting file names and nothing else; one thread, no parsing."""
    import os

    def listing(path: str) -> list[Any]:
        names: list[str] = []
        with os.scandir(os.path.join(path, ".hoodie")) as entries:
            names += [e.name for e in entries if not e.is_dir(follow_symlinks=False)]
        stack = [path]
        while stack:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    if not entry.is_dir(follow_symlinks=False):
                        names.append(entry.name)
                    elif not entry.name.startswith("."):
                        stack.append(entry.path)
        return names

    def row(name: Any) -> Row:
        return ("", "", name)

    return listing, row


READERS: dict[str, Callable[[], Reader]] = {
    "ours": _ours,
    "hudi-rs": _hudi_rs,
    "scandir": _scandir,
}


def peak_rss_kib() -> int:
    """Peak RSS of this process in KiB: ``VmHWM`` of ``/proc/self/status`` on Linux.

    Not ``ru_maxrss``: Linux folds the pre-exec (forked parent's) high-water mark into
    it, so a child of a big parent reports the parent's RSS.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _ru_maxrss_kib() -> int:
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)  # KiB on Linux


def main(argv: list[str]) -> int:
    """Measure one reader on one table; see the module docstring for arguments."""
    impl, path, out_tsv = argv[:3]
    profile_out = argv[3] if len(argv) > 3 else None
    listing, to_row = READERS[impl]()
    rss_after_imports = peak_rss_kib()
    profiler = cProfile.Profile() if profile_out else None

    # The measured section: open + latest-snapshot listing, nothing else.
    cpu0, t0 = time.process_time(), time.perf_counter()
    if profiler is not None:
        profiler.enable()
    slices = listing(path)
    if profiler is not None:
        profiler.disable()
    seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - cpu0
    peak, ru_maxrss = peak_rss_kib(), _ru_maxrss_kib()

    if profiler is not None and profile_out:
        profiler.dump_stats(profile_out)
    rows = sorted(to_row(s) for s in slices)
    with open(out_tsv, "w", encoding="utf-8") as out:
        out.write("\n".join("\t".join(row) for row in rows))
    report = {
        "impl": impl,
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "slices": len(rows),
        "rss_after_imports_kib": rss_after_imports,
        "peak_rss_kib": peak,
        "ru_maxrss_kib": ru_maxrss,
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
