# The two commands a newcomer needs (see README):
#   make run   — set up the virtual environment with the runtime dependencies, then serve Clarion
#                on SQLite (`make run EXTRAS=1`: with the optional extras otel, apprise and slack)
#   make test  — set up the virtual environment with the test toolchain, then run every check and
#                test
# and the inner loop: make quick — lint, then the in-process tests, half a minute on two idle
# cores (below).
# `make lock` regenerates the lock files (README, "Dependencies").
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: run test quick screenshots setup chromium lint typecheck unit bench lock clean

# Every dependency comes from a lock file: exact versions, each checked against its sha256 hashes.
# First requirements/build.txt upgrades pip, setuptools and wheel (the pip a new virtual
# environment ships takes twice as long over the rest). Then `make run` installs
# requirements/run.txt (the runtime dependencies only; with EXTRAS=1 requirements/extras.txt,
# those plus the `otel`, `apprise` and `slack` extras) and every other target
# requirements/test.txt (all of those at the same versions, plus the `test` and `lock` extras).
# Each has its own stamp, so a virtual environment made by `make run` gets the test toolchain on
# the first `make test`, and an edit of pyproject.toml or of a lock file reinstalls. Clarion itself is
# installed editable, without dependencies (the lock file has them all) and without build
# isolation (which would fetch setuptools and wheel unpinned).
EXTRAS ?=
RUN_LOCK := requirements/$(if $(EXTRAS),extras,run).txt
RUN_STAMP := $(VENV)/.clarion-run$(if $(EXTRAS),-extras)
TEST_STAMP := $(VENV)/.clarion-test
PIP_INSTALL := $(BIN)/python -m pip install --quiet --disable-pip-version-check

define install_locked
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --require-hashes -r requirements/build.txt
	$(PIP_INSTALL) --require-hashes -r $(1)
	$(PIP_INSTALL) --no-deps --no-build-isolation -e .
	touch $@
endef

$(RUN_STAMP): pyproject.toml requirements/build.txt $(RUN_LOCK)
	$(call install_locked,$(RUN_LOCK))

$(TEST_STAMP): pyproject.toml requirements/build.txt requirements/test.txt
	$(call install_locked,requirements/test.txt)

setup: $(TEST_STAMP)

run: $(RUN_STAMP)
	$(BIN)/clarion serve

lint: $(TEST_STAMP)
	$(BIN)/ruff check src tests benchmarks docs/examples
	$(BIN)/ruff format --check src tests benchmarks docs/examples
	$(BIN)/lint-imports

typecheck: $(TEST_STAMP)
	$(BIN)/mypy -p clarion
	$(BIN)/mypy tests benchmarks docs/examples

# The browser tests drive Debian's chromium (installed here when missing; needs root/apt).
chromium:
	bash scripts/ensure-chromium.sh

# Tests run in parallel worker processes (pytest-xdist): one per core, at most four; each worker
# that needs PostgreSQL without CLARION_TEST_POSTGRES_URL starts its own embedded server.
PARALLEL ?= -n auto --maxprocesses 4 --dist loadgroup

unit: $(TEST_STAMP) chromium
	$(BIN)/python -m pytest $(PARALLEL) --cov --cov-report=term-missing:skip-covered

test: lint typecheck unit

# The inner loop, about 55 s of CPU: lint, then the in-process tests (unit, contract on memory and
# SQLite, REST/CLI/SQL tests without a socket) with a tenth of the property-test examples. It
# leaves out what needs PostgreSQL or a browser, the slow tests, and those marked `server`, which
# start a server on a loopback port or a child process (tests/conftest.py).
QUICK_TESTS := -m "not postgres and not browser and not slow and not server" \
	--hypothesis-profile=quick

quick: lint
	$(BIN)/python -m pytest $(PARALLEL) -q $(QUICK_TESTS)

# Rewrites docs/screenshots/*.png from a real server (the test run writes them to a temporary
# directory otherwise).
screenshots: $(TEST_STAMP) chromium
	CLARION_UPDATE_SCREENSHOTS=1 $(BIN)/python -m pytest -q tests/e2e/test_screenshots.py tests/e2e/test_answered.py \
		tests/e2e/test_app_card.py tests/e2e/test_approval_card.py

# Speed and memory figures (printed, never asserted); PostgreSQL parts use
# CLARION_TEST_POSTGRES_URL. See docs/performance.md for the figures and quicker flags.
bench: $(TEST_STAMP)
	$(BIN)/python benchmarks/sql_bench.py
	$(BIN)/python benchmarks/waiters_bench.py
	$(BIN)/python -m benchmarks.multiprocess_bench

# Regenerates the lock files from pyproject.toml and requirements/build.in (pip and the build
# backend) for CPython $(LOCK_PYTHON) on x86-64 Linux, keeping every pin that still satisfies them.
# `make lock LOCK_ARGS=--upgrade` moves every pin to its newest release, `make lock LOCK_ARGS='-P
# starlette'` that one package. test.txt is resolved first, run.txt, extras.txt and build.txt
# constrained to its versions, so they never disagree.
LOCK_PYTHON ?= 3.11
LOCK_PLATFORM ?= x86_64-unknown-linux-gnu
LOCK_ARGS ?=
UV_COMPILE = $(BIN)/uv pip compile --quiet --generate-hashes --python-version $(LOCK_PYTHON) \
	--python-platform $(LOCK_PLATFORM) --custom-compile-command 'make lock' $(LOCK_ARGS)

lock: $(TEST_STAMP)
	$(UV_COMPILE) pyproject.toml requirements/build.in --extra test --extra lock \
		-o requirements/test.txt
	$(UV_COMPILE) pyproject.toml requirements/build.in -c requirements/test.txt \
		-o requirements/run.txt
	$(UV_COMPILE) pyproject.toml requirements/build.in --extra otel --extra apprise --extra slack \
		-c requirements/test.txt -o requirements/extras.txt
	$(UV_COMPILE) requirements/build.in -c requirements/test.txt -o requirements/build.txt

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .import_linter_cache .hypothesis .coverage \
		.coverage.* htmlcov build dist

# Rewrites docs/cli.md from the `clarion` parser; tests/docs/test_cli_reference.py fails while
# the committed file differs.
.PHONY: cli-docs
cli-docs: $(TEST_STAMP)
	$(BIN)/python -m clarion.app.root.cli.reference --update docs/cli.md

# Rewrites the settings table of docs/operations.md (between its settings:start/end markers) from
# the settings' declarations in src/app/root/settings.py; tests/docs/test_settings_table.py fails
# while the committed table differs.
.PHONY: settings-docs
settings-docs: $(TEST_STAMP)
	$(BIN)/python -m clarion.app.root.settings_docs --update docs/operations.md
