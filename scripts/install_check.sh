#!/usr/bin/env bash
# Prove each documented install as a user of a package index would do it: build the sdist
# and wheel (python -m build), then in clean venvs without the test extras:
#   plain      pip install WHEEL: hudi-sync --help, a DuckDB sync of a fixture table (the
#              view's row count is hudi-rs's), and a BigQuery dry-run that fails with one
#              line naming the extra to install; then WHEEL[s3] on top: fsspec opens s3://
#   bigquery   pip install 'WHEEL[bigquery,gcs]': an offline BigQuery --dry-run, gs://
#   snowflake  pip install 'WHEEL[snowflake,s3]': an offline Snowflake --dry-run, s3://
#   iceberg    pip install 'WHEEL[iceberg]': a sync to an Iceberg REST catalog that is not
#              there fails in one line saying so (the client ran); without the extra (plain)
#              the same sync names the extra to install
#   spark      pip install 'WHEEL[spark]': PySpark writes three rows and reads them back
#   py313      Python 3.13, pip install WHEEL: --help and the DuckDB sync; then WHEEL[gcs]
#   sdist      pip install SDIST: --help and the DuckDB sync
# and that every `pip install` line in README.md and docs/ is one of these.
# The venvs install concurrently; pip resolves each against the package index and takes
# what its cache has (PySpark's wheel, built once by scripts/bootstrap.sh).
# HUDI_SYNC_INSTALL_CHECK=0 skips it (scripts/test.sh --quick skips it too).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
if [[ "${HUDI_SYNC_INSTALL_CHECK:-1}" == 0 ]]; then
  echo "install_check.sh: skipped (HUDI_SYNC_INSTALL_CHECK=0)"
  exit 0
fi
# shellcheck source=scripts/python313.sh
source scripts/python313.sh
start=$SECONDS
work="$(mktemp -d "${TMPDIR:-/tmp}/hudi-sync-install.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# -- the documented install lines: each must be one this script proves ------------------
# (`-e` lines are the developer's editable installs, which scripts/bootstrap.sh runs; a
# quoted "error: ..." line is what a command says, not an install line)
proven=(. "'.[bigquery,gcs]'" "'.[snowflake,s3]'" "'.[spark]'" "'.[s3]'" "'.[gcs]'" "'.[iceberg]'")
.venv/bin/python - "${proven[@]}" <<'EOF'
import re
import sys
from pathlib import Path

proven = sys.argv[1:]
bad = 0
for path in [Path("README.md"), *sorted(Path("docs").rglob("*.md"))]:
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if "error: " in line:
            continue
        for match in re.finditer(r"pip install (\S+)", line):
            target = match.group(1).rstrip("`),;")
            if target != "-e" and target not in proven:
                print(f"install_check.sh: {path}:{number}: 'pip install {target}' is none of "
                      f"the proven installs ({' '.join(proven)})", file=sys.stderr)
                bad = 1
sys.exit(bad)
EOF

# -- the sdist and the wheel, built from a copy (no build/ or *.egg-info in the tree) ------
mkdir "$work/src"
git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' file; do [ -e "$file" ] && printf '%s\0' "$file"; done |
  tar --null -T - -cf - | tar -xf - -C "$work/src"
if ! .venv/bin/python -m build --outdir "$work/dist" "$work/src" >"$work/build.log" 2>&1; then
  cat "$work/build.log" >&2
  echo "install_check.sh: python -m build failed" >&2
  exit 1
fi
echo "built the sdist and the wheel in $((SECONDS - start)) s"
wheel="$(echo "$work"/dist/*.whl)"
sdist="$(echo "$work"/dist/*.tar.gz)"

# -- a fixture table and its row count by hudi-rs (the suite's oracle) --------------------
fixture="sample_table/cow/v8_complexkeygen_hivestyle"
read -r table expected < <(
  PYTHONPATH="$root" .venv/bin/python - "$work/fixture" "$fixture" <<'EOF'
import sys
from pathlib import Path

import hudi

from tests.fixture_tables import fixture_tables, unpack

[table] = [t for t in fixture_tables() if t.name == sys.argv[2]]
path = unpack(table, Path(sys.argv[1]))
rows = sum(b.num_rows for b in hudi.HudiTable(str(path)).read(hudi.HudiReadOptions()))
print(path, rows)
EOF
)
[[ -n "${expected:-}" ]] || { echo "install_check.sh: cannot read the fixture $fixture" >&2; exit 1; }
# The Python the project's venv was made with (3.11 on CI), and a 3.13.
python311="$(.venv/bin/python -c 'import sys; print(sys._base_executable)')"
if ! python313="$(find_python313)"; then
  echo "install_check.sh: no working Python 3.13 found (set PYTHON313, put python3.13 on PATH, or install it with pyenv)" >&2
  exit 1
