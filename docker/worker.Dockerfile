# syntax=docker/dockerfile:1
# CPU workers (cpu engine: pypdfium2 text layer + RapidOCR, models inside the wheel), and with another command
# the results worker, the reconciler and the migrations — they need the same code and no other packages.
# Build from the repository root: docker build -f docker/worker.Dockerfile -t pagemill-worker .
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
ARG UV_VERSION=0.13.9
RUN python -m venv /opt/venv
WORKDIR /src
# Installed from uv.lock (hash-checked), then pagemill itself without dependencies; not editable: the
# migrations ship inside the package (services/core/db/migrations), so no source tree is needed at run time.
COPY pyproject.toml uv.lock README.md LICENSE ./
RUN python -m pip install uv==${UV_VERSION} \
 && uv export --frozen --no-dev --no-emit-project -o /tmp/requirements.txt \
 && /opt/venv/bin/pip install --upgrade pip && /opt/venv/bin/pip install --require-hashes -r /tmp/requirements.txt
COPY services ./services
RUN /opt/venv/bin/pip install --no-deps . && find /opt/venv -name '__pycache__' -prune -exec rm -rf {} +
# KaTeX for the formulas of document.html (results worker), from its lock file, inside the installed package.
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends npm >/dev/null \
 && npm ci --prefix "$(/opt/venv/bin/python -c 'import pathlib, services.results.render as r; print(pathlib.Path(r.__file__).parent / "katex")')" \
      --no-audit --no-fund --omit=dev

FROM ${PYTHON_IMAGE} AS runtime
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 \
    PROMETHEUS_MULTIPROC_DIR=/tmp/metrics PAGEMILL_DATA_DIR=/tmp/pagemill PAGEMILL_LOG_JSON=true
# LibreOffice converts office, web and e-mail documents (services/worker/office) with only the fonts pinned in
# services/worker/office/fonts.py (the Makefile's OFFICE_FONTS); util-linux brings unshare.
RUN apt-get update && apt-get install -y --no-install-recommends libreoffice-core-nogui libreoffice-writer-nogui \
    libreoffice-calc-nogui libreoffice-impress-nogui \
    fonts-liberation2 fonts-crosextra-carlito fonts-crosextra-caladea fonts-dejavu-core fonts-opensymbol util-linux \
 && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 pagemill && useradd --system --uid 10001 --gid 10001 --no-create-home pagemill
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends nodejs >/dev/null \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/venv /opt/venv
COPY docker/entrypoint.sh /usr/local/bin/pagemill-entrypoint
WORKDIR /app
USER 10001:10001
EXPOSE 9100
ENTRYPOINT ["/usr/local/bin/pagemill-entrypoint"]
CMD ["pagemill", "worker", "--queues", "pages.cpu,documents", "--metrics-port", "9100"]
