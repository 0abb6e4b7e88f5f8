"""Build ``hw/rtl/nrl_axil_split.v`` and run its cocotb testbench (Icarus and Verilator).

Routing of reads and writes by hw/regs.yaml, SLVERR from an engine, CNT_PASS
and the UDP_PORT shadow, the job table of a one-job switch and the job pages
(the switch's 16-bit address), against two Python engine register files.
"""

from __future__ import annotations

import pytest
from toolcheck import require_simulator

from sim.common.runner import RTL, SIMULATORS, run_cocotb


@pytest.mark.parametrize("sim", SIMULATORS)
def test_nrl_axil_split(sim: str) -> None:
    """Reads and writes reach the right engine, responses propagate, CNT_PASS counts."""
    require_simulator(sim, "the nrl_axil_split cocotb testbench")
    run_cocotb(
        sim=sim,
        toplevel="nrl_axil_split",
        sources=[RTL / "nrl_axil_split.v"],
        test_module="sim.nrl_axil_split.test_nrl_axil_split",
        parameters={"ADDR_WIDTH": 16},
    )
