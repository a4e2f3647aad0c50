# syntax=docker/dockerfile:1
# GPU page workers. No CUDA here: the worker sends pages to the vLLM server beside it (the upstream vLLM image,
# a sidecar) over HTTP. It keeps the cpu engine for the flagged fallback after the retry ladder gives up.
# Build from the repository root: docker build -f docker/worker-gpu.Dockerfile -t pagemill-worker-gpu .
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

FROM ${PYTHON_IMAGE} AS runtime
# The vLLM release this worker speaks to (VLLM_VERSION at the repository root; make images passes it): run the
# sidecar vllm/vllm-openai:v<this>, as docker/compose.yaml and the chart do.
ARG VLLM_VERSION=0.32.0
LABEL io.pagemill.vllm-version="${VLLM_VERSION}"
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 \
    PROMETHEUS_MULTIPROC_DIR=/tmp/metrics PAGEMILL_DATA_DIR=/tmp/pagemill PAGEMILL_LOG_JSON=true \
    PAGEMILL_ENGINE__KIND=vllm
# /run/pagemill: where `pagemill vllm-command` writes the vLLM line for the sidecar (a new volume takes this owner).
RUN groupadd --system --gid 10001 pagemill && useradd --system --uid 10001 --gid 10001 --no-create-home pagemill \
 && mkdir -p /run/pagemill && chown 10001:10001 /run/pagemill
COPY --from=build /opt/venv /opt/venv
COPY docker/entrypoint.sh /usr/local/bin/pagemill-entrypoint
WORKDIR /app
USER 10001:10001
EXPOSE 9100
ENTRYPOINT ["/usr/local/bin/pagemill-entrypoint"]
# Threads = requests in flight against vLLM = its --max-num-seqs (PAGEMILL_ENGINE__MAX_IN_FLIGHT, default 8).
CMD ["pagemill", "worker", "--queues", "pages.gpu", "--pool", "threads", "--concurrency", "8", "--metrics-port", "9100"]
