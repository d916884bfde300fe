#!/usr/bin/env bash
# Installs Debian packages (apt-get update, then install, quietly; through sudo unless run as root). Progress goes
# to stderr, so callers that print a result on stdout stay clean. The system services a package brings are not
# started while installing (policy-rc.d, when run as root and none is in place): Ferry runs private instances only.
#   scripts/apt-install.sh PACKAGE...
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 PACKAGE..." >&2; exit 2; }
if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
policy=/usr/sbin/policy-rc.d
added_policy=""
if [ -z "$sudo" ] && [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy"
  chmod +x "$policy"
  added_policy=1
fi
trap '[ -n "$added_policy" ] && rm -f "$policy"' EXIT
$sudo apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >&2
