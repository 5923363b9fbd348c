# The two quickstart commands: `make run` and `make test`.
CARGO ?= cargo
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: setup build run test lint bench-meta bench-io bench-mount bench-tasks bench-watch bench-par bench-runs bench-outputs bench-replicas bench-node-loss bench-resume bench-filecopy bench-mapreduce bench-meta-cluster bench-deploy bench-job-end bench-python simulate simulate-runs simulate-balancer

setup:
	./scripts/setup.sh

VENV := .venv
MATURIN := VIRTUAL_ENV=$(CURDIR)/$(VENV) PATH=$(CURDIR)/$(VENV)/bin:$(PATH) $(VENV)/bin/maturin develop --quiet -m crates/locus-py/Cargo.toml

# The binary, and the Python package installed in .venv (with the binary
# beside it, so `locus.run` finds it once .venv is activated).
build: setup
	$(CARGO) build --release
	$(MATURIN) --release
	ln -sf $(CURDIR)/target/release/locus $(VENV)/bin/locus

# Installs what is needed, builds, and tours a 4-node local cluster.
run: build examples/bin/par-sim
	LOCUS=target/release/locus ./scripts/demo.sh

# The MPI program of examples/par-simulate.swift (MPICH's compiler).
examples/bin/par-sim: examples/bin/par-sim.c
	mpicc -O2 -o $@ $<

# Format, lints and every test (unit and integration, real daemons; the
# runner's settings are in .config/nextest.toml).
test: setup
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) nextest run --workspace
	@# Doc tests only where a doc comment holds an example: rustdoc reads
	@# every crate to find none (16 s here).
	if grep -rqE '^\s*//[/!].*```' crates/*/src; then $(CARGO) test --workspace --doc; fi
	$(MATURIN)
	LOCUS_BIN=$(CURDIR)/target/debug/locus $(VENV)/bin/python -m pytest -q crates/locus-py/pytests

# The file system's seeded simulation: SEEDS seeds from FROM (replay one
# failing seed with `make simulate SEED=N`).
SEEDS ?= 1000
FROM ?= 0
simulate: build
	target/release/locus bench simulate $(if $(SEED),--from $(SEED) --seeds 1,--from $(FROM) --seeds $(SEEDS))

# The same for generated workflow runs (`make simulate-runs SEED=N`).
simulate-runs: build
	target/release/locus bench simulate --runs $(if $(SEED),--from $(SEED) --seeds 1,--from $(FROM) --seeds $(SEEDS))

# The balancer's seeded simulation (lost workers and nodes, ties between
# nodes holding a task's inputs): SEEDS seeds from FROM.
simulate-balancer:
	LOCUS_BALANCER_SEEDS=$(SEEDS) LOCUS_BALANCER_FROM=$(FROM) $(CARGO) test --release -p locus-runtime --lib balancer_sim

bench-meta: build
	target/release/locus bench meta

bench-tasks: build
	target/release/locus bench tasks

bench-watch: build
	target/release/locus bench watch

bench-runs: build
	target/release/locus bench runs

bench-par: build
	target/release/locus bench par

bench-outputs: build
	target/release/locus bench outputs

bench-replicas: build
	target/release/locus bench replicas

bench-node-loss: build
	target/release/locus bench node-loss

bench-resume: build
	target/release/locus bench resume

bench-io: build
	target/release/locus bench io

bench-mount: build
	./scripts/fuse-passthrough.sh
	target/release/locus bench mount --passthrough target/baselines/fuse-passthrough

bench-filecopy: build
	target/release/locus bench filecopy

bench-mapreduce: build
	target/release/locus bench mapreduce

bench-meta-cluster: build
	target/release/locus bench meta-cluster

# Deployment through a real Slurm on 8 namespace hosts (root).
bench-deploy: build
	LOCUS=target/release/locus ./scripts/bench-deploy.sh

bench-job-end: build
	LOCUS=target/release/locus ./scripts/bench-job-end.sh

# Locus from Python beside same-run baselines (file reads, stat, records()).
bench-python: build
	LOCUS_BIN=$(CURDIR)/target/release/locus $(VENV)/bin/python -m locus.bench
