"""Build ``hw/rtl/nrl_axil_regif.v`` behind its testbench register file and run the cocotb tests.

The two configurations the register files use (ready in the clock a request is
taken, as replay_regs; ready registered and the write presented two clocks after it is
taken, as grad_agg_regs; both with three read stages and 12 address bits) and three
small ones (one and two read stages on an 8-bit address, and one write stage); on
Icarus and Verilator.
"""

from __future__ import annotations

import pytest
from toolcheck import require_simulator

from sim.common.runner import REPO, RTL, SIMULATORS, run_cocotb

TB = REPO / "sim" / "nrl_axil_regif" / "tb_nrl_axil_regif.v"


@pytest.mark.parametrize(("ready_reg", "stages", "addr_width", "write_reg"),
                         [(0, 3, 12, 0), (1, 3, 12, 2), (0, 1, 8, 0), (1, 2, 8, 0), (0, 2, 8, 1)],
                         ids=["replay", "agg", "comb_1", "reg_2", "wreg_2"])
@pytest.mark.parametrize("sim", SIMULATORS)
def test_nrl_axil_regif(sim: str, ready_reg: int, stages: int, addr_width: int,
                        write_reg: int) -> None:
    """Random reads and writes with refusals, every clock against the Python handshake model."""
    require_simulator(sim, "the nrl_axil_regif cocotb testbench")
    run_cocotb(
        sim=sim,
        toplevel="tb_nrl_axil_regif",
        sources=[RTL / "nrl_axil_regif.v", TB],
        test_module="sim.nrl_axil_regif.test_nrl_axil_regif",
        parameters={"READY_REG": ready_reg, "READ_STAGES": stages, "ADDR_WIDTH": addr_width,
                    "WRITE_REG": write_reg},
        build_tag=f"r{ready_reg}_s{stages}_a{addr_width}_w{write_reg}",
    )
