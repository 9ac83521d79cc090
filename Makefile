# The one entry point for people and for .ci/run.
#   make example   set up, then run the main job (Spark audit, local mode) on the bundled example
#   make test      set up, lint, then run every test (Rust core + Python, benchmarks as plain tests)
#   make bench     time the benchmark suite (ratios against in-run baselines)
#   make dev       editable install: Python edits are live, `make dev` again after a Rust edit
#   make lint      ruff check, ruff format --check, cargo fmt --check, clippy -D warnings, mypy --strict
#   make fmt       rewrite the tree in our formats (ruff format, cargo fmt)
#   make docs      build the documentation site (docs/, mkdocs.yml) into site/, strict: a broken link fails
#   make wheel     the wheel people install: dist/mqbalance-*-cp311-abi3-manylinux2014_x86_64.whl

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python

.PHONY: setup dev example test test-rust test-python lint fmt bench clean zookeeper rocketmq chromium java bench-coordination tansu bench-kafka-rebalance wheel

# Development builds carry the benchmark helpers (`mqbalance._core._bench`, the `bench` cargo
# feature); `make wheel` builds without them.
DEV_BUILD := MATURIN_PEP517_ARGS="--features bench"

# The venv with every dependency group; the package itself is installed editable, so only a Rust
# change (or a dependency change) rebuilds the extension.
$(VENV)/.deps: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade "pip>=25.1"
	$(PY) -m pip install -q --group test --group bench --group lint --group docs "maturin>=1.14,<2"
	touch $@

# A clone without target/ starts from the build directory an earlier `make test` on this machine saved
# (cargo-seed-save): the dependencies are not compiled again; the workspace's own crates are cleaned
# out of the copy and built from this clone's sources. Keyed by the lock file and the compiler.
CARGO_SEED_DIR ?= $(HOME)/.cache/mqbalance/cargo-target
CARGO_SEED     := $(CARGO_SEED_DIR)/$(shell { cat Cargo.lock; rustc -vV; } 2>/dev/null | sha256sum | cut -c1-16)
.PHONY: cargo-seed cargo-seed-save
cargo-seed:
	@if [ ! -d target ] && [ -d $(CARGO_SEED) ]; then \
	  echo "target/ from $(CARGO_SEED)"; cp -a $(CARGO_SEED) target && cargo clean -q -p mqbalance-core -p mqbalance-py; fi
cargo-seed-save:
	@if [ ! -d $(CARGO_SEED) ] && [ -d target ]; then \
	  set -e; mkdir -p $(CARGO_SEED_DIR); rm -rf $(CARGO_SEED).part; \
	  cp -a target $(CARGO_SEED).part && mv $(CARGO_SEED).part $(CARGO_SEED); \
	  find $(CARGO_SEED_DIR) -mindepth 1 -maxdepth 1 ! -path $(CARGO_SEED) -exec rm -rf {} +; \
	  echo "target/ saved to $(CARGO_SEED)"; fi

# The build backend runs `maturin` by name: the venv's bin goes first on PATH (a new machine has no other).
$(VENV)/.installed: $(VENV)/.deps Cargo.toml Cargo.lock $(shell find rust -type f -name '*.rs' -o -name Cargo.toml) | cargo-seed
	$(DEV_BUILD) PATH="$(abspath $(VENV))/bin:$$PATH" $(PY) -m pip install -q --no-build-isolation -e ".[spark]"
	touch $@

setup: $(VENV)/.installed

dev: $(VENV)/.deps
	$(DEV_BUILD) PATH="$(abspath $(VENV))/bin:$$PATH" $(PY) -m pip install -q --no-build-isolation -e ".[spark]"
	touch $(VENV)/.installed

example: setup
	$(VENV)/bin/mqbalance audit --out out/audit

lint: setup
	$(VENV)/bin/ruff check python tests benches
	$(VENV)/bin/ruff format --check python tests benches
	cargo fmt --all --check
	cargo clippy --locked --workspace --all-targets --features mqbalance-py/bench -- -D warnings
	$(VENV)/bin/mypy --strict python/mqbalance

