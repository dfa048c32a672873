"""What a clean records in its ``.clean`` file, as Hudi records it.

Hudi's ``HoodieCleanPartitionMetadata`` names each deleted file by its file name alone
(``deletePathPatterns`` and ``successDeleteFiles``: the cleaner adds the deleted path's
name), under its partition's key.
"""

from __future__ import annotations

import io
from pathlib import Path

import fastavro
import pyarrow as pa

from hudi_sync.spark.writing.writer import write_arrow
from tests.test_bucket_index import options


def test_a_clean_names_the_files_it_deleted_by_name(tmp_path: Path) -> None:
    path = tmp_path / "cleaned"
    settings = {
        "hoodie.cleaner.commits.retained": 1,
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": 1,
    }
    for step in range(3):
        rows = [
            {"id": i, "p": "a/b" if i % 2 else "c", "name": f"v{step}", "ts": step}
            for i in range(4)
        ]
        write_arrow(pa.Table.from_pylist(rows), str(path), options(9, **settings))
    cleans = sorted((path / ".hoodie" / "timeline").glob("*.clean"))
    assert cleans, "no clean ran"
    seen = 0
    for clean in cleans:
        (record,) = list(fastavro.reader(io.BytesIO(clean.read_bytes())))
        for partition, meta in record["partitionMetadata"].items():
            assert meta["partitionPath"] == partition
            names = meta["successDeleteFiles"]
            assert names == meta["deletePathPatterns"]
            for name in names:
                assert "/" not in name, name
                assert not (path / partition / name).exists()  # deleted, and named right
                seen += 1
    assert seen
