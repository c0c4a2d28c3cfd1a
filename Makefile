# One entry point for people and CI. `make run` and `make test` work on a fresh machine:
# they create .venv and install what they need first.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: run test lint typecheck unit dev clean docs

$(BIN)/mq: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.dev: $(BIN)/mq
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

dev: $(VENV)/.dev

run: $(BIN)/mq
	$(BIN)/mq up

lint: dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check mqcore mqcli tests bench

typecheck: dev
	$(BIN)/mypy

unit: dev
	$(BIN)/pytest -n 2 $(PYTEST_ARGS)

test: lint typecheck unit

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

docs: $(BIN)/mq
	$(BIN)/python -m mqcli.docgen .
