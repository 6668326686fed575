# Two commands do all set-up on a fresh machine: `make train` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
CONFIG ?= configs/quick.yaml

.PHONY: setup train test lint bench soak clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# CPU build of torch first: an unpinned torch would pull a multi-GB CUDA build.
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[train,dev,rllib,render,vector,openspiel]"
	touch $(STAMP)

setup: $(STAMP)

train: $(STAMP)
	$(PY) -m training.train --config $(CONFIG)

test: $(STAMP)
	$(PY) -m pytest -n 2 -q

lint: $(STAMP)
	$(VENV)/bin/ruff check bergen_env training tests benchmarks
	$(VENV)/bin/ruff format --check bergen_env training tests benchmarks

bench: $(STAMP)
	$(PY) -m benchmarks.run --json benchmarks/results/bench.json

soak: $(STAMP)
	$(PY) -m benchmarks.soak --matches 100000 --workers 2

clean:
	rm -rf $(VENV) runs .pytest_cache
