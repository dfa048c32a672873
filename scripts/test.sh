#!/usr/bin/env bash
# Run the whole test suite (bootstraps .venv first). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
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
# Two workers by default (CI has 2 CPUs; much of a test's time is spent waiting on JVMs and
# services): -n 0 runs in one process, -n N on N workers. Work-stealing evens out the
# long Spark tests. Each worker starts its own Spark session and services.
exec .venv/bin/python -m pytest -q -n "${HUDI_SYNC_TEST_WORKERS:-2}" --dist worksteal "$@"
