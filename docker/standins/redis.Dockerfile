# syntax=docker/dockerfile:1
# Stand-in for redis:7.4-alpine where no registry can be pulled from (make test-deploy): Debian's redis-server,
# the same contract as the official image (data in /data, `redis-server` as the command, redis-cli for the
# health check, not root). Built by tools/images.py --backing.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
FROM ${PYTHON_IMAGE}
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends redis-server >/dev/null \
 && rm -rf /var/lib/apt/lists/* && mkdir -p /data && chown redis:redis /data
COPY docker/standins/redis-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
VOLUME /data
WORKDIR /data
EXPOSE 6379
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
CMD ["redis-server"]
