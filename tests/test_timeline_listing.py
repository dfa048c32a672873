"""One listing of the timeline folder a sync (``TimelineListing``): every tail read from
it sees the folder as it was listed, holds what a tail listed on its own holds, and a
new listing sees what was written since."""

from __future__ import annotations

from pathlib import Path

from benchmarks.gen_table import TableSpec, append_upsert, generate
from hudi_sync.table import HudiTable
from hudi_sync.table.timeline.active import Timeline
from hudi_sync.table.timeline.listing import TimelineListing

SPEC = TableSpec(commits=6, partitions=2, file_groups=12, insert_commits=2, name="t")


def _writes(timeline: Timeline) -> list[str]:
    return [i.requested_time for i in timeline.completed_writes]


def test_tails_of_one_listing_are_the_folder_as_listed(tmp_path: Path) -> None:
    generate(tmp_path, SPEC, verbose=False)
    path = tmp_path / SPEC.name
    table = HudiTable.open(str(path))
    location, config = table.location, table.config
    writes = _writes(table.timeline)
    listing = TimelineListing.of(location, config)
    since, older = writes[-2], writes[0]
    tail = Timeline(location, config, since, (older,), listing)
    alone = Timeline(location, config, since, (older,))
    assert _writes(tail) == _writes(alone) == [older, *writes[-2:]]
    assert tail.file_names == alone.file_names
    assert "hoodie.properties" in tail.file_names
    appended = append_upsert(path, 1).instant
    # Read from the same listing: the commit written since is not there; a new one has it.
    assert _writes(tail.tail(since)) == writes[-2:]
    assert _writes(Timeline(location, config, listing=listing)) == writes
    assert _writes(Timeline(location, config, since)) == [*writes[-2:], appended]
