# bgsim: two commands on a fresh machine - `make run` and `make test`.
# Both create the Python environment in .venv and build the Rust core first.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
BGSIM  := $(VENV)/bin/bgsim
export VIRTUAL_ENV := $(abspath $(VENV))
# The Rust core is built for the processor of the machine that builds it,
# which is the one that runs it (make installs it into .venv): 5-7% faster
# on the torus benchmark than a build for any x86-64 (BENCHMARKS.md).
# `make build RUSTFLAGS=` builds for any processor of the architecture.
RUSTFLAGS ?= -C target-cpu=native
export RUSTFLAGS

.PHONY: all env build build-mpi browser mpi run test test-rust test-python conformance bench clean

all: build

$(VENV)/.ready: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet "maturin>=1.5,<2" "numpy>=1.23" "matplotlib>=3.6" "greenlet>=3" "tqdm>=4.60" "pytest>=7" \
	  "otf2>=3"
	touch $@

env: $(VENV)/.ready

# Builds the Rust core (release) and installs the bgsim package into .venv.
# One build serves every target: it has MPI support (runs spread over the
# processes of an MPI job, `mpirun -n 2 .venv/bin/bgsim ...`), so it needs
# Open MPI and libclang, which `mpi` installs when they are missing.
# maturin rebuilds only what changed.
build: $(VENV)/.ready mpi
	$(VENV)/bin/maturin develop --release --quiet --features mpi

# (The name earlier versions used for the build above.)
build-mpi: build

# The main job: every experiment at quick scale on the default machine,
# with a summary table of their key figures.
run: build
	$(BGSIM) reproduce all --scale quick --out results/

test: test-rust test-python conformance

test-rust:
	cargo test --workspace --exclude bgsim-py

test-python: build browser
	$(PY) -m pytest -q python/tests

# mpi4py's own test suite (its 16 MPI-1 core modules and 3 one-sided ones, fetched from the
# pinned mpi4py 4.1.2 source distribution) at 2 and 4 ranks, with the counts
# per module; fails below the floor in scripts/conformance-floor.json.
conformance: build
	$(PY) -m pip install --quiet "unittest-xml-reporting>=3"
	$(PY) scripts/conformance.py

# Headless Chromium for the results page test (index.html opened and
# screenshot), from Debian's packages when it is not there.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; } || \
	  { echo "make: the results page test needs headless Chromium: install Debian's chromium package" >&2; exit 1; }

# A real MPI (Open MPI, from Debian's packages) for the trace tests (a C
# program is recorded under it by bgsim record and replayed) and for traffic
# runs across processes (its Rust bindings are generated with libclang).
mpi:
	@{ command -v mpicc && command -v mpirun && ls /usr/lib/llvm-*/lib/libclang.so*; } >/dev/null 2>&1 || \
	  { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq libopenmpi-dev openmpi-bin libclang-dev >/dev/null; } || \
	  { echo "make: bgsim's build needs a real MPI and libclang: install Debian's libopenmpi-dev, openmpi-bin and libclang-dev" >&2; exit 1; }

# Speed and memory benchmarks; the newest run goes on top of BENCHMARKS.md
# with its date, machine and command (the torus workload also on 2 and 4
# threads, the machine cut into as many partitions, and on 32x32x32 on 1
# and 2 threads; bench_scale: MPI programs on 65,536
# and 131,072 ranks, about 3 minutes; bench_osu: mpi4py's osu_alltoall demo
# on 32 ranks, fetched from its PyPI source distribution, about 22 minutes;
# bench_million: a halo on 1,048,576 core-driven skeleton ranks, about 4
# minutes on one thread and 3 on two; bench_threads: four Python MPI programs on
# 1 and 2 threads, 3 pairs each, about 2 minutes; bench_inflight: the bytes a posted message costs,
# a 1,024-rank all-to-all, about 1 minute; bench_smpi: the same programs on
# SimGrid's SMPI and on bgsim in alternating runs, about 2 minutes, if
# smpirun is installed: Debian's libsimgrid-dev). MPI_ITERS sets the rounds of the MPI halo benchmark (1,000:
# about 25 million messages).
MPI_ITERS ?= 1000
# Rounds of the halo replayed from a trace (bench_replay: the same halo as
# bench_mpi written as a C program's trace) and of bench_mpi run again at
# that size to set against it: 50 rounds, 1.2 million messages, about 2
# minutes both.
REPLAY_ITERS ?= 50
bench: build
	cargo build --release -p bgsim --bin bgsim-bench
	./target/release/bgsim-bench > .bench.jsonl
	./target/release/bgsim-bench --torus-only --threads 2 >> .bench.jsonl
	./target/release/bgsim-bench --torus-only --threads 4 >> .bench.jsonl
	./target/release/bgsim-bench --torus-only --shape 32x32x32 --runs 3 >> .bench.jsonl
	./target/release/bgsim-bench --torus-only --shape 32x32x32 --runs 3 --threads 2 >> .bench.jsonl
	$(PY) scripts/bench_mpi.py $(MPI_ITERS) >> .bench.jsonl
	$(PY) scripts/bench_replay.py $(REPLAY_ITERS) >> .bench.jsonl
	$(PY) scripts/bench_mpi.py $(REPLAY_ITERS) >> .bench.jsonl
	$(PY) scripts/bench_pingpong.py >> .bench.jsonl
	$(PY) scripts/bench_coll.py >> .bench.jsonl
	$(PY) scripts/bench_scale.py >> .bench.jsonl
	$(PY) scripts/bench_osu.py >> .bench.jsonl
	$(PY) scripts/bench_million.py >> .bench.jsonl
	$(PY) scripts/bench_million.py 2 >> .bench.jsonl
	$(PY) scripts/bench_threads.py 2 3 >> .bench.jsonl
	$(PY) scripts/bench_inflight.py 1024 >> .bench.jsonl
	$(PY) scripts/bench_smpi.py >> .bench.jsonl
	$(PY) scripts/bench_report.py < .bench.jsonl

clean:
	rm -rf target $(VENV) results
