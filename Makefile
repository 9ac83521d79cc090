# The one entry point for people and for .ci/run.
#   make example   set up, then run the main job (Spark audit, local mode) on the bundled example
#   make test      set up, then run every test (Rust core + Python, benchmarks as plain tests)
#   make bench     time the benchmark suite (ratios against in-run baselines)

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python

.PHONY: setup example test test-rust test-python bench clean

$(VENV)/.installed: pyproject.toml Cargo.toml Cargo.lock $(shell find rust python -type f -not -path '*/__pycache__/*')
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade "pip>=25.1"
	$(PY) -m pip install -q --group test --group bench
	$(PY) -m pip install -q ".[spark]"
	touch $@

setup: $(VENV)/.installed

example: setup
	$(VENV)/bin/mqbalance audit --out out/audit

test-rust:
	cargo test --locked -p mqbalance-core

test-python: setup
	$(PY) -m pytest -q -p no:cacheprovider --benchmark-disable tests benches

test: test-rust test-python

bench: setup
	$(PY) -m pytest benches -q --benchmark-only --benchmark-columns=min,median,max --benchmark-sort=name

clean:
	rm -rf $(VENV) target out
