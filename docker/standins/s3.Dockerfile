# syntax=docker/dockerfile:1
# Stand-in for MinIO where no registry can be pulled from (make test-deploy): moto's S3 server (PyPI, the one the
# test harness uses in tests/servers.py) on port 9000, taking MinIO's command line (`server /data ...`) and
# MINIO_ROOT_USER / MINIO_ROOT_PASSWORD, with `mc ready local` for the health check. Moto keeps objects in memory:
# the server journals each request to /data and replays the journal on start, so a kept volume keeps the bucket
# across `down` / `up` as MinIO's does. Built by tools/images.py --backing.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
FROM ${PYTHON_IMAGE}
ARG MOTO_VERSION=5.2.5
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/moto && /opt/moto/bin/pip install -q "moto[s3,server]==${MOTO_VERSION}" \
 && groupadd --system --gid 10002 s3 && useradd --system --uid 10002 --gid 10002 --no-create-home s3 \
 && mkdir -p /data && chown s3:s3 /data
COPY docker/standins/s3-server.py /usr/local/bin/minio
COPY docker/standins/s3-ready.py /usr/local/bin/mc
VOLUME /data
EXPOSE 9000
USER 10002:10002
ENTRYPOINT ["/usr/local/bin/minio"]
CMD ["server", "/data"]
