#!/usr/bin/env bash
# Run the whole test suite (bootstraps .venv first). Extra arguments go to pytest.
# --quick (first argument): only the tests a change since main can break (see
# scripts/changed_tests.py), minus those that took over HUDI_SYNC_QUICK_SLOW seconds
# (default 10) when they last ran; docs/testing.md says how it chooses.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
if [[ "${1:-}" == "--quick" ]]; then
  quick=1
  shift
fi
scripts/bootstrap.sh
scripts/bigquery_emulator_env.sh  # .venv-bq: the BigQuery emulator (Python 3.13)
scripts/checkov_env.sh  # .venv-checkov: checkov for tests/test_terraform.py
scripts/postgres_env.sh  # PostgreSQL 15 for the Debezium tests
# The docs site (docs/, mkdocs.yml): a broken link, anchor or API reference, or a reference
# page that cannot be generated, fails here (never add --quiet: it lets warnings pass).
# Built into .venv, so nothing lands in the tree.
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --site-dir .venv/docs-site
.venv/bin/ruff check hudi_sync tests benchmarks
.venv/bin/mypy
# Each documented install in clean venvs, from the built wheel and sdist (Python 3.11 and
# 3.13): not under --quick; HUDI_SYNC_INSTALL_CHECK=0 skips it (docs/testing.md).
if ((!quick)); then
  scripts/install_check.sh
fi
tests=()
if ((quick)); then
  mapfile -t tests < <(.venv/bin/python scripts/changed_tests.py)
  if ((${#tests[@]} == 0)); then
    echo "--quick: no test file reaches the change since ${HUDI_SYNC_QUICK_BASE:-main}"
    exit 0
  fi
  echo "--quick: ${#tests[@]} test files: ${tests[*]}"
  export HUDI_SYNC_QUICK_SLOW="${HUDI_SYNC_QUICK_SLOW:-10}"
fi
# Two workers by default (CI has 2 CPUs; much of a test's time is spent waiting on JVMs and
# services): -n 0 runs in one process, -n N on N workers. Work-stealing evens out the
# long Spark tests. Each worker starts its own Spark session and services. Every run
# records each test's duration in .pytest_cache (what --quick leaves out by).
exec .venv/bin/python -m pytest -q -n "${HUDI_SYNC_TEST_WORKERS:-2}" --dist worksteal \
  "${tests[@]}" "$@"
