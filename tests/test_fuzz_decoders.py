"""Fuzzing every decoder that reads storage with mutated real files (seeded, bounded):
each mutant gets a result or one ``BadInputError`` line naming its file, within
``SLOW_SECONDS``, in a child process with an address-space limit
(``tests/fuzz_decoders.py`` holds the run; a crash, hang or blow-up fails the test
naming the case). ``HUDI_SYNC_FUZZ_SEED`` and ``HUDI_SYNC_FUZZ_MUTANTS`` change the seed
and the mutants per file for a longer exploratory run."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest

from tests.contained import run_limited
from tests.fixture_tables import fixture_tables
from tests.fuzz_decoders import SLOW_SECONDS

TIMEOUT = 180
SEED = int(os.environ.get("HUDI_SYNC_FUZZ_SEED", "49"))
MUTANTS = int(os.environ.get("HUDI_SYNC_FUZZ_MUTANTS", "25"))
TABLES = (
    "sample_table/cow/v6_nonpartitioned",  # JSON commits
    "sample_table/mor/parquet/v6_nonpartitioned_rollback",  # a rollback, Parquet log blocks
    "sample_table/cow/v9_txns_simple_meta",  # Avro commits, metadata HFiles and logs, plans
    "sample_table/mor/avro/v9_txns_simple_meta",  # Avro log blocks
    "quickstart_trips_table/mor/avro/v8_trips_8i3u1d",  # v8 logs with deletes
)
FAMILIES = (
    "timeline-json",
    "timeline-avro",
    "clean-rollback-restore",
    "compaction-plans",
    "log-blocks",
    "avro-blocks",
    "mdt-log-blocks",
    "hfile",
    "properties",
    "debezium-events",
    "manifests",
)


@pytest.fixture(scope="module")
def fuzz_report(unpack_table) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    tables = {t.name: t for t in fixture_tables()}
    roots = [str(unpack_table(tables[name])) for name in TABLES]
    try:
        done = run_limited(["-m", "tests.fuzz_decoders", str(SEED), str(MUTANTS), *roots], TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        stderr = exc.stderr or ""
        text = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr
        last = text.strip().splitlines()[-1:]
        pytest.fail(f"the fuzz run hung past {TIMEOUT} s at {last}")
    last = done.stderr.strip().splitlines()[-1:]
    assert done.returncode == 0, f"the fuzz run died ({done.returncode}) at {last}"
    report: dict[str, Any] = json.loads(done.stdout)
    return report


@pytest.mark.parametrize("family", FAMILIES)
def test_mutated_files_decode_or_are_refused_in_one_line(
    fuzz_report: dict[str, Any], family: str
) -> None:
    result = fuzz_report[family]
    assert result["seeds"] >= 1, f"no seed file for {family}"
    assert result["cases"] == result["seeds"] * (MUTANTS + 1)
    assert result["failures"] == [], "\n".join(result["failures"][:20])
    assert result["slowest"] <= SLOW_SECONDS
