# Two commands set everything up: `make demo` and `make test` (each creates .venv if missing).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench bench-filters lint java chromium clean

java:
	@bash scripts/check_java.sh

# Headless Chromium + chromedriver for the dashboard test (installed by the test when missing).
chromium:
	@bash scripts/check_chromium.sh

$(STAMP): pyproject.toml | java
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' || { echo "tsmon needs Python 3.10 or newer: install it and retry." >&2; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/tsmon demo

test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadscope

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_windows.py

# The adaptive-filter experiments (Olston et al. 2003): CSV + PNG in benchmarks/filters/out/.
bench-filters: $(STAMP)
	for s in bench_precision fig3 fig4 fig7 fig8 fig9 sensitivity bench_beyond validate; do \
	  $(BIN)/python benchmarks/filters/$$s.py $(BENCH_ARGS) || exit 1; done

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
