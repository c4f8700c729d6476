# Two commands do all the set-up: `make demo` and `make test`.
# The virtual environments may live outside the checkout (VENV=..., FLOOR_VENV=...), so that the
# suite also runs from a read-only checkout.
PYTHON     ?= python3
VENV       ?= .venv
FLOOR_VENV ?= .venv-floor
PY         := $(VENV)/bin/python
FLOOR_PY   := $(FLOOR_VENV)/bin/python
STAMP      := $(VENV)/.installed
FLOOR_STAMP := $(FLOOR_VENV)/.installed

.PHONY: demo test test-quick test-floor bench format venv chromium clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(PY) demo/run.py demo/tour.ipynb demo/tour.html

# The browser tests drive Debian's Chromium (browser downloads do not work everywhere).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium is missing and cannot be installed here: the browser tests will be skipped"; fi; }

# The whole suite on the newest versions the package registry serves.
test: $(STAMP) chromium
	$(PY) -m pytest

# The inner loop while changing jaxmagic: unit tests and doctests, no browser, no other processes.
test-quick: $(STAMP)
	$(PY) -m pytest -q -m "not slow and not browser"

# The suite (browser tests aside) on the oldest versions jaxmagic supports, pinned exactly.
$(FLOOR_STAMP): pyproject.toml floor-constraints.txt
	$(PYTHON) -m venv $(FLOOR_VENV)
	$(FLOOR_PY) -m pip install --quiet --upgrade pip
	$(FLOOR_PY) -m pip install --quiet --constraint "$(CURDIR)/floor-constraints.txt" -e '.[test]'
	touch $(FLOOR_STAMP)

test-floor: $(FLOOR_STAMP)
	JAXMAGIC_CONSTRAINTS="$(CURDIR)/floor-constraints.txt" $(FLOOR_PY) -m pytest -m "not browser"

bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,bench]'
	$(PY) benchmarks/run.py

# The house style: ruff's formatter, then its linter's safe fixes (the suite checks both).
format: $(STAMP)
	$(VENV)/bin/ruff format jaxmagic tests benchmarks demo
	$(VENV)/bin/ruff check --fix jaxmagic tests benchmarks demo

clean:
	rm -rf $(VENV) $(FLOOR_VENV) demo/tour.html
