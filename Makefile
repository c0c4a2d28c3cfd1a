# One entry point for people and CI. `make run` and `make test` work on a fresh machine:
# they create .venv and install what they need first.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: run test lint typecheck unit dev clean docs site

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
	$(BIN)/mq up $(ARGS)

lint: dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check mqcore mqcli tests bench

typecheck: dev
	$(BIN)/mypy

unit: dev
	$(BIN)/pytest -n 2 $(PYTEST_ARGS)

# The documentation site, with warnings as errors (a broken link or a docstring the API
# reference cannot read fails the build); it lands in build/site.
site: dev
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

test: lint typecheck site unit

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache build/site

# Regenerates the man pages and completion scripts from the command tree.
docs: $(BIN)/mq
	$(BIN)/python -m mqcli.docgen .
