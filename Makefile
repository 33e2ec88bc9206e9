# icefloe: `make demo` and `make test` set everything up on a fresh machine (Python 3.11+ needed).
.DEFAULT_GOAL := help
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=
# The slowest tests of a run on the stack, listed at its end (where CI time goes).
DURATIONS ?= --durations=40 --durations-min=15

.PHONY: help venv early-minio provision up down status demo test test-unit test-glue record-breaks soak lint format bench clean clean-cache \
	container-engine images compose-up compose-down test-containers

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

# --no-compile: Python compiles a module when it is first imported, not every module of every
# package at install (half of pip's CPU time here, taken from the MinIO build beside it).
$(STAMP): pyproject.toml
	@$(PYTHON) -m venv $(VENV) 2>/dev/null || { $(PYTHON) -m pip install --user --quiet virtualenv && $(PYTHON) -m virtualenv --quiet $(VENV); }
	$(BIN)/python -m pip install --quiet --no-compile --upgrade pip
	$(BIN)/python -m pip install --quiet --no-compile -e '.[dev]'
	@touch $@

venv: $(STAMP) ## create .venv and install icefloe with its dev tools

# The MinIO build (the longest step of a first run) starts first, in the background, on the
# machine's Python, and runs beside the virtualenv and the other steps (harness/provision/early.py).
provision: early-minio venv ## fetch Kafka, MinIO, the REST catalog, Trino, Spark jars and JDKs into the cache
	$(BIN)/icefloe provision

early-minio:
	@$(PYTHON) -m icefloe.harness.provision.early start || true

up: provision ## start the local stack (Kafka, MinIO, REST catalog, Trino)
	$(BIN)/icefloe up --no-provision

down: ## stop the local stack
	@if [ -x $(BIN)/icefloe ]; then $(BIN)/icefloe down; fi

status: venv ## pid, ports, health and memory of each service
	$(BIN)/icefloe status

demo: provision ## bring the stack up and walk through it
	$(BIN)/icefloe demo --no-provision

# The test targets run on one stack in two parts (tests/streams.py): what uses only topics,
# tables and loaders of its own on STREAMS pytest workers at once, then what strikes the shared
# stack (a service killed or paused, Toxiproxy: marked `exclusive`) alone. STREAMS=1: one at a
# time.
STREAMS ?= 2
STREAMED := $(BIN)/python -m tests.streams --streams $(STREAMS)

# On the REST catalog, whichever catalog a running stack was brought up with (`make test-glue`
# runs on Glue).
test: provision ## unit, integration and scenario tests on the real stack
	ICEFLOE_STACK_CATALOG=rest $(STREAMED) -m "not slow" -- $(DURATIONS) $(PYTEST_ARGS)

GLUE_SCENARIOS ?= lost_commit_answers or catalog_frozen
# On a stack whose catalog is Glue-compatible (`[stack] catalog = "glue"`: Trino's lake, the
# loader and every check go through it): the loader's Glue tests (exactly once across a kill -9
# right after a commit, the fence against a zombie) and scenarios 16 and 18. Every scenario
# passes there by hand (docs/catalogs.md); 11 (a kill -9 of the catalog) does not apply.
test-glue: provision ## on a Glue-compatible catalog: the loader's Glue tests, scenarios 16 and 18
	ICEFLOE_STACK_CATALOG=glue $(STREAMED) -m "(integration or scenario) and not slow" -- \
		tests/loader/test_glue_integration.py tests/scenarios/test_scenarios.py \
		-k "not test_scenario or $(GLUE_SCENARIOS)" $(DURATIONS) $(PYTEST_ARGS)

# Every loader break of the scenarios, live, and a plain run of the scenarios whose mutation
# breaks are judged on one (tests/scenarios/break_forms.py), each kept as a recording
# (tests/scenarios/recorded/, which the unit tests judge again): after a change to what a run
# records, or to a break.
RECORDED_PLAIN ?= no_dead_letter_topic or drop_column or compaction or snapshot_expiry \
	or broker_outage or scale_out or freshness or json_tweaks
