# The two commands a new user runs: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SRC    := histstore plumbing porcelain

.PHONY: demo test test-deep lint typecheck prepare unit bench clean

# (setuptools warns on every editable install that histstore/ shares the
# package's name: this layout is meant, so that one warning is not shown)
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	PYTHONWARNINGS='ignore:Editable installation' $(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Build a demo store in a temporary folder from the sample the repo ships,
# read it back like git, then keep a memory note with its history.
demo: $(STAMP)
	@set -e; tmp=$$(mktemp -d); export HISTORY_DIR=$$tmp/store; \
	echo "# demo store in $$tmp/store"; \
	$(BIN)/hs init; \
	$(BIN)/hs import demo/claude-projects; \
	echo; echo '$$ hs log --oneline'; $(BIN)/hs log --oneline; \
	first=$$($(BIN)/hs log --json | tail -n 1 | $(BIN)/python -c 'import json,sys; print(json.loads(sys.stdin.read())["turn_id"])'); \
	echo; echo "\$$ hs show --full $$first"; $(BIN)/hs show --full $$first; \
	echo; echo '$$ hs recall --everywhere login_user expiry'; $(BIN)/hs recall --everywhere login_user expiry; \
	mkdir $$tmp/memory; export MEMORY_DIR=$$tmp/memory; \
	echo; echo '$$ hs memory write --type project --slug token-refresh ... --yes'; \
	$(BIN)/hs memory write --type project --slug token-refresh --name "Token refresh" \
	  --description "Expired tokens are refreshed in the auth middleware" \
	  --body "$$(printf 'login_user never refreshes tokens itself.\n\n**Why:** one place decides expiry.\n\n**How to apply:** change the middleware, not login_user.')" --yes; \
	echo; echo '$$ hs memory log'; $(BIN)/hs memory log; \
	echo; echo '$$ hs status'; $(BIN)/hs status

lint: $(STAMP)
	$(BIN)/ruff check $(SRC) tests
	$(BIN)/ruff format --check $(SRC) tests

# mypy cannot follow the package-dir mapping of an editable install, so it checks
# a tree of symlinks laid out as the installed package is.
typecheck: $(STAMP)
	@rm -rf build/typecheck && mkdir -p build/typecheck
	@cp -rs $(CURDIR)/histstore build/typecheck/histstore
	@cp -rs $(CURDIR)/plumbing build/typecheck/histstore/plumbing
	@cp -rs $(CURDIR)/porcelain build/typecheck/histstore/porcelain
	cd build/typecheck && $(CURDIR)/$(BIN)/mypy --config-file $(CURDIR)/pyproject.toml --cache-dir $(CURDIR)/build/mypy-cache histstore

# Both cores (pytest-xdist), each taking the next test when it is free
# (worksteal: a long test near the end no longer leaves a core idle). Every
# test has its own temporary home and store; they live on the machine's RAM
# disk when it has one with room (a tantivy commit and the durability tests'
# fsyncs cost nothing there: the suite takes ~4/5 of the time on disk).
TEST_TMP := $(shell df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 && $$4 > 1048576 { print "/dev/shm" }')
# The sources are compiled first: the tests start ~100 `hs` and python
# processes, and where PYTHONDONTWRITEBYTECODE is set each would compile
# every module it loads again.
# The allocator keeps what it freed (one arena, no trimming, no mmap per big
# block): each Tantivy commit allocates and zeroes a table of a few MB, and
# with glibc's defaults every commit faults those pages in afresh — ~1,000
# commits in the suite, ~35% of their CPU. Only the tests' processes run so.
TEST_MALLOC := MALLOC_ARENA_MAX=1 GLIBC_TUNABLES=glibc.malloc.trim_threshold=268435456:glibc.malloc.mmap_threshold=268435456
# pytest rewrites each test module's asserts as it imports it, in every
# worker, and keeps the result only where bytecode may be written: the
# rewrite is done once, beside the linters, and both workers read it
# (tests/rewrite_cache.py; ~5 s of each worker's start).
prepare: $(STAMP)
	@$(BIN)/python -m compileall -q $(SRC) >/dev/null
	@$(BIN)/python tests/rewrite_cache.py
unit: $(STAMP) prepare
	$(TEST_MALLOC) $(if $(TEST_TMP),TMPDIR=$(TEST_TMP)) $(BIN)/pytest -n 2 --dist worksteal

# The linters and the type check run beside the suite: its workers wait on
# the processes the tests start often enough to leave them room.
test: $(STAMP)
	@$(MAKE) --no-print-directory -j3 lint typecheck unit

# The same suite exploring further: property tests with fresh random examples
# (many more of them), the lock-contention loop for longer, the capture runs
# over 1,000 turns instead of 50. Not run by CI.
test-deep: $(STAMP)
	$(TEST_MALLOC) HS_HYPOTHESIS_PROFILE=deep HS_SYNC_EXAMPLES=400 HS_LOCK_LOOP_SECONDS=60 HS_CAPTURE_TURNS=1000 $(BIN)/pytest -n 2

# Benchmarks live in tests/bench/bench_*.py (not collected by `make test`); figures are
# printed at the end of the run. BENCH_ARGS passes extra pytest options (e.g. -k 10k).
bench: $(STAMP)
	@command -v rg >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq ripgrep) || echo "ripgrep not installed: rg comparisons will be skipped"
	$(BIN)/pytest tests/bench -o python_files='bench_*.py' -p no:randomly --benchmark-enable --benchmark-only --benchmark-columns=min,median,mean,max,rounds --benchmark-sort=name -s $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build .pytest_cache .mypy_cache .ruff_cache .benchmarks