fi

# From here on the venvs see nothing of the source tree or the project's venv (whose pip
# is only the installer).
unset PYTHONPATH VIRTUAL_ENV
cd "$work"

fail() {
  echo "FAILED: $*" >&2
  exit 1
}

# venv NAME PYTHON REQUIREMENT [pip args]: a clean venv with REQUIREMENT installed.
venv() {
  local name="$1" python="$2"
  shift 2
  "$python" -m venv --without-pip "$work/$name"
  pip_install "$name" "$@"
}

# pip_install NAME ARGS...: pip install into venv NAME, by the project venv's pip (--python:
# a venv's bundled pip 23 took twice as long to resolve the same install) with pip's cache;
# --no-compile: Python compiles what it imports anyway, and compiling all of PySpark cost
# more CPU than any check. (The filter drops pip's notes about this machine's absent local
# indexes; pipefail keeps pip's exit status.)
pip_install() {
  local name="$1"
  shift
  "$root/.venv/bin/python" -m pip --python "$work/$name/bin/python" install --quiet \
    --disable-pip-version-check --no-compile "$@" 2>&1 |
    { grep -v "^WARNING: Location '.*' is ignored" || true; }
}

# duckdb_sync NAME: hudi-sync --help, then a DuckDB sync of a copy of the fixture table,
# whose view must have hudi-rs's row count.
duckdb_sync() {
  local name="$1" bin="$work/$1/bin"
  "$bin/hudi-sync" --help >/dev/null || fail "$name: hudi-sync --help"
  cp -r "$table" "$work/$name-table"
  "$bin/hudi-sync" sync duckdb "$work/$name-table" --database "$work/$name.duckdb" --table trips ||
    fail "$name: hudi-sync sync duckdb"
  local count
  count="$("$bin/python" -c 'import duckdb, sys
print(duckdb.connect(sys.argv[1], read_only=True).sql("SELECT count(*) FROM trips").fetchall()[0][0])' \
    "$work/$name.duckdb")"
  [[ "$count" == "$expected" ]] || fail "$name: the DuckDB view has $count rows, hudi-rs reads $expected"
  echo "$name: the DuckDB view has the table's $count rows"
}

