#!/usr/bin/env bash
# The main job on an embedded default: take a real Hudi table (a fixture copy, or the
# URI given as the first argument), publish its manifest and sync it into a local
# DuckDB file (view, manifest and history), then print the view's rows.
# With --bigquery first: the same table through fake-gcs-server into the local-bigquery
# emulator (both started and stopped by the demo).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
bigquery=false
if [ "${1:-}" = "--bigquery" ]; then
  bigquery=true
  shift
  scripts/bigquery_emulator_env.sh
fi
table="${1:-}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if [ -z "$table" ]; then
  fixtures="${HUDI_SYNC_FIXTURES:-../shared/fixtures/hudi-tables}"
  .venv/bin/python -m zipfile -e "$fixtures/sample_table/cow/v9_txns_simple_meta.zip" "$work"
  table="$work/v9_txns_simple_meta"
fi
if $bigquery; then
  exec .venv/bin/python scripts/demo_bigquery.py "$table"
fi
database="${HUDI_SYNC_DEMO_DB:-$work/warehouse.duckdb}"
.venv/bin/hudi-sync show instants "$table"
.venv/bin/hudi-sync sync duckdb "$table" --database "$database" --table trips
.venv/bin/python - "$database" <<'PY'
import sys

import duckdb

with duckdb.connect(sys.argv[1], read_only=True) as con:
    print(con.sql("SELECT count(*) AS history_rows FROM trips_history"))
    print(con.sql("SELECT * EXCLUDE (_hoodie_commit_seqno) FROM trips ORDER BY _hoodie_record_key"))
PY
