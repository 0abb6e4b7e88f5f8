"""Build ``hw/rtl/nrl_axis_merge.v`` (with its ``nrl_axis_skid``) and run its cocotb testbench.

Random packet streams with idle clocks and backpressure on Icarus and Verilator,
for three inputs (the switch's output merge) and for two.
"""

from __future__ import annotations

import pytest
from toolcheck import require_simulator

from sim.common.runner import RTL, SIMULATORS, run_cocotb

SOURCES = [RTL / "nrl_axis_skid.v", RTL / "nrl_axis_merge.v"]


@pytest.mark.parametrize("inputs", [3, 2])
@pytest.mark.parametrize("sim", SIMULATORS)
def test_nrl_axis_merge(sim: str, inputs: int) -> None:
    """Whole packets in per-input order, nothing lost or duplicated, one beat per clock."""
    require_simulator(sim, "the nrl_axis_merge cocotb testbench")
    run_cocotb(
        sim=sim,
        toplevel="nrl_axis_merge",
        sources=SOURCES,
        test_module="sim.nrl_axis_merge.test_nrl_axis_merge",
        parameters={"S_COUNT": inputs, "DATA_WIDTH": 64, "USER_WIDTH": 16},
    )
