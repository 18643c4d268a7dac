# The two commands that set up everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin

.PHONY: demo test lint install install-dev clean chromium

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[plot]'
	$(BIN)/odeval warmup  # compile the numba kernels into the on-disk cache: no compile pause on the first run
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	$(BIN)/odeval warmup
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

demo: $(VENV)/.installed
	$(BIN)/odeval demo

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests benchmarks

test: $(VENV)/.installed-dev lint chromium
	$(BIN)/pytest $(PYTEST_ARGS)

# headless Chromium renders the HTML report in tests/report (the test skips, with a reason, without it)
chromium:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null \
	  || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	  || echo "warning: could not install chromium; the report rendering test will be skipped"

clean:
	rm -rf $(VENV) build .pytest_cache .ruff_cache
