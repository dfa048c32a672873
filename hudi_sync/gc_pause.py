"""Python's cycle collector paused around work that builds many acyclic objects.

A listing of a large table, or the decoding of a batch of change events, allocates
hundreds of thousands of objects and keeps them alive while it runs; the collector's
passes over everything alive would then run again and again and find nothing (measured:
as much time as the work itself on 100,000 file groups, most of it on 1,000,000, a third
of an event batch's decoding). None of these objects form cycles.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cycle_collection_paused(keeps_objects: bool = False) -> Iterator[None]:
    """The collector off for the block, as it was found afterwards.

    ``keeps_objects``: the block's objects outlive it (a listing's result). They then
    join the oldest generation, as long-lived objects do after two passes
    (``gc.freeze`` then ``gc.unfreeze``, only when nothing else is frozen), so that
    re-enabling the collector does not start a pass over all of them at once."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if keeps_objects and gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        gc.enable()
