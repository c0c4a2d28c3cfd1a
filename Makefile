# One entry point for people and CI. `make run` and `make test` work on a fresh machine:
# they create .venv and install what they need first.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=
# The compiled core: Cython twins of a few hot pure modules (see hatch_build.py).
CORE := $(VENV)/.core

.PHONY: run test lint typecheck unit dev clean docs site test-tools core protos

$(BIN)/mq: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $@ $(CORE)

$(VENV)/.dev: $(BIN)/mq
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

# The compiled core, in place: hatch_build.py compiles each .pyx whose extension is missing
# or was built from other sources (its .pyx or a shared .pxd changed; 0.2 s when all are
# current), where Cython is in the venv (dev);
# elsewhere (make run) the editable install's build hook does it when a .pyx or .pxd changed.
# Without a C compiler both go on with the pure twins (one line says so); a stale
# extension is refused at import.
core: | $(BIN)/mq
	@if $(BIN)/python -c 'import Cython' 2>/dev/null; then $(BIN)/python hatch_build.py --quiet; \
	elif [ -n "$$(find mqcore \( -name '_*.pyx' -o -name '*.pxd' \) -newer $(CORE))" ]; then \
	  $(BIN)/pip install -q --no-deps -e . && touch $(CORE); fi

dev: $(VENV)/.dev
	@$(MAKE) --no-print-directory core

run: $(BIN)/mq core
	$(BIN)/mq up $(ARGS)

lint: dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check mqcore mqcli tests bench

typecheck: dev
	$(BIN)/mypy

# Programs the tests run beside mq: a real Prometheus server scrapes a broker in
# tests/integration/test_metrics_prometheus.py. Installed from the distribution where we
# may (root with apt-get, as CI runs); elsewhere that test is skipped and says why.
APT_INSTALL := DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends
test-tools:
	@if ! command -v prometheus >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing prometheus (apt-get) for the metrics tests"; \
	    $(APT_INSTALL) prometheus >/dev/null || \
	      { apt-get update -qq && $(APT_INSTALL) prometheus >/dev/null; }; \
	  else \
	    echo "note: no prometheus here and no root to install it: its test is skipped"; \
	  fi; \
	fi

# The suite runs on the compiled core; then the unit tests of the modules with a compiled
# twin once more on the pure ones (MQ_NO_EXTENSIONS=1), seconds, not a second full pass:
# the parity tests (left out there) have already compared both cores.
PURE_SUBSET := tests/unit/protocol/test_codec.py tests/unit/protocol/test_fast_paths.py \
	tests/unit/protocol/test_headers.py \
	tests/unit/message tests/unit/common/test_common.py tests/unit/common/test_core.py \
	tests/unit/store/test_index_file.py tests/unit/store/test_commitlog_encoding.py \
	tests/unit/store/test_deferred_dispatch.py tests/unit/client/test_pull_decode.py

# worksteal: a worker that runs out of tests takes queued ones from the other, so a slow
# test near the end does not leave one core idle while the other works through a queue.
unit: dev test-tools
	$(BIN)/pytest -n 2 --dist worksteal $(PYTEST_ARGS)
	MQ_NO_EXTENSIONS=1 $(BIN)/pytest -q -p no:cacheprovider -k "not compiled" $(PURE_SUBSET)

# The documentation site, with warnings as errors (a broken link or a docstring the API
# reference cannot read fails the build); it lands in build/site.
site: dev
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# Lint first (seconds; a style slip fails at once). The type check and the site build then
# run beside the suite: its tests spend half their time waiting on the processes they
# start (one core busy on average), so the other two fit in that time instead of adding a
# minute and a half before it. Their few lines of output come between the suite's.
test: lint
	@$(MAKE) --no-print-directory -j3 typecheck site unit

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache build/site build/cython
	find mqcore -name '_*.so' -delete

# Regenerates the man pages and completion scripts from the command tree.
docs: $(BIN)/mq
	$(BIN)/python -m mqcli.docgen .

# The gRPC access point's generated code (mqcore/proxy/grpc_v2), checked in: regenerate it
# after changing the vendored apache/rocketmq-apis protos. protoc writes the files under
# the protos' own path (apache/rocketmq/v2); they move up into the package, and their
# imports of each other become relative so the package needs no top-level `apache`.
GRPC_V2 := mqcore/proxy/grpc_v2
protos: dev
	@tmp=$$(mktemp -d) && \
	$(BIN)/python -m grpc_tools.protoc -I $(GRPC_V2)/proto --python_out=$$tmp --pyi_out=$$tmp \
	  --grpc_python_out=$$tmp $(GRPC_V2)/proto/apache/rocketmq/v2/*.proto && \
	for f in $$tmp/apache/rocketmq/v2/*; do \
	  sed -e 's/^from apache\.rocketmq\.v2 import /from . import /' \
	      -e 's/^import apache\.rocketmq\.v2\.\([a-z_]*\)_pb2 as /from . import \1_pb2 as /' \
	      $$f > $(GRPC_V2)/$$(basename $$f); \
	done; rm -rf $$tmp
