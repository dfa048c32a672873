#!/usr/bin/env bash
# Create (or check) .venv-spark-<major.minor>: another PySpark line beside .venv's, for the
# compat tier (`pytest -m spark_compat`, run by scripts/test.sh; docs/testing.md).
#
#   scripts/spark_line_env.sh 4.3.0    # -> .venv-spark-4.3
#
# The venv holds only pyspark and what that line needs beyond .venv (Spark Connect needs
# zstandard from 4.1 on); a .pth line adds .venv's site-packages after its own, so the
# project (editable), pandas, pyarrow, hudi-rs and the test tools are .venv's while
# `import pyspark` finds this line's. pip runs with --no-deps --ignore-installed, so it
# never touches .venv (which it sees through the .pth). Run scripts/bootstrap.sh first.
# Idempotent: a stamp file makes a second run a no-op.
set -euo pipefail
script="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
cd "$(dirname "$script")/.."

version="${1:-}"
if ! [[ "$version" =~ ^([0-9]+)\.([0-9]+)\.[0-9]+$ ]]; then
  echo "usage: scripts/spark_line_env.sh PYSPARK_VERSION (e.g. 4.3.0)" >&2
  exit 2
fi
line="${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
VENV=".venv-spark-$line"

# What a line needs beyond .venv, by line.
packages=("pyspark==$version")
case "$line" in
  3.* | 4.0) ;;
  *) packages+=("zstandard==0.25.0") ;; # Spark Connect's client compresses with it (4.1+)
esac

if [ ! -x .venv/bin/python ]; then
  echo "spark_line_env.sh: no .venv (run scripts/bootstrap.sh first)" >&2
  exit 1
fi
base_site="$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"

inputs="${packages[*]} $base_site $(sha256sum "$script" | cut -c1-16)"
# shellcheck source=scripts/venv_stamp.sh
source scripts/venv_stamp.sh
venv_ready_or_lock "$VENV" "$inputs"  # exits when built; sets $stamp

start=$SECONDS
rm -f "$VENV"/.ready-*
if [ ! -x "$VENV/bin/python" ]; then
  # .venv's interpreter (venv makes the new one from its base Python): same version, so
  # .venv's compiled packages load.
  .venv/bin/python -m venv --without-pip "$VENV"
fi
printf '*\n' >"$VENV/.gitignore" # keep the venv out of git
site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
# After this venv's own site-packages: addsitedir appends, and runs .venv's .pth files
# (the editable install of the project) too.
printf "import site; site.addsitedir('%s')\n" "$base_site" >"$site/_hudi_sync_base_venv.pth"

installed="$("$VENV/bin/python" - "$site" "${packages[@]}" <<'EOF'
import importlib.metadata as m
import sys

site, wanted = sys.argv[1], sys.argv[2:]
found = {d.metadata["Name"].lower(): d.version for d in m.distributions(path=[site])}
print(all(found.get(p.split("==")[0]) == p.split("==")[1] for p in wanted))
EOF
)"
if [ "$installed" != "True" ]; then
  # (PyPI has pyspark as a source archive of about 450 MB: pip builds the wheel once and
  # keeps it in its cache. The filter drops pip's notes about this machine's absent local
  # indexes; pipefail keeps pip's exit status.)
  if ! "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
    --ignore-installed "${packages[@]}" 2>&1 | { grep -v "^WARNING: Location '.*' is ignored" || true; }; then
    echo "spark_line_env.sh: pip install failed" >&2
    exit 1
  fi
fi

# This line's pyspark wins, and the project and .venv's packages are seen.
"$VENV/bin/python" - "$version" "$site" <<'EOF'
import os
import sys

import pyarrow  # noqa: F401  (.venv's)
import pyspark

import hudi_sync  # noqa: F401  (.venv's editable install)

version, site = sys.argv[1], sys.argv[2]
assert pyspark.__version__ == version, f"pyspark {pyspark.__version__}, expected {version}"
assert os.path.realpath(pyspark.__file__).startswith(os.path.realpath(site)), pyspark.__file__
EOF

touch "$stamp"
echo "spark_line_env.sh: $VENV (pyspark $version) ready in $((SECONDS - start)) s"
