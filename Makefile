# Quick start: `make demo` runs the main job with 3 local parties; `make test` runs the suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: demo test typecheck drills install bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml Makefile | $(PY)
	$(PY) -m pip install --quiet -e '.[plot]'
	touch $@

$(TEST_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test,plot]'
	touch $(STAMP) $@

install: $(STAMP)

demo: $(STAMP)
	$(PY) -m scenarios.ustat -M3

test: $(TEST_STAMP)
	$(PY) -m mypy
	$(PY) -m pytest -q -n auto --dist loadfile
	$(MAKE) --no-print-directory drills

# Static type check of the packages (type hints throughout, py.typed); also run by `make test`.
typecheck: $(TEST_STAMP)
	$(PY) -m mypy

# The threat-model drills in quick mode, printing their numbers (also run by `make test`).
# The drills but the budget one are not about privacy budgets: no ledger for them (PRIVATE_USTATS_LEDGER=off).
drills: export PRIVATE_USTATS_LEDGER = off
drills: $(TEST_STAMP)
	$(PY) -m scenarios.drills.audit --quick --seed 2026 --no-log
	$(PY) -m scenarios.drills.coalition -M3 --quick --no-log
	$(PY) -m scenarios.drills.coalition -M5 -T2 --quick --no-log
	$(PY) -m scenarios.drills.faults --quick
	$(PY) -m scenarios.drills.malicious_input --quick
	$(PY) -m scenarios.drills.budget --quick
	$(PY) -m scenarios.drills.owners --quick

bench: $(STAMP)
	$(PY) -m scenarios.bench_kendall -M3

clean:
	rm -rf $(VENV) build *.egg-info
