# Sourced by scripts that need Python 3.13 (bigquery_emulator_env.sh, install_check.sh).
# find_python313 prints a working Python 3.13's path: $PYTHON313, else python3.13 on PATH,
# else pyenv's first 3.13.x; it returns 1 when none of these is a working 3.13.

find_python313() {
  local candidate=""
  if [ -n "${PYTHON313:-}" ]; then
    candidate="$PYTHON313"
  elif command -v python3.13 >/dev/null 2>&1 && python3.13 -c '' >/dev/null 2>&1; then
    candidate="$(command -v python3.13)"
  elif command -v pyenv >/dev/null 2>&1; then
    local found
    for found in "$(pyenv root)"/versions/3.13.*/bin/python3; do
      if [ -x "$found" ]; then
        candidate="$found"
        break
      fi
    done
  fi
  if [ -z "$candidate" ] ||
    ! "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 13))' 2>/dev/null; then
    return 1
  fi
  printf '%s\n' "$candidate"
}
