#!/usr/bin/env bash
# Create (or check) .venv-daft: daft, for tests/test_terraform.py.
#
# daft 0.7 requires pyarrow < 26 while the project runs on pyarrow 26, so it lives in its own
# venv. The tests run it as a child process (tests/iceberg_readers.py): it reads the Iceberg
# metadata hudi_sync publishes with daft's own scan (its Parquet reader and position-delete
# handling, not pyiceberg's) and writes the rows back as an Arrow IPC file.
# Idempotent: a stamp file makes a second run a no-op.
set -euo pipefail
script="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
cd "$(dirname "$script")/.."

VENV=.venv-daft
DAFT_VERSION=0.7.26
PYICEBERG_VERSION=0.12.0

inputs="$DAFT_VERSION $PYICEBERG_VERSION $(sha256sum "$script" | cut -c1-16)"
# shellcheck source=scripts/venv_stamp.sh
source scripts/venv_stamp.sh
venv_ready_or_lock "$VENV" "$inputs"  # exits when built; sets $stamp

find_python311() {
  if [ -n "${PYTHON311:-}" ]; then
    printf '%s\n' "$PYTHON311"
    return
  fi
  if command -v python3.11 >/dev/null 2>&1 && python3.11 -c '' >/dev/null 2>&1; then
    command -v python3.11
    return
  fi
  if command -v python3 >/dev/null 2>&1 \
    && python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
    command -v python3
    return
  fi
  return 1
}

if ! python311="$(find_python311)"; then
  echo "daft_env.sh: no Python 3.11 found (set PYTHON311 or put python3.11 on PATH)" >&2
  exit 1
fi
if ! "$python311" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
  echo "daft_env.sh: $python311 is not a working Python 3.11" >&2
  exit 1
fi

start=$SECONDS
rm -f "$VENV"/.ready-*
if [ ! -x "$VENV/bin/python" ]; then
  "$python311" -m venv "$VENV"
fi
printf '*\n' >"$VENV/.gitignore"  # keep the venv out of git

# Skip pip when the pinned version is already there (e.g. the stamp's script hash changed).
installed="$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("daft"))' \
  2>/dev/null || true)"
if [ "$installed" != "$DAFT_VERSION" ]; then
  # (the filter drops pip's notes about this machine's absent local indexes; pipefail keeps
  # pip's exit status)
  if ! "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "daft==$DAFT_VERSION" "pyiceberg==$PYICEBERG_VERSION" 2>&1 | { grep -v "^WARNING: Location '.*' is ignored" || true; }; then
    echo "daft_env.sh: pip install failed" >&2
    exit 1
  fi
fi

# daft imports and reports the pinned version.
version="$("$VENV/bin/python" -c 'import daft; print(daft.__version__)')"
if [ "$version" != "$DAFT_VERSION" ]; then
  echo "daft_env.sh: $VENV's daft reports '$version', expected $DAFT_VERSION" >&2
  exit 1
fi

touch "$stamp"
echo "daft_env.sh: $VENV ready in $((SECONDS - start)) s"
