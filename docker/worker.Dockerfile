# syntax=docker/dockerfile:1
# CPU workers (cpu engine: pypdfium2 text layer + RapidOCR, models inside the wheel), and with another command
# the results worker, the reconciler and the migrations — they need the same code and no other packages.
# Build from the repository root: docker build -f docker/worker.Dockerfile -t pagemill-worker .
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY services ./services
COPY proto ./proto
RUN pip install --upgrade pip setuptools wheel && pip install -e . \
 && find /opt/venv -name '__pycache__' -prune -exec rm -rf {} +
# KaTeX for the formulas of document.html (results worker), from the lock file; npm stays in this stage.
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends npm >/dev/null \
 && npm ci --prefix services/results/render/katex --no-audit --no-fund --omit=dev

FROM ${PYTHON_IMAGE} AS runtime
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 \
    PROMETHEUS_MULTIPROC_DIR=/tmp/metrics PAGEMILL_DATA_DIR=/tmp/pagemill PAGEMILL_LOG_JSON=true
RUN groupadd --system --gid 10001 pagemill && useradd --system --uid 10001 --gid 10001 --no-create-home pagemill
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends nodejs >/dev/null \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/venv /opt/venv
COPY --from=build /app /app
COPY docker/entrypoint.sh /usr/local/bin/pagemill-entrypoint
WORKDIR /app
USER 10001:10001
EXPOSE 9100
ENTRYPOINT ["/usr/local/bin/pagemill-entrypoint"]
CMD ["pagemill", "worker", "--queues", "pages.cpu,documents", "--metrics-port", "9100"]
