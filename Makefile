# pagemill — `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

.DEFAULT_GOAL := help

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  \033[1m%-16s\033[0m %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip setuptools wheel
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP) ## create .venv and install pagemill with its dev tools

run: $(STAMP) ## start the whole platform on embedded defaults (http://127.0.0.1:8000)
	$(BIN)/pagemill serve

test: $(STAMP) ## run the test suite (starts its own Redis / PostgreSQL / S3 when none is configured)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(STAMP) ## ruff and mypy
	$(BIN)/ruff check services tests
	$(BIN)/mypy

proto: $(STAMP) ## regenerate the Python code of proto/pagemill/v1/*.proto
	$(BIN)/python -m services.core.contracts.generate

migrate: $(STAMP) ## apply database migrations (PAGEMILL_DATABASE_URL, default SQLite in .pagemill/)
	$(BIN)/pagemill migrate

bench: $(STAMP) ## control-plane benchmark (fake engine vs raw Celery), written to docs/benchmarks.md
	$(BIN)/python -m bench.control_plane --write docs/benchmarks.md

.PHONY: help install run test lint proto migrate bench
