#!/usr/bin/env bash
# Installs the PostgreSQL server the team-store tests start (issue 21): Debian's postgresql-15, the
# major version pinned (Debian replaces its patch releases with security updates; the tests need what
# 15 speaks). Idempotent: nothing is installed when its initdb is there. Prints the folder of its
# programs (initdb, pg_ctl); the tests start their own server from it, in a temporary folder, on a
# free loopback port, as an unprivileged user when run as root. Nothing is started here.
set -euo pipefail
PG_MAJOR=15
bin="/usr/lib/postgresql/$PG_MAJOR/bin"
if [ ! -x "$bin/initdb" ] || [ ! -x "$bin/pg_ctl" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq >&2
    # The server package alone: postgresql-common's cluster is neither made nor started here.
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "postgresql-$PG_MAJOR" >&2
  else
    echo "setup-postgres: please install postgresql-$PG_MAJOR (Debian) for the team-store tests" >&2
    exit 1
  fi
fi
[ -x "$bin/initdb" ] || { echo "setup-postgres: $bin/initdb missing after install" >&2; exit 1; }
echo "$bin"
