# Ferry — the two commands:
#   make up    build and start the local stack (no Docker): three ferryd nodes and a demo workload, and beside them
#              the two-master MariaDB cluster `seed000` (two masters, a multi-source replica, a delayed replica; FERRY_MARIADB_SEED000=0 leaves it out)
#              (FERRY_STACK=mariadb make up: MariaDB clusters instead, a star and seed000 (the two-master shape), with a load writer)
#   make test  install what is missing and run every test suite
# Both install what they need; see README.md.

SHELL := /bin/bash
.DEFAULT_GOAL := help

.PHONY: help up down test test-quick test-engine test-engine-failpoints test-python test-backend test-frontend frontend-checks frontend-unit test-e2e quick-engine quick-backend quick-dashboard python-module engine-debug lint-backend lint-engine bench-commit

help:
	@echo "make up      build and start three ferryd nodes and a demo workload, and the two-master MariaDB cluster `seed000` (make down stops them)"
	@echo "FERRY_STACK=mariadb make up   the same with MariaDB 10.11: a three-server cluster and seed000, with a load writer"
	@echo "make test    run every test suite (engine lint, unit, property, fuzz-corpus, integration, recovery; Python module; backend; frontend; end-to-end)"
	@echo "make test-quick   the inner loop (a few minutes): lints, the engine's unit tests, the backend tests that need no replication server, the dashboard's typecheck and Vitest"
	@echo "make bench-commit   the commit benchmark matrix of docs/benchmarks.md"

up:
	@scripts/up.sh

down:
	@scripts/down.sh

# Every suite, stages overlapped where they leave a core idle (scripts/test.sh says how); it prints each stage's time.
test:
	@scripts/test.sh

# The inner loop: what needs no replication server and no browser. `make test` stays the definition of green. Its three
# parts run side by side (each one's output printed whole when it ends): the engine's unit tests are mostly one long
# simulation on one core, and the backend's tests wait on their database.
test-quick: python-module
	@scripts/ensure-rust.sh
	@scripts/ensure-backend.sh
	@scripts/ensure-dashboard.sh deps
	cd engine && cargo fmt --all --check
	@$(MAKE) --no-print-directory -j3 --output-sync=target quick-engine quick-backend quick-dashboard

# The engine's unit tests, the power-loss simulation over its first QUICK_SIM_SEEDS seeds (`make test`: all 500).
QUICK_SIM_SEEDS ?= 100
quick-engine:
	cd engine && FERRY_SIM_SEEDS=$(QUICK_SIM_SEEDS) cargo test $(ENGINE_CRATES) --lib --locked $(ENGINE_TEST_FEATURES)

quick-backend:
	scripts/test-backend.sh --quick backend/tests

quick-dashboard:
	cd frontend && npm run --silent typecheck
	@$(MAKE) --no-print-directory frontend-unit

# The backend's lints and types: ruff's checks and formatting, mypy strict on the whole package and its tests
# (backend/pyproject.toml [tool.mypy]).
lint-backend:
	@scripts/ensure-backend.sh
	.venv/bin/ruff check --config backend/pyproject.toml backend migrations
	.venv/bin/ruff format --check --config backend/pyproject.toml backend migrations
	cd backend && ../.venv/bin/mypy

lint-engine:
	@scripts/ensure-rust.sh
	cd engine && cargo fmt --all --check
	cd engine && cargo clippy --workspace --all-targets --locked -- -D warnings
	cd engine && cargo clippy -p ferry-core -p ferryd --all-targets --features failpoints --locked -- -D warnings

# The engine's debug build and every run of its tests carry the failpoints (ferry-core's and ferryd's `failpoints`
# feature; never a release build): the fail-stop tests inject I/O errors through them, and unset each is one lookup
# in an empty table. One feature set for every target of the workspace means one build: a build of the fail-stop tests
# of their own recompiled some fifty dependencies (a narrower selection unifies their features differently) and
# swapped target/debug/ferryd for a build with failpoints until the next workspace build.
ENGINE_TEST_FEATURES = --features ferry-core/failpoints,ferryd/failpoints
# Every crate but the Python module's: maturin builds that one (python-module, under the same lints in `make test`) and
# the Python suite tests it; it has no Rust test of its own, and built here too it compiled pyo3 twice more (once in
# the workspace's build, once again after maturin's build had changed pyo3's configuration).
ENGINE_CRATES = --workspace --exclude ferry-py

