"""Build ``hw/rtl/replay_regs.v`` with four jobs and check its register pages against the model
(``sim/replay_regs/test_replay_regs.py``), on Icarus and Verilator."""

from __future__ import annotations

import pytest
from toolcheck import require_simulator

from sim.common.runner import RTL, SIMULATORS, run_cocotb

SOURCES = [RTL / f for f in ("replay_regs.v", "nrl_common_regs.v", "nrl_counter_bank.v", "nrl_axil_regif.v")]


@pytest.mark.parametrize("sim", SIMULATORS)
def test_replay_regs_pages(sim: str) -> None:
    """Every job's replay registers, pulses, outputs, status words and counters (JOBS = 4)."""
    require_simulator(sim, "the replay_regs cocotb testbench")
    run_cocotb(sim=sim, toplevel="replay_regs", sources=SOURCES,
               test_module="sim.replay_regs.test_replay_regs",
               parameters={"JOBS": 4, "CAPACITY": 64, "RECORD_BYTES": 128}, build_tag="jobs4")
