# syntax=docker/dockerfile:1
# The HTTP gateway: validates uploads, writes rows, queues page jobs, serves results and /metrics.
# Build from the repository root: docker build -f docker/gateway.Dockerfile -t pagemill-gateway .
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
ARG UV_VERSION=0.13.9
RUN python -m venv /opt/venv
WORKDIR /src
# Installed from uv.lock (hash-checked), then pagemill itself without dependencies; not editable: the
# migrations ship inside the package (services/core/db/migrations), so no source tree is needed at run time.
# The gateway never runs an engine, so the OCR stack stays out (tests/unit/test_images.py checks it is never
# imported): --prune drops rapidocr and onnxruntime with what only they need (opencv, shapely, ...).
COPY pyproject.toml uv.lock README.md LICENSE ./
RUN python -m pip install uv==${UV_VERSION} \
 && uv export --frozen --no-dev --no-emit-project --prune rapidocr --prune onnxruntime -o /tmp/requirements.txt \
 && /opt/venv/bin/pip install --upgrade pip && /opt/venv/bin/pip install --require-hashes -r /tmp/requirements.txt
COPY services ./services
RUN /opt/venv/bin/pip install --no-deps . && find /opt/venv -name '__pycache__' -prune -exec rm -rf {} +

FROM ${PYTHON_IMAGE} AS runtime
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 \
    PROMETHEUS_MULTIPROC_DIR=/tmp/metrics PAGEMILL_DATA_DIR=/tmp/pagemill PAGEMILL_LOG_JSON=true
RUN groupadd --system --gid 10001 pagemill && useradd --system --uid 10001 --gid 10001 --no-create-home pagemill
COPY --from=build /opt/venv /opt/venv
COPY docker/entrypoint.sh /usr/local/bin/pagemill-entrypoint
WORKDIR /app
USER 10001:10001
EXPOSE 8000
ENTRYPOINT ["/usr/local/bin/pagemill-entrypoint"]
CMD ["pagemill", "gateway", "--host", "0.0.0.0", "--port", "8000"]
