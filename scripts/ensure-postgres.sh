#!/usr/bin/env bash
# A throwaway PostgreSQL server for the backend tests, installed from Debian's packages when absent.
#
#   scripts/ensure-postgres.sh start DIR   initdb in DIR (owned by the postgres user when run as root, since
#                                          initdb refuses root), start the server listening only on a unix
#                                          socket in DIR, and print its URL: postgresql+psycopg://…
#   scripts/ensure-postgres.sh stop DIR    stop that server (DIR itself is left for the caller to remove)
set -euo pipefail

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
action=$1
dir=$(realpath -m "$2")

pg_bin() {
  local found
  found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -z "$found" ] && command -v pg_config >/dev/null; then
    found=$(pg_config --bindir)
  fi
  echo "$found"
}

as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

bin=$(pg_bin)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  [ "$action" = start ] || { echo "PostgreSQL is not installed" >&2; exit 1; }
  echo "installing PostgreSQL from Debian packages…" >&2
  "$(dirname "$0")/apt-install.sh" postgresql
  bin=$(pg_bin)
fi

case "$action" in
  start)
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; fi
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      as_owner "$bin/initdb" --pgdata="$dir/data" --username=postgres --auth=trust --encoding=UTF8 \
        --no-sync >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
    fi
    # Durability is irrelevant for a throwaway test server; fsync off keeps the tests fast on a small machine.
    as_owner "$bin/pg_ctl" --pgdata="$dir/data" --log="$dir/postgres.log" --wait --timeout=60 \
      -o "-c listen_addresses='' -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
      start >/dev/null || { cat "$dir/postgres.log" >&2; exit 1; }
    echo "postgresql+psycopg://postgres@/postgres?host=$dir"
    ;;
  stop)
    if [ -f "$dir/data/postmaster.pid" ]; then
      as_owner "$bin/pg_ctl" --pgdata="$dir/data" --mode=fast --wait stop >/dev/null
    fi
    ;;
  *) usage ;;
esac
