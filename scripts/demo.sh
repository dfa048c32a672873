#!/usr/bin/env bash
# The main job on an embedded default: PySpark writes a sample Hudi table (day 1 insert,
# day 2 upsert with a late event and a delete) through `hudi-sync write`; the day-2 commit
# runs the post-commit hook, which publishes the manifest and syncs the table into a local
# DuckDB file (view, manifest and history). Then it prints the timeline and the view's rows,
# and says what it wrote where.
#
# usage: scripts/demo.sh [--bigquery | --object-store] [--keep] [--verbose] [TABLE]
#   TABLE       sync this existing Hudi table instead of writing the sample
#   --bigquery  sync through fake-gcs-server into the local-bigquery emulator (both started
#               and stopped by the demo) instead of DuckDB
#   --object-store  write the sample table to an S3 bucket (moto's server, started and
#               stopped by the demo) and sync it into DuckDB from there, as production does
#   --keep      keep the work folder (the sample table and the DuckDB file) to open later
#   --verbose   show install, Spark and sync logs as they run (hidden by default, kept in
#               a log file that is printed when a step fails)
set -euo pipefail
cd "$(dirname "$0")/.."

bigquery=false
object_store=false
keep=false
verbose=false
table=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bigquery) bigquery=true ;;
    --object-store) object_store=true ;;
    --keep) keep=true ;;
    --verbose | -v) verbose=true ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | grep '^#' | cut -c3- ; exit 0 ;;
    -*) echo "demo.sh: unknown option $1 (see --help)" >&2 ; exit 2 ;;
    *)
      if [ -n "$table" ]; then echo "demo.sh: give one TABLE, not '$table' and '$1'" >&2 ; exit 2 ; fi
      if [ ! -f "$1/.hoodie/hoodie.properties" ]; then
        echo "demo.sh: $1 is not a Hudi table (.hoodie/hoodie.properties not found)" >&2 ; exit 2
      fi
      table="$(cd "$1" && pwd)" ;;
  esac
  shift
done

work="$(mktemp -d "${TMPDIR:-/tmp}/hudi-sync-demo.XXXXXX")"
log="$work/demo.log"
finish() {
  if ! $keep; then rm -rf "$work"; fi
}
trap finish EXIT

# step MESSAGE COMMAND...: run COMMAND with its output in the log (shown with --verbose),
# a ticking clock on a terminal, and the log's tail if it fails.
step() {
  local message="$1" start=$SECONDS rc=0
  shift
  if $verbose; then
    echo "== $message"
    "$@"
    return
  fi
  "$@" >>"$log" 2>&1 &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    if [ -t 1 ]; then printf '\r.. %s (%ss)' "$message" "$((SECONDS - start))"; fi
    sleep 0.2
  done
  wait "$pid" || rc=$?
  if [ -t 1 ]; then printf '\r\033[K'; fi
  if [ "$rc" -ne 0 ]; then
    keep=true
    echo "FAILED: $message (exit $rc). The end of $log:" >&2
    tail -n 25 "$log" >&2
    exit "$rc"
  fi
  echo "ok  $message ($((SECONDS - start)) s)"
}

step "Python environment in .venv (installs on the first run only)" scripts/bootstrap.sh
if $object_store; then
  if $bigquery || [ -n "$table" ]; then
    echo "demo.sh: --object-store writes the sample table: no --bigquery, no TABLE" >&2
    exit 2
  fi
  args=("$work")
  if $verbose; then args+=(--verbose); fi
  .venv/bin/python scripts/demo_object_store.py "${args[@]}"
  if $keep; then echo "  kept $work (the DuckDB file; the bucket went with the server)"; fi
  exit 0
fi
if $bigquery; then
  step "BigQuery emulator in .venv-bq (installs on the first run only)" scripts/bigquery_emulator_env.sh
fi

database="${HUDI_SYNC_DEMO_DB:-$work/warehouse.duckdb}"
sample=scripts/sample
hook=()
if ! $bigquery; then
  hook=(--conf hoodie.datasource.meta.sync.enable=true
        --conf hoodie.meta.sync.client.tool.class=duckdb
        --conf "hoodie.duckdb.sync.database=$database")
fi
wrote=false
if [ -z "$table" ]; then
  wrote=true
  table="$work/trips"
  step "day 1: PySpark inserts $(wc -l <"$sample/trips_day1.jsonl") trips into the new Hudi table $table" \
    .venv/bin/hudi-sync write "$table" "$sample/trips_day1.jsonl" --props "$sample/trips.properties" \
    --conf hoodie.datasource.write.operation=insert
  step "day 2: PySpark upserts $(wc -l <"$sample/trips_day2.jsonl") events (t01 updated, t03 late so ignored, t05 deleted); the post-commit hook syncs" \
    .venv/bin/hudi-sync write "$table" "$sample/trips_day2.jsonl" --props "$sample/trips.properties" \
    --conf hoodie.datasource.write.operation=upsert "${hook[@]}"
elif ! $bigquery; then
  step "sync $table into DuckDB" \
    .venv/bin/hudi-sync sync duckdb "$table" --database "$database" --table trips
fi

if $bigquery; then
  .venv/bin/python scripts/demo_bigquery.py "$table"
else
  echo
  .venv/bin/hudi-sync show instants "$table"
  .venv/bin/python - "$database" <<'PY'
import sys

import duckdb

with duckdb.connect(sys.argv[1], read_only=True) as con:
    print(con.sql("SELECT count(*) AS history_rows FROM trips_history"))
    view = "SELECT * EXCLUDE (_hoodie_commit_seqno, _hoodie_file_name) FROM trips"
    con.sql(f"{view} ORDER BY _hoodie_record_key").show(max_width=250)
PY
fi

echo
echo "What the demo did:"
if $wrote; then
  echo "  wrote the Hudi table   $table (2 commits: insert, upsert)"
fi
if $bigquery; then
  echo "  uploaded and synced it into fake-gcs-server (gs://demo-lake/trips) and the local-bigquery"
  echo "                         emulator (dataset lake: view trips, trips_history, trips_manifest)"
  echo "  manifest               gs://demo-lake/trips/.hoodie/manifest/latest_snapshot_files.csv"
  echo "                         (both emulators are stopped now, and their data gone)"
else
  echo "  synced it into DuckDB  $database: view trips (latest rows only),"
  echo "                         trips_history (every row version), trips_manifest (latest files)"
  echo "  manifest               $table/.hoodie/manifest/latest_snapshot_files.csv"
fi
if ! $keep; then
  echo "  removed $work; run with --keep to keep it"
elif $bigquery; then
  echo "  kept $work (the local table)"
else
  echo "  kept $work; open the warehouse with:"
  echo "    .venv/bin/python -c \"import duckdb; duckdb.connect('$database').sql('FROM trips').show()\""
fi
