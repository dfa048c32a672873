#!/usr/bin/env bash
# The main job on an embedded default: open a real Hudi table (a fixture, or the URI
# given as the first argument) and show its timeline and latest file slices.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
table="${1:-}"
if [ -z "$table" ]; then
  fixtures="${HUDI_SYNC_FIXTURES:-../shared/fixtures/hudi-tables}"
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  .venv/bin/python -m zipfile -e "$fixtures/sample_table/cow/v9_txns_simple_meta.zip" "$work"
  table="$work/v9_txns_simple_meta"
fi
.venv/bin/hudi-sync show instants "$table"
.venv/bin/hudi-sync show files "$table"
