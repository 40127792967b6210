#!/usr/bin/env bash
# Make sure PostgreSQL's server binaries are installed: a production Prefect server keeps its
# database there (docs/operations.md, "Production"), and the deploy tests start a private cluster
# of their own (tests/deploy/postgres.py). Used by `make postgres` and `make test`. On Debian as
# root it installs Debian's postgresql if needed, without starting the system's cluster (a
# temporary policy-rc.d tells the package's scripts not to start services); elsewhere it says
# what to install and stops. It never starts, stops or configures a cluster.
set -euo pipefail

have_initdb() { compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || command -v initdb >/dev/null 2>&1; }
if have_initdb; then
  exit 0
fi

if [ ! -f /etc/debian_version ] || [ "$(id -u)" != 0 ]; then
  echo "the production topology and its tests need PostgreSQL's server (initdb, pg_ctl, psql):" \
       "install Debian's postgresql (or your system's equivalent), then run this again" >&2
  exit 1
fi

policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  trap 'rm -f "$policy"' EXIT
fi
echo "installing Debian's postgresql (its cluster is not started) ..." >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null
have_initdb || { echo "postgresql was installed but no initdb was found under /usr/lib/postgresql" >&2; exit 1; }
