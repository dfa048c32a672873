"""Instants written in the table's timeline zone (``hoodie.table.timeline.timezone``).

Hudi's default is LOCAL: instant times are the writer's local wall-clock time. A writer
west of UTC that wrote UTC instants into such a table would put them hours after its
Hudi writers' (its metadata table compactions too, and a later Hudi rollback refuses an
instant older than one completed). The writer here runs in a child process whose zone is
seven hours west of UTC (``TZ=WST+07``, no zone database needed).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from hudi_sync.table import HudiTable
from hudi_sync.table.metadata_table.reader import MetadataTableReader
from tests.fixture_tables import set_properties

WEST = dt.timezone(dt.timedelta(hours=-7))

CHILD = textwrap.dedent(
    """
    import json, sys
    from hudi_sync.spark import local_session
    from hudi_sync.storage import open_location
    from hudi_sync.table.write.timeline import TimelineWriter
    import tests.test_metadata_record_index_write as t

    local, utc = sys.argv[1], sys.argv[2]
    location = open_location(utc)
    writer = TimelineWriter(location, location.join(".hoodie", "timeline"), 9)
    utc_instant = writer.new_instant_time()
    result = t.upsert_new_key(local_session("child", cores=1), local, "WEST")
    print(json.dumps({"utc": utc_instant, "local": result.instant}))
    """
)


def _moment(instant: str, zone: dt.tzinfo) -> float:
    parsed = dt.datetime.strptime(instant[:17], "%Y%m%d%H%M%S%f")
    return parsed.replace(tzinfo=zone).timestamp()


def test_a_writer_west_of_utc_writes_instants_in_the_tables_zone(fixture_copy, tmp_path) -> None:  # type: ignore[no-untyped-def]
    local = fixture_copy("cow/v9_txns_simple_meta")  # no timezone property: LOCAL
    assert "hoodie.table.timeline.timezone" not in (local / ".hoodie/hoodie.properties").read_text()
    utc = tmp_path / "utc"
    shutil.copytree(local, utc)
    set_properties(utc, {"hoodie.table.timeline.timezone": "UTC"})
    started = time.time()
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(local), str(utc)],
        cwd=Path(__file__).resolve().parents[1],
        env={**os.environ, "TZ": "WST+07"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    finished = time.time()
    assert child.returncode == 0, child.stderr[-2000:]
    instants = json.loads(child.stdout.strip().splitlines()[-1])

    def during_the_child(moment: float) -> bool:
        return started - 1 <= moment <= finished + 1

    # The UTC table's instants stay UTC; the LOCAL table's are the child's wall clock.
    assert during_the_child(_moment(instants["utc"], dt.UTC))
    instant = instants["local"]
    assert during_the_child(_moment(instant, WEST))
    table = HudiTable.open(str(local))
    (completed,) = [i for i in table.timeline.completed_writes if i.requested_time == instant]
    assert completed.completion_time is not None
    assert during_the_child(_moment(completed.completion_time, WEST))
    # The metadata table's deltacommit has the data instant's time and completes in the
    # same zone; the record index location's epoch millis read the instant in it.
    reader = MetadataTableReader.of(table)
    (delta,) = [i for i in reader.timeline.instants if i.requested_time == instant]
    assert delta.completion_time is not None
    assert during_the_child(_moment(delta.completion_time, WEST))
    location = reader.read_partition("record_index")["WEST"].record_index
    assert location is not None
    assert location.instant_time == round(_moment(instant, WEST) * 1000)
