# arraybench: `make bench` and `make test` set everything up on a fresh machine.
PYTHON ?= python3.11
VENV := .venv
# PyTorch's CPU wheel index (see pytorch.org), for a pip that does not know it already:
# constraints.txt pins torch's CPU wheel, which only that index has.
TORCH_INDEX ?=
PIP_INDEX := $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX))
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv bench quick test test-fast lint clean browser postgres

venv: $(STAMP)

# Every CPU framework, with torch pinned to the CPU wheel (constraints.txt): a plain `torch`
# requirement would pull a multi-GB CUDA build. GPU users install their own CUDA builds.
$(STAMP): pyproject.toml constraints.txt
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "make: $(PYTHON) not found; run make PYTHON=/path/to/python3.11" >&2; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet $(PIP_INDEX) -c constraints.txt -e '.[all,dev]'
	touch $(STAMP)

# Each run gets its own directory, benchmark_results/<run id>, and benchmark_results/latest
# points at the newest (the CLI does both; --resume finishes an interrupted run).
bench: venv
	$(BIN)/arraybench run

quick: venv
	$(BIN)/arraybench run --quick

# The report's browser test loads report.html in Debian's chromium: installed once, quick after.
browser:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

# The shared store's tests start their own PostgreSQL server (initdb, pg_ctl in a temporary
# directory) from Debian's postgresql, which keeps them in /usr/lib/postgresql/N/bin: installed once.
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; }

# Three pytest workers, a test file each at a time (module fixtures stay in one worker), the longest
# files first (tests/conftest.py): most of the suite's time is frameworks compiling tiny cases in one
# thread, and a quarter of it waiting on processes it started (workers' start-up, servers, kernels).
# On the 2-core VM two workers kept the CPUs 154 % busy and took 888 s; three, 182 % and 714 s.
# Timing logic is tested with fake clocks.
test: venv browser postgres
	$(BIN)/python -m pytest -q -n 3 --dist loadfile --durations=15

# The unit tier (tests/conftest.py declares which tests are integration tests): fake clocks, stub
# workers, synthetic records. Two workers as in `make test`: its 67-77 s of CPU (most of it
# matplotlib drawing the report tests' plots) took 41 s on the 2-core VM.
test-fast: venv
	$(BIN)/python -m pytest -q -n 2 --dist loadfile -m "not integration"

# mypy reads its settings (files, the frameworks it treats as untyped) from pyproject.toml.
lint: venv
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/mypy

clean:
	rm -rf $(VENV) benchmark_results .pytest_cache
