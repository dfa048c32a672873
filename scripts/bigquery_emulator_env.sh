#!/usr/bin/env bash
# Create (or check) .venv-bq: the BigQuery emulator local-bigquery, for the test suite.
#
# local-bigquery needs Python 3.13 (its code uses 3.12+ syntax and its numpy>=2.5.1 has no
# 3.11 wheel), so it runs from its own venv as a separate process (tests/bigquery_emulator.py).
# DuckDB would download the extensions the emulator loads at run time; this machine reaches
# PyPI only, so they come from the duckdb-extension-* wheels and are installed once into a
# private HOME (.venv-bq/home/.duckdb/extensions), which the emulator is started with.
# Idempotent: a stamp file makes a second run a no-op.
set -euo pipefail
script="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
cd "$(dirname "$script")/.."

VENV=.venv-bq
LOCAL_BIGQUERY_VERSION=0.3.2
DUCKDB_VERSION=1.5.5
# DuckDB extensions local-bigquery 0.3.2 loads (read from its source):
#   icu               connect(config={"TimeZone": "UTC"}) (engine/database.py); the wheel's
#                     built-in icu is not enough for that setting, it must be installed
#   ducklake          ATTACH 'ducklake:…' for every project (engine/database.py)
#   spatial           INSTALL spatial; LOAD spatial at start-up (sql/functions/geography.sql)
#   httpfs            CREATE SECRET (TYPE gcs) when STORAGE_EMULATOR_HOST is used (jobs/storage.py)
#   postgres_scanner  LOAD postgres for EXTERNAL_QUERY (jobs/query.py)
EXTENSIONS=(icu ducklake spatial httpfs postgres_scanner)

inputs="$LOCAL_BIGQUERY_VERSION $DUCKDB_VERSION ${EXTENSIONS[*]} $(sha256sum "$script" | cut -c1-16)"
# shellcheck source=scripts/venv_stamp.sh
source scripts/venv_stamp.sh
venv_ready_or_lock "$VENV" "$inputs"  # exits when built; sets $stamp

# shellcheck source=scripts/python313.sh
source "$(dirname "$script")/python313.sh"
if ! python313="$(find_python313)"; then
  echo "bigquery_emulator_env.sh: no working Python 3.13 found (set PYTHON313, put python3.13 on PATH, or install it with pyenv)" >&2
  exit 1
fi

start=$SECONDS
rm -f "$VENV"/.ready-*
if [ ! -x "$VENV/bin/python" ]; then
  "$python313" -m venv "$VENV"
fi
printf '*\n' >"$VENV/.gitignore"  # keep the venv out of git (3.13's venv writes this too)

wheels=("local-bigquery==$LOCAL_BIGQUERY_VERSION" "duckdb==$DUCKDB_VERSION")
for name in "${EXTENSIONS[@]}"; do
  wheels+=("duckdb-extension-${name//_/-}==$DUCKDB_VERSION")
done
# (the filter drops pip's notes about this machine's absent local indexes; pipefail keeps
# pip's exit status)
if ! "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
  --only-binary :all: "${wheels[@]}" 2>&1 | { grep -v "^WARNING: Location '.*' is ignored" || true; }; then
  echo "bigquery_emulator_env.sh: pip install failed" >&2
  exit 1
fi

# INSTALL '<file>' copies each extension into $HOME/.duckdb/extensions/v<version>/<platform>/.
# Check each one LOADs afterwards, with autoinstall off so nothing is fetched.
mkdir -p "$VENV/home"
HOME="$PWD/$VENV/home" "$VENV/bin/python" - "${EXTENSIONS[@]}" <<'EOF'
import importlib.util
import pathlib
import sys

import duckdb

con = duckdb.connect(config={"autoinstall_known_extensions": False})
for name in sys.argv[1:]:
    spec = importlib.util.find_spec(f"duckdb_extension_{name}")
    assert spec is not None and spec.origin is not None, f"duckdb-extension-{name} missing"
    files = sorted(pathlib.Path(spec.origin).parent.glob(f"extensions/v*/{name}.duckdb_extension"))
    assert len(files) == 1, f"{name}: expected one .duckdb_extension file, found {files}"
    path = str(files[0]).replace("'", "''")
    con.execute(f"FORCE INSTALL '{path}'")
    con.execute(f"LOAD {name}")
duckdb.connect(config={"TimeZone": "UTC"}).close()  # what local-bigquery does first
EOF

touch "$stamp"
echo "bigquery_emulator_env.sh: $VENV ready in $((SECONDS - start)) s"
