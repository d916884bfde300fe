#!/usr/bin/env bash
# Installs, in one apt transaction (one `apt-get update`, one install), every Debian package the test suites use that
# is missing: PostgreSQL (the backend's database), MariaDB server and client (private mariadbd instances), HAProxy
# (private proxies), mariadb-backup and OpenSSH's server (a rebuild's copy between private mariadbd instances, over a
# private sshd) and Chromium (the end-to-end suite). The scripts that need each (ensure-postgres.sh,
# ensure-mariadb.sh, ensure-haproxy.sh, test-e2e.sh) still install their own when run alone; `make test` runs this
# first in the background so the downloads and unpacking overlap the engine's build and tests.
#   scripts/ensure-packages.sh             install what is missing now
#   scripts/ensure-packages.sh start DIR   the same in the background (its log, pid and exit code in DIR)
#   scripts/ensure-packages.sh wait DIR    wait for that background install; its log and a failure when it failed
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

have() {
  command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/usr/bin/$1" ]
}

missing() {
  local packages=()
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then packages+=(postgresql); fi
  if ! have mariadbd || ! have mariadb-install-db || ! have mariadb; then packages+=(mariadb-server mariadb-client); fi
  if ! have haproxy; then packages+=(haproxy); fi
  if ! have mariadb-backup || ! have mbstream; then packages+=(mariadb-backup); fi
  if ! have sshd || ! have ssh-keygen; then packages+=(openssh-server); fi
  if [ ! -x "${FERRY_E2E_CHROMIUM:-/usr/bin/chromium-headless-shell}" ]; then packages+=(chromium-headless-shell); fi
  echo "${packages[@]}"
}

install_now() {
  local packages
  packages=$(missing)
  if [ -z "$packages" ]; then
    echo "Debian packages: everything the suites use is installed" >&2
    return 0
  fi
  echo "installing from Debian packages: $packages" >&2
  # shellcheck disable=SC2086 # one word per package
  "$here/apt-install.sh" $packages
}

case "${1:-now}" in
  now)
    install_now
    ;;
  start)
    dir=${2:?usage: $0 start DIR}
    mkdir -p "$dir"
    rm -f "$dir/rc"
    ( install_now > "$dir/log" 2>&1; echo $? > "$dir/rc" ) &
    echo $! > "$dir/pid"
    ;;
  wait)
    dir=${2:?usage: $0 wait DIR}
    [ -f "$dir/pid" ] || { echo "no background install was started in $dir" >&2; exit 1; }
    # The subshell is this script's child only in the shell that started it, so wait for its exit code file (it is
    # written last); a bound keeps a hung apt from stalling the suite for ever.
    for _ in $(seq 1 3600); do
      [ -s "$dir/rc" ] && break
      if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null && [ ! -s "$dir/rc" ]; then
        sleep 1
        [ -s "$dir/rc" ] || { echo "the background package install ended without an exit code" >&2; cat "$dir/log" >&2; exit 1; }
      fi
      sleep 1
    done
    [ -s "$dir/rc" ] || { echo "the background package install did not finish within an hour" >&2; cat "$dir/log" >&2; exit 1; }
    cat "$dir/log" >&2
    rc=$(cat "$dir/rc")
    [ "$rc" = 0 ] || { echo "installing Debian packages failed (exit $rc)" >&2; exit "$rc"; }
    ;;
  *)
    echo "usage: $0 [now | start DIR | wait DIR]" >&2
    exit 2
    ;;
esac
