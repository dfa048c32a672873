"""A table on an object store replayed one commit at a time, for tests that sync after
each commit: every timeline file is moved aside once and moved back instant by instant,
so each file moves twice in all (``commits_after_hidden`` around each instant moves the
later files aside and back again, once per earlier instant)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from tests.objectstores import move_object


def _requested_time(name: str) -> str:
    return name.split(".", 1)[0].split("_", 1)[0]


@contextlib.contextmanager
def growing_timeline(fs: Any, uri: str) -> Iterator[Callable[[str], None]]:
    """The table at ``uri`` with no timeline file for the block, and a function that
    brings back those of the instants up to a given instant (called with increasing
    instants: the table is then as it was at that instant). Every file is back after
    the block, whatever happened in it."""
    root = uri.split("://", 1)[-1]
    folder = f"{root}/.hoodie/timeline"
    fs.invalidate_cache()
    if not fs.exists(folder):
        folder = f"{root}/.hoodie"
    names = [str(entry).rsplit("/", 1)[-1] for entry in fs.ls(folder, detail=False)]
    hidden = sorted(
        (_requested_time(name), f"{folder}/{name}", f"{root}-hidden/{name}")
        for name in names
        if name[:1].isdigit()
    )
    for _, src, dst in hidden:
        move_object(fs, src, dst)

    def advance(instant: str) -> None:
        while hidden and hidden[0][0] <= instant:
            _, src, dst = hidden.pop(0)
            move_object(fs, dst, src)

    try:
        yield advance
    finally:
        for _, src, dst in hidden:
            move_object(fs, dst, src)
