# patchset: one entry point for people and CI. Every target sets up what it needs.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
VLLM   ?= 0.29.0
PYTEST_ARGS ?=

.PHONY: setup dev check validate test lint engine other-python image gpu-standin bench fuzz fuzz-diff mutate clean

# `make check` needs patchset and its own dependencies only; the dev extras (pytest, ruff, mypy,
# pre-commit, hypothesis, ...) come with the targets that use them (test, lint, fuzz, bench).
$(BIN)/patchset: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.dev: $(BIN)/patchset
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

setup: $(BIN)/patchset

dev: $(VENV)/.dev

# The main job: the manifest, then every hunk of the series on every pinned release.
check: setup
	$(BIN)/patchset validate
	$(BIN)/patchset check

validate: setup
	$(BIN)/patchset validate

# A real Docker engine for the image tests (Debian's docker.io; needs root).
engine:
	@if [ "$$(id -u)" = 0 ]; then sh .ci/docker.sh; else echo "not root: using whatever Docker engine answers"; fi

# A second, real CPython for the bytecode tests that judge another interpreter's pycs: Debian 11's python3.9
# (three packages, about 5 MB, unpacked into the cache; nothing installed system-wide). Where apt cannot
# fetch it, those tests skip, saying so (CI fails instead: .ci/run).
other-python:
	@sh .ci/other-python.sh >/dev/null || echo "no second Python here: the bytecode tests that need one will skip"

# A test that needs the Docker engine and finds none fails rather than skips; `make test
# PATCHSET_REQUIRE_DOCKER=0` (or that in the environment) lets it skip.
PATCHSET_REQUIRE_DOCKER ?= 1

test: dev engine other-python
	$(BIN)/ruff check .
	$(BIN)/mypy patchset
	$(BIN)/lint-imports
	PATCHSET_REQUIRE_DOCKER=$(PATCHSET_REQUIRE_DOCKER) $(BIN)/python -m pytest $(PYTEST_ARGS)

# make fuzz [FUZZ_SECONDS=60] [FUZZ_RUNS=0] [FUZZ_JOBS=1] [TARGETS="patch wheel"]: coverage-guided fuzzing
# (atheris) of every reader, each target for FUZZ_SECONDS (or until FUZZ_RUNS executions, when sooner),
# FUZZ_JOBS side by side; prints executions and findings per target (tests/fuzz, docs/fuzzing.md).
fuzz: dev
	FUZZ_SECONDS=$(or $(FUZZ_SECONDS),60) FUZZ_RUNS=$(or $(FUZZ_RUNS),0) FUZZ_JOBS=$(or $(FUZZ_JOBS),1) \
		$(BIN)/python tests/fuzz/run.py $(foreach t,$(TARGETS),--target $(t))

# make fuzz-diff N=30000 [SEED=1]: the differential harness (engine against GNU patch -F0 and git apply)
# on more seeded cases than `make test` runs; prints the class counts.
fuzz-diff: dev
	PATCHSET_FUZZ_N=$(or $(N),30000) PATCHSET_FUZZ_SEED=$(or $(SEED),1) \
		$(BIN)/python -m pytest tests/test_differential.py -q -s -k intended

# make mutate [MODULES="parallel journal"] [MINUTES=N]: mutation testing (mutmut) of the modules verdicts rest
# on, one module at a time with its own tests (each stopped after MINUTES if given), at the lowest CPU
# priority; prints the survivors (tests/mutation/run.py, docs/records/mutation.md). First, issue 41's four
# planted bugs must each fail their test (tests/mutation/planted.py). Not in CI: too slow.
$(VENV)/.mutate: $(VENV)/.dev
	$(BIN)/pip install --quiet -e '.[dev,mutate]'
	touch $@

mutate: $(VENV)/.mutate
	nice -n 19 $(BIN)/python tests/mutation/planted.py
	nice -n 19 $(BIN)/python tests/mutation/run.py $(foreach m,$(MODULES),--module $(m)) --minutes $(or $(MINUTES),0) --plain

lint: dev
	$(BIN)/ruff check .
	$(BIN)/mypy patchset
	$(BIN)/lint-imports

# make image VLLM=0.29.0 [BASE=...] [TAG=...]
image: setup
	$(BIN)/patchset build --vllm $(VLLM) $(if $(BASE),--base $(BASE)) $(if $(TAG),--tag $(TAG))

# The GPU path less the device: `test --image … --gpus all --device cpu` on the CPU stand-in, through a private
# dockerd whose stand-in nvidia-container-runtime-hook gives no device (tests/test_runners_image_gpu.py).
gpu-standin: dev engine
	PATCHSET_REQUIRE_DOCKER=1 $(BIN)/python -m pytest tests/test_runners_image_gpu.py -s $(PYTEST_ARGS)

bench: dev
	$(BIN)/python bench/run.py --cold $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
