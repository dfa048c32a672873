from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixture_tables import FixtureTable, unpack


@pytest.fixture(scope="session")
def fixtures_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hudi-fixtures")


@pytest.fixture(scope="session")
def unpack_table(fixtures_root: Path):  # type: ignore[no-untyped-def]
    def _unpack(table: FixtureTable) -> Path:
        return unpack(table, fixtures_root)

    return _unpack
