# Quick start: `make demo` runs the main job with 3 local parties; `make test` runs the suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: demo test install bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $@

$(TEST_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test,plot]'
	touch $(STAMP) $@

install: $(STAMP)

demo: $(STAMP)
	$(PY) -m scenarios.ustat -M3

test: $(TEST_STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) -m scenarios.bench_kendall -M3

clean:
	rm -rf $(VENV) build *.egg-info
