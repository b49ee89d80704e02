# Two commands do everything on a fresh machine:
#   make run    set up .venv (Python 3.12, pinned upstream), then the main job: a tiny CPU Megatron
#               pretraining with TensorBoard + MLflow (local sqlite store) tracking on
#   make test   set up .venv, lint and type-check primus/, then run the test suite (starts its own MLflow server
#               on 127.0.0.1)
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.primus-installed
export OMP_NUM_THREADS ?= 1

.PHONY: setup setup-prometheus setup-slurm setup-maxtext setup-bridge setup-upstream-matrix setup-dependency-floors run test lint bench canary mutation clean
setup: $(STAMP) setup-maxtext setup-bridge setup-upstream-matrix setup-dependency-floors

# The other supported upstream releases (third_party/upstream-matrix.txt), each in a folder that tests put on
# PYTHONPATH: small wheels, no second torch. Instant once built.
setup-upstream-matrix: $(STAMP) setup-maxtext
	scripts/setup-upstream-matrix.sh

# The lowest releases of the core's dependencies that setup.cfg allows, in .venv/floors, where
# tests/test_dependency_floors.py runs the core on them: small wheels, --no-deps; and W&B's floor in
# .venv/tracker-floors, where it runs our W&B sink. Instant once built.
setup-dependency-floors: $(STAMP)
	scripts/setup-dependency-floors.sh

# MaxText (JAX) lives in its own environment: its pins must not fight torch's. Idempotent and instant
# once built (the script keeps its own stamp of what it installed).
setup-maxtext:
	scripts/setup-maxtext-venv.sh .venv-maxtext

# Megatron-Bridge in an overlay of .venv (its site-packages seen through a .pth: no second torch), with Bridge's
# pins installed --no-deps, so they cannot move .venv's packages. Instant once built (a stamp, as MaxText's).
setup-bridge: $(STAMP)
	scripts/setup-bridge-venv.sh .venv-bridge

# Debian's slurmctld, slurmd and munge for the tests' one-node Slurm cluster (tests/support/slurm_cluster.py starts it):
# installed with apt-get when missing (root only; otherwise it fails saying what to install). Instant once there.
setup-slurm:
	scripts/setup-slurm.sh

$(STAMP): third_party/requirements.txt third_party/constraints.txt setup.cfg pyproject.toml
	@test -x $(PY) || { py=$$(scripts/find-python3.12) && echo "creating $(VENV) with $$py" && $$py -m venv $(VENV); }
	$(PY) -m pip install --quiet --disable-pip-version-check -r third_party/requirements.txt -c third_party/constraints.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@touch $@

run: setup
	$(PY) -m primus.cli.main train --config configs/megatron/tiny_cpu.yaml

# The real Prometheus and Pushgateway the monitoring tests start (tests/support/prometheus_servers.py): Debian's
# packages, installed with apt-get when a binary is missing (root; about 12 s), without their recommends (the node
# exporter). Instant when present.
PROMETHEUS_BINARIES := prometheus promtool prometheus-pushgateway
setup-prometheus:
	@missing=$$(for b in $(PROMETHEUS_BINARIES); do command -v $$b >/dev/null || echo $$b; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then \
	    echo "setup-prometheus: $$(echo $$missing) not found, and installing them needs root: run" \
	         "'sudo apt-get install --no-install-recommends prometheus prometheus-pushgateway', then make test again" >&2; \
	    exit 1; \
	  fi; \
	  echo "installing prometheus prometheus-pushgateway (missing: $$(echo $$missing))"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    prometheus prometheus-pushgateway >/dev/null; \
	fi

# Two test processes (tests/support/parallel.py keeps the tests of one shared training on one); PYTEST_ARGS=... runs
# what you give in one process.
PYTEST_ARGS ?= -n 2 --no-loadscope-reorder
test: setup setup-prometheus setup-slurm lint
	$(PY) -m pytest $(PYTEST_ARGS)

# ruff (lint and format check) and mypy over primus/ (settings: pyproject.toml)
lint: $(STAMP)
	$(VENV)/bin/ruff check primus
	$(VENV)/bin/ruff format --check primus
	$(VENV)/bin/mypy

# Mutation testing of the core modules (setup.cfg [mutmut]) on their fast unit tests; minutes to an hour,
# not part of `make test`. Results stay in mutants/ (a rerun only tries what changed); MUTANTS='primus.redaction*'
# narrows it. The scores and the survivors judged equivalent: tests/MUTATION.md.
mutation: $(STAMP)
	nice -n 10 $(VENV)/bin/mutmut run --max-children 2 $(MUTANTS)
	$(PY) scripts/mutation-scores

bench: setup
	$(PY) benchmarks/run_all.py

# each backend's tiny tracked job on upstream's newest release (PRIMUS_UPSTREAM_CHECK=warn); not part of make test
canary: setup
	$(PY) scripts/canary

clean:
	rm -rf $(VENV) .venv-maxtext .venv-bridge output