fmt: $(VENV)/.deps
	$(VENV)/bin/ruff format python tests benches
	$(VENV)/bin/ruff check --fix python tests benches
	cargo fmt --all

test-rust:
	cargo test --locked -p mqbalance-core

# The real ZooKeeper server of the coordination tests: the Debian package, installed when absent
# (as root with apt-get; elsewhere install a ZooKeeper 3.5+ server and set MQBALANCE_ZOOKEEPER_CLASSPATH).
ZK_JAR := /usr/share/java/zookeeper.jar
zookeeper:
	@test -n "$$MQBALANCE_ZOOKEEPER_CLASSPATH" || test -f $(ZK_JAR) || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends zookeeper; \
	  else \
	    echo "ZooKeeper server missing: sudo apt-get install -y --no-install-recommends zookeeper (Debian/Ubuntu)," \
	         "or set MQBALANCE_ZOOKEEPER_CLASSPATH to a ZooKeeper server's jars" >&2; exit 1; \
	  fi; }

# The test servers built from crates.io are fixtures, not products: they are built with a profile
# that compiles fast (no LTO, opt-level 1, no debug info), which halves a new machine's first build;
# a test server at opt-level 1 is still far faster than the tests need.
SERVER_BUILD_ENV := CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_OPT_LEVEL=1 \
  CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_DEBUG=false \
  CARGO_PROFILE_RELEASE_STRIP=true CARGO_PROFILE_RELEASE_INCREMENTAL=false

# The real RocketMQ name server and broker of the live tests: the Rust port (same remoting protocol),
# built once into a cache outside the clone, keyed by version.
ROCKETMQ_VERSION ?= 1.0.0
ROCKETMQ_HOME    ?= $(HOME)/.cache/mqbalance/rocketmq-rust-$(ROCKETMQ_VERSION)
rocketmq:
	@test -x $(ROCKETMQ_HOME)/bin/rocketmq-namesrv-rust -a -x $(ROCKETMQ_HOME)/bin/rocketmq-broker-rust || { \
	  set -e; tgt=$$(mktemp -d); \
	  for crate in rocketmq-namesrv rocketmq-broker; do \
	    $(SERVER_BUILD_ENV) CARGO_TARGET_DIR=$$tgt cargo install -q --locked --version $(ROCKETMQ_VERSION) --root $(ROCKETMQ_HOME) $$crate; \
	  done; rm -rf $$tgt; }

# The real Kafka-protocol broker of the Kafka group tests: Tansu (Apache Kafka-compatible, in Rust; the
# `dynostore` feature gives the in-memory storage engine), built once into a cache outside the clone,
# keyed by version.
TANSU_VERSION ?= 0.6.0
TANSU_HOME    ?= $(HOME)/.cache/mqbalance/tansu-$(TANSU_VERSION)
tansu:
	@test -x $(TANSU_HOME)/bin/tansu || { \
	  set -e; tgt=$$(mktemp -d); \
	  $(SERVER_BUILD_ENV) CARGO_TARGET_DIR=$$tgt cargo install -q --locked --version $(TANSU_VERSION) --features dynostore --root $(TANSU_HOME) tansu; \
	  rm -rf $$tgt; }

# The Java side of the tests (tests/java): Apache Kafka's broker, consumer and assignors, Apache RocketMQ's
# servers and both client generations, and our harness code compiled against them. The artifacts are
# resolved once into ~/.cache/mqbalance/maven (MQBALANCE_MAVEN_REPO) and the build runs offline after.
java:
	tests/java/build

# The golden vectors' expected answers, recomputed by the Java jars of the harness (tests/vectors/regenerate.py):
# a file whose answers changed is left alone and listed (VECTORS_ARGS=--accept writes it; --check only compares).
.PHONY: vectors
vectors: setup java
	PYTHONPATH=$(CURDIR)/python $(PY) tests/vectors/regenerate.py $(VECTORS_ARGS)

