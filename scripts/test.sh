#!/usr/bin/env bash
# Run the whole test suite (bootstraps .venv first). Extra arguments go to pytest.
# --quick (first argument): only the tests a change since main can break (see
# scripts/changed_tests.py), minus those that took over HUDI_SYNC_QUICK_SLOW seconds
# (default 10) when they last ran; docs/testing.md says how it chooses.
set -euo pipefail
cd "$(dirname "$0")/.."
# The other PySpark lines the compat tier (`pytest -m spark_compat`) runs on after the
# suite (which runs on .venv's pyspark), each from its own .venv-spark-X.Y
# (scripts/spark_line_env.sh). HUDI_SYNC_SPARK_LINES overrides the list ("" runs none);
# --quick runs none unless it is set. docs/testing.md says what the tier holds. CI runs the
# two ends (3.5, the oldest, and 4.3, whose shims 4.2 shares; 4.1 takes 4.0's paths but for
# the array nullability compat.py sets on every line): all four cost CI's time budget.
SPARK_COMPAT_LINES="3.5.9 4.3.0"
ALL_SPARK_LINES="3.5.9 4.1.4 4.2.1 4.3.0"  # HUDI_SYNC_SPARK_LINES="$ALL..." runs every one
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
if ((quick)); then
  lines="${HUDI_SYNC_SPARK_LINES-}"
else
  lines="${HUDI_SYNC_SPARK_LINES-$SPARK_COMPAT_LINES}"
fi
# While the suite runs: each documented install in clean venvs, from the built wheel and
# sdist (Python 3.11 and 3.13; not under --quick; HUDI_SYNC_INSTALL_CHECK=0 skips it), and
# the other Spark lines' venvs (mostly downloads: pyspark is a 450 MB source archive).
# Their output goes to .venv/logs/ and is shown when they fail.
mkdir -p .venv/logs
background=()
if ((!quick)); then
  scripts/install_check.sh >.venv/logs/install_check.log 2>&1 &
  background+=("$!:install_check")
fi
for version in $lines; do
  scripts/spark_line_env.sh "$version" >".venv/logs/spark-$version.log" 2>&1 &
  background+=("$!:spark-$version")
done
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
workers="${HUDI_SYNC_TEST_WORKERS:-2}"
status=0
.venv/bin/python -m pytest -q -n "$workers" --dist worksteal "${tests[@]}" "$@" || status=$?

# The compat tier on each other Spark line: only the test files that mark tests
# spark_compat are collected (collecting the whole suite to deselect it costs a minute).
declare -A failed=()
for job in "${background[@]}"; do
  if ! wait "${job%%:*}"; then
    name="${job#*:}"
    failed[$name]=1
    cat ".venv/logs/$name.log" >&2
    echo "$name failed (.venv/logs/$name.log)" >&2
    status=1
  fi
done
mapfile -t compat_files < <(grep -l "pytest.mark.spark_compat" tests/test_*.py)
for version in $lines; do
  line="${version%.*}"
  if [[ -n "${failed[spark-$version]:-}" ]]; then
    continue  # its venv could not be built: reported above
  fi
  echo "compat tier on PySpark $version (.venv-spark-$line)"
  start=$SECONDS
  # 3.5 has no Python Data Source API: its tier leaves out the tests marked spark4.
  marks="spark_compat"
  if [[ "$line" == 3.* ]]; then
    marks="spark_compat and not spark4"
  fi
  # -p no:cacheprovider: the suite's durations in .pytest_cache stay .venv's.
  if ! ".venv-spark-$line/bin/python" -m pytest -q -n "$workers" --dist worksteal \
    -p no:cacheprovider -m "$marks" "${compat_files[@]}"; then
    echo "compat tier on PySpark $version failed" >&2
    status=1
  fi
  echo "compat tier on PySpark $version: $((SECONDS - start)) s"
done
exit "$status"
