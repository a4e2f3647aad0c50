#!/bin/sh
# Installs Debian packages for the Makefile's *-tools targets (ops, browser, tex, office, container tools):
# the one place the apt-get line is written. Usage: scripts/apt-tools.sh PACKAGE...
# As root it runs apt-get itself, otherwise through sudo; without apt-get it says what to install and fails.
set -eu
[ "$#" -gt 0 ] || { echo "usage: $0 PACKAGE..." >&2; exit 2; }
command -v apt-get >/dev/null || { echo "no apt-get here: install by hand: $*" >&2; exit 1; }
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
