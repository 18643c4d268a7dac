# The two commands that set up everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin

.PHONY: demo test lint install install-dev clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

demo: $(VENV)/.installed
	$(BIN)/odeval demo

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests benchmarks

test: $(VENV)/.installed-dev lint
	$(BIN)/pytest $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build .pytest_cache .ruff_cache
