#!/usr/bin/env bash
# A PostgreSQL server for tests/state (which must run, never skip, under CI=true):
#   - one already accepting connections on 127.0.0.1:$PGPORT (default 5432) is used as it is;
#   - else Debian's postgresql package is installed if missing (apt-get, root only) and a throwaway
#     cluster (trust auth, superuser `postgres`, database `test`) is started under .cache/postgres,
#     listening on 127.0.0.1 only. `.ci/setup.d/postgres.sh stop` stops that cluster.
# Idempotent: with a server running it only checks.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
port="${PGPORT:-5432}"
data="$root/.cache/postgres/data-$port"

find_bin() {
    local d
    for d in /usr/lib/postgresql/*/bin; do
        if [ -x "$d/pg_ctl" ]; then echo "$d"; return 0; fi
    done
    return 1
}

as_owner() {  # initdb and postgres refuse to run as root
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

if [ "${1:-}" = "stop" ]; then
    bin="$(find_bin)" && [ -d "$data" ] && as_owner "$bin/pg_ctl" -D "$data" stop -m fast || true
    exit 0
fi

ready() { pg_isready -q -h 127.0.0.1 -p "$port" 2>/dev/null; }
if command -v pg_isready >/dev/null 2>&1 && ready; then
    exit 0
fi

if ! bin="$(find_bin)"; then
    if [ "$(id -u)" != 0 ]; then
        echo "postgres.sh: no PostgreSQL server on 127.0.0.1:$port and not root to install one" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq postgresql >/dev/null
    bin="$(find_bin)"
fi

mkdir -p "$(dirname "$data")"
if [ "$(id -u)" = 0 ]; then chown postgres "$(dirname "$data")"; fi
if [ ! -f "$data/PG_VERSION" ]; then
    as_owner "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 >/dev/null
fi
as_owner "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $data" start >/dev/null
as_owner "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'test'" \
    | grep -q 1 || as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres test
echo "postgres.sh: started PostgreSQL on 127.0.0.1:$port (data $data)"
