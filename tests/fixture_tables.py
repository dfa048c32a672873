"""The real Hudi tables in ``tests/data/hudi-tables`` (zips), unpacked for tests."""

from __future__ import annotations

import os
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(
    os.environ.get(
        "HUDI_SYNC_FIXTURES",
        Path(__file__).resolve().parent / "data" / "hudi-tables",
    )
)


@dataclass(frozen=True)
class FixtureTable:
    """One fixture zip: ``name`` like ``sample_table/cow/v6_nonpartitioned``."""

    name: str
    zip_path: Path

    @property
    def id(self) -> str:
        return self.name.replace("/", "-")


def fixture_tables() -> list[FixtureTable]:
    zips = sorted(FIXTURES.rglob("*.zip"))
    if not zips:
        raise RuntimeError(f"no fixture tables under {FIXTURES} (set HUDI_SYNC_FIXTURES)")
    return [FixtureTable(str(z.relative_to(FIXTURES).with_suffix("")), z) for z in zips]


def unpack(table: FixtureTable, target: Path) -> Path:
    """Unzip (without ``__MACOSX``) and return the table's base path."""
    destination = target / table.id
    if not destination.exists():
        with zipfile.ZipFile(table.zip_path) as archive:
            members = [m for m in archive.namelist() if not m.startswith("__MACOSX")]
            archive.extractall(destination, members)
    roots = [p for p in destination.iterdir() if (p / ".hoodie").is_dir()]
    if len(roots) != 1:
        raise RuntimeError(f"{table.zip_path}: expected one table directory, found {roots}")
    return roots[0]


def without_metadata_table(path: Path) -> Path:
    """Remove a fixture copy's metadata table as ``hoodie.metadata.enable=false`` would
    (folder and ``hoodie.table.metadata.partitions*`` keys), a setup step for tests that
    hand-write files the metadata table would not list: the table is then listed from
    storage by every reader."""
    from hudi_sync import config as cfg
    from hudi_sync.table.config.properties import decode_properties, parse_java_properties
    from hudi_sync.table.write.create import java_properties_text

    shutil.rmtree(path / ".hoodie" / "metadata", ignore_errors=True)
    properties = path / ".hoodie" / cfg.PROPERTIES_FILE
    props = parse_java_properties(decode_properties(properties.read_bytes(), str(properties)))
    for key in (cfg.METADATA_PARTITIONS.key, f"{cfg.METADATA_PARTITIONS.key}.inflight"):
        props.pop(key, None)
    properties.write_text(java_properties_text(props))
    return path


def set_properties(path: Path, changes: dict[str, str]) -> None:
    """Change keys of a fixture copy's hoodie.properties with our properties writer (a
    setup step, e.g. declaring a metadata table partition hudi_sync does not keep)."""
    from hudi_sync import config as cfg
    from hudi_sync.table.config.properties import decode_properties, parse_java_properties
    from hudi_sync.table.write.create import java_properties_text

    properties = path / ".hoodie" / cfg.PROPERTIES_FILE
    props = parse_java_properties(decode_properties(properties.read_bytes(), str(properties)))
    properties.write_text(java_properties_text({**props, **changes}))
