#!/usr/bin/env bash
# Installs Debian packages (apt-get update, then install, quietly; through sudo unless run as root). Progress goes
# to stderr, so callers that print a result on stdout stay clean.
#   scripts/apt-install.sh PACKAGE...
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 PACKAGE..." >&2; exit 2; }
if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
$sudo apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >&2
