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

# PyTorch's CPU build, for the tests of the GPU graph search (tests/neighbors/test_torch_graph.py runs its code path on
# the CPU). Only a "+cpu" file is accepted, so a multi-GB CUDA build is never pulled; where none is at hand (PyPI has no
# "+cpu" files) those tests are skipped with a reason. TORCH_CPU= leaves PyTorch out.
TORCH_CPU ?= torch==2.13.0+cpu

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	@if [ -n "$(TORCH_CPU)" ]; then $(BIN)/pip install --quiet '$(TORCH_CPU)' \
	  || echo "warning: $(TORCH_CPU) not found; the GPU graph search's tests (tests/neighbors/test_torch_graph.py) will be skipped"; fi
	$(BIN)/odeval warmup
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

demo: $(VENV)/.installed
	$(BIN)/python benchmarks/first_run.py --installed  # the first `odeval score` of this install (target < 10 s)
	$(BIN)/odeval demo

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests benchmarks

CHROMIUM ?= chromium
# -n auto: the suite is spread over every core (pytest-xdist); the tests are independent of order and process.
test: $(VENV)/.installed-dev lint $(CHROMIUM)
	$(BIN)/pytest -n auto $(PYTEST_ARGS)

# headless Chromium renders the HTML report in tests/report (those tests skip, with a reason, without it).
# When it is missing and apt-get is usable, it is installed — saying so first; otherwise a warning says what is skipped.
chromium:
	@if command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then :; \
	elif command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	  echo "make test: installing chromium with apt-get (headless browser for the report rendering tests in tests/report;"; \
	  echo "           skip this with 'make test CHROMIUM=' — those tests are then skipped)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null \
	    && echo "make test: chromium installed: $$(command -v chromium)") \
	  || echo "warning: could not install chromium; the report rendering tests will be skipped"; \
	else echo "warning: chromium not found (apt-get install chromium); the report rendering tests will be skipped"; fi

clean:
	rm -rf $(VENV) build .pytest_cache .ruff_cache
