# Two commands do all set-up on a fresh machine: `make train` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
CONFIG ?= configs/quick.yaml

# torch is installed first, pinned. Where pip finds it decides the build: PyPI's Linux wheels
# carry CUDA (several GB); for the CPU-only build give PyTorch's CPU wheel index, e.g.
#   make test TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
# (empty: pip's own configuration, which may already point at a local CPU wheel).
TORCH_VERSION   ?= 2.13.0
TORCH_INDEX_URL ?=

# The extras `make test` installs: exactly what the test suite needs (one `+=` line each).
# Tests of other extras skip where they are missing; CI installs those too (.ci/run).
TEST_EXTRAS := train
TEST_EXTRAS += dev
TEST_EXTRAS += vector
TEST_EXTRAS += web
TEST_EXTRAS += openspiel

LINT_PATHS := bergen_env training tests benchmarks examples

comma := ,
empty :=
space := $(empty) $(empty)
EXTRAS_ARG := $(subst $(space),$(comma),$(strip $(TEST_EXTRAS)))

.PHONY: setup train test lint bench soak clean play

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==$(TORCH_VERSION) \
		$(if $(TORCH_INDEX_URL),--index-url $(TORCH_INDEX_URL))
	$(PY) -m pip install --quiet -e ".[$(EXTRAS_ARG)]"
	touch $(STAMP)

setup: $(STAMP)

train: $(STAMP)
	$(PY) -m bergen_env.training.train --config $(CONFIG)

# The browser game on http://127.0.0.1:8000/ (PORT=... to change).
play: $(STAMP)
	$(VENV)/bin/bergen-web --port $(or $(PORT),8000)

test: $(STAMP)
	$(PY) -m pytest -n 2 -q

lint: $(STAMP)
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PATHS)

bench: $(STAMP)
	$(PY) -m benchmarks.run --json benchmarks/results/bench.json

soak: $(STAMP)
	$(PY) -m benchmarks.soak --matches 100000 --workers 2

clean:
	rm -rf $(VENV) .venv-rllib runs .pytest_cache build dist *.egg-info
