# netfpga-rl: the two quick-start commands are `make demo` and `make test`.
# Both run `setup` first, which is idempotent.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SITE    = $(shell test -x $(PY) && $(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
export VERILATOR_ROOT = $(SITE)/verilator
export PATH := $(CURDIR)/$(VENV)/bin:$(SITE)/verilator/bin:$(PATH)
JOBS   ?= 2

.PHONY: setup cxx demo test test-slow lint bench bench-peers regs synth coverage clean

# Debian ninja-build (torch.utils.cpp_extension builds the netrl c10d backend with it),
# iverilog (simulation), yosys (synthesis estimates), tcl (tclsh, the
# build.tcl dry run), linux-headers-amd64 (Linux 6.1 on Debian 12: the kbuild test of
# the patched sume_riffa driver), ccache (every Verilator build compiles the same runtime:
# cached, a build takes a third of the time) and g++ (the native switch engine, built by pip) when
# missing; under CI the tests fail if any is absent. g++ comes first: pip compiles hostdrv._native
setup: $(STAMP)
	@missing=""; \
	command -v iverilog >/dev/null 2>&1 || missing="$$missing iverilog"; \
	command -v yosys >/dev/null 2>&1 || missing="$$missing yosys"; \
	command -v tclsh >/dev/null 2>&1 || missing="$$missing tcl"; \
	command -v ninja >/dev/null 2>&1 || missing="$$missing ninja-build"; \
	command -v ccache >/dev/null 2>&1 || missing="$$missing ccache"; \
	ls -d /usr/src/linux-headers-6.1*-amd64 >/dev/null 2>&1 || missing="$$missing linux-headers-amd64"; \
	if [ -n "$$missing" ]; then \
	  echo "[setup] installing Debian$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $$missing; \
	fi
	@# the netrl torch backend's c10d extension (built against the installed torch,
	@# cached per torch version and source digest: hostdrv/client/torch_c10d.py)
	$(PY) -m hostdrv.client.torch_c10d

cxx:
	@command -v g++ >/dev/null 2>&1 || { \
	  echo "[setup] installing Debian g++"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq g++; }
	@# DPDK 22.11 (the kernel-bypass data path, docs/bypass.md): setup.py builds it into
	@# hostdrv._native when pkg-config finds libdpdk, so it comes before pip's build
	@{ pkg-config --exists libdpdk 2>/dev/null && \
	   ls /usr/lib/*/librte_net_af_packet.so.23 /usr/lib/*/librte_net_memif.so.23 \
	      /usr/lib/*/librte_net_af_xdp.so.23 >/dev/null 2>&1; } || { \
	  echo "[setup] installing Debian dpdk libdpdk-dev (af_packet, af_xdp, memif PMDs)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq pkg-config dpdk libdpdk-dev \
	    librte-net-af-packet23 librte-net-af-xdp23 librte-net-memif23; }

$(STAMP): pyproject.toml constraints.txt setup.py hostdrv/native/*.cpp hostdrv/native/*.h hostdrv/wire/nrl_protocol.h | cxx
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[all]'
	@touch $(STAMP)

demo: setup
	$(PY) -m netrl demo

test: setup
	$(PY) -m pytest -n $(JOBS) -q --durations=60

test-slow: setup
	$(PY) -m pytest -n $(JOBS) -q -m slow

lint: setup
	$(PY) -m ruff check hostdrv rl scripts sim tests
	$(PY) scripts/lint_rtl.py

regs: setup
	$(PY) scripts/gen_regs.py

# every benchmark; each prints one final key=value line
bench: setup
	$(PY) scripts/bench_host.py
	$(PY) scripts/bench_grad_agg.py
	$(PY) scripts/bench_replay.py
	$(PY) scripts/bench_rl.py --quick
	$(PY) scripts/bench_replay_host.py --quick --json '' --plot ''
	$(PY) scripts/cluster_model.py
	@if [ "$$(id -u)" = 0 ]; then $(PY) scripts/bench_rack.py --algos ppo; \
	else echo "[bench] scripts/bench_rack.py builds network namespaces: run it as root"; fi

# the peer baselines of scripts/bench_peers.py (Reverb 0.14 on TF 2.15), in a venv of their
# own (.venv-peers, Python 3.11), never in the project's install; idempotent (stamp file)
PEERS_PYTHON ?= python3.11
PEERS        := .venv-peers
PEERS_STAMP  := $(PEERS)/.installed

bench-peers: $(PEERS_STAMP)
	@echo "[bench-peers] $(PEERS) ready: $(PY) scripts/bench_peers.py --quick"

$(PEERS_STAMP): constraints-peers.txt
	@test -x $(PEERS)/bin/python || $(PEERS_PYTHON) -m venv $(PEERS)
	$(PEERS)/bin/python -m pip install -q --upgrade pip
	$(PEERS)/bin/python -m pip install -q -r constraints-peers.txt
	$(PEERS)/bin/python -c 'import importlib.metadata as m, reverb, tensorflow; print("[bench-peers] dm-reverb", m.version("dm-reverb"), "tensorflow", tensorflow.__version__)'
	@touch $(PEERS_STAMP)

synth: setup
	$(PY) scripts/synth_yosys.py

# line and toggle coverage of the cocotb tests on Verilator; Debian lcov
# (genhtml) when missing. Report: sim_build/coverage/html/index.html
coverage: setup
	@command -v genhtml >/dev/null 2>&1 || { \
	  echo "[coverage] installing Debian lcov"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq lcov; }
	$(PY) scripts/coverage.py -n $(JOBS)

clean:
	rm -rf sim_build build runs .pytest_cache
