"""The real Hudi tables in ``tests/data/hudi-tables`` (zips), unpacked for tests."""

from __future__ import annotations

import os
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
