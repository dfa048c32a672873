"""The last places a name or document read from storage reached a path or a parser
unchecked: the timeline history's manifest, the manifests' delta pointer, the log fold's
list metadata, the index definitions path and file. Each refuses in one line naming the
file (a ``../`` name read another table's file; deep JSON raised ``RecursionError``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hudi_sync.errors import BadInputError, CorruptTableError
from hudi_sync.manifest.delta import DeltaStore
from hudi_sync.manifest.snapshot import ManifestStore
from hudi_sync.storage import open_location
from hudi_sync.table import HudiTable
from hudi_sync.table.write.metadata_table.indexes import read_index_definitions
from tests.timeline_files import write_lsm_history

DEEP_JSON = b"[" * 100_000 + b"]" * 100_000


def _archive_first_commit(path: Path) -> Path:
    """Move the table's first commit into its layout-2 history (as the archiver does)."""
    timeline = path / ".hoodie" / "timeline"
    first = HudiTable.open(str(path)).completed_commits()[0]
    metadata = (timeline / first.file_name).read_bytes()
    for name in (f"{first.requested_time}.commit.requested", f"{first.requested_time}.inflight"):
        (timeline / name).unlink()
    (timeline / first.file_name).unlink()
    history = timeline / "history"
    write_lsm_history(
        history,
        [
            {
                "instantTime": first.requested_time,
                "completionTime": first.completion_time,
                "action": "commit",
                "metadata": metadata,
            }
        ],
    )
    return history


def test_the_timeline_history_reads_no_file_outside_its_folder(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    path: Path = fixture_copy("cow/v8_simplekeygen_nonhivestyle")
    history = _archive_first_commit(path)
    (own,) = [p for p in history.iterdir() if p.suffix == ".parquet"]
    # A parquet file of another table's history, as a '../' name in the manifest finds it.
    other = path.parent / "other_history"
    other.mkdir()
    (other / own.name).write_bytes(own.read_bytes())
    own.unlink()
    version = (history / "_version_").read_text().strip()
    manifest_file = history / f"manifest_{version}"
    manifest = json.loads(manifest_file.read_text())
    manifest["files"][0]["fileName"] = f"../../../../other_history/{own.name}"
    manifest_file.write_text(json.dumps(manifest))
    table = HudiTable.open(str(path))
    with pytest.raises(CorruptTableError) as refused:
        table.instants(include_archived=True)
    message = str(refused.value)
    assert "\n" not in message and f"manifest_{version}" in message and "../" in message


def test_a_deeply_nested_delta_pointer_is_one_line(fixture_copy) -> None:  # type: ignore[no-untyped-def]
    path: Path = fixture_copy("cow/v8_simplekeygen_nonhivestyle")
    table = HudiTable.open(str(path))
    store = DeltaStore(ManifestStore(table), 3)
    pointer = Path(store.store.path("delta.json"))
    pointer.parent.mkdir(parents=True, exist_ok=True)
    pointer.write_bytes(DEEP_JSON)
    with pytest.raises(CorruptTableError, match=r"delta\.json") as refused:
        store.latest()
    assert "\n" not in str(refused.value)
    pointer.write_bytes(b'{"instant": "../../x"}')
    with pytest.raises(CorruptTableError, match=r"delta\.json"):
        store.latest()


def test_the_index_definitions_path_stays_inside_the_table(tmp_path: Path) -> None:
    table = tmp_path / "lake" / "t"
    table.mkdir(parents=True)
    outside = tmp_path / "lake" / "index.json"
    outside.write_text(json.dumps({"indexDefinitions": {}}))
    location = open_location(str(table))
    props = {"hoodie.table.index.defs.path": "../index.json"}
    with pytest.raises(CorruptTableError, match=r"hoodie\.properties") as refused:
        read_index_definitions(location, props)
    assert "\n" not in str(refused.value)
    # Deep JSON in the table's own definitions file: one line naming it.
    (table / ".hoodie" / ".index_defs").mkdir(parents=True)
    (table / ".hoodie" / ".index_defs" / "index.json").write_bytes(DEEP_JSON)
    with pytest.raises(BadInputError, match=r"index\.json") as refused:
        read_index_definitions(location, {})
    assert "\n" not in str(refused.value)
