#!/usr/bin/env bash
# Run the whole test suite (bootstraps .venv first). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
.venv/bin/ruff check hudi_sync tests benchmarks
.venv/bin/mypy
exec .venv/bin/python -m pytest -q "$@"