bigquery_args=(sync bigquery "$table" --project-id test-project --dataset-name lake
  --table-name trips --source-uri-prefix gs://lake/trips --dry-run)
snowflake_args=(sync snowflake "$table" --database hudi --schema lake --table-name trips
  --stage-url s3://lake/trips --dry-run)
# A REST catalog on a port nothing listens on (the iceberg extra's client must say so).
iceberg_args=(sync iceberg "$table" --catalog-uri http://127.0.0.1:9/ --dry-run)
# No credentials or logins of this machine's: the dry-runs must plan offline.
no_credentials=(env -u GOOGLE_APPLICATION_CREDENTIALS -u SNOWFLAKE_ACCOUNT -u SNOWFLAKE_USER
  -u SNOWFLAKE_PASSWORD -u SNOWFLAKE_AUTHENTICATOR -u SNOWFLAKE_PRIVATE_KEY_FILE
  -u SNOWFLAKE_TOKEN "CLOUDSDK_CONFIG=$work/gcloud")

# offline_plan NAME OUTPUT: a dry-run's output is a first sync's plan of 4 steps.
offline_plan() {
  grep -q "existing objects were NOT compared" <<<"$2" || fail "$1: no offline note in: $2"
  local steps
  steps="$(grep -c ';$' <<<"$2")"
  [[ "$steps" == 4 ]] || fail "$1: $steps planned steps, not 4: $2"
  echo "$1: the offline --dry-run planned $steps steps"
}

check_plain() {
  venv plain "$python311" "$wheel"
  duckdb_sync plain
  # A command that needs an extra says in one line which one, and exits 1.
  local out code=0
  out="$("${no_credentials[@]}" "$work/plain/bin/hudi-sync" "${bigquery_args[@]}" 2>&1)" || code=$?
  [[ "$code" == 1 && "$out" == "error: "*"pip install 'hudi-sync[bigquery]'" ]] ||
    fail "plain: sync bigquery without the extra exited $code: $out"
  echo "plain: sync bigquery says: $out"
  code=0
  out="$("$work/plain/bin/hudi-sync" "${iceberg_args[@]}" 2>&1)" || code=$?
  [[ "$code" == 1 && "$out" == "error: "*"pip install 'hudi-sync[iceberg]'" ]] ||
    fail "plain: sync iceberg to a REST catalog without the extra exited $code: $out"
  echo "plain: sync iceberg to a REST catalog says: $out"
  # docs/how-to/duckdb.md's next line: the s3 extra on top, for a table on S3.
  pip_install plain "$wheel[s3]"
  filesystem plain s3 anon=True
}

# filesystem NAME PROTOCOL KWARG: fsspec opens PROTOCOL:// in the venv (s3fs, gcsfs there
# and working with the core's fsspec).
filesystem() {
  "$work/$1/bin/python" -c "import fsspec; fsspec.filesystem('$2', $3)" ||
    fail "$1: fsspec cannot open $2://"
  echo "$1: fsspec opens $2://"
}

check_bigquery() {
  venv bigquery "$python311" "$wheel[bigquery,gcs]"
  offline_plan bigquery "$("${no_credentials[@]}" "$work/bigquery/bin/hudi-sync" "${bigquery_args[@]}")"
  filesystem bigquery gcs "token='anon'"
}

check_snowflake() {
  venv snowflake "$python311" "$wheel[snowflake,s3]"
  offline_plan snowflake "$("${no_credentials[@]}" "$work/snowflake/bin/hudi-sync" "${snowflake_args[@]}")"
  filesystem snowflake s3 anon=True
}

check_iceberg() {
  venv iceberg "$python311" "$wheel[iceberg]"
  local out code=0
  out="$("$work/iceberg/bin/hudi-sync" "${iceberg_args[@]}" 2>&1)" || code=$?
  [[ "$code" == 1 && "$out" == "error: Iceberg REST catalog http://127.0.0.1:9/: "*"is it reachable?" ]] ||
    fail "iceberg: sync iceberg to an absent REST catalog exited $code: $out"
  echo "iceberg: sync iceberg to an absent REST catalog says: $out"
}

check_spark() {
  # The spark extra admits PySpark 3.5 to 4.3; this check pins the line the project's venv
  # has (the test extra's pyspark==4.0.1), so pip's cache serves its wheel, built once.
  echo "pyspark==4.0.1" >"$work/spark-constraints.txt"
  venv spark "$python311" "$wheel[spark]" -c "$work/spark-constraints.txt"
  "$work/spark/bin/python" - "$work/spark-table" <<'EOF' || fail "spark: write and read"
import sys

from hudi_sync.spark import local_session, read, write

spark = local_session("hudi_sync-install-check")
rows = [(1, "a", 10), (2, "b", 20), (3, "c", 30)]
df = spark.createDataFrame(rows, "id int, name string, ts long")
options = {
    "hoodie.table.name": "trips",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.operation": "upsert",
}
write(df, sys.argv[1], options)
back = sorted((r.id, r.name, r.ts) for r in read(spark, sys.argv[1]).collect())
assert back == rows, back
spark.stop()
print("spark: wrote 3 rows and read them back")
EOF
}

check_py313() {
  venv py313 "$python313" "$wheel"
  duckdb_sync py313
  # the gcs extra on top (docs/how-to/duckdb.md), on 3.13
  pip_install py313 "$wheel[gcs]"
  filesystem py313 gcs "token='anon'"
}

check_sdist() {
  venv sdist "$python311" "$sdist"
  duckdb_sync sdist
}

names=(plain bigquery snowflake iceberg spark py313 sdist)
declare -A pids
for name in "${names[@]}"; do
  ( started=$SECONDS; "check_$name"; echo "$name: ok in $((SECONDS - started)) s" ) \
    >"$work/$name.log" 2>&1 &
  pids[$name]=$!
done
failed=()
for name in "${names[@]}"; do
  if ! wait "${pids[$name]}"; then
    failed+=("$name")
  fi
done
for name in "${names[@]}"; do
  if [[ " ${failed[*]} " == *" $name "* ]]; then
    echo "---- $name (FAILED) ----" >&2
    tail -n 40 "$work/$name.log" >&2
  else
    grep "^$name: " "$work/$name.log"
  fi
done
if ((${#failed[@]})); then
  echo "install_check.sh: failed: ${failed[*]}" >&2
  exit 1
fi
echo "install_check.sh: every install proven in $((SECONDS - start)) s"
