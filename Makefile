# minicompile: build / test entry points.  `make demo`, `make test`, `make bench`.

# Base interpreter: python3.11 if it runs, else python3.
PY      ?= $(shell python3.11 -c "import sys" >/dev/null 2>&1 && echo python3.11 || echo python3)
VENV    ?= .venv
PYTHON  := $(VENV)/bin/python
FINDPY  := bash .ci/find_python.sh
# Extra interpreters on which the bytecode-capture tests also run.
CAPTURE_VERSIONS ?= 3.12 3.13
CAPTURES := $(addprefix capture-,$(CAPTURE_VERSIONS))

# $(call mkvenv,INTERPRETER,DIR): shell snippet creating a venv with a fresh pip.
mkvenv = "$(1)" -m venv $(2) && $(2)/bin/python -m pip install -q --upgrade pip

.PHONY: demo test fuzz bench bench-gpu tutorials docs clean clean-cache $(CAPTURES)

# Graphviz (pictures) and Chromium (browser tests) from Debian when missing; a recipe line.
INSTALL_TOOLS = -@command -v dot >/dev/null && command -v chromium >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz chromium >/dev/null; } || \
	  echo "graphviz/chromium not installed: picture and browser tests will skip"

# Main venv (file target).
$(PYTHON):
	$(call mkvenv,$(PY),$(VENV))

# .venv312/bin/python, .venv313/bin/python (file targets); fail if no interpreter.
.venv3%/bin/python:
	py="$$($(FINDPY) 3.$*)"; [ -n "$$py" ] || { echo "no working python3.$* found" >&2; exit 1; }; \
	$(call mkvenv,$$py,.venv3$*)

demo: $(PYTHON)
	$(PYTHON) -m pip install -q -e .
	$(PYTHON) -m minicompile runtime
	$(PYTHON) -m minicompile demo

# Whole suite on the main venv, then `-m capture` on each CAPTURE_VERSIONS interpreter found;
# pytest-xdist runs the tests on every core (TEST_WORKERS=0 runs them in one process).
# The suite's `-m docs` tests build a small documentation site (one tutorial) and open it
# in Chromium; `make docs` checks the whole site.
TEST_WORKERS ?= auto
test: $(PYTHON)
	$(PYTHON) -m pip install -q -e '.[dev,triton,docs]'
	$(INSTALL_TOOLS)
	$(PYTHON) -m pytest -n $(TEST_WORKERS)
	@$(MAKE) --no-print-directory $(CAPTURES)

# capture-3.12 etc.: one "skipped" line if no interpreter; pytest exit 5 (nothing collected) is OK.
$(CAPTURES): capture-%:
	@py="$$($(FINDPY) $*)"; venv=.venv$(subst .,,$*); \
	if [ -z "$$py" ]; then echo "python$* not found: capture tests for $* skipped"; exit 0; fi; \
	set -ex; \
	[ -x $$venv/bin/python ] || { $(call mkvenv,$$py,$$venv); }; \
	$$venv/bin/python -m pip install -q -e '.[dev]'; \
	$$venv/bin/python -m pytest -n $(TEST_WORKERS) -m capture tests || [ $$? -eq 5 ]

# Random mutation / aliasing / graph-break programs at large counts: FUZZ_EXAMPLES on
# eager and aot_eager, FUZZ_COMPILED_EXAMPLES on cpp and triton and on CuPy's test
# double (eager, aot_eager), in chunks of their own seeds (SEED, SEED+1, ...) on
# FUZZ_WORKERS cores (tests/fuzz.py; about 6 core-hours in all).  A new SEED each run, printed first; `make fuzz SEED=n` replays it, and each
# failing chunk prints its log and the command that replays that chunk alone.
# `make fuzz COMMIT=HEAD` tests that commit in a checkout of its own (edits made
# during the run change nothing it tests); by default, the working tree.
FUZZ_EXAMPLES ?= 100000
FUZZ_COMPILED_EXAMPLES ?= 40000
FUZZ_WORKERS ?= $(shell nproc 2>/dev/null || echo 2)
ifndef SEED
SEED := $(shell od -An -N4 -tu4 /dev/urandom | tr -d ' ')
endif
fuzz: $(PYTHON)
	$(PYTHON) -m pip install -q -e '.[dev,triton]'
	@echo "fuzz seed $(SEED) (make fuzz SEED=$(SEED) replays this run)"
	$(PYTHON) tests/fuzz.py --seed $(SEED) --examples $(FUZZ_EXAMPLES) \
	  --compiled-examples $(FUZZ_COMPILED_EXAMPLES) --workers $(FUZZ_WORKERS) $(if $(COMMIT),--commit $(COMMIT))

# torch (CPU) is only for comparison; minicompile never imports it.  A local
# wheel makes this quick; without one the suite compares against NumPy only.
bench: $(PYTHON)
	$(PYTHON) -m pip install -q -e .
	-$(PYTHON) -m pip install -q torch==2.13.0 || echo "torch not installed: comparing against NumPy only"
	@mkdir -p build
	$(PYTHON) -m minicompile runtime
	$(PYTHON) -m minicompile bench --json build/bench.json

# On a machine with a CUDA GPU, CuPy and Triton (torch optional): python3 with
# the packages already installed, so no venv.
bench-gpu:
	PYTHONPATH=. python3 -m minicompile bench --gpu

# Each tutorial as a Jupyter notebook in build/notebooks, executed: its outputs and pictures
# kept, and kept between runs (a notebook runs again when its tutorial or the package changes).
tutorials: $(PYTHON)
	$(PYTHON) -m pip install -q -e '.[notebooks]'
	$(PYTHON) -m minicompile.docs notebooks build/notebooks

# The documentation site in build/docs (open build/docs/index.html): the README, the
# architecture, the API reference and every tutorial executed, from the notebooks `make
# tutorials` keeps in build/notebooks.  Then the whole site is checked in Chromium
# (the `-m docs` tests on build/docs; `make test` runs them on a small site of its own).
docs: $(PYTHON)
	$(PYTHON) -m pip install -q -e '.[docs]'
	$(INSTALL_TOOLS)
	$(PYTHON) -m minicompile.docs site build/docs --notebooks build/notebooks
	MINICOMPILE_DOCS_SITE=build/docs $(PYTHON) -m pytest -p no:cacheprovider -m docs tests/docs

# What this checkout's own commands write into it: the virtual environments, build/
# (benchmark results, notebooks, fuzz logs), packaging output, the benchmarks' default
# result files, pytest's and hypothesis's state, bytecode caches.  Compiled kernels are
# not here: they are cached in ~/.cache/minicompile, shared with every other checkout
# and program, and stay until `make clean-cache`.
clean:
	rm -rf $(VENV) $(addprefix .venv,$(subst .,,$(CAPTURE_VERSIONS))) build dist *.egg-info \
		bench.json bench_gpu.json .pytest_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

# The compile cache: $MINICOMPILE_CACHE_DIR (default ~/.cache/minicompile) and the C++
# runtime's directory, $MINICOMPILE_RUNTIME_DIR (default inside the cache).  The next
# compile of each graph, and of the runtime, starts cold.
CACHE_DIR   := $(or $(MINICOMPILE_CACHE_DIR),$(HOME)/.cache/minicompile)
RUNTIME_DIR := $(or $(MINICOMPILE_RUNTIME_DIR),$(CACHE_DIR)/runtime)
clean-cache:
	rm -rf "$(CACHE_DIR)" "$(RUNTIME_DIR)"
