#!/bin/sh
# As the official image's entry point: data owned by redis, the server run as redis, and without a config file
# no protected mode (the other containers of the network connect without a password).
set -eu
if [ "${1:-}" = "redis-server" ]; then
  if [ "$(id -u)" = 0 ]; then
    chown -R redis:redis /data
    exec setpriv --reuid redis --regid redis --init-groups "$0" "$@"
  fi
  case "${2:-}" in
    *.conf) ;;
    *) shift; set -- redis-server --protected-mode no --dir /data "$@" ;;
  esac
fi
exec "$@"
