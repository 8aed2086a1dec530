# Everything runs from a virtual environment at .venv in the checkout; `make setup` makes it.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup demo test lint typecheck schema bench clean

setup: $(STAMP)

# Graphviz's `dot` draws `orch plan graph --format svg`; installed from Debian's packages where
# missing and possible (root with apt-get), else setup says how.
$(STAMP): pyproject.toml
	@command -v dot >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && apt-get install -y -qq graphviz >/dev/null; \
	  else \
	    echo "note: install Graphviz (apt-get install graphviz) for orch ... graph --format svg"; \
	  fi; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: setup
	$(BIN)/orch demo

test: setup
	$(BIN)/python -m pytest

lint: setup
	$(BIN)/ruff check orchestration workflows activities workers tests bench
	$(BIN)/mypy orchestration workflows activities workers
	$(BIN)/orch schema --check

schema: setup
	$(BIN)/orch schema --write schema/orchestration.schema.json

bench: setup
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .data .pytest_cache .mypy_cache .ruff_cache
