#!/bin/sh
# Entry point of every pagemill image: start each container with an empty Prometheus multiprocess folder.
# prometheus_client keeps one file per process there; files left by the previous run of this container (a crash,
# a restart in the same pod) would otherwise add stale gauges and double counters.
set -eu
if [ -n "${PROMETHEUS_MULTIPROC_DIR:-}" ]; then
  mkdir -p "$PROMETHEUS_MULTIPROC_DIR"
  find "$PROMETHEUS_MULTIPROC_DIR" -mindepth 1 -delete
fi
exec "$@"