record-breaks: provision ## run the scenarios' breaks (and plain runs) live, keep each as its recording
	ICEFLOE_RECORD_BREAKS=1 $(BIN)/pytest -m scenario tests/scenarios/test_breaks_ci.py \
		tests/scenarios/test_scenarios.py \
		-k "the_cheapest_form or $(RECORDED_PLAIN)" $(PYTEST_ARGS)

test-unit: venv ## fast tests only: no services
	$(BIN)/pytest -m "not integration and not scenario and not slow" $(PYTEST_ARGS)

MINUTES ?= 60
soak: up ## generated fault schedules against one world for MINUTES (default 60), then a report
	$(BIN)/icefloe soak --minutes $(MINUTES)

container-engine: ## install podman, runc, debootstrap and docker-compose from Debian (apt)
	bash containers/install-engine.sh

images: provision container-engine ## build the container images from the provisioning cache
	$(BIN)/icefloe images build --no-provision

compose-up: images ## fresh machine to a running compose stack: podman, images, docker-compose up
	$(BIN)/icefloe compose up --no-build

compose-down: ## stop and remove the compose stack's containers (state stays in the run directory)
	@if [ -x $(BIN)/icefloe ]; then $(BIN)/icefloe compose down; fi

CONTAINER_SCENARIOS ?= exactly_once_kill9 or malformed_dead_letter or add_column or drop_column
# What depends on the backend: the container tests, the stack's and the publisher's integration
# tests, the loader's end-to-end tests and four scenarios. The loader's crash and fencing tests
# and its state machine exercise the loader alone, the storage checks' tests the checkers, and
# the small bench only times what the other tests already run: they run in the local leg only.
CONTAINER_TESTS ?= tests/containers tests/harness tests/publisher \
	tests/loader/test_loader_integration.py tests/scenarios
# What talks to the stack only through its endpoints, the same on either backend, runs in the
# local leg only: the fault proxies (catalog proxy, Toxiproxy, which runs locally only), the
# Kafka Connect sink, a user's own loader (the pyiceberg example), the breaks, and the catalogs
# under test (local processes beside the stack, on its object store).
LOCAL_ONLY ?= breaks_ci or catalogproxy or kafka_connect or toxiproxy or user_loader or spark_sink \
	or position_kinds or catalog_checks or storage_checks or loader_machine
test-containers: images ## the backend-dependent tests and scenarios 01 02 04 05 on containers
	$(STREAMED) --backend containers -m "(integration or scenario) and not slow" -- \
		-k "((not test_scenario and not test_generated and not test_maintenance and not test_bench) or $(CONTAINER_SCENARIOS)) and not ($(LOCAL_ONLY))" $(CONTAINER_TESTS) $(DURATIONS) $(PYTEST_ARGS)

# actionlint checks this repository's workflow and the one users copy (examples/ci/); it is
# built through the Go module proxy on first use, about 10 s (harness/provision/actionlint.py).
lint: venv ## ruff, mypy, dead code (vulture), repeated blocks (pylint), workflows (actionlint)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/vulture
	$(BIN)/pylint --score=no loader publisher harness
	$(BIN)/python -m icefloe.harness.provision.actionlint

format: venv ## format the code
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

BENCH_ARGS ?=
bench: up ## icefloe bench: the loader beside two bounds, baselines and the Kafka Connect sink (BENCH_ARGS="--rows 200000")
	$(BIN)/icefloe bench $(BENCH_ARGS)

clean: down ## stop the stack, remove the venv and the run directory (keeps the cache)
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache reports
	rm -rf "$${ICEFLOE_RUN_DIR:-$${XDG_STATE_HOME:-$$HOME/.local/state}/icefloe/run}"

clean-cache: ## remove the provisioning cache (next provision starts from nothing)
	rm -rf "$${ICEFLOE_CACHE:-$${XDG_CACHE_HOME:-$$HOME/.cache}/icefloe}"
