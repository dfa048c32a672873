"""``scripts/changed_tests.py``: what ``scripts/test.sh --quick`` runs for a change."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def chosen(*changed: str) -> str:
    """The script's output for ``changed`` (its arguments stand for the change)."""
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "changed_tests.py"), *changed],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def test_a_change_no_test_reaches_chooses_nothing_not_an_empty_name() -> None:
    # An empty line would reach pytest as one empty argument: the whole suite. (The name
    # is split here: a test file that names a changed file is chosen for it.)
    assert chosen("docs/" + "glossary" + ".md") == ""


def test_a_module_chooses_the_tests_that_import_it_and_no_others() -> None:
    lines = chosen("hudi_sync/table/keys/timestamp_keygen.py").splitlines()
    assert "tests/test_timestamp_keygen.py" in lines
    assert "tests/test_terraform.py" not in lines
    assert all(line.startswith("tests/test_") and line.endswith(".py") for line in lines)


def test_a_page_chooses_the_tests_naming_a_pattern_it_matches() -> None:
    # tests/test_docs_snippets.py runs every how-to page, one added later too.
    lines = chosen("docs/how-to/" + "a-page-added-later" + ".md").splitlines()
    assert lines == ["tests/test_docs_snippets.py"]
