# Two commands do all the set-up: `make demo` and `make test`.
# The virtual environments may live outside the checkout (VENV=..., FLOOR_VENV=...), so that the
# suite also runs from a read-only checkout.
PYTHON     ?= python3
VENV       ?= .venv
FLOOR_VENV ?= .venv-floor
PY         := $(VENV)/bin/python
FLOOR_PY   := $(FLOOR_VENV)/bin/python
STAMP      := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo
FLOOR_STAMP := $(FLOOR_VENV)/.installed
# The suites run in parallel (pytest-xdist), a test file to a worker: WORKERS=auto starts one worker
# per core, WORKERS=0 runs everything in this one process.
WORKERS    ?= auto
PARALLEL   := -n $(WORKERS) --dist loadfile

.PHONY: demo test test-quick test-floor test-both bench pictures format venv venv-floor chromium clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

# The tour needs jaxmagic and a notebook runner only (the `demo` extra), not the developer's tools.
$(DEMO_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[demo]'
	touch $(DEMO_STAMP)

# Runs the tour headless, writes it back with its outputs, and its HTML export beside it.
demo: $(DEMO_STAMP)
	$(PY) demo/run.py demo/tour.ipynb demo/tour.html

# The browser tests drive Debian's Chromium (browser downloads do not work everywhere).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium is missing and cannot be installed here: the browser tests will be skipped"; fi; }

# The whole suite on the newest versions the package registry serves.
test: $(STAMP) chromium
	$(PY) -m pytest $(PARALLEL)

# The inner loop while changing jaxmagic: unit tests and doctests, no browser, no other processes.
test-quick: $(STAMP)
	$(PY) -m pytest -q $(PARALLEL) -m "not slow and not browser"

# The suite (browser tests aside) on the oldest versions jaxmagic supports, pinned exactly.
$(FLOOR_STAMP): pyproject.toml floor-constraints.txt
	$(PYTHON) -m venv $(FLOOR_VENV)
	$(FLOOR_PY) -m pip install --quiet --upgrade pip
	$(FLOOR_PY) -m pip install --quiet --constraint "$(CURDIR)/floor-constraints.txt" -e '.[test]'
	touch $(FLOOR_STAMP)

venv-floor: $(FLOOR_STAMP)

test-floor: $(FLOOR_STAMP)
	JAXMAGIC_CONSTRAINTS="$(CURDIR)/floor-constraints.txt" $(FLOOR_PY) -m pytest $(PARALLEL) -m "not browser"

# Both suites, as CI runs them. The two environments install side by side (mostly downloads); the
# suites run side by side where there are cores enough for both (four or more: half the workers
# each, each suite's output shown whole when it ends), one after the other otherwise. `-k`: the
# floor suite runs even when the newest one failed.
CORES := $(shell nproc 2>/dev/null || echo 1)
test-both:
	$(MAKE) -j2 venv venv-floor chromium
ifeq ($(shell [ $(CORES) -ge 4 ] && echo side-by-side),side-by-side)
	$(MAKE) -k -j2 --output-sync=target test test-floor WORKERS=$(shell echo $$(( $(CORES) / 2 )))
else
	$(MAKE) -k test test-floor
endif

# The README's and the docs' pictures, taken anew from the current views by the browser tests.
pictures: $(STAMP) chromium
	JAXMAGIC_UPDATE_DOCS_IMAGES=1 $(PY) -m pytest -q -p no:xdist -m browser tests/browser

bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,bench]'
	$(PY) benchmarks/run.py

# The house style: ruff's formatter, then its linter's safe fixes (the suite checks both).
format: $(STAMP)
	$(VENV)/bin/ruff format jaxmagic tests benchmarks demo
	$(VENV)/bin/ruff check --fix jaxmagic tests benchmarks demo

clean:
	rm -rf $(VENV) $(FLOOR_VENV) demo/tour.html
