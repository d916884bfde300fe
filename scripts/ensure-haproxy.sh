#!/usr/bin/env bash
# Makes HAProxy available for private proxies in front of clusters (the backend's HAProxy tests, the local stack):
# installs Debian's haproxy when the program is missing. The system service the package brings is never used;
# proxies are started with their own configuration and admin socket, and stopped by pid.
#   scripts/ensure-haproxy.sh      prints the path of the haproxy program
set -euo pipefail

find_haproxy() {
  if command -v haproxy >/dev/null 2>&1; then command -v haproxy
  elif [ -x /usr/sbin/haproxy ]; then echo /usr/sbin/haproxy
  fi
}

if [ -z "$(find_haproxy)" ]; then
  echo "installing HAProxy from Debian packages…" >&2
  # apt-install.sh keeps the package's system service from starting.
  "$(dirname "$0")/apt-install.sh" haproxy
fi

program=$(find_haproxy)
[ -n "$program" ] || { echo "haproxy not found after installing it" >&2; exit 1; }
echo "$program"
