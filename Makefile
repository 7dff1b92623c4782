# `make run` sets up a virtualenv and serves TradeCraft; `make test` sets up and runs every test.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup browser valgrind mongo-server run test test-fast lint bench clean

$(STAMP): pyproject.toml package.json package-lock.json
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,ray]'
	npm ci --no-audit --no-fund --loglevel=error
	touch $(STAMP)

setup: $(STAMP)

# Debian's chromium (and a colour emoji font for the item icons) for the browser tests and bench_gui
browser:
	@command -v chromium >/dev/null && fc-list 2>/dev/null | grep -q "Noto Color Emoji" || \
	  { apt-get update -qq && apt-get install -y -qq chromium fonts-noto-color-emoji >/dev/null; } || \
	  { echo "Install Debian's chromium and fonts-noto-color-emoji (as root) for the browser tests."; exit 1; }

# A MongoDB wire-protocol server for the tests (SecantusDB, on WiredTiger; GPL: a test server only, so it gets
# its own virtualenv and nothing imports it). tests/mongo_server.py starts it; see README's Tests section.
MONGO_VENV := .venv-mongo
MONGO_STAMP := $(MONGO_VENV)/.installed
MONGO_SERVER_PACKAGE := SecantusDB==0.7.0b3

$(MONGO_STAMP):
	$(PYTHON) -m venv $(MONGO_VENV)
	$(MONGO_VENV)/bin/pip install --quiet '$(MONGO_SERVER_PACKAGE)'
	touch $(MONGO_STAMP)

mongo-server: $(MONGO_STAMP)

# valgrind for bench/bench_env_instructions.py (instruction counts that other jobs on the machine do not move)
valgrind:
	@command -v valgrind >/dev/null || \
	  { apt-get update -qq && apt-get install -y -qq valgrind >/dev/null; } || \
	  { echo "Install Debian's valgrind (as root) for bench/bench_env_instructions.py."; exit 1; }

run: $(STAMP)
	$(BIN)/python run_server.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-logo

test: $(STAMP) browser mongo-server
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-logo
	TRADECRAFT_TEST_MONGO=require $(BIN)/pytest

# the quick lane while working: no browser, no test marked slow (CI runs `make test`)
test-fast: $(STAMP) mongo-server
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-logo
	TRADECRAFT_TEST_MONGO=require $(BIN)/pytest -m "not slow" --ignore=tests/browser -n 2

bench: $(STAMP) browser valgrind
	for b in bench/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) $(MONGO_VENV) node_modules .pytest_cache .ruff_cache .hypothesis
