#!/usr/bin/env bash
# Makes MariaDB's server and client programs available for private, throwaway instances (the backend's `mariadb`
# driver tests and the MariaDB stack): installs Debian's mariadb-server and mariadb-client when `mariadbd` or
# `mariadb-install-db` is missing. The system service the package brings is never used; instances are started by
# scripts/mariadb_cluster.py in directories of their own.
#   scripts/ensure-mariadb.sh      prints the directory holding mariadbd (usually /usr/sbin)
set -euo pipefail

find_program() {
  # /usr/sbin is not on every user's PATH, but that is where Debian puts mariadbd.
  local name=$1
  if command -v "$name" >/dev/null 2>&1; then
    command -v "$name"
  elif [ -x "/usr/sbin/$name" ]; then
    echo "/usr/sbin/$name"
  elif [ -x "/usr/bin/$name" ]; then
    echo "/usr/bin/$name"
  fi
}

if [ -z "$(find_program mariadbd)" ] || [ -z "$(find_program mariadb-install-db)" ] || [ -z "$(find_program mariadb)" ]; then
  echo "installing MariaDB from Debian packages…" >&2
  # apt-install.sh keeps the package's system service from starting.
  "$(dirname "$0")/apt-install.sh" mariadb-server mariadb-client
fi

server=$(find_program mariadbd)
[ -n "$server" ] || { echo "mariadbd not found after installing mariadb-server" >&2; exit 1; }
dirname "$server"