# The engine's tests: what `cargo test --workspace` runs but ferry-py's (the fail-stop tests with them), several test
# binaries at a time (scripts/engine-tests.py).
test-engine:
	@scripts/ensure-rust.sh
	scripts/engine-tests.py --doc -- $(ENGINE_CRATES) $(ENGINE_TEST_FEATURES)

# Only the fail-stop tests: I/O errors injected at every write and fsync site.
test-engine-failpoints:
	@scripts/ensure-rust.sh
	scripts/engine-tests.py -- $(ENGINE_CRATES) $(ENGINE_TEST_FEATURES) \
	  --test storage_failures --test storage_failed --test rewind_failed --test dump_seek_slow

# ferry_engine built by maturin into .venv (the backend imports it too). Optimised by default (the stack `make up`
# runs); `make test` builds it with FERRY_PY_PROFILE=dev: the suites need its behaviour, not its speed, and the dev
# build takes a third of the CPU time (31 s against 99 s).
FERRY_PY_PROFILE ?= release
python-module:
	@scripts/ensure-python.sh
	cd engine/crates/ferry-py && VIRTUAL_ENV=$(CURDIR)/.venv PATH=$(CURDIR)/.venv/bin:$$PATH \
	  maturin develop --locked $(if $(filter release,$(FERRY_PY_PROFILE)),--release,)

# The ferryd binary the Python suites start, ferry-bench (the end-to-end stack's demo workload) and the engine's tests,
# in one build: every target of the workspace shares one feature set (ENGINE_TEST_FEATURES), so ferryd is never built
# twice.
engine-debug:
	@scripts/ensure-rust.sh
	cd engine && cargo build $(ENGINE_CRATES) --all-targets --locked $(ENGINE_TEST_FEATURES)

test-python: python-module engine-debug
	FERRYD_BIN=$(CURDIR)/engine/target/debug/ferryd .venv/bin/pytest -q -p no:asyncio engine/crates/ferry-py/tests

# The control plane's suite: a throwaway PostgreSQL (scripts/ensure-postgres.sh), real ferryd nodes, and real
# mariadbd processes (scripts/ensure-mariadb.sh installs MariaDB when absent; instances are private, never the service),
# and private HAProxy processes (scripts/ensure-haproxy.sh installs it when absent).
test-backend: python-module engine-debug
	@scripts/ensure-backend.sh
	@scripts/ensure-mariadb.sh >/dev/null
	@scripts/ensure-haproxy.sh >/dev/null
	FERRYD_BIN=$(CURDIR)/engine/target/debug/ferryd scripts/test-backend.sh

bench-commit:
	@scripts/bench-commit.sh

# The dashboard (frontend/): npm ci when node_modules is missing or package-lock.json changed, typecheck, the
# OpenAPI check (the generated schema and types must match the backend's app; needs the backend venv and
# ferry_engine), the production build into frontend/dist, and Vitest. `make test` runs the two halves apart:
# the checks and the build before the suite that needs the dashboard (end-to-end), then Vitest, beside the backend's.
test-frontend: frontend-checks frontend-unit

frontend-checks: python-module
	@scripts/ensure-backend.sh
	@scripts/ensure-dashboard.sh deps
	cd frontend && npm run --silent typecheck
	cd frontend && npm run --silent check:openapi
	cd frontend && npm run --silent build

frontend-unit:
	@scripts/ensure-dashboard.sh deps
	cd frontend && npx vitest run

# The end-to-end suite: Playwright in Debian's Chromium over a real stack (PostgreSQL, three ferryd, the demo
# workload, the API serving the built dashboard); scripts/test-e2e.sh starts and stops it all.
test-e2e: python-module engine-debug
	@scripts/ensure-backend.sh
	scripts/test-e2e.sh
