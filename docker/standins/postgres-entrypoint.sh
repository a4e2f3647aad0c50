#!/bin/sh
# The official postgres image's contract, on Debian's PostgreSQL: a first start makes the cluster in $PGDATA with
# POSTGRES_USER / POSTGRES_PASSWORD and the database POSTGRES_DB; later starts (the volume kept) reuse it.
set -eu
if [ "${1:-}" = "postgres" ]; then
  if [ "$(id -u)" = 0 ]; then
    mkdir -p "$PGDATA" /var/run/postgresql
    chown -R postgres:postgres "$PGDATA" /var/run/postgresql
    chmod 700 "$PGDATA"
    exec setpriv --reuid postgres --regid postgres --init-groups "$0" "$@"
  fi
  if [ ! -s "$PGDATA/PG_VERSION" ]; then
    user="${POSTGRES_USER:-postgres}"
    : "${POSTGRES_PASSWORD:?the stand-in, as the official image, needs POSTGRES_PASSWORD}"
    pwfile=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
    initdb -D "$PGDATA" -U "$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 >/dev/null
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    echo "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"
    db="${POSTGRES_DB:-$user}"
    if [ "$db" != postgres ]; then
      postgres --single -D "$PGDATA" postgres <<SQL >/dev/null
CREATE DATABASE "$db" OWNER "$user";
SQL
    fi
    echo "stand-in postgres: cluster made in $PGDATA (user $user, database $db)"
  fi
fi
exec "$@"
