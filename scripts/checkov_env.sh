#!/usr/bin/env bash
# Create (or check) .venv-checkov: the static analyser checkov, for tests/test_terraform.py.
#
# checkov pins many of its dependencies exactly (boto3, networkx, its own HCL parser …), so it
# lives in its own venv instead of sharing .venv with the project. The tests run it offline
# (--skip-download) against terraform/; there is no terraform binary and no provider download.
# Idempotent: a stamp file makes a second run a no-op.
set -euo pipefail
script="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
cd "$(dirname "$script")/.."

VENV=.venv-checkov
CHECKOV_VERSION=3.3.30

inputs="$CHECKOV_VERSION $(sha256sum "$script" | cut -c1-16)"
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
  echo "checkov_env.sh: no Python 3.11 found (set PYTHON311 or put python3.11 on PATH)" >&2
  exit 1
fi
if ! "$python311" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
  echo "checkov_env.sh: $python311 is not a working Python 3.11" >&2
  exit 1
fi

start=$SECONDS
rm -f "$VENV"/.ready-*
if [ ! -x "$VENV/bin/python" ]; then
  "$python311" -m venv "$VENV"
fi
printf '*\n' >"$VENV/.gitignore"  # keep the venv out of git

# Skip pip when the pinned version is already there (e.g. the stamp's script hash changed).
installed="$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("checkov"))' \
  2>/dev/null || true)"
if [ "$installed" != "$CHECKOV_VERSION" ]; then
  # (the filter drops pip's notes about this machine's absent local indexes; pipefail keeps
  # pip's exit status)
  if ! "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "checkov==$CHECKOV_VERSION" 2>&1 | { grep -v "^WARNING: Location '.*' is ignored" || true; }; then
    echo "checkov_env.sh: pip install failed" >&2
    exit 1
  fi
fi

# The binary runs and reports the pinned version.
version="$("$VENV/bin/checkov" --version)"
if [ "$version" != "$CHECKOV_VERSION" ]; then
  echo "checkov_env.sh: $VENV/bin/checkov reports '$version', expected $CHECKOV_VERSION" >&2
  exit 1
fi

touch "$stamp"
echo "checkov_env.sh: $VENV ready in $((SECONDS - start)) s"
