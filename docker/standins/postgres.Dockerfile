# syntax=docker/dockerfile:1
# Stand-in for postgres:16-alpine where no registry can be pulled from (make test-deploy): Debian's PostgreSQL
# behind the official image's contract: POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB, data in
# /var/lib/postgresql/data, password authentication over TCP, pg_isready for the health check, not root.
# Built by tools/images.py --backing.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
FROM ${PYTHON_IMAGE}
# No cluster at install time: the entry point makes one in the volume on the first start, as the official image.
RUN mkdir -p /etc/postgresql-common/createcluster.d \
 && echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/no-main.conf \
 && apt-get update -qq && apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
 && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
COPY docker/standins/postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
VOLUME /var/lib/postgresql/data
EXPOSE 5432
STOPSIGNAL SIGINT
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
CMD ["postgres"]
