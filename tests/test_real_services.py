"""The opt-in real-cloud tests are collected on every machine: skipped, with a reason
naming the variables that enable them, when those are unset, and run when they are set.

Each case runs pytest on the two files in a child process with a controlled
environment (the variables are read when the files are collected).
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = ["tests/test_bigquery_real.py", "tests/test_snowflake_real.py"]
BIGQUERY = ("HUDI_SYNC_BIGQUERY_PROJECT", "HUDI_SYNC_BIGQUERY_TABLE")
SNOWFLAKE = ("HUDI_SYNC_SNOWFLAKE_TABLE", "HUDI_SYNC_SNOWFLAKE_INTEGRATION")


def _pytest(tmp_path: Path, environment: dict[str, str]) -> tuple[str, dict[str, ET.Element]]:
    """Run the two files; their output and each test case's junit element, by file."""
    cleared = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HUDI_SYNC_BIGQUERY", "HUDI_SYNC_SNOWFLAKE", "SNOWFLAKE_", "GOOGLE_"))
    }
    report = tmp_path / "junit.xml"
    command = [sys.executable, "-m", "pytest", "-rs", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [*command, f"--junitxml={report}", *FILES],
        cwd=ROOT,
        env={**cleared, **environment},
        capture_output=True,
        text=True,
        timeout=300,
    )
    cases = {
        case.attrib["classname"].rsplit(".", 1)[-1]: case
        for case in ET.parse(report).getroot().iter("testcase")
    }
    assert set(cases) == {"test_bigquery_real", "test_snowflake_real"}, done.stdout
    return done.stdout, cases


def test_without_their_variables_they_are_listed_as_skipped(tmp_path: Path) -> None:
    output, cases = _pytest(tmp_path, {})
    for name, variables in (("test_bigquery_real", BIGQUERY), ("test_snowflake_real", SNOWFLAKE)):
        skipped = cases[name].find("skipped")
        assert skipped is not None, ET.tostring(cases[name])
        reason = skipped.attrib["message"]
        assert all(v in reason for v in variables), reason
        # ``-rs`` lists each skip with its reason.
        assert f"SKIPPED [1] tests/{name}.py" in output and reason in output
    assert (
        "SNOWFLAKE_* connection variables"
        in cases["test_snowflake_real"].find("skipped").attrib["message"]
    )  # type: ignore[union-attr]


def test_with_their_variables_they_run(tmp_path: Path) -> None:
    """Pointed at nothing real: each test body runs and fails at its first cloud step
    (credentials offline, the Snowflake connection options), never skipped."""
    environment = {
        "HUDI_SYNC_BIGQUERY_PROJECT": "hudi-sync-nowhere",
        "HUDI_SYNC_BIGQUERY_TABLE": "gs://hudi-sync-nowhere/t",
        "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "no-credentials.json"),
        "HUDI_SYNC_SNOWFLAKE_TABLE": "s3://hudi-sync-nowhere/t",
        "HUDI_SYNC_SNOWFLAKE_INTEGRATION": "NOWHERE",
    }
    _output, cases = _pytest(tmp_path, environment)
    failures = {name: case.find("failure") for name, case in cases.items()}
    assert all(f is not None for f in failures.values()), failures
    bigquery, snowflake = failures["test_bigquery_real"], failures["test_snowflake_real"]
    assert bigquery is not None and "no-credentials.json" in bigquery.attrib["message"]
    assert snowflake is not None and "SNOWFLAKE_DATABASE" in snowflake.attrib["message"]
