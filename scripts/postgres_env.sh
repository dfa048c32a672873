#!/usr/bin/env bash
# PostgreSQL 15 server binaries for the Debezium tests (tests/postgres_server.py starts a
# throw-away server from them). Installed from Debian's packages when missing.
set -euo pipefail
if [ -x /usr/lib/postgresql/15/bin/postgres ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo -n"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q >/dev/null
$SUDO apt-get install -y -q --no-install-recommends postgresql-15 >/dev/null
# The package starts a cluster of its own; the tests start theirs.
$SUDO service postgresql stop >/dev/null 2>&1 || true
