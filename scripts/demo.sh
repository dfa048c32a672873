#!/usr/bin/env bash
# The main job on an embedded default: PySpark writes a sample Hudi table (day 1 insert,
# day 2 upsert with a late event and a delete) through `hudi-sync write`; the day-2 commit
# runs the post-commit hook, which publishes the manifest and syncs the table into a local
# DuckDB file (view, manifest and history). Then it prints the timeline and the view's rows.
# With a TABLE argument: sync that existing Hudi table instead of writing the sample.
# With --bigquery first: the table goes through fake-gcs-server into the local-bigquery
# emulator (both started and stopped by the demo) instead of DuckDB.
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
database="${HUDI_SYNC_DEMO_DB:-$work/warehouse.duckdb}"
sample=scripts/sample
hook=()
if ! $bigquery; then
  hook=(--conf hoodie.datasource.meta.sync.enable=true
        --conf hoodie.meta.sync.client.tool.class=duckdb
        --conf "hoodie.duckdb.sync.database=$database")
fi
if [ -z "$table" ]; then
  table="$work/trips"
  echo "== day 1: insert $sample/trips_day1.jsonl"
  .venv/bin/hudi-sync write "$table" "$sample/trips_day1.jsonl" --props "$sample/trips.properties" \
    --conf hoodie.datasource.write.operation=insert
  echo "== day 2: upsert $sample/trips_day2.jsonl (t01 updated, t03 late so ignored, t05 deleted)"
  .venv/bin/hudi-sync write "$table" "$sample/trips_day2.jsonl" --props "$sample/trips.properties" \
    --conf hoodie.datasource.write.operation=upsert "${hook[@]}"
elif ! $bigquery; then
  .venv/bin/hudi-sync sync duckdb "$table" --database "$database" --table trips
fi
if $bigquery; then
  exec .venv/bin/python scripts/demo_bigquery.py "$table"
fi
.venv/bin/hudi-sync show instants "$table"
.venv/bin/python - "$database" <<'PY'
import sys

import duckdb

with duckdb.connect(sys.argv[1], read_only=True) as con:
    print(con.sql("SELECT count(*) AS history_rows FROM trips_history"))
    view = "SELECT * EXCLUDE (_hoodie_commit_seqno, _hoodie_file_name) FROM trips"
    con.sql(f"{view} ORDER BY _hoodie_record_key").show(max_width=250)
PY
