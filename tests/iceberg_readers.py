"""Two independent Iceberg readers of what ``sync iceberg`` publishes, as Arrow tables.

- pyiceberg (in .venv): ``StaticTable.from_metadata`` and its scan, which applies
  position deletes and the name mapping itself;
- daft (in .venv-daft, a child process: daft needs pyarrow < 26): pyiceberg only plans
  the scan, daft's native Parquet reader reads the files and applies the position
  deletes, so a data or delete file pyiceberg's reader forgives is read a second way.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

REPO = Path(__file__).resolve().parent.parent
DAFT_PYTHON = REPO / ".venv-daft" / "bin" / "python"

# Run by .venv-daft's interpreter, once for many reads (daft's import costs seconds):
# argv: a folder, then per read "<metadata location>|<snapshot id or empty>"; read i
# goes to <folder>/<i>.arrow.
_DAFT_CHILD = """
import sys
import daft
import pyarrow.ipc as ipc
folder = sys.argv[1]
for i, request in enumerate(sys.argv[2:]):
    location, _, snapshot = request.rpartition("|")
    frame = daft.read_iceberg(location, snapshot_id=int(snapshot) if snapshot else None)
    table = frame.to_arrow()
    with ipc.new_file(f"{folder}/{i}.arrow", table.schema) as writer:
        writer.write_table(table)
"""


def pyiceberg_rows(metadata_location: str, snapshot_id: int | None = None) -> pa.Table:
    """The rows pyiceberg reads at the current snapshot (or ``snapshot_id``)."""
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(metadata_location)
    return table.scan(snapshot_id=snapshot_id).to_arrow()


def daft_rows(reads: list[tuple[str, int | None]]) -> list[pa.Table]:
    """The rows daft reads for each ``(metadata location, snapshot id or None)``, in
    one child process."""
    if not reads:
        return []
    with tempfile.TemporaryDirectory() as folder:
        requests = [f"{location}|{'' if snap is None else snap}" for location, snap in reads]
        done = subprocess.run(
            [str(DAFT_PYTHON), "-c", _DAFT_CHILD, folder, *requests],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            raise AssertionError(f"daft failed: {done.stderr[-3000:]}")
        tables = []
        for i in range(len(reads)):
            with ipc.open_file(Path(folder) / f"{i}.arrow") as reader:
                tables.append(reader.read_all())
        return tables
