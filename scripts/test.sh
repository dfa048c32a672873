#!/usr/bin/env bash
# Run the whole test suite (bootstraps .venv first). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
scripts/bigquery_emulator_env.sh  # .venv-bq: the BigQuery emulator (Python 3.13)
scripts/checkov_env.sh  # .venv-checkov: checkov for tests/test_terraform.py
scripts/postgres_env.sh  # PostgreSQL 15 for the Debezium tests
.venv/bin/ruff check hudi_sync tests benchmarks
.venv/bin/mypy
exec .venv/bin/python -m pytest -q "$@"
