# Sourced by the scripts that build a venv of their own (.venv-bq, .venv-checkov,
# .venv-spark-*). `venv_ready_or_lock VENV INPUTS` exits the script when VENV was built
# from INPUTS (its stamp file is there); otherwise it takes VENV's lock (one build at a
# time, e.g. parallel test workers), looks again, and sets `stamp`: the file to touch
# once the venv is built.
venv_ready_or_lock() {
  local venv="$1" inputs="$2"
  stamp="$venv/.ready-$(printf '%s' "$inputs" | sha256sum | cut -c1-16)"
  if [ -f "$stamp" ]; then
    exit 0
  fi
  mkdir -p "$venv"
  exec 9>"$venv/.lock"
  flock 9
  if [ -f "$stamp" ]; then
    exit 0
  fi
}