# The headless browser of the HTML report test: Debian's Chromium, installed when absent (as root with
# apt-get; elsewhere install Chromium and set MQBALANCE_CHROMIUM to its binary).
chromium:
	@test -n "$$MQBALANCE_CHROMIUM" || command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium; \
	  else \
	    echo "Chromium missing: sudo apt-get install -y --no-install-recommends chromium (Debian/Ubuntu)," \
	         "or set MQBALANCE_CHROMIUM to a Chromium binary" >&2; exit 1; \
	  fi; }

# Test files run on TEST_WORKERS processes (pytest-xdist), a whole file per process: module-scoped
# servers start once per file, and most of a live test's time is waiting on servers, not CPU (three
# processes on the 2-core machine: see docs/contributing.md). The longest files go first
# (tests/conftest.py, LONGEST_FIRST), so xdist's own reordering by test count is turned off.
# Byte code is cached even where PYTHONDONTWRITEBYTECODE is set: the run starts some 350 Python
# processes (members, CLI runs, Spark's Python workers) and each would compile mqbalance again.
TEST_WORKERS ?= 3
test-python: setup zookeeper rocketmq chromium iproute2 java
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -p no:cacheprovider --benchmark-disable --durations=30 -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder tests benches

test: lint docs test-rust cargo-seed-save test-python

# The documentation site (MkDocs + Material + mkdocstrings, mkdocs.yml) into site/, in strict mode: a
# broken link, anchor or API reference fails the build.
.PHONY: docs
docs: $(VENV)/.deps
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

# Coordination on ZooKeeper, every-member vs leader mode (several minutes; writes out/coordination/).
bench-coordination: setup zookeeper
	$(PY) benches/coordination_bench.py --sizes 4,16,32 --queues 1024 --out out/coordination

# Rebalance time of real kafka-python groups (8 consumers, 64 partitions) on Tansu, per assignor
# (about 10 minutes; writes benches/kafka_rebalance_results/).
bench-kafka-rebalance: setup tansu
	$(PY) benches/kafka_rebalance.py --members 8 --partitions 64 --repeats 3 --out benches/kafka_rebalance_results

bench: setup
	$(PY) -m pytest benches -q --benchmark-only --benchmark-columns=min,median,max --benchmark-sort=name

# One abi3 wheel (CPython >= 3.11) with a manylinux2014 floor (glibc >= 2.17): zig (the `ziglang`
# package) links against the old glibc; auditwheel checks the tag. ~1.5 min with a warm target/.
WHEEL_DIR ?= dist
wheel: $(VENV)/.deps
	$(PY) -m pip install -q --group wheel
	rm -f $(WHEEL_DIR)/mqbalance-*.whl
	PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/maturin build --release --locked --zig \
	  --compatibility manylinux2014 --features abi3 -i $(PY) -o $(WHEEL_DIR)
	$(VENV)/bin/auditwheel show $(WHEEL_DIR)/mqbalance-*.whl

clean:
	rm -rf $(VENV) target out $(WHEEL_DIR)

# Broker-side (KIP-848) assignors: the movement study, then (with JAVA_CLASSES set to the class
# directory of the Java harness around Kafka's assignor classes, built outside this repository)
# the side-by-side timing against Java. Writes benches/kafka_server_results/.
.PHONY: bench-kafka-server
bench-kafka-server: setup java
	$(PY) benches/kafka_server_movement.py --out benches/kafka_server_results
	$(PY) benches/kafka_server_vs_java.py --out benches/kafka_server_results

# The network-fault tests (`pytest -m nemesis`, part of `make test`) make network namespaces and veths
# with iproute2's `ip` (as root): installed when absent.
.PHONY: iproute2 nemesis
iproute2:
	@command -v ip >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends iproute2; \
	  else \
	    echo "iproute2 missing: sudo apt-get install -y --no-install-recommends iproute2 (Debian/Ubuntu)" >&2; exit 1; \
	  fi; }

# The network-fault scenarios alone, NEMESIS_ROUNDS rounds each, their tables in out/nemesis/nemesis.md
# (as root; about 4 minutes per round of every scenario).
NEMESIS_ROUNDS ?= 5
nemesis: setup zookeeper rocketmq iproute2
	$(PY) tests/support/nemesis_report.py --rounds $(NEMESIS_ROUNDS) --out out/nemesis
