#!/usr/bin/env bash
# Makes sure a PostgreSQL server answers on 127.0.0.1:5432 for the tests and
# prints the admin connection URL they should use. Uses the server that is
# already running; otherwise installs Debian's postgresql, starts it, and
# gives the postgres role a password for TCP logins.
set -euo pipefail
url_trust="postgres://postgres@127.0.0.1:5432/postgres"
url_pw="postgres://postgres:postgres@127.0.0.1:5432/postgres"

if [ -n "${MEDIAGEN_TEST_POSTGRES_URL:-}" ]; then echo "$MEDIAGEN_TEST_POSTGRES_URL"; exit 0; fi

can_login() { PGCONNECT_TIMEOUT=3 psql "$1" -qtAc 'select 1' >/dev/null 2>&1; }

if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  SUDO=$([ "$(id -u)" -ne 0 ] && echo sudo || true)
  if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
    echo "ensure-postgres: installing postgresql" >&2
    $SUDO apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq postgresql >&2
  fi
  version=$(ls /etc/postgresql | sort -V | tail -1)
  echo "ensure-postgres: starting PostgreSQL $version" >&2
  $SUDO pg_ctlcluster --skip-systemctl-redirect "$version" main start >&2 || true
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
fi
pg_isready -q -h 127.0.0.1 -p 5432 || { echo "ensure-postgres: PostgreSQL did not start" >&2; exit 1; }

if can_login "$url_trust"; then echo "$url_trust"; exit 0; fi
if ! can_login "$url_pw"; then
  SUDO=$([ "$(id -u)" -ne 0 ] && echo sudo || true)
  $SUDO su postgres -c "psql -qc \"ALTER USER postgres PASSWORD 'postgres'\"" >&2
fi
can_login "$url_pw" || { echo "ensure-postgres: cannot log in to PostgreSQL" >&2; exit 1; }
echo "$url_pw"
