# pagemill — `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=
CORPUS ?= ../shared/corpus
# The vLLM-on-CPU venv and its tiny model (scripts/vllm/setup.sh; rebuilt only when its inputs change).
VLLM_VENV ?= .venv-vllm

.DEFAULT_GOAL := help

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  \033[1m%-16s\033[0m %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip setuptools wheel
	$(BIN)/python -m pip install -q -e '.[dev]'
	$(MAKE) katex
	touch $(STAMP)

KATEX_DIR := pagemill_eval/katex
katex: ## KaTeX (node) for the olmOCR math rules of `pagemill eval`; skipped with a note when npm is missing
	@if command -v npm >/dev/null; then npm ci --prefix $(KATEX_DIR) --no-audit --no-fund --silent; \
	else echo "npm not found: pagemill eval falls back to comparing LaTeX tokens (docs/evaluation.md)"; fi

install: $(STAMP) ## create .venv and install pagemill with its dev tools

run: $(STAMP) ## start the whole platform on embedded defaults (http://127.0.0.1:8000)
	$(BIN)/pagemill serve

test: $(STAMP) ## run the test suite (starts its own Redis / PostgreSQL / S3 when none is configured)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

FAULTS_REPORT ?= .pagemill/faults-report.json
test-faults: $(STAMP) ## the fault suite: processes SIGKILLed, Redis/PostgreSQL restarted, S3 failing; figures in FAULTS_REPORT
	@rm -f $(FAULTS_REPORT)
	PAGEMILL_FAULTS_REPORT=$(abspath $(FAULTS_REPORT)) $(BIN)/python -m pytest -m faults tests/faults $(PYTEST_ARGS)

SOAK_MINUTES ?= 10
soak: $(STAMP) ## load and soak (not in CI): locust against `pagemill serve` on loopback, figures into docs/reliability.md
	PAGEMILL_CORPUS=$(abspath $(PAGEMILL_CORPUS)) $(BIN)/python -m bench.soak --minutes $(SOAK_MINUTES) --write docs/reliability.md

vllm-env: ## build the vLLM-on-CPU venv and the tiny test model (cached in VLLM_VENV)
	VLLM_VENV=$(abspath $(VLLM_VENV)) scripts/vllm/setup.sh

test-vllm: $(STAMP) vllm-env ## the real-vLLM tier: `vllm serve` on 127.0.0.1 (tiny model, CPU), pages through the workers
	PAGEMILL_VLLM_VENV=$(abspath $(VLLM_VENV)) $(BIN)/python -m pytest -m vllm $(PYTEST_ARGS)

lint: $(STAMP) ## ruff and mypy
	$(BIN)/ruff check services tests bench tools
	$(BIN)/mypy

specsim: $(STAMP) ## anchor-guided speculation on $(CORPUS)/dev (n-gram drafts simulated), written to docs/benchmarks.md
	$(BIN)/pagemill specsim $(CORPUS)/dev --write docs/benchmarks.md

proto: $(STAMP) ## regenerate the Python code of proto/pagemill/v1/*.proto
	$(BIN)/python -m services.core.contracts.generate

migrate: $(STAMP) ## apply database migrations (PAGEMILL_DATABASE_URL, default SQLite in .pagemill/)
	$(BIN)/pagemill migrate

docs: $(STAMP) ## regenerate the settings tables (docs/settings.md, README) from services/core/settings.py
	$(BIN)/pagemill config --write

dashboards: $(STAMP) ## regenerate the Grafana dashboards in charts/pagemill/dashboards/
	$(BIN)/python -m tools.dashboards

ops-tools: ## install promtool and prometheus (Debian package) for the alert-rule and scrape checks
	@command -v promtool >/dev/null && command -v prometheus >/dev/null || { \
	  command -v apt-get >/dev/null || { echo "no apt-get: install Prometheus 2.x by hand"; exit 1; }; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null; }
	@promtool --version | head -1

bench: $(STAMP) ## control-plane benchmark (fake engine vs raw Celery), written to docs/benchmarks.md
	$(BIN)/python -m bench.control_plane --write docs/benchmarks.md

bench-serve: $(STAMP) ## pages/s of `pagemill serve` (cpu engine) over the dev corpus, into docs/benchmarks.md
	$(BIN)/python -m bench.serve_corpus $(PAGEMILL_CORPUS)/dev --write docs/benchmarks.md

bench-fair: $(STAMP) ## fair share between tenants (a 1-page upload beside a 2,000-page one), to docs/fair-share.md
	$(BIN)/python -m bench.fair_share --write docs/fair-share.md

PAGEMILL_CORPUS ?= $(if $(wildcard $(CORPUS)/dev),$(CORPUS),/work/shared/corpus)
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

bench-quality: $(STAMP) $(PEERS_VENV)/.installed ## pagemill cpu vs CPU peers on the dev corpus, into docs/benchmarks.md
	$(BIN)/python -m bench.quality --corpus $(PAGEMILL_CORPUS)/dev --peers-python $(PEERS_VENV)/bin/python \
		--write docs/benchmarks.md --command "make bench-quality"

eval-floor: $(STAMP) ## re-record the scores the eval regression test must keep (after the engine improved)
	$(BIN)/pagemill eval $(PAGEMILL_CORPUS)/dev --engine cpu $(addprefix --cases ,$(EVAL_SLICE)) --json $(EVAL_FLOOR)

.PHONY: help install run test test-faults soak test-vllm vllm-env lint proto migrate bench bench-serve bench-fair dashboards docs ops-tools specsim katex bench-quality eval-floor
