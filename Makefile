# The two commands a newcomer needs (see README):
#   make run   — set up the virtual environment if missing, then serve Clarion on SQLite
#   make test  — set up the virtual environment if missing, then run every check and test
# and the inner loop: make quick — lint, then the tests that need neither PostgreSQL, a browser
# nor a wheel build.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.clarion-installed

.PHONY: run test quick screenshots setup chromium lint typecheck unit bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip setuptools wheel
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(BIN)/clarion serve

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks docs/examples
	$(BIN)/ruff format --check src tests benchmarks docs/examples
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy -p clarion
	$(BIN)/mypy tests benchmarks docs/examples

# The browser tests drive Debian's chromium (installed here when missing; needs root/apt).
chromium:
	bash scripts/ensure-chromium.sh

# Tests run in parallel worker processes (pytest-xdist): one per core, at most four; each worker
# that needs PostgreSQL without CLARION_TEST_POSTGRES_URL starts its own embedded server.
PARALLEL ?= -n auto --maxprocesses 4 --dist loadgroup

unit: $(STAMP) chromium
	$(BIN)/python -m pytest $(PARALLEL) --cov --cov-report=term-missing:skip-covered

test: lint typecheck unit

quick: lint
	$(BIN)/python -m pytest $(PARALLEL) -q -m "not postgres and not browser and not slow"

# Rewrites docs/screenshots/*.png from a real server (the test run writes them to a temporary
# directory otherwise).
screenshots: $(STAMP) chromium
	CLARION_UPDATE_SCREENSHOTS=1 $(BIN)/python -m pytest -q tests/e2e/test_screenshots.py

# Speed and memory figures (printed, never asserted); PostgreSQL parts use
# CLARION_TEST_POSTGRES_URL. See docs/performance.md for the figures and quicker flags.
bench: $(STAMP)
	$(BIN)/python benchmarks/sql_bench.py
	$(BIN)/python benchmarks/waiters_bench.py
	$(BIN)/python -m benchmarks.multiprocess_bench

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .import_linter_cache .hypothesis .coverage build dist
